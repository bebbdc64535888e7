// log_format.h: coopd's log lines, one per message, whatever the message holds.
//
// Log messages quote what requests carried (invalid values, compiler logs). SafeLogFormatter
// escapes every message before spdlog's pattern formats it (EscapeText: control characters and
// invalid UTF-8 become \n, \xNN, ...), so a value cannot start a line of its own or write raw
// bytes to the log, and cuts it to kMaxLogMessageBytes with a note of the rest.
//
// Thread-safe as spdlog formatters are (each sink holds its own clone).
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string>

namespace coopd {

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

// Installs SafeLogFormatter with `pattern` on the default logger's sinks.
void InstallSafeLogFormat(const std::string& pattern);

}  // namespace coopd
