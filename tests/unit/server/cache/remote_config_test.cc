// The farm tier's URL (server/cache/remote_config.h) and Cluster key slots (redis_client.h).
#include "server/cache/remote_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "server/cache/redis_client.h"

namespace coopd {
namespace {

TEST(RemoteConfig, ParsesTheStandaloneFormWithCredentialsPrefixAndOptions) {
  auto c = ParseRemoteCacheUrl(
      "redis://builder:s3cr@t@redis.farm:6380/2?prefix=team-a.cuda13&ttl=86400&pool=8&write=async&"
      "read_only=1&timeout_ms=50&connect_timeout_ms=75&lease_ttl_ms=5000&lease_wait_ms=20000",
      "--remote-cache");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->cluster);
  ASSERT_EQ(c->nodes.size(), 1u);
  EXPECT_EQ(c->nodes[0].host, "redis.farm");
  EXPECT_EQ(c->nodes[0].port, 6380);
  EXPECT_EQ(c->user, "builder");
  EXPECT_EQ(c->password, "s3cr@t");  // a password may hold '@'
  EXPECT_EQ(c->prefix, "team-a.cuda13");
  EXPECT_EQ(c->database, 2);
  EXPECT_EQ(c->ttl.count(), 86400);
  EXPECT_EQ(c->pool_size, 8);
  EXPECT_EQ(c->write, RemoteWritePolicy::kAsync);
  EXPECT_TRUE(c->read_only);
  EXPECT_EQ(c->command_timeout.count(), 50);
  EXPECT_EQ(c->connect_timeout.count(), 75);
  EXPECT_EQ(c->lease_ttl.count(), 5000);
  EXPECT_EQ(c->lease_wait.count(), 20000);
  EXPECT_EQ(c->Redacted(), "redis://builder:***@redis.farm:6380/2?prefix=team-a.cuda13");
}

TEST(RemoteConfig, DefaultsAndTheClusterForm) {
  auto c = ParseRemoteCacheUrl("redis://127.0.0.1:6379", "COOPD_REMOTE_CACHE");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->prefix, "coopd");
  EXPECT_EQ(c->database, 0);
  EXPECT_EQ(c->ttl.count(), 604800);
  EXPECT_EQ(c->write, RemoteWritePolicy::kSync);
  EXPECT_FALSE(c->read_only);
  EXPECT_TRUE(c->password.empty());
  auto k = ParseRemoteCacheUrl(
      "redis-cluster://:pw@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002?prefix=p", "--remote-cache");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k->cluster);
  ASSERT_EQ(k->nodes.size(), 3u);
  EXPECT_EQ(k->nodes[2].host, "::1");
  EXPECT_EQ(k->nodes[2].Name(), "[::1]:7002");
  EXPECT_EQ(k->user, "");
  EXPECT_EQ(k->password, "pw");
  EXPECT_EQ(k->Redacted(),
            "redis-cluster://:***@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002/0?prefix=p");
}

