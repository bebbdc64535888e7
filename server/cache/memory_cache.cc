#include "server/cache/memory_cache.h"

#include <vector>

namespace coopd {

absl::StatusOr<std::shared_ptr<const CacheValue>> MemoryCache::GetShared(const std::string& key,
                                                                         EntryMeta* attributes) {
  std::lock_guard<std::mutex> lock(mu_);
  const Held* held = lru_.Find(key);
  if (held == nullptr) {
    ++stats_.misses;
    return absl::NotFoundError("memory: no entry");
  }
  ++stats_.hits;
  if (attributes != nullptr) *attributes = held->meta;
  return held->value;
}

absl::StatusOr<CacheValue> MemoryCache::Get(const std::string& key, EntryMeta* attributes) {
  auto shared = GetShared(key, attributes);
  if (!shared.ok()) return shared.status();
  return **shared;  // copied here, outside the lock
}

absl::Status MemoryCache::Put(const std::string& key, const CacheValue& value,
                              const EntryMeta& meta) {
  return PutShared(key, std::make_shared<const CacheValue>(value), meta);
}

absl::Status MemoryCache::PutShared(const std::string& key, std::shared_ptr<const CacheValue> value,
                                    const EntryMeta& meta) {
  const uint64_t size = key.size() + value->meta.size() + value->blob.size();
  // Evicted values are released after the lock is dropped (the last reference may free a large
  // blob, which need not happen under the mutex).
  std::vector<Held> released;
  std::lock_guard<std::mutex> lock(mu_);
  if (size > budget_) {  // would evict everything; keep the others
    lru_.Erase(key, &released);
    return absl::OkStatus();
  }
  stats_.evictions += lru_.Put(key, Held{std::move(value), meta}, size, &released);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryCache::Purge(const CacheFilter& filter) {
  std::vector<Held> released;
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.EraseIf(
      [&](const std::string&, const Held& held) { return filter.Matches(held.meta); }, &released);
}

TierStats MemoryCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  TierStats s = stats_;
  s.entries = lru_.size();
  s.bytes = lru_.bytes();
  s.raw_bytes = lru_.bytes();
  s.budget_bytes = budget_;
  return s;
}

void MemoryCache::ZeroStats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = TierStats{};
}

}  // namespace coopd
