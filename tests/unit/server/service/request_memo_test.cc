#include "server/service/request_memo.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

TEST(RequestMemo, RemembersExactRequestsAndEvictsTheLeastRecentBeyondCapacity) {
  RequestMemo memo(2);
  EXPECT_FALSE(memo.Find("a"));
  memo.Remember("a", {"ka", "", "a", {}});
  memo.Remember("b", {"kb", "kb2", "b", {}});
  auto a = memo.Find("a");  // a is now the most recent: c evicts b
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ltoir_key, "ka");
  EXPECT_FALSE(memo.Find("a ")) << "only the exact bytes find an entry";
  memo.Remember("c", {"kc", "", "c", {}});
  EXPECT_FALSE(memo.Find("b"));
  ASSERT_TRUE(memo.Find("c"));
  EXPECT_EQ(memo.Find("a")->ltoir_key, "ka");
  RequestMemo::Counters c = memo.Stats();
  EXPECT_EQ(c.entries, 2u);
  EXPECT_EQ(c.evictions, 1u);
  EXPECT_EQ(c.hits, 3u);
  EXPECT_EQ(c.misses, 3u);
  memo.ZeroStats();
  EXPECT_EQ(memo.Stats().hits, 0u);
  EXPECT_EQ(memo.Stats().entries, 2u) << "zeroing counters keeps the entries";
}

TEST(RequestMemo, RememberingAgainReplacesTheEntry) {
  RequestMemo memo(4);
  memo.Remember("a", {"old", "", "a", {}});
  memo.Remember("a", {"new", "", "a", {}});
  EXPECT_EQ(memo.Find("a")->ltoir_key, "new");
  EXPECT_EQ(memo.Stats().entries, 1u);
}

TEST(RequestMemo, CapacityZeroRemembersNothing) {
  RequestMemo memo(0);
  EXPECT_FALSE(memo.enabled());
  memo.Remember("a", {"ka", "", "a", {}});
  EXPECT_FALSE(memo.Find("a"));
  EXPECT_EQ(memo.Stats().entries, 0u);
}

}  // namespace
}  // namespace coopd
