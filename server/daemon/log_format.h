// log_format.h: coopd's log lines, one per message, whatever the message holds.
//
// Log messages quote what requests carried (invalid values, compiler logs). SafeLogFormatter
// escapes every message before spdlog's pattern formats it (EscapeText: control characters and
// invalid UTF-8 become \n, \xNN, ...), so a value cannot start a line of its own or write raw
// bytes to the log, and cuts it to kMaxLogMessageBytes with a note of the rest.
//
// A message about a request starts with its tag, "[req ID] " (ID: server/rpc/grpc_service.h's
// request ids, which hold no space, bracket or quote). The text format prints it as it is; the
// JSON format (JsonLogFormatter: one object per line, for log shippers) lifts it into the
// object's request_id field.
//
// Under systemd, with standard output connected to the journal (JOURNAL_STREAM names its device
// and inode), each line starts with its syslog priority, "<N>" (JournalPriorityFormatter), which
// journald reads as the line's priority and strips: `journalctl -p warning` then shows coopd's
// warnings and errors. Anywhere else (a terminal, coopd.log, a pipe) lines carry no prefix.
//
// Thread-safe as spdlog formatters are (each sink holds its own clone).
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string>

namespace coopd {

// coopd's text format (spdlog pattern): "2026-12-01T18:40:00.123 info coopd: message".
inline constexpr char kTextLogPattern[] = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ coopd: %v";

// The longest message a log line carries (bytes of the message before escaping).
inline constexpr size_t kMaxLogMessageBytes = 16 * 1024;

class SafeLogFormatter final : public spdlog::formatter {
 public:
  explicit SafeLogFormatter(std::string pattern);
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::string pattern_;
  spdlog::pattern_formatter inner_;
};

// One JSON object per line:
//   {"time":"2026-12-01T18:40:00.123Z","level":"info","pid":12,"thread":34,
//    "request_id":"9f2c01ab-7","message":"..."}
// time in UTC; request_id only on messages tagged "[req ID] "; message escaped as the text
// format escapes it (LogSafe: no control characters, valid UTF-8) and then for JSON.
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// Splits "[req ID] rest" into ID and rest; false for a message without the tag.
bool SplitRequestTag(std::string_view message, std::string_view* id, std::string_view* rest);

// The syslog priority journald gives a line of `level`: trace and debug 7 (debug), info 6,
// warn 4 (warning), err 3, critical 2 (crit); off (never logged) 6.
int JournalPriority(spdlog::level::level_enum level);

// Whether `fd` is the stream systemd connected to the journal: `journal_stream` (the value of
// $JOURNAL_STREAM, "DEVICE:INODE" in decimal) names fd's device and inode. False for null, a
// malformed value or another file.
bool IsJournalStream(int fd, const char* journal_stream);

// `inner`'s line with "<N>" before it, N = JournalPriority(the message's level).
class JournalPriorityFormatter final : public spdlog::formatter {
 public:
  explicit JournalPriorityFormatter(std::unique_ptr<spdlog::formatter> inner);
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

// "<N>" for a line of `level` written straight to `fd` (not through spdlog: coopd's last words
// at start-up) when fd is the journal's stream (IsJournalStream with $JOURNAL_STREAM), else "".
std::string JournalPrefix(int fd, spdlog::level::level_enum level);

// Installs SafeLogFormatter with `pattern` on the default logger's sinks (which write to
// standard output), inside a JournalPriorityFormatter when standard output is the journal's.
void InstallSafeLogFormat(const std::string& pattern);
// Installs JsonLogFormatter on the default logger's sinks, likewise.
void InstallJsonLogFormat();

}  // namespace coopd
