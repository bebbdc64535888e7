#include "server/cache/memory_cache.h"

#include <vector>

namespace coopd {

void MemoryCache::EraseLocked(Lru::iterator it) {
  bytes_ -= it->Size();
  index_.erase(it->key);
  lru_.erase(it);
}

absl::StatusOr<std::shared_ptr<const CacheValue>> MemoryCache::GetShared(const std::string& key,
                                                                         EntryMeta* attributes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return absl::NotFoundError("memory: no entry");
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++stats_.hits;
  if (attributes != nullptr) *attributes = it->second->meta;
  return it->second->value;
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
  Node node{key, std::move(value), meta};
  const uint64_t size = node.Size();
  // Evicted values are released after the lock is dropped (the last reference may free a large
  // blob, which need not happen under the mutex).
  std::vector<std::shared_ptr<const CacheValue>> released;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    released.push_back(it->second->value);
    EraseLocked(it->second);
  }
  if (size > budget_) return absl::OkStatus();  // would evict everything; keep the others
  while (bytes_ + size > budget_ && !lru_.empty()) {
    released.push_back(std::prev(lru_.end())->value);
    EraseLocked(std::prev(lru_.end()));
    ++stats_.evictions;
  }
  lru_.push_front(std::move(node));
  index_[key] = lru_.begin();
  bytes_ += size;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryCache::Purge(const CacheFilter& filter) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t removed = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (filter.Matches(it->meta)) {
      EraseLocked(it);
      ++removed;
    }
    it = next;
  }
  return removed;
}

TierStats MemoryCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  TierStats s = stats_;
  s.entries = index_.size();
  s.bytes = bytes_;
  s.raw_bytes = bytes_;
  s.budget_bytes = budget_;
  return s;
}

void MemoryCache::ZeroStats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = TierStats{};
}

}  // namespace coopd
