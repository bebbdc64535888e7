#include "server/util/host_port.h"

namespace coopd {

std::optional<HostPort> ParseHostPort(std::string_view text, bool port_optional) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return std::nullopt;  // space, control
  }
  HostPort out;
  std::string_view rest;  // what follows the host: "" or ":PORT"
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    const std::string_view inside = text.substr(1, close - 1);
    if (inside.find_first_of("[]") != std::string_view::npos) return std::nullopt;
    out.host = std::string(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    const size_t colon = text.find(':');
    out.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) rest = text.substr(colon);
    if (out.host.empty() || out.host.find_first_of("[]") != std::string::npos) {
      return std::nullopt;
    }
  }
  if (rest.empty()) {
    if (!port_optional) return std::nullopt;
    return out;
  }
  if (rest.front() != ':' || rest.size() == 1 || rest.size() > 6) return std::nullopt;
  const std::string_view digits = rest.substr(1);
  if (digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  int port = 0;
  for (char c : digits) port = port * 10 + (c - '0');  // at most 5 digits: no overflow
  if (port > 65535) return std::nullopt;
  out.port = port;
  return out;
}

std::optional<HostPort> ParseReportedHostPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 6 && host.substr(0, 3) == "%5B" && host.substr(host.size() - 3) == "%5D") {
    host = host.substr(3, host.size() - 6);
  } else if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return std::nullopt;
  const std::string bracketed =
      host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]" : std::string(host);
  return ParseHostPort(bracketed + std::string(text.substr(colon)));
}

}  // namespace coopd
