// Integration tests of coopd's limits (issue 14, item 4) against a real coopd: message size,
// operator source size, bundle and plan size, user operators per request, per-client
// concurrency and rate. Each bad request gets its specific error, naming the limit and its flag,
// and the daemon goes on serving: every test then gets a good answer, from another client.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "test_util.h"

namespace coopd_test {
namespace {

coop::Client NamedClient(const TestDaemon& d, const std::string& name) {
  coop::ClientOptions options;
  options.socket_path = d.process.socket_path();
  options.autostart = false;
  options.client_name = name;
  return coop::Client(options);
}

// A good request from a client of its own: the daemon still serves (a compile the first time,
// a cache hit after).
void ExpectStillServing(const TestDaemon& d) {
  auto r = NamedClient(d, "bystander").Specialize(BlockReduceF32());
  EXPECT_TRUE(r.ok()) << r.error().message;
}

coop::Spec WithUserOp(coop::Spec s, const std::string& name, const std::string& body = "a + b") {
  s.method = "reduce";
  s.user_op.name = name;
  s.user_op.source = "__device__ float " + name + "(float a, float b) { return " + body + "; }\n";
  return s;
}

// One daemon with every per-request limit set low, shared by the tests of those limits.
class RequestLimits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new TestDaemon({"--max-message-mb", "1", "--max-op-source-kb", "4", "--max-bundle",
                              "2", "--max-plan-specs", "1", "--max-user-ops", "1"});
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static TestDaemon* daemon_;
};
TestDaemon* RequestLimits::daemon_ = nullptr;

TEST_F(RequestLimits, MessageOverTheLimitIsResourceExhaustedNamingTheLimitAndTheFlag) {
  coop::Spec s = WithUserOp(BlockReduceF32(), "big");
  s.user_op.source += "// " + std::string(size_t{2} << 20, 'x') + "\n";  // 2 MiB: over 1 MiB
  auto r = daemon_->Client().Specialize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kResourceExhausted) << r.error().message;
  EXPECT_NE(r.error().message.find("request: coop.v1.SpecializeRequest of "), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("bytes is larger than this coopd's limit of 1048576 bytes (1 "
                                   "MiB; --max-message-mb, COOPD_MAX_MESSAGE_MB)"),
            std::string::npos)
      << r.error().message;
  EXPECT_TRUE(r.error().from_server) << "coopd's answer, not a transport failure";
  ExpectStillServing(*daemon_);
  // Counted (the daemon is shared by this fixture's tests: at least this one).
  auto stats = daemon_->Client().GetStats();
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GE(stats->oversized_requests, 1u);
}

TEST_F(RequestLimits, OperatorSourceOverTheLimitIsInvalidArgumentNamingTheField) {
  coop::Spec s = WithUserOp(BlockReduceF32(), "long_op");
  s.user_op.source += "// " + std::string(5000, 'x') + "\n";  // over 4 KiB, under 1 MiB
  auto r = daemon_->Client().Specialize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument) << r.error().message;
  EXPECT_EQ(r.error().message,
            "op.user.source must be at most 4096 bytes (4 KiB; --max-op-source-kb, "
            "COOPD_MAX_OP_SOURCE_KB), got " +
                std::to_string(s.user_op.source.size()) + " bytes");
  // The block-prefix callback is a user operator too.
  coop::Spec p = BlockSpec("block_scan", "exclusive_sum_prefix", "float32", {128}, 1);
  p.prefix_callback.name = "prefix";
  p.prefix_callback.source = std::string(5000, ' ');
  auto q = daemon_->Client().Specialize(p);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(q.error().message.rfind("prefix_callback.source must be at most 4096 bytes", 0), 0u)
      << q.error().message;
  ExpectStillServing(*daemon_);
}

TEST_F(RequestLimits, BundleOverTheLimitIsInvalidArgumentNamingTheFlag) {
  std::vector<coop::Spec> specs = {BlockReduceF32(), BlockReduceF32(), BlockReduceF32()};
  specs[1].method = "max";
  specs[2].method = "min";
  auto r = daemon_->Client().SpecializeBundle(specs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "bundle: specs must hold 1..2 specs (--max-bundle, COOPD_MAX_BUNDLE), got 3");
  ExpectStillServing(*daemon_);
}

