// Unit tests of the per-client limits (concurrency, token-bucket rate) and of the raw request
// parse at the RPC edge. Time is passed in: no clock, no sleeps.
#include "server/rpc/client_limits.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"
#include "server/rpc/grpc_service.h"

namespace coopd {
namespace {

using Clock = ClientLimiter::Clock;

TEST(ClientLimiter, InFlightLimitIsPerClientAndFreedWhenARequestEnds) {
  ClientLimiter limiter({/*max_in_flight=*/2, /*rate=*/0, /*burst=*/1});
  const auto now = Clock::now();
  auto a1 = limiter.Admit("a", now);
  auto a2 = limiter.Admit("a", now);
  ASSERT_TRUE(a1.ok() && a2.ok());
  auto a3 = limiter.Admit("a", now);
  ASSERT_FALSE(a3.ok());
  EXPECT_EQ(a3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(a3.status().message(),
            "client \"a\" has 2 requests in flight, the most one client may have "
            "(--client-max-in-flight 2, COOPD_CLIENT_MAX_IN_FLIGHT); retry when one has finished");
  EXPECT_TRUE(limiter.Admit("b", now).ok()) << "another client is not affected";
  a1->Release();
  EXPECT_TRUE(limiter.Admit("a", now).ok()) << "a finished request frees its place";
  EXPECT_EQ(limiter.refused_in_flight(), 1u);
  EXPECT_EQ(limiter.refused_rate(), 0u);
}

TEST(ClientLimiter, RateLimitAllowsABurstThenRefillsAtTheRate) {
  ClientLimiter limiter({/*max_in_flight=*/0, /*rate=*/2, /*burst=*/3});
  const auto t0 = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Admit("a", t0).ok()) << i;
  auto refused = limiter.Admit("a", t0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "client \"a\" is over its rate limit of 2 requests per second with bursts of 3 "
            "(--client-rate, COOPD_CLIENT_RATE; --client-burst, COOPD_CLIENT_BURST); retry in "
            "501 ms");
  EXPECT_TRUE(limiter.Admit("b", t0).ok()) << "each client has its own bucket";
  // Half a second later one token has come back, and only one.
  const auto t1 = t0 + std::chrono::milliseconds(500);
  EXPECT_TRUE(limiter.Admit("a", t1).ok());
  EXPECT_FALSE(limiter.Admit("a", t1).ok());
  // Long idle: the bucket is full again, never more than the burst.
  const auto t2 = t1 + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Admit("a", t2).ok()) << i;
  EXPECT_FALSE(limiter.Admit("a", t2).ok());
  EXPECT_EQ(limiter.refused_rate(), 3u) << "each refusal counted";
  EXPECT_EQ(limiter.refused_in_flight(), 0u);
}

TEST(ClientLimiter, RefusedRequestsTakeNoTokenAndNoPlace) {
  ClientLimiter limiter({/*max_in_flight=*/1, /*rate=*/1, /*burst=*/2});
  const auto t0 = Clock::now();
  auto first = limiter.Admit("a", t0);
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.Admit("a", t0).ok()) << "in flight";
  first->Release();
  EXPECT_TRUE(limiter.Admit("a", t0).ok()) << "the refusals took no token";
  EXPECT_EQ(limiter.refused_in_flight(), 5u);
  EXPECT_EQ(limiter.refused_rate(), 0u);
}

TEST(ClientLimiter, ClientNamesInErrorsAreBoundedAndEscaped) {
  ClientLimiter limiter({1, 0, 1});
  const std::string name = "evil\n2026-12-01 error coopd: FORGED" + std::string(100, 'x');
  auto held = limiter.Admit(name, Clock::now());
  auto refused = limiter.Admit(name, Clock::now());
  ASSERT_FALSE(refused.ok());
  const std::string message(refused.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("\"evil\\n2026-12-01"), std::string::npos) << message;
  EXPECT_NE(message.find("(" + std::to_string(name.size()) + " bytes)"), std::string::npos)
      << message;
}

