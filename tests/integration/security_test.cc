// Integration tests of coopd against hostile input (issue 14): rejected values are quoted
// bounded and escaped, in the error and in the daemon's log alike; undecodable requests get a
// documented answer and leave the daemon serving. A real coopd on a temporary socket.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "coop/client.h"
#include "test_util.h"

namespace coopd_test {
namespace {

// The daemon's log lines ("" before the first).
std::vector<std::string> Lines(const std::string& log) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    lines.push_back(log.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(Hostile, LongDtypeIsInvalidArgumentQuotingABoundedPrefixAndItsLength) {
  TestDaemon d;
  coop::Spec s = BlockReduceF32();
  s.dtype = std::string(20000, 'M');
  auto r = d.Client().Specialize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument) << r.error().message;
  EXPECT_NE(
      r.error().message.find("got \"" + std::string(48, 'M') + "\xE2\x80\xA6\" (20000 bytes)"),
      std::string::npos)
      << r.error().message;
  EXPECT_LT(r.error().message.size(), 1000u);
}

TEST(Hostile, HugeDtypeWritesNoHugeLogLine) {
  TestDaemon d;
  coop::Spec s = BlockReduceF32();
  s.dtype = std::string(size_t{20} << 20, 'M');
  auto r = d.Client().Specialize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument) << r.error().message.substr(0, 200);
  EXPECT_NE(r.error().message.find("(20971520 bytes)"), std::string::npos);
  // The daemon is still serving, and its whole log stays small.
  EXPECT_TRUE(d.Client().GetStats().ok());
  const std::string log = d.process.Log();
  EXPECT_NE(log.find("(20971520 bytes)"), std::string::npos) << "the rejection is logged";
  EXPECT_LT(log.size(), size_t{64} << 10);
}

TEST(Hostile, ControlCharactersInValuesAreEscapedInErrorsAndLogs) {
  TestDaemon d;
  coop::Spec s = BlockReduceF32();
  s.arch = "sm_90\n2026-12-01T00:00:00.000 error coopd: FAKE INJECTED LINE";
  auto r = d.Client().Specialize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("got \"sm_90\\n2026-12-01T00:00:00.000 error coopd: FAKE "),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;

  coop::Spec nul = BlockReduceF32();
  nul.dtype = std::string("float32\0evil", 12);
  auto n = d.Client().Specialize(nul);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(n.error().message.find("got \"float32\\x00evil\""), std::string::npos)
      << n.error().message;

  ASSERT_TRUE(d.Client().GetStats().ok());
  const std::string log = d.process.Log();
  EXPECT_EQ(log.find('\0'), std::string::npos) << "a NUL byte reached the log";
  EXPECT_NE(log.find("float32\\x00evil"), std::string::npos) << log;
  EXPECT_NE(
      log.find("got \"sm_90\\n2026-12-01T00:00:00.000 error coopd: FAKE \xE2\x80\xA6\" (61 bytes)"),
      std::string::npos)
      << log;
  for (const std::string& line : Lines(log)) {
    EXPECT_NE(line.rfind("2026-12-01T00:00:00.000 error coopd: FAKE", 0), 0u)
        << "forged line: " << line;
  }
}

// gRPC's callback API answers a request it cannot parse itself, before coopd sees it:
// UNIMPLEMENTED with an empty message (grpcpp's CallbackUnaryHandler). docs/security.md says
// so; this pins it, and that the daemon goes on serving.
TEST(Hostile, UndecodableRequestsGetUnimplementedAndTheDaemonKeepsServing) {
  TestDaemon d;
  auto channel =
      grpc::CreateChannel("unix:" + d.process.socket_path(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  const std::vector<std::string> bodies = {
      std::string("\xff\xff\xff\xff\xff\xff", 6),  // garbage: a field of wire type 7
      std::string("\x0a\x10\x0a\x05", 4),          // truncated: spec says 16 bytes follow
      std::string("\x0a\x04\x0a\x02\xc3\x28", 6),  // spec.family is invalid UTF-8
  };
  for (const std::string& body : bodies) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Slice slice(body);
    grpc::ByteBuffer request(&slice, 1), reply;
    grpc::Status status;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    stub.UnaryCall(&ctx, "/coop.v1.Coop/Specialize", grpc::StubOptions(), &request, &reply,
                   [&](grpc::Status s) {
                     std::lock_guard<std::mutex> lock(mu);
                     status = std::move(s);
                     done = true;
                     cv.notify_all();
                   });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
  }
  auto r = d.Client().Specialize(BlockReduceF32());
  EXPECT_TRUE(r.ok()) << r.error().message;
}

}  // namespace
}  // namespace coopd_test