TEST(RemoteConfig, BadUrlsNameTheSourceThePartAndTheFormsButNeverThePassword) {
  struct Case {
    const char* url;
    const char* says;
  } cases[] = {
      {"http://u:hunter2@h:1", "scheme must be redis or redis-cluster, got \"http\""},
      {"h:6379", "not a URL (no scheme)"},
      {"redis://u:hunter2@h:", "\"h:\" must be HOST or HOST:PORT with a port 1..65535"},
      {"redis://u:hunter2@h:0", "\"h:0\" must be HOST or HOST:PORT"},
      {"redis://u:hunter2@h:1/0?foo", "unknown option \"foo\""},
      {"redis://a:1,b:2", "redis:// takes one HOST[:PORT], got 2 (use redis-cluster://"},
      {"redis://hunter2@h:1", "credentials USER@ need a password"},
      {"redis://u:hunter2@h:1?prefix=a%20b", "option prefix \"a%20b\" may hold only letters"},
      {"redis://u:hunter2@h:1?prefix=", "option prefix must be 1..128 characters"},
      {"redis://u:hunter2@h:1/-1", "the path must be a database number (0 or more"},
      {"redis://u:hunter2@h:1/3?db=4", "the database is given twice and differently: /3 and db=4"},
      {"redis-cluster://u:hunter2@h:1/2", "redis-cluster:// has database 0 only"},
      {"redis-cluster://u:hunter2@h:1?db=5", "redis-cluster:// has database 0 only"},
      {"redis://u:hunter2@h:1/0#x", "a URL fragment ('#') is not allowed"},
      {"redis://u:hunter%2@h:1", "the password has a '%' that is not followed by two hex"},
      {"redis://u:hunter2@h:1?ttl=%zz", "has a '%' that is not followed by two hex digits"},
      {"redis://u:hunter2@h:1?pool=0", "option pool must be a whole number 1..256, got \"0\""},
      {"redis://u:hunter2@h:1?write=later", "option write must be sync or async, got \"later\""},
      {"redis://u:hunter2@h:1?tll=5", "unknown option \"tll\" (options: prefix, db, ttl, pool"},
      {"redis://u:hunter2@h:1?timeout_ms=5000", "lease_ttl_ms (10000) must be at least 3 x"},
  };
  for (const auto& c : cases) {
    auto r = ParseRemoteCacheUrl(c.url, "--remote-cache");
    ASSERT_FALSE(r.ok()) << c.url;
    const std::string m(r.status().message());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.url;
    EXPECT_EQ(m.rfind("--remote-cache: ", 0), 0u) << m;
    EXPECT_NE(m.find(c.says), std::string::npos) << c.url << " -> " << m;
    EXPECT_NE(m.find("redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]"), std::string::npos) << m;
    EXPECT_EQ(m.find("hunter2"), std::string::npos) << "password leaked: " << m;
  }
}

// redis-py's reading: the path is the database, the port defaults to 6379, the user, the
// password and the options are percent-decoded, and the prefix is an option.
TEST(RemoteConfig, ReadsUrlsAsRedisPyDoes) {
  auto c = ParseRemoteCacheUrl("redis://:p%3Fss@127.0.0.1:6390/3", "--remote-cache");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->user, "");
  EXPECT_EQ(c->password, "p?ss");
  EXPECT_EQ(c->database, 3);
  EXPECT_EQ(c->prefix, "coopd");
  EXPECT_EQ(c->Redacted(), "redis://:***@127.0.0.1:6390/3?prefix=coopd");

  c = ParseRemoteCacheUrl("redis://redis.farm", "--remote-cache");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nodes[0].port, 6379);
  EXPECT_EQ(c->database, 0);

  c = ParseRemoteCacheUrl("redis://team%40corp:a%2Fb%40c%25@[::1]/?prefix=team%2Da&db=7",
                          "--remote-cache");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->user, "team@corp");
  EXPECT_EQ(c->password, "a/b@c%");
  EXPECT_EQ(c->nodes[0].host, "::1");
  EXPECT_EQ(c->nodes[0].port, 6379);
  EXPECT_EQ(c->prefix, "team-a");
  EXPECT_EQ(c->database, 7);
  EXPECT_EQ(c->Redacted(), "redis://team%40corp:***@[::1]:6379/7?prefix=team-a");

  // The same database twice is fine; a cluster takes database 0, written or not.
  EXPECT_TRUE(ParseRemoteCacheUrl("redis://h/5?db=5", "--remote-cache").ok());
  c = ParseRemoteCacheUrl("redis-cluster://a,b:7001/0", "--remote-cache");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nodes[0].Name(), "a:6379");
  EXPECT_EQ(c->nodes[1].Name(), "b:7001");
}

// Before, the path was the key prefix: "/0" now means database 0, and a path that is not a
// number is refused with the way to say it now.
TEST(RemoteConfig, ThePathIsTheDatabaseAndAnOldPrefixPathSaysToUsePrefix) {
  auto c = ParseRemoteCacheUrl("redis://redis:6379/0", "COOPD_REMOTE_CACHE");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->database, 0);
  EXPECT_EQ(c->prefix, "coopd");
  c = ParseRemoteCacheUrl("redis://redis:6379/farm?ttl=60", "COOPD_REMOTE_CACHE");
  ASSERT_FALSE(c.ok());
  const std::string m(c.status().message());
  EXPECT_NE(m.find("COOPD_REMOTE_CACHE: the path must be a database number"), std::string::npos)
      << m;
  EXPECT_NE(m.find("got \"farm\""), std::string::npos) << m;
  EXPECT_NE(m.find("?prefix=NAME"), std::string::npos) << m;
}

