// Unit tests of server/service/client_quotas.h, with the clock passed in: a client's compiles
// per minute and cache bytes per hour, refusals that name the quota and when it resets, other
// clients unaffected, windows that reset.
#include "server/service/client_quotas.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

using namespace std::chrono_literals;
using Clock = ClientQuotas::Clock;

TEST(ClientQuotas, OffByDefault) {
  ClientQuotas q({});
  EXPECT_FALSE(q.enabled());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(q.TakeCompile("token:ci", Clock::now()).ok());
}

TEST(ClientQuotas, TheCompileAfterTheQuotaIsRefusedUntilTheMinuteEnds) {
  ClientQuotas q({.compiles_per_minute = 3});
  const Clock::time_point t0{};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.TakeCompile("token:ci", t0 + i * 1s).ok());
  absl::Status s = q.TakeCompile("token:ci", t0 + 20s);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("client \"token:ci\" has started 3 compiles this minute"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--quota-compiles-per-minute 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("resets in 40 s"), std::string::npos) << s.message();
  EXPECT_EQ(q.refused_compiles(), 1u);
  EXPECT_TRUE(q.TakeCompile("token:other", t0 + 20s).ok()) << "another client is unaffected";
  // A compile given back (the request joined another's) frees its place.
  q.ReturnCompile("token:ci");
  EXPECT_TRUE(q.TakeCompile("token:ci", t0 + 21s).ok());
  EXPECT_FALSE(q.TakeCompile("token:ci", t0 + 59s).ok());
  EXPECT_TRUE(q.TakeCompile("token:ci", t0 + 60s).ok()) << "a new window";
}

TEST(ClientQuotas, BytesOverTheHourlyQuotaRefuseTheNextCompile) {
  ClientQuotas q({.cache_bytes_per_hour = 1000});
  const Clock::time_point t0{};
  ASSERT_TRUE(q.TakeCompile("token:ci", t0).ok());
  q.ChargeBytes("token:ci", 600, t0 + 1s);
  ASSERT_TRUE(q.TakeCompile("token:ci", t0 + 2s).ok()) << "under the quota: one more may run";
  q.ChargeBytes("token:ci", 600, t0 + 3s);  // past it: the compile that ran is not undone
  absl::Status s = q.TakeCompile("token:ci", t0 + 10s);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("has inserted 1200 bytes into the cache this hour"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("resets in 3591 s"), std::string::npos) << s.message();
  EXPECT_EQ(q.refused_bytes(), 1u);
  EXPECT_TRUE(q.TakeCompile("token:other", t0 + 10s).ok());
  EXPECT_TRUE(q.TakeCompile("token:ci", t0 + 1s + 3600s).ok()) << "a new hour";
}

TEST(ClientQuotas, TheTableForgetsClientsWhoseWindowsRanOut) {
  ClientQuotas q({.compiles_per_minute = 1});
  const Clock::time_point t0{};
  for (size_t i = 0; i <= ClientQuotas::kMaxTrackedClients; ++i) {
    ASSERT_TRUE(q.TakeCompile("unix:c" + std::to_string(i), t0).ok());
  }
  ASSERT_TRUE(q.TakeCompile("unix:late", t0 + 61s).ok());
  EXPECT_LE(q.tracked_clients(), 2u);
}

}  // namespace
}  // namespace coopd
