// Unit tests of the RPC edge's status conversion: bounded messages, whole ones in the details.
#include "server/rpc/grpc_service.h"

#include <gtest/gtest.h>

#include <string>

#include "coop/v1/coop.pb.h"

namespace coopd {
namespace {

TEST(StatusSummary, ShortMessagesAreSentAsTheyAre) {
  EXPECT_EQ(StatusSummary("block_reduce: items_per_thread must be 1..64, got 0"),
            "block_reduce: items_per_thread must be 1..64, got 0");
  const std::string fits(kMaxStatusMessageBytes, 'a');
  EXPECT_EQ(StatusSummary(fits), fits);
}

TEST(StatusSummary, LongLogsKeepTheirFirstLinesAndCountTheRest) {
  std::string log;
  for (int i = 0; i < 10000; ++i) log += "line " + std::to_string(i) + ": error: something\n";
  const std::string s = StatusSummary(log);
  EXPECT_LE(s.size(), kMaxStatusMessageBytes);
  EXPECT_EQ(s.rfind("line 0: error: something\nline 1: error", 0), 0u) << s;
  const size_t kept = s.find("\n... (");
  ASSERT_NE(kept, std::string::npos) << s;
  EXPECT_EQ(log.substr(0, kept), s.substr(0, kept)) << "whole lines of the log";
  EXPECT_EQ(log[kept], '\n') << "cut at a line's end";
  EXPECT_NE(s.find("(" + std::to_string(log.size() - kept) + " of " + std::to_string(log.size()) +
                   " bytes not shown;"),
            std::string::npos)
      << s.substr(kept);
}

TEST(StatusSummary, OneHugeLineIsCutAtACharacterBoundary) {
  std::string log = "error: ";
  for (int i = 0; i < 5000; ++i) log += "\xC3\xA9";  // two bytes each, three when encoded
  const std::string s = StatusSummary(log);
  const size_t kept = s.find("\n... (");
  ASSERT_NE(kept, std::string::npos);
  EXPECT_EQ((kept - 7) % 2, 0u) << "never half a character";
  // gRPC percent-encodes bytes outside printable ASCII as three: the bound counts them so.
  EXPECT_LE(7 + (kept - 7) * 3, kStatusSummaryBytes);
}

TEST(StatusSummary, NonAsciiMessagesAreBoundedAsEncoded) {
  std::string message(2000, '\x01');  // 2000 bytes, 6000 once encoded
  EXPECT_NE(StatusSummary(message), message);
}

TEST(ToGrpcStatus, WholeMessageTravelsInTheDetailsOnlyWhenAskedAndOnlyWhenCut) {
  const std::string log = "nvrtc: compile failed:\n" + std::string(1 << 20, 'x') + "\nend";
  const absl::Status status = absl::InvalidArgumentError(log);
  const grpc::Status plain = ToGrpcStatus(status);
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(plain.error_message(), StatusSummary(log));
  EXPECT_TRUE(plain.error_details().empty());

  const grpc::Status asked = ToGrpcStatus(status, /*with_details=*/true);
  EXPECT_EQ(asked.error_message(), plain.error_message());
  coop::v1::StatusDetails details;
  ASSERT_TRUE(details.ParseFromString(asked.error_details()));
  EXPECT_EQ(details.code(), 3);
  EXPECT_EQ(details.message(), plain.error_message());
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), kErrorDetailTypeUrl);
  coop::v1::ErrorDetail detail;
  ASSERT_TRUE(detail.ParseFromString(details.details(0).value()));
  EXPECT_EQ(detail.message(), log);

  const grpc::Status short_one = ToGrpcStatus(absl::InvalidArgumentError("short"), true);
  EXPECT_EQ(short_one.error_message(), "short");
  EXPECT_TRUE(short_one.error_details().empty()) << "nothing was cut";
}

}  // namespace
}  // namespace coopd
