// cache.h: the cache-tier interface and the tiered cache in front of it.
//
// A tier stores opaque values (serialized artifacts) under content-hash keys. Tiers: memory LRU
// (memory_cache.h), SQLite on local disk (sqlite_cache.h), later a shared tier for build farms.
// TieredCache looks tiers up in order, promotes hits to the faster tiers, and writes new entries
// to every tier. A tier that fails to store keeps serving reads: a write failure is counted and
// logged, never returned to the caller (the caller still gets its artifact).
//
// Thread safety: tiers and TieredCache are safe to call from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coopd {

// Searchable attributes stored beside a value (for listing and maintenance).
struct EntryMeta {
  std::string family;
  std::string dtype;
  std::string arch;
};

struct TierStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t write_failures = 0;
  uint64_t corruptions = 0;  // records that failed verification and were dropped
  uint64_t evictions = 0;
};

class CacheTier {
 public:
  virtual ~CacheTier() = default;
  virtual const char* name() const = 0;
  // The value, NOT_FOUND when absent (or when a stored record failed verification: it is then
  // deleted and counted, never returned), or another error when the tier cannot be read.
  virtual absl::StatusOr<std::string> Get(const std::string& key) = 0;
  virtual absl::Status Put(const std::string& key, const std::string& value,
                           const EntryMeta& meta) = 0;
  virtual TierStats Stats() = 0;
};

enum class CacheOrigin { kMemory, kDisk, kRemote };

struct CacheHit {
  std::string value;
  CacheOrigin origin;
};

class TieredCache {
 public:
  // Tiers in lookup order, fastest first; each tier declares its origin.
  void AddTier(std::unique_ptr<CacheTier> tier, CacheOrigin origin);

  std::optional<CacheHit> Get(const std::string& key);
  // Stores in every tier; failures are counted per tier (TierStats::write_failures) and logged.
  void Put(const std::string& key, const std::string& value, const EntryMeta& meta);

  struct NamedStats {
    std::string name;
    CacheOrigin origin;
    TierStats stats;
  };
  std::vector<NamedStats> Stats();

 private:
  struct Tier {
    std::unique_ptr<CacheTier> tier;
    CacheOrigin origin;
  };
  std::vector<Tier> tiers_;  // fixed after start-up
};

}  // namespace coopd
