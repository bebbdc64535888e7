// coop/stats.h: the daemon's counters and state (Client::GetStats, ResetStats): compile engine,
// cache tiers, farm tier, listeners, tuning tables; and the health service's statuses
// (Client::Health). Part of the public API; coop/client.h includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coop/artifact.h"
#include "coop/catalog.h"

namespace coop {

struct WorkerStatus {
  int pid = 0;
  bool busy = false;
  uint64_t jobs = 0;
  std::string header_set;
};

struct TierStats {
  std::string name;  // "memory", "disk"
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;      // stored (compressed, deduplicated)
  uint64_t raw_bytes = 0;  // uncompressed
  uint64_t budget_bytes = 0;
  uint64_t evictions = 0;
  uint64_t corruptions = 0;
  uint64_t write_failures = 0;
  bool degraded = false;  // the last write failed: compiling without caching
  bool evicting = false;  // over budget: the evictor is deleting least recently used entries
};

// The farm tier (coopd --remote-cache): see coop.v1.RemoteTierStats for each counter.
struct RemoteTierStats {
  bool configured = false;  // false: coopd runs without a farm tier
  std::string url;          // password redacted
  bool cluster = false;
  bool read_only = false;
  bool healthy = false;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t errors = 0;
  uint64_t timeouts = 0;
  uint64_t reconnects = 0;
  uint64_t corruptions = 0;
  uint64_t writes = 0;
  uint64_t write_failures = 0;
  uint64_t writes_skipped = 0;
  uint64_t writes_dropped = 0;
  uint64_t redirects = 0;
  uint64_t slot_refreshes = 0;
  uint64_t leases_acquired = 0;
  uint64_t lease_waits = 0;
  uint64_t lease_wait_hits = 0;
  uint64_t lease_wait_timeouts = 0;
  uint64_t lease_takeovers = 0;
  uint64_t leases_lost = 0;
};

// One address coopd serves on (coop.v1.Listener): how it is protected.
struct Listener {
  std::string address;  // "unix:/run/coopd/coopd.sock", "tcp 0.0.0.0:7070"
  bool tls = false;
  bool client_certificates = false;  // mTLS (coopd --tls-client-ca)
  bool tokens = false;               // calls need a bearer token
  bool insecure = false;             // plaintext or unauthenticated TCP (coopd --insecure)
  std::string mode;                  // the Unix socket's: "0600", "0660 group coopd"
};

struct Stats {
  uint64_t requests = 0;
  uint64_t invalid_requests = 0;
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;
  uint64_t compiles = 0;
  uint64_t compile_failures = 0;
  double compile_ms_total = 0;
  uint64_t memory_entries = 0;
  uint64_t memory_bytes = 0;
  uint64_t disk_entries = 0;
  uint64_t disk_bytes = 0;
  uint64_t disk_write_failures = 0;
  double uptime_s = 0;
  Toolchain toolchain;
  std::string cache_path;
  // Compile engine.
  uint64_t pch_warm_compiles = 0;
  uint64_t joined_requests = 0;
  uint64_t worker_restarts = 0;
  uint64_t worker_crashes = 0;
  uint64_t compile_timeouts = 0;
  uint64_t queue_depth = 0;
  uint32_t workers = 0;
  uint32_t workers_busy = 0;
  double compile_ms_p50 = 0;
  double compile_ms_p90 = 0;
  double compile_ms_p99 = 0;
  std::vector<WorkerStatus> worker_status;
  uint64_t links = 0;
  uint64_t link_failures = 0;
  uint64_t link_hits = 0;
  uint64_t bundles = 0;
  std::vector<TierStats> tiers;
  uint64_t corruptions = 0;
  uint64_t evictions = 0;
  bool cache_degraded = false;
  uint64_t bitcode_compiles = 0;  // clang compiles (also counted in `compiles`)
  uint64_t remote_hits = 0;       // served from the farm tier
  RemoteTierStats remote;
  std::vector<Listener> listeners;
  uint64_t unauthenticated_calls = 0;  // refused: no bearer token or an unknown one
  uint64_t denied_calls = 0;           // refused: the token's role lacks what the call needs
  // Refused by the per-client limits (--client-max-in-flight, --client-rate), and requests that
  // did not decode or were over --max-message-mb.
  uint64_t client_in_flight_refusals = 0;
  uint64_t client_rate_refusals = 0;
  uint64_t undecodable_requests = 0;
  uint64_t oversized_requests = 0;
  // Requests whose caller cancelled (or whose deadline passed) while they waited for a compile,
  // and compiles and links stopped because no caller waited any more (dropped from the queue,
  // or their worker killed and restarted).
  uint64_t requests_cancelled = 0;
  uint64_t compiles_cancelled = 0;
  // Compiles refused by the per-client quotas (--quota-compiles-per-minute,
  // --quota-cache-mb-per-hour).
  uint64_t quota_compile_refusals = 0;
  uint64_t quota_bytes_refusals = 0;
  // The tuning tables algorithm "auto" reads (docs/tuning.md) and their combined digest.
  struct TuningTable {
    std::string arch, version, digest, source, device;
    uint32_t cells = 0;
    bool placeholder = false;  // not measured
  };
  std::vector<TuningTable> tuning_tables;
  std::string tuning_digest;
  uint64_t auto_resolutions = 0;  // specs that asked for "auto"
  // The hit path: requests whose keys came from coopd's request memo (or did not), its size
  // and evictions; replies that left out bytes the client held, and how many bytes in all.
  uint64_t memo_hits = 0;
  uint64_t memo_misses = 0;
  uint64_t memo_entries = 0;
  uint64_t memo_evictions = 0;
  uint64_t digest_only_replies = 0;
  uint64_t bytes_omitted = 0;
  // Every CCCL the daemon compiles against, the default first (as Catalog::cccls).
  std::vector<CcclInfo> cccls;
};

// A status of the standard gRPC health service (grpc.health.v1.HealthCheckResponse's values).
enum class HealthStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// "SERVING", "NOT_SERVING", ...
const char* HealthStatusName(HealthStatus status);

}  // namespace coop
