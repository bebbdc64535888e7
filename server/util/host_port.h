// host_port.h: HOST:PORT, read one way wherever a user gives coopd an address: --listen,
// --metrics and the Redis tier's URLs; and, more leniently, the addresses peers report to coopd
// (Redis Cluster's MOVED and ASK replies, gRPC's peer names), where IPv6 comes unbracketed.
//
// Accepted: "HOST:PORT" and "[V6]:PORT"; with `port_optional`, also "HOST" and "[V6]". HOST is
// non-empty and has no ':', brackets, spaces or control characters ("0.0.0.0", "redis.local"); an
// IPv6 address goes in brackets, which `host` keeps ("[::1]"). PORT is decimal, 0..65535: what a
// port of 0 means (any free port, or nothing) is the caller's to decide, as are the error's words.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace coopd {

struct HostPort {
  std::string host;  // as written: "[::1]" keeps its brackets
  int port = -1;     // -1: no port given (port_optional)
  bool bracketed() const { return !host.empty() && host.front() == '['; }
  // The host without brackets ("::1"), what a socket call takes.
  std::string Bare() const { return bracketed() ? host.substr(1, host.size() - 2) : host; }
};

// nullopt when `text` is not an address of the form above.
std::optional<HostPort> ParseHostPort(std::string_view text, bool port_optional = false);

// An address a peer reported: "HOST:PORT", "[V6]:PORT" (brackets also percent-encoded, as gRPC
// writes them: "%5B::1%5D:PORT"), or an unbracketed "V6:PORT", whose port follows the last ':'.
// A HOST with a ':' comes back bracketed ("[::1]"), so that Bare() and the rules above hold.
// nullopt without a port of 0..65535, or for an empty host, spaces or control characters.
std::optional<HostPort> ParseReportedHostPort(std::string_view text);

}  // namespace coopd
