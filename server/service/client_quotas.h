// client_quotas.h: optional per-client quotas on what a client's cache misses cost coopd: how
// many compiles (and links) it may start per minute, and how many artifact bytes those may
// insert into the cache per hour (issue 27: one compile token with many distinct specs could
// evict everyone's entries).
//
// A client is the name grpc_service.h's ClientIdentity gives it: "token:NAME" for a caller with
// a bearer token, else its peer (TCP) or "coopd-client" metadata (Unix socket). Only starting
// work spends a quota: a cache hit, or joining a compile another request started, is never
// refused or counted. Windows are fixed: a client's compile window opens at its first compile
// and lasts 60 s, its byte window at its first insert and lasts 3600 s; each closes and starts
// afresh when it has run out. The byte quota is checked before a compile and charged when its
// artifact is stored, so one compile may take a client past it; the next is refused.
//
// The table of clients is bounded like ClientLimiter's: once it holds more than
// kMaxTrackedClients, clients whose windows have both run out are forgotten.
//
// Thread-safe. Time is passed in, so tests need no clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace coopd {

struct ClientQuotaOptions {
  uint32_t compiles_per_minute = 0;   // --quota-compiles-per-minute; 0: no quota
  uint64_t cache_bytes_per_hour = 0;  // --quota-cache-mb-per-hour (in bytes here); 0: no quota
};

class ClientQuotas {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxTrackedClients = 4096;
  static constexpr std::chrono::seconds kCompileWindow{60};
  static constexpr std::chrono::seconds kBytesWindow{3600};

  explicit ClientQuotas(ClientQuotaOptions options) : options_(options) {}

  bool enabled() const {
    return options_.compiles_per_minute > 0 || options_.cache_bytes_per_hour > 0;
  }

  // Takes one compile from `client`'s quota at `now`; RESOURCE_EXHAUSTED naming the quota, its
  // flag, the client and when its window resets when the client has used up its compiles, or
  // its cache bytes, for the window. A refusal takes nothing and counts in refused_compiles()
  // or refused_bytes().
  absl::Status TakeCompile(std::string_view client, Clock::time_point now);
  // Gives back a compile TakeCompile took that did not happen (the request joined another's).
  void ReturnCompile(std::string_view client);
  // Charges `bytes` inserted into the cache by a compile of `client`.
  void ChargeBytes(std::string_view client, uint64_t bytes, Clock::time_point now);

  uint64_t refused_compiles() const { return refused_compiles_.load(); }
  uint64_t refused_bytes() const { return refused_bytes_.load(); }
  void ZeroStats() {
    refused_compiles_ = 0;
    refused_bytes_ = 0;
  }
  size_t tracked_clients() const;

 private:
  struct Entry {
    uint32_t compiles = 0;
    Clock::time_point compile_window;  // when the current compile window opened
    uint64_t bytes = 0;
    Clock::time_point bytes_window;
  };
  // Closes the entry's windows that have run out at `now`.
  static void Roll(Entry& e, Clock::time_point now);
  void Sweep(Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ClientQuotaOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> clients_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> refused_compiles_{0}, refused_bytes_{0};
};

}  // namespace coopd
