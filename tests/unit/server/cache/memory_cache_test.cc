#include "server/cache/memory_cache.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

TEST(MemoryCache, EvictsLeastRecentlyUsedWithinBudget) {
  // Each entry is 1-byte key + 99-byte value = 100 bytes; the budget holds three.
  MemoryCache cache(300);
  const std::string v(99, 'x');
  ASSERT_TRUE(cache.Put("a", v, {}).ok());
  ASSERT_TRUE(cache.Put("b", v, {}).ok());
  ASSERT_TRUE(cache.Put("c", v, {}).ok());
  ASSERT_TRUE(cache.Get("a").ok());  // a is now the most recent; b the least
  ASSERT_TRUE(cache.Put("d", v, {}).ok());
  EXPECT_TRUE(absl::IsNotFound(cache.Get("b").status()));
  EXPECT_TRUE(cache.Get("a").ok());
  EXPECT_TRUE(cache.Get("c").ok());
  EXPECT_TRUE(cache.Get("d").ok());
  TierStats s = cache.Stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.bytes, 300u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.misses, 1u);
}

TEST(MemoryCache, OversizedValueIsNotStoredAndEvictsNothing) {
  MemoryCache cache(100);
  ASSERT_TRUE(cache.Put("a", "small", {}).ok());
  ASSERT_TRUE(cache.Put("big", std::string(200, 'x'), {}).ok());
  EXPECT_TRUE(absl::IsNotFound(cache.Get("big").status()));
  EXPECT_TRUE(cache.Get("a").ok());
}

TEST(MemoryCache, ReplacingAKeyKeepsAccountingExact) {
  MemoryCache cache(1000);
  ASSERT_TRUE(cache.Put("k", "1234", {}).ok());
  ASSERT_TRUE(cache.Put("k", "12", {}).ok());
  EXPECT_EQ(cache.Stats().bytes, 3u);
  EXPECT_EQ(*cache.Get("k"), "12");
}

}  // namespace
}  // namespace coopd
