#include "server/cache/cache.h"

#include <spdlog/spdlog.h>

#include "server/util/sha256.h"
#include "server/util/strings.h"

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

absl::StatusOr<std::shared_ptr<const CacheValue>> CacheTier::GetShared(const std::string& key,
                                                                       EntryMeta* attributes) {
  auto value = Get(key, attributes);
  if (!value.ok()) return value.status();
  return std::make_shared<const CacheValue>(std::move(*value));
}

std::optional<CacheHit> TieredCache::Get(const std::string& key) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    EntryMeta attributes;
    absl::StatusOr<std::shared_ptr<const CacheValue>> value;
    if (i == 0) {
      value = tiers_[i].tier->GetShared(key, nullptr);
    } else if (auto own = tiers_[i].tier->Get(key, &attributes); own.ok()) {
      // A slower tier's value is this lookup's own: its digest is added before it is shared.
      if (own->blob_sha256.empty()) own->blob_sha256 = Sha256::Hex(own->blob);
      value = std::make_shared<const CacheValue>(std::move(*own));
    } else {
      value = own.status();
    }
    if (value.ok()) {
      // Promote into the faster tiers so the next lookup stops earlier; with the attributes,
      // so a filtered purge of a faster tier still knows what the entry is.
      for (size_t j = 0; j < i; ++j) {
        absl::Status s = tiers_[j].tier->PutShared(key, *value, attributes);
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
  auto shared = std::make_shared<CacheValue>(value);
  if (shared->blob_sha256.empty()) shared->blob_sha256 = Sha256::Hex(shared->blob);
  for (auto& t : tiers_) {
    // Failures are counted and logged by the tier itself (it knows when it degrades and
    // recovers); the caller is served either way.
    t.tier->PutShared(key, shared, meta).IgnoreError();
  }
}

absl::StatusOr<uint64_t> TieredCache::Purge(const CacheFilter& filter) {
  uint64_t slowest = 0;
  // The farm tier is shared by every replica: one replica's purge does not empty it (its
  // entries age out by TTL and Redis eviction). The count is the slowest local tier's.
  size_t last_local = tiers_.size();
  for (size_t i = tiers_.size(); i-- > 0;) {
    if (tiers_[i].origin == CacheOrigin::kRemote) continue;
    if (last_local == tiers_.size()) last_local = i;
    auto n = tiers_[i].tier->Purge(filter);
    if (!n.ok()) {
      spdlog::warn("cache: purge of the {} tier failed: {}", tiers_[i].tier->name(),
                   std::string(n.status().message()));
      return absl::Status(n.status().code(),
                          StrCat(tiers_[i].tier->name(), " tier: ", n.status().message()));
    }
    if (i == last_local) slowest = *n;
  }
  return slowest;
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