// rediss:// is refused, and the refusal says how to put TLS in front instead.
TEST(RemoteConfig, RedissIsRefusedWithTheWayToTerminateTlsInFront) {
  auto c = ParseRemoteCacheUrl("rediss://app:hunter2@redis.farm:6380/1", "--remote-cache");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(c.status().message());
  EXPECT_NE(m.find("rediss:// (Redis over TLS) is not supported"), std::string::npos) << m;
  EXPECT_NE(m.find("hiredis 0.14 has no TLS"), std::string::npos) << m;
  EXPECT_NE(m.find("stunnel"), std::string::npos) << m;
  EXPECT_NE(m.find("redis://127.0.0.1:TUNNEL_PORT"), std::string::npos) << m;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
}

// A password with an unescaped '?' ends the authority early: the parser then sees
// half the password as the host, or the rest of it as an option, and must not quote either.
TEST(RemoteConfig, AnUnescapedDelimiterInThePasswordIsNotQuotedInTheError) {
  for (const char* url : {"redis://app:s3cr?et-pass@h:6379", "redis://app:s3cr?et=pass@h:6379",
                          "redis://app:s3cr/et-pass@h:6379", "redis://app:s3cr/9et-pass@h:6379/2",
                          "redis://app:s3cr?pool=et-pass@h:6379", "redis://h:1?tll=s3cr@et-pass"}) {
    auto r = ParseRemoteCacheUrl(url, "--remote-cache");
    ASSERT_FALSE(r.ok()) << url;
    const std::string m(r.status().message());
    for (const char* part : {"app:", "s3cr", "et-pass", "et=pass"}) {
      EXPECT_EQ(m.find(part), std::string::npos) << url << " -> " << m;
    }
    EXPECT_NE(m.find("percent-encode"), std::string::npos) << url << " -> " << m;
  }
  // Parts after the credentials are still quoted.
  auto r = ParseRemoteCacheUrl("redis://u:hunter2@h:1?tll=5", "--remote-cache");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown option \"tll\""), std::string::npos);
}

TEST(RemoteConfig, ThePasswordComesFromAFileAndNotTwice) {
  char path[] = "/tmp/coopd-pw-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "from-file\nignored second line\n";
  auto c = ParseRemoteCacheUrl("redis://ci@h:1", "--remote-cache", path);
  ASSERT_TRUE(c.ok()) << "an ACL user with the password from a file: " << c.status();
  EXPECT_EQ(c->user, "ci");
  EXPECT_EQ(c->password, "from-file");
  EXPECT_EQ(c->Redacted(), "redis://ci:***@h:1/0?prefix=coopd");
  c = ParseRemoteCacheUrl("redis://h:1", "--remote-cache", path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->password, "from-file");
  c = ParseRemoteCacheUrl(std::string("redis://h:1?password_file=") + path, "--remote-cache");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->password, "from-file");
  c = ParseRemoteCacheUrl("redis://:inline@h:1", "--remote-cache", path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("a password in the URL and a password file"),
            std::string::npos);
  c = ParseRemoteCacheUrl("redis://h:1", "--remote-cache", "/nonexistent/pw");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("cannot read password file \"/nonexistent/pw\""),
            std::string::npos)
      << c.status();
  std::remove(path);
}

TEST(RedisKeySlot, MatchesRedisClusterIncludingHashTags) {
  // Values from Redis's own CLUSTER KEYSLOT.
  EXPECT_EQ(RedisKeySlot("foo"), 12182);
  EXPECT_EQ(RedisKeySlot("123456789"), 0x31C3 % 16384);
  EXPECT_EQ(RedisKeySlot("{user1000}.following"), RedisKeySlot("user1000"));
  EXPECT_EQ(RedisKeySlot("a{}b"), RedisKeySlot("a{}b"));  // an empty tag hashes the whole key
  EXPECT_NE(RedisKeySlot("{}x"), RedisKeySlot("x"));
  EXPECT_EQ(RedisKeySlot("p:{abc}:e"), RedisKeySlot("p:{abc}:l"));
}

}  // namespace
}  // namespace coopd