TEST_F(RequestLimits, PlanWithMoreSpecsThanTheLimitIsInvalidArgumentNamingTheFlag) {
  coop::PlanRequest request;
  for (const char* name : {"a", "b"}) {
    coop::PlanUse use;
    use.name = name;
    use.spec = BlockReduceF32();
    request.uses.push_back(use);
  }
  auto r = daemon_->Client().Plan(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "plan: at most 1 uses may be given by spec (--max-plan-specs, COOPD_MAX_PLAN_SPECS), "
            "got 2");
  request.uses.pop_back();
  auto one = daemon_->Client().Plan(request);
  EXPECT_TRUE(one.ok()) << one.error().message;
}

TEST_F(RequestLimits, MoreUserOperatorsThanTheLimitIsInvalidArgumentNamingTheFlag) {
  coop::Spec scan = BlockSpec("block_scan", "inclusive_scan", "float32", {256}, 1);
  std::vector<coop::Spec> specs = {WithUserOp(BlockReduceF32(), "first"),
                                   WithUserOp(scan, "second")};
  specs[1].method = "inclusive_scan";
  auto r = daemon_->Client().SpecializeBundle(specs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "specs[1]: op.user: a request may use at most 1 distinct user operators "
            "(--max-user-ops, COOPD_MAX_USER_OPS); this is one more");
  // One spec may hold two: a scan with a user operator and a user block-prefix callback; in a
  // plan too.
  coop::Spec prefix = WithUserOp(scan, "combine");
  prefix.method = "inclusive_scan_prefix";
  prefix.prefix_callback.name = "seed";
  prefix.prefix_callback.source =
      "__device__ float seed(void* state, float aggregate) { return aggregate; }\n";
  coop::PlanRequest plan;
  plan.uses.push_back({"scan", prefix});
  auto p = NamedClient(*daemon_, "planner").Plan(plan);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, coop::ErrorCode::kInvalidArgument) << p.error().message;
  EXPECT_EQ(p.error().message,
            "plan: uses[0] \"scan\": spec: prefix_callback: a request may use at most 1 distinct "
            "user operators (--max-user-ops, COOPD_MAX_USER_OPS); this is one more");
  ExpectStillServing(*daemon_);
}

TEST(ClientLimits, ConcurrencyLimitRefusesOneClientsExcessAndServesAnother) {
  TestDaemon d({"--workers", "1", "--client-max-in-flight", "4"});
  StoppedWorkers stopped(d.process.pid());
  ASSERT_EQ(stopped.size(), 1u) << "one compile worker";
  // 20 concurrent requests from one client: 4 are accepted (their compile waits for the stopped
  // worker), 16 are refused at once.
  coop::Client hog = NamedClient(d, "hog");
  std::vector<std::future<coop::Result<coop::Artifact>>> calls;
  for (int i = 0; i < 20; ++i) {
    calls.push_back(
        std::async(std::launch::async, [&hog] { return hog.Specialize(BlockReduceF32()); }));
  }
  int refused = 0;
  std::vector<bool> done(calls.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (refused < 16 && std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < calls.size(); ++i) {
      if (done[i] || calls[i].wait_for(std::chrono::milliseconds(10)) != std::future_status::ready)
        continue;
      done[i] = true;
      auto r = calls[i].get();
      ASSERT_FALSE(r.ok()) << "a compile finished while the worker was stopped";
      EXPECT_EQ(r.error().code, coop::ErrorCode::kResourceExhausted) << r.error().message;
      EXPECT_NE(r.error().message.find(
                    "has 4 requests in flight, the most one client may have "
                    "(--client-max-in-flight 4, COOPD_CLIENT_MAX_IN_FLIGHT); retry when one "
                    "has finished"),
                std::string::npos)
          << r.error().message;
      EXPECT_NE(r.error().message.find("client \"unix:hog/"), std::string::npos)
          << r.error().message;
      ++refused;
    }
  }
  EXPECT_EQ(refused, 16);
  // Meanwhile another client is served (Explain needs no worker), and so is GetStats.
  coop::Client polite = NamedClient(d, "polite");
  auto explained = polite.Explain(BlockReduceF32());
  EXPECT_TRUE(explained.ok()) << explained.error().message;
  auto stats = polite.GetStats();
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->requests, 4u) << "only the admitted requests reached the service";
  EXPECT_EQ(stats->client_in_flight_refusals, 16u);
  EXPECT_EQ(stats->client_rate_refusals, 0u);
  // The worker goes on: the 4 accepted requests complete, and the hog is admitted again.
  stopped.Resume();
  for (size_t i = 0; i < calls.size(); ++i) {
    if (done[i]) continue;
    auto r = calls[i].get();
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
  auto again = hog.Specialize(BlockReduceF32());
  EXPECT_TRUE(again.ok()) << again.error().message;
}

