// ParseHostPort: the one reader of HOST:PORT behind --listen, --metrics and the Redis URLs;
// ParseReportedHostPort: the addresses Redis Cluster and gRPC report.
#include "server/util/host_port.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

TEST(HostPort, ReadsHostsPortsAndBracketedIpv6) {
  auto a = ParseHostPort("127.0.0.1:7070");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7070);
  EXPECT_EQ(a->Bare(), "127.0.0.1");
  auto b = ParseHostPort("[::1]:9464");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "[::1]");
  EXPECT_EQ(b->Bare(), "::1");
  EXPECT_EQ(b->port, 9464);
  auto c = ParseHostPort("redis.local:0");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->port, 0);  // the caller decides what 0 means
  auto d = ParseHostPort("redis.local:65535");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, 65535);
}

TEST(HostPort, APortIsOptionalOnlyWhenAsked) {
  EXPECT_FALSE(ParseHostPort("redis.local"));
  EXPECT_FALSE(ParseHostPort("[::1]"));
  auto a = ParseHostPort("redis.local", /*port_optional=*/true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "redis.local");
  EXPECT_EQ(a->port, -1);
  auto b = ParseHostPort("[fe80::1]", /*port_optional=*/true);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->Bare(), "fe80::1");
  EXPECT_EQ(b->port, -1);
}

TEST(HostPort, RefusesWhatIsNotOneAddress) {
  for (const char* bad : {"", ":7070", "host:", "host:-1", "host:+1", "host:65536", "host:1234567",
                          "host:70x", "::1:7070", "a:b:7070", "[::1", "[]:1", "[::1]x",
                          "[::1]:", "[[::1]]:1", "ho]st:1", "host:7070 ", " host:7070"}) {
    EXPECT_FALSE(ParseHostPort(bad)) << bad;
    EXPECT_FALSE(ParseHostPort(bad, /*port_optional=*/true)) << bad;
  }
}

TEST(HostPort, ReadsWhatPeersReportWithIpv6Unbracketed) {
  struct Case {
    const char* text;
    const char* host;
    const char* bare;
    int port;
  };
  for (const Case& c :
       {Case{"10.0.0.7:6380", "10.0.0.7", "10.0.0.7", 6380},
        Case{"redis-2.farm:7001", "redis-2.farm", "redis-2.farm", 7001},
        Case{"::1:6379", "[::1]", "::1", 6379},
        Case{"fe80::2:1:30001", "[fe80::2:1]", "fe80::2:1", 30001},
        Case{"[::1]:6379", "[::1]", "::1", 6379}, Case{"%5B::1%5D:41234", "[::1]", "::1", 41234}}) {
    auto a = ParseReportedHostPort(c.text);
    ASSERT_TRUE(a) << c.text;
    EXPECT_EQ(a->host, c.host) << c.text;
    EXPECT_EQ(a->Bare(), c.bare) << c.text;
    EXPECT_EQ(a->port, c.port) << c.text;
  }
  for (const char* bad : {"", "host", ":6379", "host:", "host:65536", "host:x", "[]:1", "%5B%5D:1",
                          "ho st:1", "host:1\n", "[::1]x:1"}) {
    EXPECT_FALSE(ParseReportedHostPort(bad)) << bad;
  }
}

}  // namespace
}  // namespace coopd
