#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "server/daemon/daemon.h"

namespace coopd {
namespace {

absl::Status Parse(std::vector<std::string> args, DaemonConfig* config) {
  args.insert(args.begin(), "coopd");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  bool exit_now = false;
  return ParseDaemonArgs(static_cast<int>(argv.size()), argv.data(), config, &exit_now);
}

TEST(DaemonArgs, ShutdownGraceDefaultsToFiveSecondsAndTakesFlagOverEnvironment) {
  unsetenv("COOPD_SHUTDOWN_GRACE");
  DaemonConfig c;
  ASSERT_TRUE(Parse({}, &c).ok());
  EXPECT_EQ(c.shutdown_grace.count(), 5000);
  ASSERT_TRUE(Parse({"--shutdown-grace", "0"}, &c).ok()) << "0: cancel at once";
  EXPECT_EQ(c.shutdown_grace.count(), 0);
  setenv("COOPD_SHUTDOWN_GRACE", "30", 1);
  ASSERT_TRUE(Parse({}, &c).ok());
  EXPECT_EQ(c.shutdown_grace.count(), 30000);
  ASSERT_TRUE(Parse({"--shutdown-grace", "2.5"}, &c).ok());
  EXPECT_EQ(c.shutdown_grace.count(), 2500) << "the flag wins over the environment";
  unsetenv("COOPD_SHUTDOWN_GRACE");
}

TEST(DaemonArgs, BadDurationsNameTheSettingAndTheAllowedRange) {
  unsetenv("COOPD_SHUTDOWN_GRACE");
  DaemonConfig c;
  auto s = Parse({"--shutdown-grace", "-1"}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--shutdown-grace: must be a number of seconds >= 0 and <= 86400, got \"-1\"");
  s = Parse({"--compile-timeout", "0"}, &c);
  EXPECT_EQ(s.message(),
            "--compile-timeout: must be a number of seconds > 0 and <= 86400, got \"0\"");
  setenv("COOPD_SHUTDOWN_GRACE", "soon", 1);
  s = Parse({}, &c);
  EXPECT_EQ(s.message(),
            "COOPD_SHUTDOWN_GRACE: must be a number of seconds >= 0 and <= 86400, got \"soon\"");
  unsetenv("COOPD_SHUTDOWN_GRACE");
  EXPECT_EQ(Parse({"--shutdown-grace"}, &c).message(), "--shutdown-grace: missing value");
}

TEST(DaemonArgs, RemoteCacheComesFromTheFlagOverTheEnvironmentAndBadUrlsNameTheirSource) {
  unsetenv("COOPD_REMOTE_CACHE");
  DaemonConfig c;
  ASSERT_TRUE(Parse({}, &c).ok());
  EXPECT_FALSE(c.remote);
  setenv("COOPD_REMOTE_CACHE", "redis://10.0.0.1:6379/0?prefix=env", 1);
  ASSERT_TRUE(Parse({}, &c).ok());
  ASSERT_TRUE(c.remote);
  EXPECT_EQ(c.remote_cache.prefix, "env");
  ASSERT_TRUE(Parse({"--remote-cache", "redis-cluster://h1:7000,h2:7001?prefix=flag"}, &c).ok());
  EXPECT_TRUE(c.remote_cache.cluster);
  EXPECT_EQ(c.remote_cache.prefix, "flag") << "the flag wins over the environment";
  setenv("COOPD_REMOTE_CACHE", "memcached://h:1", 1);
  auto s = Parse({}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message())
                .rfind("COOPD_REMOTE_CACHE: scheme must be redis or "
                       "redis-cluster, got \"memcached\"",
                       0),
            0u)
      << s;
  unsetenv("COOPD_REMOTE_CACHE");
}

TEST(DaemonArgs, ListenTakesHostPortAndRefusesAnythingElse) {
  unsetenv("COOPD_LISTEN");
  DaemonConfig c;
  ASSERT_TRUE(Parse({"--listen", "127.0.0.1:7070", "--listen", "[::]:0", "--insecure"}, &c).ok());
  EXPECT_EQ(c.listen, (std::vector<std::string>{"127.0.0.1:7070", "[::]:0"}));
  auto s = Parse({"--listen", "7070"}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      s.message(),
      "--listen: must be HOST:PORT (e.g. 0.0.0.0:7070, [::]:7070, 127.0.0.1:0), got \"7070\"");
  setenv("COOPD_LISTEN", "0.0.0.0:1,bad", 1);
  s = Parse({}, &c);
  EXPECT_NE(std::string(s.message()).find("COOPD_LISTEN: must be HOST:PORT"), std::string::npos)
      << s;
  unsetenv("COOPD_LISTEN");
}

TEST(DaemonArgs, MetricsIsOffByDefaultAndABadAddressNamesItsSource) {
  unsetenv("COOPD_METRICS");
  DaemonConfig c;
  ASSERT_TRUE(Parse({}, &c).ok());
  EXPECT_EQ(c.metrics_address, "") << "off by default";
  ASSERT_TRUE(Parse({"--metrics", "127.0.0.1:9464"}, &c).ok());
  EXPECT_EQ(c.metrics_address, "127.0.0.1:9464");
  auto s = Parse({"--metrics", "9464"}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--metrics: must be HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464), got "
            "\"9464\"");
  setenv("COOPD_METRICS", "localhost:99999", 1);
  s = Parse({}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("COOPD_METRICS: must be HOST:PORT"), std::string::npos) << s.message();
  ASSERT_TRUE(Parse({"--metrics", "[::1]:0"}, &c).ok()) << "the flag wins over the environment";
  EXPECT_EQ(c.metrics_address, "[::1]:0");
  unsetenv("COOPD_METRICS");
}

