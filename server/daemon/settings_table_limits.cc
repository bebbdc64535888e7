// settings_table_limits.cc: the settings table's last rows, [limits] (docs/security.md) and
// [log], and Limit, the codec of the limits (they live in DaemonConfig's nested structs).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "server/daemon/settings.h"
#include "server/daemon/settings_internal.h"
#include "server/util/strings.h"

namespace coopd {

namespace settings_internal {

namespace {

// A whole number min..max, stored times `unit` through `field` (limits live in nested structs).
template <class T>
SettingCodec Limit(std::function<T&(DaemonConfig&)> field, uint64_t min, uint64_t max,
                   uint64_t unit) {
  return {SettingType::kInteger,
          [=](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v[0], &n) || n < min || n > max) {
              return Bad(source, StrCat("a whole number ", min, "..", max), v[0]);
            }
            field(*c) = static_cast<T>(n * unit);
            return absl::OkStatus();
          },
          [=](const DaemonConfig& c) {
            return StrCat(static_cast<uint64_t>(field(const_cast<DaemonConfig&>(c))) / unit);
          }};
}

}  // namespace

std::vector<SettingSpec> LimitAndLogSettings() {
  std::vector<SettingSpec> t;
  // Limits (docs/security.md); over one, a request gets the error named, the daemon serves on.
  t.push_back({.key = "limits.max_message_mb",
               .env = "COOPD_MAX_MESSAGE_MB",
               .flag = "--max-message-mb",
               .arg = "N",
               .default_value = {"64"},
               .help = "largest request message in MiB, 1..4095: RESOURCE_EXHAUSTED",
               .codec = Limit<size_t>(
                   [](DaemonConfig& c) -> size_t& { return c.rpc_limits.max_message_bytes; }, 1,
                   4095, 1 << 20)});
  t.push_back({.key = "limits.max_streams",
               .env = "COOPD_MAX_STREAMS",
               .flag = "--max-streams",
               .arg = "N",
               .default_value = {"256"},
               .help = "calls one connection may have in flight, 1..65536 (HTTP/2 "
                       "MAX_CONCURRENT_STREAMS: a client queues the rest)",
               .codec = Limit<uint32_t>([](DaemonConfig& c) -> uint32_t& { return c.max_streams; },
                                        1, 65536, 1)});
  t.push_back(
      {.key = "limits.grpc_memory_mb",
       .env = "COOPD_GRPC_MEMORY_MB",
       .flag = "--grpc-memory-mb",
       .arg = "N",
       .default_value = {"256"},
       .help = "memory quota in MiB for gRPC's connection buffers, 0..1048576, 0: no "
               "quota; under pressure gRPC shrinks windows and closes connections",
       .codec = Limit<uint64_t>([](DaemonConfig& c) -> uint64_t& { return c.grpc_memory_bytes; }, 0,
                                1048576, 1 << 20)});
  t.push_back({.key = "limits.max_op_source_kb",
               .env = "COOPD_MAX_OP_SOURCE_KB",
               .flag = "--max-op-source-kb",
               .arg = "N",
               .default_value = {"1024"},
               .help = "largest user operator source in KiB, 1..16384: INVALID_ARGUMENT",
               .codec = Limit<size_t>(
                   [](DaemonConfig& c) -> size_t& { return c.request_limits.op_source_bytes; }, 1,
                   16384, 1 << 10)});
  t.push_back(
      {.key = "limits.max_bundle",
       .env = "COOPD_MAX_BUNDLE",
       .flag = "--max-bundle",
       .arg = "N",
       .default_value = {"64"},
       .help = "specs per SpecializeBundle, 1..1024: INVALID_ARGUMENT",
       .codec = Limit<size_t>(
           [](DaemonConfig& c) -> size_t& { return c.request_limits.bundle_specs; }, 1, 1024, 1)});
  t.push_back(
      {.key = "limits.max_plan_specs",
       .env = "COOPD_MAX_PLAN_SPECS",
       .flag = "--max-plan-specs",
       .arg = "N",
       .default_value = {"1024"},
       .help = "Plan uses given by spec, 0..1024: INVALID_ARGUMENT",
       .codec = Limit<size_t>(
           [](DaemonConfig& c) -> size_t& { return c.request_limits.plan_specs; }, 0, 1024, 1)});
  t.push_back(
      {.key = "limits.max_user_ops",
       .env = "COOPD_MAX_USER_OPS",
       .flag = "--max-user-ops",
       .arg = "N",
       .default_value = {"16"},
       .help = "distinct user operators per request, 0..1024: INVALID_ARGUMENT",
       .codec = Limit<size_t>([](DaemonConfig& c) -> size_t& { return c.request_limits.user_ops; },
                              0, 1024, 1)});
  t.push_back({.key = "limits.client_max_in_flight",
               .env = "COOPD_CLIENT_MAX_IN_FLIGHT",
               .flag = "--client-max-in-flight",
               .arg = "N",
               .default_value = {"256"},
               .help = "requests one client may have in flight, 0..65536, 0: no limit: "
                       "RESOURCE_EXHAUSTED. A client is the peer's address on TCP, and the "
                       "coopd-client metadata it sends itself on the Unix socket (GetStats and "
                       "Catalog are not limited)",
               .codec = Limit<uint32_t>(
                   [](DaemonConfig& c) -> uint32_t& { return c.rpc_limits.clients.max_in_flight; },
                   0, 65536, 1)});
  t.push_back(
      {.key = "limits.client_rate",
       .env = "COOPD_CLIENT_RATE",
       .flag = "--client-rate",
       .arg = "R",
       .default_value = {"0"},
       .help = "requests per second one client may send on average, 0: no limit, in bursts of "
               "up to limits.client_burst: RESOURCE_EXHAUSTED",
       .codec = {SettingType::kNumber,
                 [](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
                   double r = 0;
                   if (!absl::SimpleAtod(v[0], &r) || !(r >= 0) || r > 1e6) {
                     return Bad(source, "a number of requests per second 0..1000000 (0: no limit)",
                                v[0]);
                   }
                   c->rpc_limits.clients.rate = r;
                   return absl::OkStatus();
                 },
                 [](const DaemonConfig& c) { return NumberText(c.rpc_limits.clients.rate); }}});
  t.push_back({.key = "limits.client_burst",
               .env = "COOPD_CLIENT_BURST",
               .flag = "--client-burst",
               .arg = "N",
               .default_value = {"100"},
               .help = "the burst of limits.client_rate, 1..1000000 requests",
               .codec = Limit<uint32_t>(
                   [](DaemonConfig& c) -> uint32_t& { return c.rpc_limits.clients.burst; }, 1,
                   1000000, 1)});
  t.push_back({.key = "limits.quota_compiles_per_minute",
               .env = "COOPD_QUOTA_COMPILES_PER_MINUTE",
               .flag = "--quota-compiles-per-minute",
               .arg = "N",
               .default_value = {"0"},
               .help = "compiles and links one client may start per minute, 0..1000000, 0: no "
                       "quota: RESOURCE_EXHAUSTED (cache hits and joined compiles are never "
                       "refused). A client is its token's name, else as for "
                       "limits.client_max_in_flight",
               .codec = Limit<uint32_t>(
                   [](DaemonConfig& c) -> uint32_t& { return c.quotas.compiles_per_minute; }, 0,
                   1000000, 1)});
  t.push_back({.key = "limits.quota_cache_mb_per_hour",
               .env = "COOPD_QUOTA_CACHE_MB_PER_HOUR",
               .flag = "--quota-cache-mb-per-hour",
               .arg = "N",
               .default_value = {"0"},
               .help = "MiB of artifacts one client's compiles may insert into the cache per "
                       "hour, 0..1048576, 0: no quota; over it, its next compile is "
                       "RESOURCE_EXHAUSTED",
               .codec = Limit<uint64_t>(
                   [](DaemonConfig& c) -> uint64_t& { return c.quotas.cache_bytes_per_hour; }, 0,
                   1048576, 1 << 20)});
  t.push_back({.key = "log.level",
               .env = "COOPD_LOG_LEVEL",
               .flag = "--log-level",
               .arg = "LEVEL",
               .default_value = {"info"},
               .help = "trace, debug, info, warn, error or off",
               .codec = OneOf(&DaemonConfig::log_level,
                              {"trace", "debug", "info", "warn", "error", "off"})});
  t.push_back({.key = "log.format",
               .env = "COOPD_LOG_FORMAT",
               .flag = "--log-format",
               .arg = "FORMAT",
               .default_value = {"text"},
               .help = "text (one line per message) or json (one JSON object per line: time, "
                       "level, pid, thread, request_id, message)",
               .codec = OneOf(&DaemonConfig::log_format, {"text", "json"})});
  return t;
}

}  // namespace settings_internal

}  // namespace coopd
