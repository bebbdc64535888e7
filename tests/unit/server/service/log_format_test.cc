#include "server/service/log_format.h"

#include <gtest/gtest.h>

#include <string>

#include "server/rpc/grpc_service.h"

namespace coopd {
namespace {

std::string Format(spdlog::formatter& f, const std::string& payload) {
  spdlog::details::log_msg msg("coopd", spdlog::level::info, payload);
  msg.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764614400123));
  msg.thread_id = 7;
  spdlog::memory_buf_t out;
  f.format(msg, out);
  return std::string(out.data(), out.size());
}

TEST(LogFormat, JsonLiftsTheRequestTagAndEscapesTheMessage) {
  JsonLogFormatter f;
  const std::string line = Format(f, "[req ab-1] invalid \"x\\y\" request");
  EXPECT_EQ(line.rfind("{\"time\":\"2025-12-01T18:40:00.123Z\",\"level\":\"info\",\"pid\":", 0), 0u)
      << line;
  EXPECT_NE(line.find(",\"thread\":7,\"request_id\":\"ab-1\",\"message\":\"invalid "
                      "\\\"x\\\\y\\\" request\"}\n"),
            std::string::npos)
      << line;
  EXPECT_EQ(Format(f, "ready").find("request_id"), std::string::npos) << "no tag, no id";
}

TEST(LogFormat, AForgedNewlineStaysInsideOneLine) {
  JsonLogFormatter json;
  SafeLogFormatter text("%l coopd: %v");
  for (const std::string payload :
       {"[req a\nb] x", "[req ok] value \"\n{\"level\":\"error\"}\r\n2026-12-01 error coopd: x"}) {
    for (spdlog::formatter* f :
         {static_cast<spdlog::formatter*>(&json), static_cast<spdlog::formatter*>(&text)}) {
      const std::string line = Format(*f, payload);
      EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
      EXPECT_EQ(line.find('\r'), std::string::npos) << line;
    }
  }
  // An id holding a newline is no tag: the JSON line has no request_id.
  EXPECT_EQ(Format(json, "[req a\nb] x").find("request_id"), std::string::npos);
}

TEST(LogFormat, SplitRequestTagNeedsTheWholeTag) {
  std::string_view id, rest;
  ASSERT_TRUE(SplitRequestTag("[req 9f-1] hit", &id, &rest));
  EXPECT_EQ(id, "9f-1");
  EXPECT_EQ(rest, "hit");
  EXPECT_FALSE(SplitRequestTag("[req ] hit", &id, &rest));
  EXPECT_FALSE(SplitRequestTag("[req a\"b] hit", &id, &rest));
  EXPECT_FALSE(SplitRequestTag("[request 1] hit", &id, &rest));
  EXPECT_FALSE(SplitRequestTag("x [req 1] hit", &id, &rest));
}

TEST(RequestId, OnlyBoundedPlainIdsAreTaken) {
  EXPECT_TRUE(SaneRequestId("0b6e8c2a-3f1d-4c55-9a1e-6f2d7c8b9a10"));
  EXPECT_TRUE(SaneRequestId("build/42:step_7+a=b@c"));
  EXPECT_TRUE(SaneRequestId(std::string(kMaxRequestIdBytes, 'a')));
  EXPECT_FALSE(SaneRequestId(std::string(kMaxRequestIdBytes + 1, 'a')));
  EXPECT_FALSE(SaneRequestId(""));
  EXPECT_FALSE(SaneRequestId("a\nb"));
  EXPECT_FALSE(SaneRequestId("a b"));
  EXPECT_FALSE(SaneRequestId("a]b"));
  EXPECT_FALSE(SaneRequestId("a\"b"));
  EXPECT_FALSE(SaneRequestId("caf\xc3\xa9"));
}

}  // namespace
}  // namespace coopd
