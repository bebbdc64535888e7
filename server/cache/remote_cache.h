// remote_cache.h: the farm tier, a Redis (standalone or Cluster) shared by coopd replicas,
// behind the CacheTier interface after the memory and disk tiers.
//
// Entries: one Redis string per key, `<prefix>:{<key>}:e`, holding a verified record
// (record.h: magic, version, SHA-256, zstd) whose payload frames the meta, the blob and the
// entry's attributes. A value that fails verification is never served: it is counted
// (`corruptions`) and deleted from Redis (only if it is still the same bad value, so a good
// one written meanwhile survives; a read-only replica deletes nothing). Entries expire after
// the configured TTL (0: never); size Redis with allkeys-lru (docs/farm.md).
//
// Fail open: every command is bounded (redis_client.h). A failed or timed-out read is a miss,
// a failed write is counted; nothing is returned to the caller as an error, so no request fails
// because of this tier. Purge does not reach Redis (one replica must not empty the farm's
// cache): it returns 0; the farm's entries age out by TTL and eviction, or under a new prefix.
//
// Distributed single-flight: Coordinate() decides whether this replica compiles a key or waits
// for another's compile, through a lease `<prefix>:{<key>}:l` (SET NX PX lease_ttl) whose owner
// renews it every lease_ttl/3 (a heartbeat thread) and deletes it after storing the entry (or
// failing). A waiter polls every 50 ms; when the entry appears it is served, when the lease
// vanishes without an entry (its owner died or failed) the waiter takes the lease, and past
// lease_wait it compiles by itself. A read-only replica takes no lease: it waits while another
// holds one, else compiles by itself without storing.
//
// Thread-safe. Write policy async: Put queues the write (at most 256 queued; more are dropped
// and counted) for a writer thread, which also releases leases in order after their entries.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "server/cache/cache.h"
#include "server/cache/redis_client.h"
#include "server/cache/remote_config.h"

namespace coopd {

struct RemoteStats {
  std::string url;  // redacted
  bool cluster = false;
  bool read_only = false;
  RedisClientStats client;
  uint64_t hits = 0, misses = 0, corruptions = 0;
  uint64_t writes = 0, write_failures = 0, writes_skipped = 0, writes_dropped = 0;
  uint64_t leases_acquired = 0;      // this replica compiled under a lease
  uint64_t lease_waits = 0;          // requests that waited for another replica's compile
  uint64_t lease_wait_hits = 0;      // ... and were served its entry
  uint64_t lease_wait_timeouts = 0;  // ... and compiled by themselves past lease_wait
  uint64_t lease_takeovers = 0;      // leases taken after the previous owner's vanished
  uint64_t leases_lost = 0;          // a heartbeat found the lease gone or someone else's
};

class RemoteCache final : public CacheTier {
 public:
  // Connects lazily: a Redis that is down at start is a tier that is down, not an error.
  explicit RemoteCache(RemoteCacheConfig config);
  ~RemoteCache() override;

  const char* name() const override { return "remote"; }
  using CacheTier::Get;
  absl::StatusOr<CacheValue> Get(const std::string& key, EntryMeta* attributes) override;
  absl::Status Put(const std::string& key, const CacheValue& value, const EntryMeta& meta) override;
  absl::StatusOr<uint64_t> Purge(const CacheFilter& filter) override;
  TierStats Stats() override;
  void ZeroStats() override;

  enum class Turn {
    kReady,    // another replica stored the entry: look it up
    kCompile,  // compile it here; `lease` is the token to Release() after storing ("" if none)
  };
  using TurnDone = std::function<void(Turn turn, const std::string& lease)>;
  // Calls `done` exactly once: on this thread when the answer is immediate, else on the lease
  // thread. With lease_wait 0 it is always kCompile without a lease.
  void Coordinate(const std::string& key, TurnDone done);
  // Deletes the lease if it is still `lease`'s (after the entry's write, under write=async).
  void Release(const std::string& key, const std::string& lease);
  // Shutdown: every waiting request compiles now (and so finishes within the shutdown grace or
  // is cancelled with its compile), and later Coordinate calls answer kCompile at once.
  void AbandonWaits();

  RemoteStats remote_stats();
  // Pings every seed node once (for the start-up log line); the first failure.
  absl::Status Ping();
  const RemoteCacheConfig& config() const { return client_.config(); }

 private:
  std::string EntryKey(const std::string& key) const;
  std::string LeaseKey(const std::string& key) const;
  void Write(const std::string& key, const std::string& record);
  void Enqueue(std::function<void()> op);
  // 2: the entry exists; 1: this replica now holds the lease `token`; 0: another holds it;
  // 3 (read-only): nobody holds it. An error when Redis cannot tell.
  absl::StatusOr<int> Poll(const std::string& key, const std::string& token);
  void LeaseLoop();
  void WriterLoop();

  RedisClient client_;
  const std::string instance_;  // this process's lease-token prefix

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool abandoned_ ABSL_GUARDED_BY(mu_) = false;
  struct Waiter {
    std::string key;
    std::chrono::steady_clock::time_point deadline;
    TurnDone done;
  };
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> held_ ABSL_GUARDED_BY(mu_);  // key -> lease token
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);  // write=async

  std::atomic<uint64_t> hits_{0}, misses_{0}, corruptions_{0}, writes_{0}, write_failures_{0},
      writes_skipped_{0}, writes_dropped_{0}, leases_acquired_{0}, lease_waits_{0},
      lease_wait_hits_{0}, lease_wait_timeouts_{0}, lease_takeovers_{0}, leases_lost_{0};
  std::thread lease_thread_;
  std::thread writer_thread_;  // write=async only
};

}  // namespace coopd
