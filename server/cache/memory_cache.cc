#include "server/cache/memory_cache.h"

namespace coopd {

absl::StatusOr<std::string> MemoryCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return absl::NotFoundError("memory: no entry");
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++stats_.hits;
  return it->second->second;
}

absl::Status MemoryCache::Put(const std::string& key, const std::string& value,
                              const EntryMeta& /*meta*/) {
  const uint64_t size = key.size() + value.size();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->first.size() + it->second->second.size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  if (size > budget_) return absl::OkStatus();  // would evict everything; keep the others
  while (bytes_ + size > budget_ && !lru_.empty()) {
    auto& victim = lru_.back();
    bytes_ -= victim.first.size() + victim.second.size();
    index_.erase(victim.first);
    lru_.pop_back();
    ++stats_.evictions;
  }
  lru_.emplace_front(key, value);
  index_[key] = lru_.begin();
  bytes_ += size;
  return absl::OkStatus();
}

TierStats MemoryCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  TierStats s = stats_;
  s.entries = index_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace coopd