TEST(ClientLimiter, InventedNamesDoNotGrowTheTableBeyondItsBound) {
  ClientLimiter limiter({/*max_in_flight=*/4, /*rate=*/0, /*burst=*/1});
  const auto now = Clock::now();
  for (size_t i = 0; i < 3 * ClientLimiter::kMaxTrackedClients; ++i) {
    ASSERT_TRUE(limiter.Admit("client-" + std::to_string(i), now).ok());  // released at once
  }
  EXPECT_LE(limiter.tracked_clients(), ClientLimiter::kMaxTrackedClients + 1);
  // Clients with requests in flight are never forgotten (their count would be lost).
  std::vector<ClientLimiter::Admission> held;
  for (int i = 0; i < 4; ++i) held.push_back(std::move(*limiter.Admit("busy", now)));
  for (size_t i = 0; i < 2 * ClientLimiter::kMaxTrackedClients; ++i) {
    ASSERT_TRUE(limiter.Admit("other-" + std::to_string(i), now).ok());
  }
  EXPECT_FALSE(limiter.Admit("busy", now).ok()) << "still 4 in flight";
}

TEST(ClientLimiter, DisabledLimitsAdmitEverything) {
  ClientLimiter limiter({0, 0, 1});
  EXPECT_FALSE(limiter.enabled());
  std::vector<ClientLimiter::Admission> held;
  for (int i = 0; i < 10000; ++i) held.push_back(std::move(*limiter.Admit("a", Clock::now())));
  EXPECT_EQ(limiter.tracked_clients(), 0u);
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(ParseRequest, DecodesWhatTheGeneratedHandlerWould) {
  coop::v1::SpecializeRequest in;
  in.mutable_spec()->set_family("block_reduce");
  in.mutable_spec()->mutable_block()->set_x(128);
  in.set_client("test");
  coop::v1::SpecializeRequest out;
  ASSERT_TRUE(ParseRequest(Buffer(in.SerializeAsString()), 1 << 20, &out).ok());
  EXPECT_EQ(out.SerializeAsString(), in.SerializeAsString());
}

TEST(ParseRequest, GarbageAndTruncatedBytesAreInvalidArgumentNamingTheMessage) {
  coop::v1::SpecializeRequest out;
  for (const std::string& bytes :
       {std::string("\xff\xff\xff\xff\xff\xff", 6), std::string("\x0a\x10\x0a\x05", 4)}) {
    absl::Status s = ParseRequest(Buffer(bytes), 1 << 20, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(),
              "request: coop.v1.SpecializeRequest does not decode from its " +
                  std::to_string(bytes.size()) +
                  " bytes: not a well-formed protobuf encoding of it (truncated, corrupt, or "
                  "another message)");
  }
}

TEST(ParseRequest, InvalidUtf8NamesTheStringField) {
  coop::v1::SpecializeRequest out;
  absl::Status s = ParseRequest(Buffer(std::string("\x0a\x04\x0a\x02\xc3\x28", 6)), 1 << 20, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "request: coop.v1.SpecializeRequest does not decode: string field "
            "coop.v1.PrimitiveSpec.family holds invalid UTF-8 (string fields must be UTF-8; bytes "
            "belong in bytes fields)");
}

TEST(ParseRequest, OverTheLimitIsResourceExhaustedNamingTheFlag) {
  coop::v1::SpecializeRequest in;
  in.set_client(std::string(size_t{1} << 20, 'x'));
  coop::v1::SpecializeRequest out;
  const std::string bytes = in.SerializeAsString();
  absl::Status s = ParseRequest(Buffer(bytes), size_t{1} << 20, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "request: coop.v1.SpecializeRequest of " + std::to_string(bytes.size()) +
                             " bytes is larger than this coopd's limit of 1048576 bytes (1 MiB; "
                             "--max-message-mb, COOPD_MAX_MESSAGE_MB)");
  EXPECT_TRUE(ParseRequest(Buffer(bytes), size_t{2} << 20, &out).ok()) << "under the limit";
}

}  // namespace
}  // namespace coopd
