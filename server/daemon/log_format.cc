#include "server/daemon/log_format.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/util/escape.h"

namespace coopd {

SafeLogFormatter::SafeLogFormatter(std::string pattern)
    : pattern_(std::move(pattern)), inner_(pattern_) {}

void SafeLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string safe =
      LogSafe(std::string_view(msg.payload.data(), msg.payload.size()), kMaxLogMessageBytes);
  spdlog::details::log_msg copy = msg;
  copy.payload = spdlog::string_view_t(safe.data(), safe.size());
  inner_.format(copy, dest);
  // The colour range (%^...%$) is set on the message the sink holds.
  msg.color_range_start = copy.color_range_start;
  msg.color_range_end = copy.color_range_end;
}

std::unique_ptr<spdlog::formatter> SafeLogFormatter::clone() const {
  return std::make_unique<SafeLogFormatter>(pattern_);
}

namespace {

constexpr std::string_view kRequestTag = "[req ";

void Append(spdlog::memory_buf_t& dest, std::string_view s) {
  dest.append(s.data(), s.data() + s.size());
}

// `s` as the inside of a JSON string. LogSafe's output holds no control characters and is valid
// UTF-8, so only the quote and the backslash need escaping; anything else below 0x20 is escaped
// anyway, in case a caller passes text that did not go through LogSafe.
void AppendJsonString(spdlog::memory_buf_t& dest, std::string_view s) {
  dest.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      dest.push_back('\\');
      dest.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      Append(dest, buf);
    } else {
      dest.push_back(c);
    }
  }
  dest.push_back('"');
}

}  // namespace

bool SplitRequestTag(std::string_view message, std::string_view* id, std::string_view* rest) {
  if (message.substr(0, kRequestTag.size()) != kRequestTag) return false;
  const size_t end = message.find("] ", kRequestTag.size());
  if (end == std::string_view::npos || end == kRequestTag.size()) return false;
  *id = message.substr(kRequestTag.size(), end - kRequestTag.size());
  for (char c : *id) {  // an id is one plain word (grpc_service.h's SaneRequestId is stricter)
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '"' || c == '\\' || c == '[') return false;
  }
  *rest = message.substr(end + 2);
  return true;
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string_view payload(msg.payload.data(), msg.payload.size());
  std::string_view id, text = payload;
  const bool tagged = SplitRequestTag(payload, &id, &text);
  const auto since_epoch = msg.time.time_since_epoch();
  const time_t seconds =
      static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count());
  const int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000);
  struct tm utc;
  gmtime_r(&seconds, &utc);
  char time_buf[96];
  std::snprintf(time_buf, sizeof(time_buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                utc.tm_sec, millis);
  static const int pid = static_cast<int>(getpid());
  Append(dest, "{\"time\":\"");
  Append(dest, time_buf);
  Append(dest, "\",\"level\":\"");
  const auto level = spdlog::level::to_string_view(msg.level);
  Append(dest, std::string_view(level.data(), level.size()));
  char ids[64];
  std::snprintf(ids, sizeof(ids), "\",\"pid\":%d,\"thread\":%zu", pid, msg.thread_id);
  Append(dest, ids);
  if (tagged) {
    Append(dest, ",\"request_id\":");
    AppendJsonString(dest, LogSafe(id, kMaxLogMessageBytes));
  }
  Append(dest, ",\"message\":");
  AppendJsonString(dest, LogSafe(text, kMaxLogMessageBytes));
  Append(dest, "}\n");
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

int JournalPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::err:
      return 3;
    case spdlog::level::critical:
      return 2;
    default:
      return 6;
  }
}

bool IsJournalStream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) return false;
  // "DEVICE:INODE", both decimal, nothing else.
  char* end = nullptr;
  errno = 0;
  const unsigned long long dev = std::strtoull(journal_stream, &end, 10);
  if (errno != 0 || end == journal_stream || *end != ':') return false;
  const char* ino_start = end + 1;
  const unsigned long long ino = std::strtoull(ino_start, &end, 10);
  if (errno != 0 || end == ino_start || *end != '\0') return false;
  if (*journal_stream == '-' || *ino_start == '-') return false;  // strtoull takes "-1"
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

JournalPriorityFormatter::JournalPriorityFormatter(std::unique_ptr<spdlog::formatter> inner)
    : inner_(std::move(inner)) {}

void JournalPriorityFormatter::format(const spdlog::details::log_msg& msg,
                                      spdlog::memory_buf_t& dest) {
  char prefix[8];
  std::snprintf(prefix, sizeof(prefix), "<%d>", JournalPriority(msg.level));
  Append(dest, prefix);
  // A colour range (%^...%$) is an offset into dest, so it stays right behind the prefix.
  inner_->format(msg, dest);
}

std::unique_ptr<spdlog::formatter> JournalPriorityFormatter::clone() const {
  return std::make_unique<JournalPriorityFormatter>(inner_->clone());
}

std::string JournalPrefix(int fd, spdlog::level::level_enum level) {
  if (!IsJournalStream(fd, std::getenv("JOURNAL_STREAM"))) return "";
  return "<" + std::to_string(JournalPriority(level)) + ">";
}

namespace {

// The default logger writes to standard output (spdlog's stdout colour sink).
void Install(std::unique_ptr<spdlog::formatter> formatter) {
  if (IsJournalStream(STDOUT_FILENO, std::getenv("JOURNAL_STREAM"))) {
    formatter = std::make_unique<JournalPriorityFormatter>(std::move(formatter));
  }
  spdlog::set_formatter(std::move(formatter));
}

}  // namespace

void InstallJsonLogFormat() {
  Install(std::make_unique<JsonLogFormatter>());
}

void InstallSafeLogFormat(const std::string& pattern) {
  Install(std::make_unique<SafeLogFormatter>(pattern));
}

}  // namespace coopd