TEST(ClientLimits, RateLimitRefusesABurstOverTheBucketAndServesAnotherClient) {
  // 0.001 requests per second: no token comes back during the test.
  TestDaemon d({"--client-rate", "0.001", "--client-burst", "3"});
  coop::Client fast = NamedClient(d, "fast");
  for (int i = 0; i < 3; ++i) {
    auto r = fast.Explain(BlockReduceF32());
    EXPECT_TRUE(r.ok()) << i << ": " << r.error().message;
  }
  for (int i = 0; i < 5; ++i) {
    auto r = fast.Explain(BlockReduceF32());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, coop::ErrorCode::kResourceExhausted) << r.error().message;
    EXPECT_NE(r.error().message.find("is over its rate limit of 0.001 requests per second with "
                                     "bursts of 3 (--client-rate, COOPD_CLIENT_RATE; "
                                     "--client-burst, COOPD_CLIENT_BURST); retry in "),
              std::string::npos)
        << r.error().message;
  }
  // GetStats is not limited (probes), and another client has a bucket of its own.
  auto stats = fast.GetStats();
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->client_rate_refusals, 5u);
  EXPECT_EQ(stats->client_in_flight_refusals, 0u);
  ExpectStillServing(d);
}

TEST(ClientLimits, BadLimitSettingsNameTheFlagAndTheRange) {
  TempDir dir;
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--max-message-mb", "0"},
            "--max-message-mb: must be a whole number 1..4095, got \"0\""},
           {{"--client-rate", "-1"},
            "--client-rate: must be a number of requests per second 0..1000000 (0: no limit), got "
            "\"-1\""},
           {{"--client-burst", "0"},
            "--client-burst: must be a whole number 1..1000000, got \"0\""},
       }) {
    std::vector<std::string> argv = {COOPD_BINARY, "--socket", dir.path() + "/s.sock"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out, err;
    EXPECT_NE(RunCommand(argv, &out, &err), 0);
    EXPECT_NE(err.find(message), std::string::npos) << err;
  }
}

