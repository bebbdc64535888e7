// Integration tests of coopd against hostile input (issue 14): rejected values are quoted
// bounded and escaped, in the error and in the daemon's log alike; undecodable requests get a
// documented answer and leave the daemon serving. A real coopd on a temporary socket.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"
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

// An operator whose compile by one backend (`guard`: a macro only that compiler defines) fails
// with a log of about 3 MB: a static_assert whose message is a 3,000,000-byte string, which
// both compilers quote whole.
coop::UserOperator HugeLogOperator(const std::string& guard) {
  std::string source = "#define S0 \"" + std::string(100, 'x') + "\"\n";
  for (int i = 1; i <= 4; ++i) {
    source += "#define S" + std::to_string(i);
    for (int k = 0; k < 10; ++k) source += " S" + std::to_string(i - 1);
    source += "\n";
  }
  source += "#if " + guard + "\nstatic_assert(sizeof(float) == 0, S4 S4 S4);\n#endif\n";
  source += "__device__ float huge(float a, float b) { return a + b; }\n";
  coop::UserOperator op;
  op.name = "huge";
  op.source = source;
  return op;
}

coop::Spec HugeLogSpec(const std::string& guard) {
  coop::Spec s = BlockReduceF32();
  s.method = "reduce";
  s.block = {128};
  s.user_op = HugeLogOperator(guard);
  return s;
}

coop::Client FullErrorClient(const TestDaemon& d) {
  coop::ClientOptions options;
  options.socket_path = d.process.socket_path();
  options.autostart = false;
  options.full_errors = true;
  return coop::Client(options);
}

// A log of megabytes: the status message is a bounded summary that says how much it left out
// (not RESOURCE_EXHAUSTED from gRPC's metadata limit), and a client that asks gets it whole.
void ExpectHugeLogBoundedAndWhole(const TestDaemon& d, const coop::Spec& spec,
                                  coop::Formats formats, const std::string& first_line,
                                  const std::string& last_line) {
  auto plain = d.Client().Specialize(spec, formats);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().code, coop::ErrorCode::kInvalidArgument) << plain.error().message;
  EXPECT_LT(plain.error().message.size(), 4096u);
  EXPECT_NE(plain.error().message.find(first_line), std::string::npos) << plain.error().message;
  EXPECT_NE(plain.error().message.find("bytes not shown; the whole message is in the status "
                                       "details"),
            std::string::npos)
      << plain.error().message;
  EXPECT_TRUE(plain.error().details.empty()) << "details only when asked for";

  auto whole = FullErrorClient(d).Specialize(spec, formats);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(whole.error().message, plain.error().message) << "the same summary";
  const std::string& log = whole.error().details;
  EXPECT_GT(log.size(), size_t{3000000});
  EXPECT_NE(log.find(std::string(3000000, 'x')), std::string::npos) << "the whole message";
  EXPECT_NE(log.find(first_line), std::string::npos);
  EXPECT_NE(log.find(last_line), std::string::npos) << log.substr(log.size() - 300);
  // The summary's count is the log's size.
  EXPECT_NE(plain.error().message.find(" of " + std::to_string(log.size()) + " bytes not shown"),
            std::string::npos)
      << plain.error().message.substr(plain.error().message.size() - 300);
}

TEST(BigErrors, NvrtcLogOfMegabytesIsSummarizedAndSentWholeOnRequest) {
  TestDaemon d;
  ExpectHugeLogBoundedAndWhole(d, HugeLogSpec("defined(__CUDACC_RTC__)"), coop::Formats::kLtoIr,
                               "huge.cu(7): error: static assertion failed",
                               "1 error detected in the compilation of");
  EXPECT_TRUE(d.Client().GetStats().ok()) << "the daemon keeps serving";
}

TEST(BigErrors, ClangLogOfMegabytesIsSummarizedAndSentWholeOnRequest) {
  TestDaemon d;
  coop::Client client = d.Client();
  auto catalog = client.GetCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  if (catalog->bitcode_archs.empty()) GTEST_SKIP() << "no clang-22 on this machine";
  ExpectHugeLogBoundedAndWhole(d, HugeLogSpec("defined(__clang__)"), coop::Formats::kBitcode,
                               "huge.cu:7:15: error: static assertion failed", "1 error generated");
}

