// memory_cache.h: in-process LRU tier bounded by a byte budget.
//
// Values larger than the budget are not stored. Thread-safe (one mutex).
#pragma once

#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "server/cache/cache.h"

namespace coopd {

class MemoryCache final : public CacheTier {
 public:
  explicit MemoryCache(uint64_t budget_bytes) : budget_(budget_bytes) {}
  const char* name() const override { return "memory"; }
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, const std::string& value,
                   const EntryMeta& meta) override;
  TierStats Stats() override;

 private:
  using Lru = std::list<std::pair<std::string, std::string>>;  // front = most recent
  const uint64_t budget_;
  std::mutex mu_;
  Lru lru_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, Lru::iterator> index_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  TierStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coopd