TEST(DaemonArgs, LimitsHaveDefaultsTakeTheFlagOverTheEnvironmentAndNameTheirSource) {
  for (const char* v : {"COOPD_MAX_MESSAGE_MB", "COOPD_MAX_BUNDLE", "COOPD_CLIENT_RATE"})
    unsetenv(v);
  DaemonConfig c;
  ASSERT_TRUE(Parse({}, &c).ok());
  EXPECT_EQ(c.rpc_limits.max_message_bytes, size_t{64} << 20);
  EXPECT_EQ(c.request_limits.op_source_bytes, size_t{1} << 20);
  EXPECT_EQ(c.request_limits.bundle_specs, 64u);
  EXPECT_EQ(c.request_limits.plan_specs, 1024u);
  EXPECT_EQ(c.request_limits.user_ops, 16u);
  EXPECT_EQ(c.rpc_limits.clients.max_in_flight, 256u);
  EXPECT_EQ(c.rpc_limits.clients.rate, 0) << "no rate limit by default";
  setenv("COOPD_MAX_BUNDLE", "8", 1);
  setenv("COOPD_CLIENT_RATE", "2.5", 1);
  DaemonConfig e;
  ASSERT_TRUE(Parse({"--max-message-mb", "2", "--client-burst", "7"}, &e).ok());
  EXPECT_EQ(e.rpc_limits.max_message_bytes, size_t{2} << 20);
  EXPECT_EQ(e.request_limits.bundle_specs, 8u);
  EXPECT_EQ(e.rpc_limits.clients.rate, 2.5);
  EXPECT_EQ(e.rpc_limits.clients.burst, 7u);
  ASSERT_TRUE(Parse({"--max-bundle", "3"}, &e).ok());
  EXPECT_EQ(e.request_limits.bundle_specs, 3u) << "the flag wins over the environment";
  setenv("COOPD_MAX_BUNDLE", "lots", 1);
  EXPECT_EQ(Parse({}, &e).message(),
            "COOPD_MAX_BUNDLE: must be a whole number 1..1024, got \"lots\"");
  unsetenv("COOPD_MAX_BUNDLE");
  EXPECT_EQ(Parse({"--max-op-source-kb", "16385"}, &e).message(),
            "--max-op-source-kb: must be a whole number 1..16384, got \"16385\"");
  EXPECT_EQ(Parse({"--client-max-in-flight"}, &e).message(),
            "--client-max-in-flight: missing value");
  unsetenv("COOPD_CLIENT_RATE");
}

}  // namespace
}  // namespace coopd

