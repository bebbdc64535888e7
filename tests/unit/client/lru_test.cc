// client/include/coop/lru.h: the one LRU map coopd's memory tier, its request memo and the
// client's artifact cache share. Each limit is checked alone and together, with what the map
// hands back for the caller to free.
#include "coop/lru.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coop {
namespace {

TEST(Lru, EvictsTheLeastRecentlyUsedBeyondTheEntryLimit) {
  Lru<int> lru(2, 0);
  EXPECT_EQ(lru.Put("a", 1, 0), 0u);
  EXPECT_EQ(lru.Put("b", 2, 0), 0u);
  ASSERT_NE(lru.Find("a"), nullptr);  // "a" is now the most recent; "b" goes next
  std::vector<int> removed;
  EXPECT_EQ(lru.Put("c", 3, 0, &removed), 1u);
  EXPECT_EQ(removed, std::vector<int>{2});
  EXPECT_EQ(lru.Find("b"), nullptr);
  ASSERT_NE(lru.Find("a"), nullptr);
  EXPECT_EQ(*lru.Find("a"), 1);
  EXPECT_EQ(*lru.Find("c"), 3);
  EXPECT_EQ(lru.size(), 2u);
}

TEST(Lru, EvictsUntilTheBytesFitAndNeverStoresAValueOverTheBudget) {
  Lru<std::string> lru(0, 10);
  lru.Put("a", "aaaa", 4);
  lru.Put("b", "bbbb", 4);
  EXPECT_EQ(lru.bytes(), 8u);
  std::vector<std::string> removed;
  EXPECT_EQ(lru.Put("c", "cccccc", 6, &removed), 1u);  // 8 + 6 > 10: "a" goes, 4 + 6 fits
  EXPECT_EQ(removed, std::vector<std::string>{"aaaa"});
  EXPECT_EQ(lru.bytes(), 10u);
  removed.clear();
  // Too large for the whole budget: not stored, and nothing else is evicted for it; the value
  // it would have replaced is dropped.
  EXPECT_EQ(lru.Put("b", "x", 11, &removed), 0u);
  EXPECT_EQ(removed, std::vector<std::string>{"bbbb"});
  EXPECT_EQ(lru.Find("b"), nullptr);
  ASSERT_NE(lru.Find("c"), nullptr);
  EXPECT_EQ(lru.bytes(), 6u);
}

TEST(Lru, ReplacingAKeyFreesItsOldValueAndCountsNoEviction) {
  Lru<std::string> lru(2, 100);
  lru.Put("a", "old", 3);
  lru.Put("b", "b", 1);
  std::vector<std::string> removed;
  EXPECT_EQ(lru.Put("a", "newer", 5, &removed), 0u);
  EXPECT_EQ(removed, std::vector<std::string>{"old"});
  EXPECT_EQ(*lru.Find("a"), "newer");
  EXPECT_EQ(lru.size(), 2u);
  EXPECT_EQ(lru.bytes(), 6u);
}

TEST(Lru, BothLimitsHoldAtOnce) {
  Lru<int> lru(3, 10);
  lru.Put("a", 1, 5);
  lru.Put("b", 2, 1);
  lru.Put("c", 3, 1);
  EXPECT_EQ(lru.Put("d", 4, 1), 1u);  // the entry limit: "a" goes
  EXPECT_EQ(lru.Find("a"), nullptr);
  EXPECT_EQ(lru.Put("e", 5, 9), 2u);  // 3 + 9 > 10 with 3 entries: "b" and "c" go
  EXPECT_EQ(lru.size(), 2u);
  EXPECT_EQ(lru.bytes(), 10u);
}

TEST(Lru, EraseIfDropsExactlyTheMatchingEntries) {
  Lru<int> lru(0, 0);
  for (int i = 0; i < 6; ++i) lru.Put("k" + std::to_string(i), i, 1);
  std::vector<int> removed;
  EXPECT_EQ(lru.EraseIf([](const std::string&, const int& v) { return v % 2 == 0; }, &removed), 3u);
  EXPECT_EQ(lru.size(), 3u);
  EXPECT_EQ(lru.bytes(), 3u);
  EXPECT_EQ(lru.Find("k2"), nullptr);
  EXPECT_NE(lru.Find("k3"), nullptr);
  EXPECT_TRUE(lru.Erase("k3"));
  EXPECT_FALSE(lru.Erase("k3"));
  EXPECT_EQ(lru.size(), 2u);
}

}  // namespace
}  // namespace coop
