#include "server/cache/cache.h"

#include <spdlog/spdlog.h>

namespace coopd {

void TieredCache::AddTier(std::unique_ptr<CacheTier> tier, CacheOrigin origin) {
  tiers_.push_back({std::move(tier), origin});
}

CacheTier* TieredCache::tier(CacheOrigin origin) {
  for (auto& t : tiers_) {
    if (t.origin == origin) return t.tier.get();
  }
  return nullptr;
}

std::optional<CacheHit> TieredCache::Get(const std::string& key) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    auto value = tiers_[i].tier->Get(key);
    if (value.ok()) {
      // Promote into the faster tiers so the next lookup stops earlier.
      for (size_t j = 0; j < i; ++j) {
        absl::Status s = tiers_[j].tier->Put(key, *value, EntryMeta{});
        if (!s.ok()) {
          spdlog::warn("cache: promoting {} into {} failed: {}", key.substr(0, 16),
                       tiers_[j].tier->name(), std::string(s.message()));
        }
      }
      return CacheHit{std::move(*value), tiers_[i].origin};
    }
    if (!absl::IsNotFound(value.status())) {
      spdlog::warn("cache: {} tier read failed for {}: {}", tiers_[i].tier->name(),
                   key.substr(0, 16), std::string(value.status().message()));
    }
  }
  return std::nullopt;
}

void TieredCache::Put(const std::string& key, const CacheValue& value, const EntryMeta& meta) {
  for (auto& t : tiers_) {
    // Failures are counted and logged by the tier itself (it knows when it degrades and
    // recovers); the caller is served either way.
    t.tier->Put(key, value, meta).IgnoreError();
  }
}

uint64_t TieredCache::Purge(const CacheFilter& filter) {
  uint64_t most = 0;
  for (auto& t : tiers_) {
    auto n = t.tier->Purge(filter);
    if (n.ok()) {
      most = std::max(most, *n);
    } else {
      spdlog::warn("cache: purge of the {} tier failed: {}", t.tier->name(),
                   std::string(n.status().message()));
    }
  }
  return most;
}

std::vector<TieredCache::NamedStats> TieredCache::Stats() {
  std::vector<NamedStats> out;
  for (auto& t : tiers_) out.push_back({t.tier->name(), t.origin, t.tier->Stats()});
  return out;
}

void TieredCache::ZeroStats() {
  for (auto& t : tiers_) t.tier->ZeroStats();
}

}  // namespace coopd