TEST(BigErrors, CoopctlFullErrorPrintsTheWholeLog) {
  TestDaemon d;
  TempDir dir;
  const std::string op = dir.path() + "/huge.cu";
  {
    FILE* f = fopen(op.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string source = HugeLogOperator("defined(__CUDACC_RTC__)").source;
    fwrite(source.data(), 1, source.size(), f);
    fclose(f);
  }
  const std::vector<std::string> args = {COOPCTL_BINARY,
                                         "--socket",
                                         d.process.socket_path(),
                                         "specialize",
                                         "block_reduce",
                                         "--method",
                                         "reduce",
                                         "--dtype",
                                         "float32",
                                         "--threads",
                                         "128",
                                         "--arch",
                                         "sm_90",
                                         "--op-name",
                                         "huge",
                                         "--op-source",
                                         op};
  std::string out, err;
  EXPECT_EQ(RunCommand(args, &out, &err), 4);  // refused: INVALID_ARGUMENT, the compiler's log
  EXPECT_LT(err.size(), 4096u);
  EXPECT_NE(err.find("bytes not shown"), std::string::npos) << err;
  std::vector<std::string> full = args;
  full.insert(full.begin() + 1, "--full-error");
  EXPECT_EQ(RunCommand(full, &out, &err), 4);
  EXPECT_GT(err.size(), size_t{3000000});
  EXPECT_NE(err.find("\n1 error detected in the compilation of"), std::string::npos)
      << err.substr(err.size() - 300);
}

// coopd parses requests itself (raw handlers), so one that does not decode gets
// INVALID_ARGUMENT saying why, for every method, not gRPC's empty UNIMPLEMENTED; the daemon
// goes on serving.
TEST(Hostile, UndecodableRequestsAreInvalidArgumentSayingWhyAndTheDaemonKeepsServing) {
  TestDaemon d;
  const std::string garbage("\xff\xff\xff\xff\xff\xff", 6);  // a field of wire type 7
  const std::string truncated("\x0a\x10\x0a\x05", 4);        // field 1 says 16 bytes follow
  struct Case {
    std::string method, type, body;
  };
  const std::vector<Case> cases = {
      {"Specialize", "SpecializeRequest", garbage},
      {"Specialize", "SpecializeRequest", truncated},
      {"SpecializeBundle", "SpecializeBundleRequest", garbage},
      {"SpecializeBundle", "SpecializeBundleRequest", truncated},
      {"Link", "LinkRequest", garbage},
      {"Plan", "PlanRequest", truncated},
      {"Explain", "SpecializeRequest", garbage},
      {"ListEntries", "ListEntriesRequest", garbage},
      {"Purge", "PurgeRequest", garbage},
      {"GetStats", "GetStatsRequest", garbage},
      {"Catalog", "CatalogRequest", garbage},
  };
  for (const Case& c : cases) {
    grpc::Status s = RawCall(d.process.socket_path(), "/coop.v1.Coop/" + c.method, c.body);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.method;
    EXPECT_EQ(s.error_message(), "request: coop.v1." + c.type + " does not decode from its " +
                                     std::to_string(c.body.size()) +
                                     " bytes: not a well-formed protobuf encoding of it "
                                     "(truncated, corrupt, or another message)")
        << c.method;
  }
  // Invalid UTF-8 in a string field: the field is named.
  grpc::Status utf8 = RawCall(d.process.socket_path(), "/coop.v1.Coop/Specialize",
                              std::string("\x0a\x04\x0a\x02\xc3\x28", 6));  // spec.family
  EXPECT_EQ(utf8.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(utf8.error_message(),
            "request: coop.v1.SpecializeRequest does not decode: string field "
            "coop.v1.PrimitiveSpec.family holds invalid UTF-8 (string fields must be UTF-8; bytes "
            "belong in bytes fields)");
  grpc::Status op =
      RawCall(d.process.socket_path(), "/coop.v1.Coop/Specialize",
              std::string("\x0a\x08\x3a\x06\x12\x04\x0a\x02\xff\xfe", 10));  // spec.op.user.name
  EXPECT_EQ(op.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(op.error_message().find("string field coop.v1.UserOperator.name holds invalid UTF-8"),
            std::string::npos)
      << op.error_message();
  // A well-formed request on the raw channel is served as any other.
  coop::v1::SpecializeRequest good;
  good.mutable_spec()->set_family("block_reduce");
  good.mutable_spec()->set_dtype("float32");
  good.mutable_spec()->mutable_block()->set_x(256);
  good.mutable_spec()->set_arch("sm_90");
  grpc::Status ok =
      RawCall(d.process.socket_path(), "/coop.v1.Coop/Explain", good.SerializeAsString());
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  auto r = d.Client().Specialize(BlockReduceF32());
  EXPECT_TRUE(r.ok()) << r.error().message;
  // The refusals are logged (escaped) and counted, the daemon is up.
  EXPECT_NE(d.process.Log().find("undecodable request: request: coop.v1.SpecializeRequest"),
            std::string::npos);
  const coop::Stats st = d.Stats();
  EXPECT_GE(st.undecodable_requests, 1u);
  EXPECT_EQ(st.oversized_requests, 0u);
}

}  // namespace
}  // namespace coopd_test
