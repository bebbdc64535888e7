// memory_cache.h: in-process LRU tier bounded by a byte budget (keys, metas and blobs counted).
//
// Values larger than the budget are not stored. Purge with a filter drops exactly the entries
// the filter matches (entries promoted from the disk tier carry its attributes). Values are
// held as shared immutable objects: GetShared hands out the stored one and PutShared stores the
// caller's, so the one mutex is held for a lookup and a reference count, never a copy of the
// bytes (Get, for callers that want their own copy, copies after unlocking). Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "coop/lru.h"
#include "server/cache/cache.h"

namespace coopd {

class MemoryCache final : public CacheTier {
 public:
  explicit MemoryCache(uint64_t budget_bytes) : budget_(budget_bytes) {}
  const char* name() const override { return "memory"; }
  using CacheTier::Get;
  absl::StatusOr<CacheValue> Get(const std::string& key, EntryMeta* attributes) override;
  absl::Status Put(const std::string& key, const CacheValue& value, const EntryMeta& meta) override;
  absl::StatusOr<std::shared_ptr<const CacheValue>> GetShared(const std::string& key,
                                                              EntryMeta* attributes) override;
  absl::Status PutShared(const std::string& key, std::shared_ptr<const CacheValue> value,
                         const EntryMeta& meta) override;
  absl::StatusOr<uint64_t> Purge(const CacheFilter& filter) override;
  TierStats Stats() override;
  void ZeroStats() override;

 private:
  struct Held {
    std::shared_ptr<const CacheValue> value;
    EntryMeta meta;
  };

  const uint64_t budget_;
  std::mutex mu_;
  // Sized by key, meta and blob bytes; bounded by PutShared (a budget of 0 stores nothing).
  coop::Lru<Held> lru_ ABSL_GUARDED_BY(mu_){0, budget_};
  TierStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coopd
