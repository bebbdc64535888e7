// ParseHostPort: the one reader of HOST:PORT behind --listen, --metrics and the Redis URLs.
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

}  // namespace
}  // namespace coopd
