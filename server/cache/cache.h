// cache.h: the cache-tier interface and the tiered cache in front of it.
//
// A value is split in two: `meta`, a small serialized message (an artifact without its LTO-IR,
// a link response without its cubin), and `blob`, the large payload. Tiers store both under a
// content-hash key; the disk tier stores blobs once per content digest (deduplicated) and
// zstd-compressed.
//
// Tiers: memory LRU (memory_cache.h), SQLite on local disk (sqlite_cache.h), and optionally the
// farm tier shared by replicas, Redis (remote_cache.h). TieredCache looks tiers up in order,
// promotes hits to the faster tiers, and writes new entries to every tier. A tier that fails to
// store keeps serving reads: the failure is counted and logged, never returned to the caller (who
// still gets the artifact).
//
// Thread safety: tiers and TieredCache are safe to call from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace coopd {

struct CacheValue {
  CacheValue() = default;
  CacheValue(std::string meta, std::string blob, std::string blob_sha256 = "")
      : meta(std::move(meta)), blob(std::move(blob)), blob_sha256(std::move(blob_sha256)) {}
  std::string meta;
  std::string blob;
  // Hex sha256 of `blob`, when known: TieredCache fills it in before storing in a tier that
  // holds shared values (the memory tier), so a hit knows its bytes' digest without hashing
  // them (digest-only replies). Not part of the stored record; empty otherwise.
  std::string blob_sha256;
};

// Searchable attributes stored beside a value (listing, maintenance, explain).
struct EntryMeta {
  std::string family;  // "block_reduce", "bundle", "link"
  std::string dtype;   // "" when not one dtype
  std::string arch;
  std::string request_digest;  // sha256 of the canonical request: finds other keys for it
  std::string components;      // serialized key components (coop.v1.KeyComponents)
};

// Selects entries for listing and purging; empty fields match everything.
struct CacheFilter {
  std::string family;
  std::string dtype;
  std::string arch;
  bool Matches(const EntryMeta& m) const {
    return (family.empty() || family == m.family) && (dtype.empty() || dtype == m.dtype) &&
           (arch.empty() || arch == m.arch);
  }
  bool empty() const { return family.empty() && dtype.empty() && arch.empty(); }
};

struct TierStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;      // stored (after compression and deduplication)
  uint64_t raw_bytes = 0;  // what the entries would take uncompressed, one copy per entry
  uint64_t budget_bytes = 0;
  uint64_t evictions = 0;
  uint64_t corruptions = 0;  // records that failed verification and were dropped
  uint64_t write_failures = 0;
  bool degraded = false;  // the last write failed: serving without storing
  bool evicting = false;  // over budget: the evictor is deleting entries now
};

class CacheTier {
 public:
  virtual ~CacheTier() = default;
  virtual const char* name() const = 0;
  // The value; NOT_FOUND when absent (or when a stored record failed verification: it is then
  // deleted and counted, never returned); another error when the tier cannot be read. When
  // `attributes` is not null it receives the entry's searchable attributes (family, dtype,
  // arch, request digest; not the key components), so a promotion keeps them.
  virtual absl::StatusOr<CacheValue> Get(const std::string& key, EntryMeta* attributes) = 0;
  absl::StatusOr<CacheValue> Get(const std::string& key) { return Get(key, nullptr); }
  virtual absl::Status Put(const std::string& key, const CacheValue& value,
                           const EntryMeta& meta) = 0;
  // The same as Get and Put with the value shared rather than copied: a tier that keeps values
  // in memory (MemoryCache) hands out and takes in the same immutable object, so a hit copies
  // nothing while it holds the tier's lock. The defaults move from and copy into Get and Put.
  virtual absl::StatusOr<std::shared_ptr<const CacheValue>> GetShared(const std::string& key,
                                                                      EntryMeta* attributes);
  virtual absl::Status PutShared(const std::string& key, std::shared_ptr<const CacheValue> value,
                                 const EntryMeta& meta) {
    return Put(key, *value, meta);
  }
  // Removes the entries the filter matches; returns how many. An error (never a count) when the
  // deletion could not run; entries removed before the error stay removed, and the message
  // says how many.
  virtual absl::StatusOr<uint64_t> Purge(const CacheFilter& filter) = 0;
  virtual TierStats Stats() = 0;
  virtual void ZeroStats() = 0;  // hit/miss/eviction/corruption/failure counters
};

enum class CacheOrigin { kMemory, kDisk, kRemote };

struct CacheHit {
  std::shared_ptr<const CacheValue> value;  // never null; shared with the memory tier
  CacheOrigin origin;
};

class TieredCache {
 public:
  // Tiers in lookup order, fastest first; each tier declares its origin.
  void AddTier(std::unique_ptr<CacheTier> tier, CacheOrigin origin);

  // A hit found in a slower tier is promoted into the faster ones with its blob's digest
  // (CacheValue::blob_sha256) filled in; a memory hit has it already.
  std::optional<CacheHit> Get(const std::string& key);
  // Stores in every tier (with the blob's digest, see Get); failures are counted per tier and
  // logged.
  void Put(const std::string& key, const CacheValue& value, const EntryMeta& meta);
  // Purges the slowest tier first, then the faster ones (so a failure leaves every tier as it
  // was or serving only what the slower tier still holds). Returns the count of the slowest
  // local tier, which holds every entry the faster ones do; the first tier's error otherwise.
  // The farm tier (kRemote) is shared by every replica and is not purged.
  absl::StatusOr<uint64_t> Purge(const CacheFilter& filter);

  struct NamedStats {
    std::string name;
    CacheOrigin origin;
    TierStats stats;
  };
  std::vector<NamedStats> Stats();
  void ZeroStats();

  // The tier with `origin`, or nullptr.
  CacheTier* tier(CacheOrigin origin);

 private:
  struct Tier {
    std::unique_ptr<CacheTier> tier;
    CacheOrigin origin;
  };
  std::vector<Tier> tiers_;  // fixed after start-up
};

}  // namespace coopd