namespace coopd {
namespace {

// Access control's settings (docs/security.md): TCP needs TLS and client authentication unless
// --insecure; each refusal names the setting and what to give instead.
TEST(DaemonArgs, ListenNeedsTlsAndClientAuthenticationUnlessInsecure) {
  for (const char* v : {"COOPD_LISTEN", "COOPD_TLS_CERT", "COOPD_TLS_KEY", "COOPD_TLS_CLIENT_CA",
                        "COOPD_TOKENS_FILE", "COOPD_INSECURE", "COOPD_TOKENS_UNIX"}) {
    unsetenv(v);
  }
  DaemonConfig c;
  auto s = Parse({"--listen", "127.0.0.1:0"}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--listen 127.0.0.1:0: TCP needs TLS: give --tls-cert FILE and --tls-key FILE "
            "(COOPD_TLS_CERT, COOPD_TLS_KEY), or --insecure (COOPD_INSECURE=1) to serve "
            "plaintext to anyone who can reach the port (docs/security.md)");
  s = Parse({"--listen", "127.0.0.1:0", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("TCP clients must authenticate: give --tokens-file FILE"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(Parse({"--listen", "127.0.0.1:0", "--tls-cert", "c.pem", "--tls-key", "k.pem",
                     "--tokens-file", "t"},
                    &c)
                  .ok());
  EXPECT_EQ(c.tokens_file, "t");
  EXPECT_FALSE(c.insecure);
  ASSERT_TRUE(Parse({"--listen", "127.0.0.1:0", "--tls-cert", "c.pem", "--tls-key", "k.pem",
                     "--tls-client-ca", "ca.pem"},
                    &c)
                  .ok());
  EXPECT_EQ(c.tls_client_ca, "ca.pem");
  ASSERT_TRUE(Parse({"--listen", "127.0.0.1:0", "--insecure"}, &c).ok());
  EXPECT_TRUE(c.insecure);
  setenv("COOPD_INSECURE", "1", 1);
  ASSERT_TRUE(Parse({"--listen", "127.0.0.1:0"}, &c).ok());
  EXPECT_TRUE(c.insecure);
  setenv("COOPD_INSECURE", "maybe", 1);
  EXPECT_EQ(Parse({}, &c).message(),
            "COOPD_INSECURE: must be true or false (or 1/0, yes/no, on/off), got \"maybe\"");
  unsetenv("COOPD_INSECURE");
  // Pairs and prerequisites.
  EXPECT_EQ(Parse({"--listen", "127.0.0.1:0", "--tls-cert", "c.pem"}, &c).message(),
            "--tls-cert: --tls-cert and --tls-key (COOPD_TLS_CERT, COOPD_TLS_KEY) go together; "
            "the other one is missing");
  EXPECT_EQ(
      Parse({"--listen", "127.0.0.1:0", "--tls-client-ca", "ca.pem", "--insecure"}, &c).message(),
      "--tls-client-ca: client certificates need TLS: give --tls-cert and --tls-key");
  EXPECT_EQ(Parse({"--tokens-unix"}, &c).message(),
            "--tokens-unix: needs --tokens-file (COOPD_TOKENS_FILE): the tokens to require");
  // Without --listen, TLS settings are not used (a client's COOPD_TLS_* may reach a daemon it
  // starts).
  setenv("COOPD_TLS_CERT", "client.pem", 1);
  EXPECT_TRUE(Parse({}, &c).ok());
  unsetenv("COOPD_TLS_CERT");
}

TEST(DaemonArgs, SocketGroupIsResolvedAndAnUnknownOneIsRefused) {
  unsetenv("COOPD_SOCKET_GROUP");
  DaemonConfig c;
  ASSERT_TRUE(Parse({}, &c).ok());
  EXPECT_EQ(c.socket_gid, -1) << "default: no group access";
  ASSERT_TRUE(Parse({"--socket-group", "root"}, &c).ok());
  EXPECT_EQ(c.socket_gid, 0);
  EXPECT_EQ(c.socket_group, "root");
  ASSERT_TRUE(Parse({"--socket-group", "4242"}, &c).ok()) << "a numeric gid";
  EXPECT_EQ(c.socket_gid, 4242);
  setenv("COOPD_SOCKET_GROUP", "no-such-group-coopd", 1);
  auto s = Parse({}, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "COOPD_SOCKET_GROUP: no such group \"no-such-group-coopd\"; give a group name from "
            "/etc/group (getent group) or a numeric gid");
  unsetenv("COOPD_SOCKET_GROUP");
}

}  // namespace
}  // namespace coopd
