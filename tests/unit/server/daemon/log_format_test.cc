#include "server/daemon/log_format.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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

TEST(JournalPriority, MapsEachLevelToItsSyslogPriority) {
  EXPECT_EQ(JournalPriority(spdlog::level::trace), 7);
  EXPECT_EQ(JournalPriority(spdlog::level::debug), 7);
  EXPECT_EQ(JournalPriority(spdlog::level::info), 6);
  EXPECT_EQ(JournalPriority(spdlog::level::warn), 4);
  EXPECT_EQ(JournalPriority(spdlog::level::err), 3);
  EXPECT_EQ(JournalPriority(spdlog::level::critical), 2);
}

// A real spdlog logger writing through the formatter, one line per level.
TEST(JournalPriority, EveryLineStartsWithItsPriorityAndIsOtherwiseUnchanged) {
  for (bool json : {false, true}) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger logger("coopd", sink);
    logger.set_level(spdlog::level::trace);
    std::unique_ptr<spdlog::formatter> inner;
    if (json) {
      inner = std::make_unique<JsonLogFormatter>();
    } else {
      inner = std::make_unique<SafeLogFormatter>("%l coopd: %v");
    }
    logger.set_formatter(std::make_unique<JournalPriorityFormatter>(std::move(inner)));
    logger.trace("t");
    logger.debug("d");
    logger.info("i\nforged");
    logger.warn("w");
    logger.error("e");
    logger.critical("c");
    logger.flush();
    std::vector<std::string> lines;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 6u) << out.str();
    if (json) {
      EXPECT_EQ(lines[0].rfind("<7>{\"time\":", 0), 0u) << lines[0];
      EXPECT_EQ(lines[3].rfind("<4>{\"time\":", 0), 0u) << lines[3];
      EXPECT_NE(lines[3].find("\"level\":\"warning\""), std::string::npos) << lines[3];
      continue;
    }
    EXPECT_EQ(lines[0], "<7>trace coopd: t");
    EXPECT_EQ(lines[1], "<7>debug coopd: d");
    EXPECT_EQ(lines[2], "<6>info coopd: i\\nforged");  // still one line, escaped
    EXPECT_EQ(lines[3], "<4>warning coopd: w");
    EXPECT_EQ(lines[4], "<3>error coopd: e");
    EXPECT_EQ(lines[5], "<2>critical coopd: c");
  }
}

class JournalStream : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/coopd-journal-stream-XXXXXX";
    fd_ = mkstemp(path);
    ASSERT_GE(fd_, 0);
    path_ = path;
    struct stat st;
    ASSERT_EQ(fstat(fd_, &st), 0);
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  std::string Value(unsigned long long dev, unsigned long long ino) const {
    return std::to_string(dev) + ":" + std::to_string(ino);
  }
  // A child process whose standard output is the file, with JOURNAL_STREAM = `value` (unset
  // when null), installs coopd's text format on spdlog's default logger (which writes to
  // standard output) and logs a warning and an info line; returns what it wrote.
  std::string LogInChild(const char* value) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (dup2(fd_, STDOUT_FILENO) < 0) _exit(10);
      if (value == nullptr) {
        unsetenv("JOURNAL_STREAM");
      } else {
        setenv("JOURNAL_STREAM", value, 1);
      }
      InstallSafeLogFormat("%l coopd: %v");
      spdlog::warn("low on {}", "space");
      spdlog::info("ready");
      spdlog::default_logger()->flush();
      _exit(0);
    }
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(ftruncate(fd_, 0), 0);
    EXPECT_EQ(lseek(fd_, 0, SEEK_SET), 0);
    return text.str();
  }
  int fd_ = -1;
  std::string path_;
  unsigned long long dev_ = 0, ino_ = 0;
};

TEST_F(JournalStream, OnlyTheStreamNamedByDeviceAndInodeIsTheJournal) {
  EXPECT_TRUE(IsJournalStream(fd_, Value(dev_, ino_).c_str()));
  EXPECT_FALSE(IsJournalStream(fd_, Value(dev_, ino_ + 1).c_str()));
  EXPECT_FALSE(IsJournalStream(fd_, Value(dev_ + 1, ino_).c_str()));
  EXPECT_FALSE(IsJournalStream(fd_, nullptr));
  for (const std::string& bad :
       {std::string(), std::to_string(dev_), Value(dev_, ino_) + "x", Value(dev_, ino_) + ":1",
        ":" + std::to_string(ino_), std::to_string(dev_) + ":", "x:" + std::to_string(ino_)}) {
    EXPECT_FALSE(IsJournalStream(fd_, bad.c_str())) << bad;
  }
  const int null_fd = open("/dev/null", O_WRONLY);
  ASSERT_GE(null_fd, 0);
  EXPECT_FALSE(IsJournalStream(null_fd, Value(dev_, ino_).c_str())) << "another file";
  close(null_fd);
  EXPECT_FALSE(IsJournalStream(-1, Value(dev_, ino_).c_str()));
}

TEST_F(JournalStream, TheDefaultLoggerPrefixesPrioritiesOnlyWhenStdoutIsTheJournal) {
  EXPECT_EQ(LogInChild(Value(dev_, ino_).c_str()),
            "<4>warning coopd: low on space\n<6>info coopd: ready\n");
  EXPECT_EQ(LogInChild(nullptr), "warning coopd: low on space\ninfo coopd: ready\n");
  EXPECT_EQ(LogInChild(Value(dev_, ino_ + 1).c_str()),
            "warning coopd: low on space\ninfo coopd: ready\n");
}

}  // namespace
}  // namespace coopd