// Per-client quotas (issue 27, finding 13: one compile token with many distinct specs could
// evict everyone's entries). Two compile tokens on the Unix socket (--tokens-unix), both
// sending the same coopd-client name: the quota is the token's, which coopd vouches for. The
// test finishes well inside the quota's minute (three compiles of one header set).
TEST(ClientQuotas, TheCompileOverATokensQuotaIsRefusedWhileHitsAndOtherTokensAreServed) {
  TempDir dir;
  const std::string a_token = "quota-token-a-0123456789abcdef";
  const std::string b_token = "quota-token-b-0123456789abcdef";
  const std::string tokens = dir.path() + "/tokens", a_file = dir.path() + "/a",
                    b_file = dir.path() + "/b";
  for (const auto& [path, text] :
       {std::pair<std::string, std::string>{
            tokens, "compile ci-a " + a_token + "\ncompile ci-b " + b_token + "\n"},
        {a_file, a_token + "\n"},
        {b_file, b_token + "\n"}}) {
    std::ofstream(path) << text;
    ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  }
  TestDaemon d(dir.path(), {"--workers", "1", "--tokens-file", tokens, "--tokens-unix",
                            "--quota-compiles-per-minute", "2"});
  ASSERT_TRUE(d.started);
  auto client = [&](const std::string& token_file) {
    coop::ClientOptions o;
    o.socket_path = d.process.socket_path();
    o.autostart = false;
    o.token_file = token_file;
    o.client_name = "same-name";
    return coop::Client(o);
  };
  coop::Client a = client(a_file), b = client(b_file);
  coop::Spec f32 = BlockReduceF32(), f64 = BlockReduceF32(), i32 = BlockReduceF32();
  f64.dtype = "float64";
  i32.dtype = "int32";
  for (const coop::Spec* s : {&f32, &f64}) {
    auto r = a.Specialize(*s);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->origin, coop::Origin::kCompiled);
  }
  auto third = a.Specialize(i32);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, coop::ErrorCode::kResourceExhausted);
  EXPECT_NE(third.error().message.find("client \"token:ci-a\" has started 2 compiles this minute, "
                                       "its quota (--quota-compiles-per-minute 2"),
            std::string::npos)
      << third.error().message;
  EXPECT_NE(third.error().message.find("the quota resets in "), std::string::npos)
      << third.error().message;
  // Hits cost nothing: never refused.
  auto hit = a.Specialize(f32);
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_NE(hit->origin, coop::Origin::kCompiled);
  // Another token (same coopd-client name) has a quota of its own.
  auto other = b.Specialize(i32);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(other->origin, coop::Origin::kCompiled);
  // Now cached: the over-quota token gets it as a hit.
  auto cached = a.Specialize(i32);
  ASSERT_TRUE(cached) << cached.error().message;
  auto stats = a.GetStats();  // with a token: --tokens-unix
  ASSERT_TRUE(stats) << stats.error().message;
  const coop::Stats& s = *stats;
  EXPECT_EQ(s.quota_compile_refusals, 1u);
  EXPECT_EQ(s.quota_bytes_refusals, 0u);
  EXPECT_EQ(s.compiles, 3u);
}

TEST(ClientQuotas, ACompileOverTheCacheBytesQuotaIsRefused) {
  // 1 MiB an hour: one block_reduce artifact (~200 KB of LTO-IR) fits, several do not; the
  // client's next compile after it has gone past is refused.
  TestDaemon d({"--workers", "1", "--quota-cache-mb-per-hour", "1"});
  ASSERT_TRUE(d.started);
  coop::Client c = NamedClient(d, "bulk");
  const char* dtypes[] = {"float32", "float64", "int32",  "int64", "uint32",
                          "uint64",  "int16",   "uint16", "int8",  "uint8"};
  coop::Error refused;
  uint64_t compiled = 0;
  for (const char* dtype : dtypes) {
    coop::Spec s = BlockReduceF32();
    s.dtype = dtype;
    auto r = c.Specialize(s);
    if (!r) {
      refused = r.error();
      break;
    }
    ++compiled;
  }
  ASSERT_EQ(refused.code, coop::ErrorCode::kResourceExhausted)
      << "no refusal after " << compiled << " compiles: " << refused.message;
  EXPECT_GE(compiled, 1u);
  EXPECT_NE(refused.message.find("client \"unix:bulk/"), std::string::npos) << refused.message;
  EXPECT_NE(refused.message.find(" bytes into the cache this hour, its quota"), std::string::npos)
      << refused.message;
  EXPECT_NE(refused.message.find("--quota-cache-mb-per-hour 1"), std::string::npos)
      << refused.message;
  coop::Stats s = d.Stats();
  EXPECT_EQ(s.quota_bytes_refusals, 1u);
  EXPECT_EQ(s.compiles, compiled);
  // Another client is unaffected.
  ExpectStillServing(d);
}

}  // namespace
}  // namespace coopd_test
