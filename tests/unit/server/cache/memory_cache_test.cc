#include "server/cache/memory_cache.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

CacheValue Value(size_t meta, size_t blob) {
  return CacheValue{std::string(meta, 'm'), std::string(blob, 'b')};
}

TEST(MemoryCache, EvictsLeastRecentlyUsedWithinBudget) {
  // Each entry is 1-byte key + 9-byte meta + 90-byte blob = 100 bytes; the budget holds three.
  MemoryCache cache(300);
  ASSERT_TRUE(cache.Put("a", Value(9, 90), {}).ok());
  ASSERT_TRUE(cache.Put("b", Value(9, 90), {}).ok());
  ASSERT_TRUE(cache.Put("c", Value(9, 90), {}).ok());
  ASSERT_TRUE(cache.Get("a").ok());  // a is now the most recent; b the least
  ASSERT_TRUE(cache.Put("d", Value(9, 90), {}).ok());
  EXPECT_TRUE(absl::IsNotFound(cache.Get("b").status()));
  EXPECT_TRUE(cache.Get("a").ok());
  EXPECT_TRUE(cache.Get("c").ok());
  EXPECT_TRUE(cache.Get("d").ok());
  TierStats s = cache.Stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.bytes, 300u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.misses, 1u);
  cache.ZeroStats();
  EXPECT_EQ(cache.Stats().evictions, 0u);
  EXPECT_EQ(cache.Stats().entries, 3u) << "zeroing counters keeps the entries";
}

TEST(MemoryCache, OversizedValueIsNotStoredAndEvictsNothing) {
  MemoryCache cache(100);
  ASSERT_TRUE(cache.Put("a", Value(1, 4), {}).ok());
  ASSERT_TRUE(cache.Put("big", Value(0, 200), {}).ok());
  EXPECT_TRUE(absl::IsNotFound(cache.Get("big").status()));
  EXPECT_TRUE(cache.Get("a").ok());
}

TEST(MemoryCache, ReplacingAKeyKeepsAccountingExact) {
  MemoryCache cache(1000);
  ASSERT_TRUE(cache.Put("k", Value(2, 2), {}).ok());
  ASSERT_TRUE(cache.Put("k", Value(1, 1), {}).ok());
  EXPECT_EQ(cache.Stats().bytes, 3u);
  EXPECT_EQ(cache.Get("k")->blob, "b");
}

TEST(MemoryCache, PurgeByFilter) {
  MemoryCache cache(1000);
  ASSERT_TRUE(cache.Put("r", Value(1, 1), {"block_reduce", "float32", "sm_90", "", ""}).ok());
  ASSERT_TRUE(cache.Put("s", Value(1, 1), {"block_scan", "int32", "sm_90", "", ""}).ok());
  auto n = cache.Purge(CacheFilter{"block_scan", "", ""});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  EXPECT_TRUE(cache.Get("r").ok());
  EXPECT_FALSE(cache.Get("s").ok());
}

TEST(MemoryCache, SharedValuesAreHandedOutNotCopied) {
  MemoryCache cache(1000);
  auto value = std::make_shared<const CacheValue>("m", std::string(100, 'b'), "digest");
  ASSERT_TRUE(cache.PutShared("k", value, {}).ok());
  auto a = cache.GetShared("k", nullptr);
  auto b = cache.GetShared("k", nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), value.get()) << "the stored object itself, not a copy";
  EXPECT_EQ(b->get(), value.get());
  EXPECT_EQ((*a)->blob_sha256, "digest");
  // A value held by a reader outlives its eviction: replacing the entry does not touch it.
  ASSERT_TRUE(cache.Put("k", Value(1, 10), {}).ok());
  EXPECT_EQ((*a)->blob, std::string(100, 'b'));
  EXPECT_EQ(cache.Get("k")->blob, std::string(10, 'b'));
}

TEST(TieredCache, PromotionsAndStoresCarryTheBlobDigest) {
  TieredCache tiered;
  auto memory = std::make_unique<MemoryCache>(1 << 20);
  auto slow = std::make_unique<MemoryCache>(1 << 20);
  MemoryCache* slow_tier = slow.get();
  tiered.AddTier(std::move(memory), CacheOrigin::kMemory);
  tiered.AddTier(std::move(slow), CacheOrigin::kDisk);
  // An entry only the slower tier has, without a digest: the hit promotes it with one.
  ASSERT_TRUE(slow_tier->Put("k", CacheValue("m", "abc"), {}).ok());
  auto hit = tiered.Get("k");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->origin, CacheOrigin::kDisk);
  const std::string abc_sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  EXPECT_EQ(hit->value->blob_sha256, abc_sha256);
  auto again = tiered.Get("k");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->origin, CacheOrigin::kMemory);
  EXPECT_EQ(again->value->blob_sha256, abc_sha256);
  tiered.Put("n", CacheValue("m", "abc"), {});
  EXPECT_EQ(tiered.Get("n")->value->blob_sha256, abc_sha256);
}

}  // namespace
}  // namespace coopd
