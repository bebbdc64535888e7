// client_limits.h: per-client limits on the requests coopd accepts: how many one client may
// have in flight, and how fast it may send them (a token bucket: `rate` requests per second on
// average, `burst` at once).
//
// A client is whatever string the caller names it by (grpc_service.cc's ClientIdentity: the
// name of the bearer token coopd checked, else the peer's address on TCP, the client-supplied
// "coopd-client" metadata on the Unix socket). The table of clients is bounded: idle clients
// (nothing in flight, a full bucket) are forgotten once it holds more than kMaxTrackedClients,
// so a caller that invents a new name per request costs memory for its requests in flight only.
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
#include "absl/status/statusor.h"

namespace coopd {

struct ClientLimitOptions {
  uint32_t max_in_flight = 256;  // requests one client may have in flight; 0: no limit
  double rate = 0;               // requests per second per client on average; 0: no limit
  uint32_t burst = 100;          // requests a client may send at once (the bucket's size)
};

class ClientLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxTrackedClients = 4096;

  explicit ClientLimiter(ClientLimitOptions options) : options_(options) {}

  // A request admitted: it counts as in flight until this is destroyed (or released).
  class Admission {
   public:
    Admission() = default;
    Admission(Admission&& o) noexcept : limiter_(o.limiter_), client_(std::move(o.client_)) {
      o.limiter_ = nullptr;
    }
    Admission& operator=(Admission&& o) noexcept;
    ~Admission() { Release(); }
    void Release();

   private:
    friend class ClientLimiter;
    Admission(ClientLimiter* limiter, std::string client)
        : limiter_(limiter), client_(std::move(client)) {}
    ClientLimiter* limiter_ = nullptr;
    std::string client_;
  };

  // Admits one request of `client` at `now`, or RESOURCE_EXHAUSTED saying which limit it hit,
  // its value and the flag that sets it. A refused request takes no token and counts against
  // no limit; it is counted in refused_in_flight() or refused_rate().
  absl::StatusOr<Admission> Admit(std::string_view client, Clock::time_point now);

  bool enabled() const { return options_.max_in_flight > 0 || options_.rate > 0; }
  size_t tracked_clients() const;
  // Requests refused since the start: their client had max_in_flight in flight, or an empty
  // bucket.
  uint64_t refused_in_flight() const { return refused_in_flight_.load(); }
  uint64_t refused_rate() const { return refused_rate_.load(); }

 private:
  struct Entry {
    uint32_t in_flight = 0;
    double tokens = 0;
    Clock::time_point refilled;
  };
  void Done(const std::string& client);
  // Forgets idle entries; called with mu_ held when the table is over kMaxTrackedClients.
  void Sweep(Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ClientLimitOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> clients_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> refused_in_flight_{0}, refused_rate_{0};
};

}  // namespace coopd
