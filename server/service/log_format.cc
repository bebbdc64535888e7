#include "server/service/log_format.h"

#include <spdlog/spdlog.h>

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

void InstallSafeLogFormat(const std::string& pattern) {
  spdlog::set_formatter(std::make_unique<SafeLogFormatter>(pattern));
}

}  // namespace coopd
