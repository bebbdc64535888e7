#include "server/daemon/settings.h"

#include <spdlog/spdlog.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

// toml++ without exceptions: parse errors come back as values (its parse_result).
#define TOML_EXCEPTIONS 0

#include "absl/strings/numbers.h"
#include "coop/paths.h"
#include "server/cache/remote_config.h"
#include "server/metrics/metrics.h"
#include "server/toolchain/toolchain.h"
#include "server/util/escape.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"
#include "server/util/toml.h"

namespace coopd {

// A settings default (cache.dir), here rather than in daemon.cc so that the settings table
// builds without the daemon (tests/fuzz's settings target).
std::string DefaultCacheDir() {
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return std::string(v) + "/coopd";
  if (const char* v = std::getenv("HOME"); v && *v) return std::string(v) + "/.cache/coopd";
  return "/tmp/coopd-" + std::to_string(getuid()) + "/cache";
}

namespace {

// ---- TOML values ----------------------------------------------------------------------------

std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string TomlList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) StrAppend(&out, i ? ", " : "", TomlString(items[i]));
  return out + "]";
}

std::string TomlSeconds(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return StrCat(ms.count() / 1000);
  std::string s = StrCat(ms.count() / 1000, ".");
  char frac[8];
  std::snprintf(frac, sizeof(frac), "%03d", static_cast<int>(ms.count() % 1000));
  s += frac;
  while (s.back() == '0') s.pop_back();
  return s;
}

std::string NumberText(double d) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.15g", d);
  return buf;
}

// ---- Codecs: the checks each kind of setting shares ----------------------------------------

absl::Status Bad(const std::string& source, const std::string& what, const std::string& value) {
  return absl::InvalidArgumentError(
      StrCat(source, ": must be ", what, ", got ", QuoteValue(value)));
}

SettingCodec Text(std::string DaemonConfig::*field) {
  return {SettingType::kString,
          [field](const std::vector<std::string>& v, const std::string&, DaemonConfig* c) {
            c->*field = v[0];
            return absl::OkStatus();
          },
          [field](const DaemonConfig& c) { return TomlString(c.*field); }};
}

// A whole number min..max of units of 2^shift (MiB: shift 20), stored as bytes.
SettingCodec Whole(uint64_t DaemonConfig::*field, uint64_t min, uint64_t max, int shift,
                   std::string what) {
  return {SettingType::kInteger,
          [=](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            uint64_t n = 0;
            if (!absl::SimpleAtoi(v[0], &n) || n > max) {
              return Bad(source, StrCat(what, " 0..", max), v[0]);
            }
            if (n < min) return Bad(source, StrCat("at least ", min, " MiB"), v[0]);
            c->*field = n << shift;
            return absl::OkStatus();
          },
          [=](const DaemonConfig& c) { return StrCat((c.*field) >> shift); }};
}

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

SettingCodec Count(int DaemonConfig::*field, int max, std::string what) {
  return {SettingType::kInteger,
          [=](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            int n = 0;
            if (!absl::SimpleAtoi(v[0], &n) || n < 0 || n > max) {
              return Bad(source, StrCat(what, " 0..", max), v[0]);
            }
            c->*field = n;
            return absl::OkStatus();
          },
          [=](const DaemonConfig& c) { return StrCat(c.*field); }};
}

SettingCodec Seconds(std::chrono::milliseconds DaemonConfig::*field, bool zero_ok) {
  return {SettingType::kNumber,
          [=](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            double seconds = 0;
            if (!absl::SimpleAtod(v[0], &seconds) || !(zero_ok ? seconds >= 0 : seconds > 0) ||
                seconds > 86400) {
              return Bad(source,
                         StrCat("a number of seconds ", zero_ok ? ">= 0" : "> 0", " and <= 86400"),
                         v[0]);
            }
            c->*field = std::chrono::milliseconds(
                std::max<int64_t>(zero_ok ? 0 : 1, static_cast<int64_t>(seconds * 1000)));
            return absl::OkStatus();
          },
          [=](const DaemonConfig& c) { return TomlSeconds(c.*field); }};
}

SettingCodec OneOf(std::string DaemonConfig::*field, std::vector<std::string> allowed) {
  return {SettingType::kString,
          [=](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            if (std::find(allowed.begin(), allowed.end(), v[0]) == allowed.end()) {
              return absl::InvalidArgumentError(StrCat(
                  source, ": must be one of ", StrJoin(allowed, ", "), "; got ", QuoteValue(v[0])));
            }
            c->*field = v[0];
            return absl::OkStatus();
          },
          [field](const DaemonConfig& c) { return TomlString(c.*field); }};
}

SettingCodec Bool(bool DaemonConfig::*field) {
  return {SettingType::kBool,
          [field](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            static const std::set<std::string> yes = {"true", "1", "yes", "on"};
            static const std::set<std::string> no = {"false", "0", "no", "off"};
            if (yes.count(v[0])) {
              c->*field = true;
            } else if (no.count(v[0])) {
              c->*field = false;
            } else {
              return Bad(source, "true or false (or 1/0, yes/no, on/off)", v[0]);
            }
            return absl::OkStatus();
          },
          [field](const DaemonConfig& c) { return std::string(c.*field ? "true" : "false"); }};
}

// A list; `check` validates each item (empty items are dropped).
SettingCodec List(
    std::vector<std::string> DaemonConfig::*field,
    std::function<absl::Status(const std::string& item, const std::string& source)> check) {
  return {SettingType::kList,
          [=](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
            std::vector<std::string> items;
            for (const auto& item : v) {
              if (item.empty()) continue;
              if (check) {
                if (absl::Status s = check(item, source); !s.ok()) return s;
              }
              items.push_back(item);
            }
            c->*field = std::move(items);
            return absl::OkStatus();
          },
          [field](const DaemonConfig& c) { return TomlList(c.*field); }};
}

absl::Status CheckHostPort(const std::string& address, const std::string& source) {
  // Port 0: any free port (the log and Stats name the one taken).
  if (!ParseHostPort(address)) {
    return Bad(source, "HOST:PORT (e.g. 0.0.0.0:7070, [::]:7070, 127.0.0.1:0)", address);
  }
  return absl::OkStatus();
}

std::string DefaultSocket() {
  return coop::DefaultSocketPath();
}

// ---- The table ------------------------------------------------------------------------------
//
// Adding a setting: add a field to DaemonConfig (daemon.h) and one row here. The row names the
// TOML key ("section.name"; a new section is fine), the COOPD_* variable, the flag and its value
// name (or no value name and the text the flag sets), the default (as text, or default_fn with
// default_help for one computed at start-up), the help line, and a codec: Text, Whole, Count,
// Seconds, OneOf, Bool or List above, or one of its own ({type, apply, show}). A flag without
// a value (--insecure) leaves .arg empty and sets .flag_value ("true"), with a Bool codec. A
// secret's codec must redact it in show() (mark the row .secret, as remote.url). Add the key to
// deploy/coopd.toml (Config.TheSampleConfigParsesAndHoldsEveryKeyAtItsDefault fails until you
// do) and, if operators set it often, to deploy/coopd.env and docs/operators.md;
// CheckSettingsTable (a unit test) catches a reused variable or flag. Checks that involve
// several settings go in Finish(). For example:
//
//   t.push_back({.key = "listen.tls_cert",
//                .env = "COOPD_TLS_CERT",
//                .flag = "--tls-cert",
//                .arg = "FILE",
//                .help = "PEM certificate chain for --listen",
//                .codec = Text(&DaemonConfig::tls_cert)});

std::vector<SettingSpec> MakeTable() {
  std::vector<SettingSpec> t;
  t.push_back(
      {.key = "server.socket",
       .env = "COOPD_SOCKET",
       .flag = "--socket",
       .arg = "PATH",
       .default_fn = DefaultSocket,
       .default_help = "$XDG_RUNTIME_DIR/coopd/coopd.sock or /tmp/coopd-$UID/coopd.sock",
       .help = "Unix socket to listen on (ignored under systemd socket activation)",
       .codec = {SettingType::kString,
                 [](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
                   constexpr size_t kMax = sizeof(sockaddr_un{}.sun_path) - 1;
                   if (v[0].empty() || v[0].size() > kMax) {
                     return absl::InvalidArgumentError(StrCat(source, ": socket path must be 1..",
                                                              kMax, " bytes, got ", v[0].size()));
                   }
                   c->socket_path = v[0];
                   return absl::OkStatus();
                 },
                 [](const DaemonConfig& c) { return TomlString(c.socket_path); }}});
  t.push_back({.key = "server.socket_group",
               .env = "COOPD_SOCKET_GROUP",
               .flag = "--socket-group",
               .arg = "GROUP",
               .help = "the Unix socket is 0660 and owned by GROUP, whose members may use it "
                       "(default: 0600, coopd's user alone)",
               .codec = Text(&DaemonConfig::socket_group)});
  t.push_back({.key = "server.shutdown_grace_s",
               .env = "COOPD_SHUTDOWN_GRACE",
               .flag = "--shutdown-grace",
               .arg = "SECONDS",
               .default_value = {"5"},
               .help = "on SIGTERM/SIGINT, seconds the requests in flight may take before their "
                       "compiles are cancelled",
               .codec = Seconds(&DaemonConfig::shutdown_grace, /*zero_ok=*/true)});
  t.push_back({.key = "server.idle_exit_s",
               .env = "COOPD_IDLE_EXIT",
               .flag = "--idle-exit",
               .arg = "SECONDS",
               .default_value = {"0"},
               .help = "stop (as on SIGTERM) after this many seconds without a call in flight, "
                       "a call received or a compile running; 0: never (services, socket "
                       "activation). A client that auto-starts coopd passes 1800 unless "
                       "COOPD_IDLE_EXIT is set",
               .codec = Seconds(&DaemonConfig::idle_exit, /*zero_ok=*/true)});
  t.push_back({.key = "server.handshake_timeout_s",
               .env = "COOPD_HANDSHAKE_TIMEOUT",
               .flag = "--handshake-timeout",
               .arg = "SECONDS",
               .default_value = {"10"},
               .help = "a connection that has not finished its TLS and HTTP/2 handshake after "
                       "this many seconds is closed (docs/security.md)",
               .codec = Seconds(&DaemonConfig::handshake_timeout, /*zero_ok=*/false)});
  t.push_back({.key = "server.self_probe_s",
               .env = "COOPD_SELF_PROBE",
               .flag = "--self-probe",
               .arg = "SECONDS",
               .default_value = {"5"},
               .help = "every this many seconds coopd calls its own listeners and, while they "
                       "answer, notifies systemd's watchdog; after 3 failures in a row it exits "
                       "with status 1 so that its supervisor restarts it; 0: no probe",
               .codec = Seconds(&DaemonConfig::self_probe, /*zero_ok=*/true)});
  t.push_back({.key = "listen.addresses",
               .env = "COOPD_LISTEN",
               .flag = "--listen",
               .arg = "HOST:PORT",
               .help = "also serve gRPC on these TCP addresses (the flag may be repeated; the "
                       "variable is comma-separated). Needs TLS (listen.tls_cert, "
                       "listen.tls_key) and client authentication (auth.tokens_file or "
                       "listen.tls_client_ca), or listen.insecure (docs/security.md)",
               .codec = List(&DaemonConfig::listen, CheckHostPort)});
  // Access control (docs/security.md); checked together in ParseDaemonArgs (AccessSettings).
  t.push_back({.key = "listen.tls_cert",
               .env = "COOPD_TLS_CERT",
               .flag = "--tls-cert",
               .arg = "FILE",
               .help = "PEM certificate chain for the listen.addresses ports",
               .codec = Text(&DaemonConfig::tls_cert)});
  t.push_back({.key = "listen.tls_key",
               .env = "COOPD_TLS_KEY",
               .flag = "--tls-key",
               .arg = "FILE",
               .help = "its PEM private key (mode 0600 or 0640: others may not read it)",
               .codec = Text(&DaemonConfig::tls_key)});
  t.push_back({.key = "listen.tls_client_ca",
               .env = "COOPD_TLS_CLIENT_CA",
               .flag = "--tls-client-ca",
               .arg = "FILE",
               .help = "TCP clients must present a certificate this CA signed (mTLS)",
               .codec = Text(&DaemonConfig::tls_client_ca)});
  t.push_back({.key = "listen.insecure",
               .env = "COOPD_INSECURE",
               .flag = "--insecure",
               .flag_value = "true",
               .default_value = {"false"},
               .help = "allow listen.addresses without TLS or without client authentication, "
                       "with warnings at start, in stats and in coopctl health",
               .codec = Bool(&DaemonConfig::insecure)});
  t.push_back({.key = "auth.tokens_file",
               .env = "COOPD_TOKENS_FILE",
               .flag = "--tokens-file",
               .arg = "FILE",
               .help = "bearer tokens, one \"ROLE NAME TOKEN\" per line, ROLE read, compile or "
                       "admin; TCP calls need one (mode 0600 or 0640)",
               .codec = Text(&DaemonConfig::tokens_file)});
  t.push_back({.key = "auth.tokens_unix",
               .env = "COOPD_TOKENS_UNIX",
               .flag = "--tokens-unix",
               .flag_value = "true",
               .default_value = {"false"},
               .help = "calls on the Unix socket need a token too",
               .codec = Bool(&DaemonConfig::tokens_unix)});
  t.push_back({.key = "cache.dir",
               .env = "COOPD_CACHE_DIR",
               .flag = "--cache-dir",
               .arg = "DIR",
               .default_fn = DefaultCacheDir,
               .default_help = "$XDG_CACHE_HOME/coopd or ~/.cache/coopd",
               .help = "SQLite cache directory",
               .codec = Text(&DaemonConfig::cache_dir)});
  t.push_back({.key = "cache.memory_mb",
               .env = "COOPD_MEMORY_CACHE_MB",
               .flag = "--memory-cache-mb",
               .arg = "N",
               .default_value = {"256"},
               .help = "in-memory cache budget in MiB",
               .codec = Whole(&DaemonConfig::memory_cache_bytes, 0, uint64_t{1} << 20, 20,
                              "a whole number of MiB")});
  t.push_back({.key = "cache.max_mb",
               .env = "COOPD_CACHE_MAX_MB",
               .flag = "--cache-max-mb",
               .arg = "N",
               .default_value = {"5120"},
               .help = "disk cache budget in MiB; least recently used entries are evicted "
                       "beyond it",
               .codec = Whole(&DaemonConfig::disk_cache_bytes, 1, uint64_t{1} << 30, 20,
                              "a whole number of MiB")});
  t.push_back({.key = "toolchain.cccl_include",
               .env = "COOPD_CCCL_INCLUDE",
               .flag = "--cccl-include",
               .arg = "DIR",
               .default_fn = DefaultCcclInclude,
               .default_help = "$CUDA_HOME/include/cccl or /usr/local/cuda/include/cccl",
               .help = "CCCL headers root",
               .codec = Text(&DaemonConfig::cccl_include)});
  t.push_back({.key = "toolchain.clang",
               .env = "COOPD_CLANG",
               .flag = "--clang",
               .arg = "PATH",
               .default_value = {"clang++-22"},
               .help = "clang for LLVM bitcode artifacts, a path or a name on PATH (Debian's "
                       "clang-22 package); without it coopd serves LTO-IR only",
               .codec = Text(&DaemonConfig::clang)});
  t.push_back({.key = "catalog.tuning_table",
               .env = "COOPD_TUNING_TABLE",
               .flag = "--tuning-table",
               .arg = "FILE",
               .help = "a tuning table for algorithm \"auto\" (JSON, docs/tuning.md), replacing "
                       "the embedded table of its arch; empty: the embedded tables",
               .codec = Text(&DaemonConfig::tuning_table)});
  t.push_back({.key = "compile.workers",
               .env = "COOPD_WORKERS",
               .flag = "--workers",
               .arg = "N",
               .default_value = {"0"},
               .help = "compile worker processes; 0: one per core",
               .codec = Count(&DaemonConfig::workers, 256, "a number of workers")});
  t.push_back({.key = "compile.timeout_s",
               .env = "COOPD_COMPILE_TIMEOUT",
               .flag = "--compile-timeout",
               .arg = "SECONDS",
               .default_value = {"120"},
               .help = "seconds a compile may take before its worker is killed "
                       "(DEADLINE_EXCEEDED)",
               .codec = Seconds(&DaemonConfig::compile_timeout, /*zero_ok=*/false)});
  t.push_back({.key = "compile.worker_memory_mb",
               .env = "COOPD_WORKER_MEMORY_MB",
               .flag = "--worker-memory-mb",
               .arg = "N",
               .default_value = {"2048"},
               .help = "address-space limit per compile worker and its clang, in MiB; 0: "
                       "unlimited",
               .codec = Whole(&DaemonConfig::worker_memory_bytes, 0, uint64_t{1} << 24, 20,
                              "a whole number of MiB")});
  t.push_back({.key = "compile.pch",
               .env = "COOPD_PCH",
               .flag = "--no-pch",
               .flag_value = "false",
               .default_value = {"true"},
               .help = "NVRTC automatic precompiled headers (--no-pch turns them off)",
               .codec = Bool(&DaemonConfig::pch)});
  t.push_back(
      {.key = "compile.sandbox",
       .env = "COOPD_SANDBOX",
       .flag = "--sandbox",
       .arg = "MODE",
       .default_value = {"auto"},
       .help = "compile workers' confinement: auto: Landlock + seccomp, or with a "
               "warning seccomp alone on a kernel without Landlock; require: refuse to "
               "start without Landlock; off: none (docs/security.md)",
       .codec = {SettingType::kString,
                 [](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
                   if (v[0] == "auto") {
                     c->sandbox = SandboxMode::kAuto;
                   } else if (v[0] == "require") {
                     c->sandbox = SandboxMode::kRequire;
                   } else if (v[0] == "off") {
                     c->sandbox = SandboxMode::kOff;
                   } else {
                     return absl::InvalidArgumentError(StrCat(
                         source, ": must be one of auto, require, off; got ", QuoteValue(v[0])));
                   }
                   return absl::OkStatus();
                 },
                 [](const DaemonConfig& c) {
                   return TomlString(c.sandbox == SandboxMode::kOff       ? "off"
                                     : c.sandbox == SandboxMode::kRequire ? "require"
                                                                          : "auto");
                 }}});
  t.push_back(
      {.key = "compile.prewarm",
       .env = "COOPD_PREWARM",
       .flag = "--prewarm",
       .arg = "ARCHS",
       .default_help = "the archs this cache last compiled for (CACHE_DIR/prewarm-archs)",
       .help = "build every worker's precompiled CCCL headers for these archs (e.g. "
               "sm_90,sm_80) in the background at start-up; none: off",
       .codec = {SettingType::kList,
                 [](const std::vector<std::string>& v, const std::string&, DaemonConfig* c) {
                   std::vector<std::string> archs;
                   for (const auto& a : v) {
                     if (!a.empty()) archs.push_back(a);
                   }
                   c->prewarm_from_history = archs.empty();
                   if (archs == std::vector<std::string>{"none"}) archs.clear();
                   c->prewarm_archs = std::move(archs);
                   return absl::OkStatus();
                 },
                 [](const DaemonConfig& c) {
                   if (!c.prewarm_from_history && c.prewarm_archs.empty()) {
                     return TomlList({"none"});
                   }
                   return TomlList(c.prewarm_archs);
                 }}});
  t.push_back(
      {.key = "remote.url",
       .env = "COOPD_REMOTE_CACHE",
       .flag = "--remote-cache",
       .arg = "URL",
       .help = "the farm tier shared by replicas, as redis-py reads it: "
               "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?OPTIONS] or "
               "redis-cluster://HOST[:PORT],HOST[:PORT][?OPTIONS], percent-encoded; options "
               "prefix (key namespace, default coopd), db, ttl, pool, write (sync|async), "
               "read_only, timeout_ms, connect_timeout_ms, lease_ttl_ms, lease_wait_ms, "
               "password_file (docs/farm.md); rediss:// is refused (no TLS in hiredis 0.14); "
               "empty: none",
       .secret = true,
       .codec = {
           SettingType::kString,
           [](const std::vector<std::string>& v, const std::string&, DaemonConfig* c) {
             c->remote_url = v[0];  // parsed in Finish(), with the password file
             return absl::OkStatus();
           },
           [](const DaemonConfig& c) { return TomlString(RedactRemoteCacheUrl(c.remote_url)); }}});
  t.push_back({.key = "remote.password_file",
               .env = "COOPD_REMOTE_CACHE_PASSWORD_FILE",
               .flag = "--remote-cache-password-file",
               .arg = "FILE",
               .help = "the Redis password: the first line of FILE, so it is never on a "
                       "command line",
               .codec = Text(&DaemonConfig::remote_password_file)});
  t.push_back(
      {.key = "metrics.address",
       .env = "COOPD_METRICS",
       .flag = "--metrics",
       .arg = "HOST:PORT",
       .help = "serve Prometheus metrics at http://HOST:PORT/metrics; empty: off. Plain "
               "HTTP, no authentication",
       .codec = {SettingType::kString,
                 [](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
                   if (!v[0].empty()) {
                     if (absl::Status s = CheckMetricsAddress(v[0], source); !s.ok()) {
                       return s;
                     }
                   }
                   c->metrics_address = v[0];
                   return absl::OkStatus();
                 },
                 [](const DaemonConfig& c) { return TomlString(c.metrics_address); }}});
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

// Checks across settings, once every setting has its value.
absl::Status Finish(const std::vector<std::string>& origins, DaemonConfig* config) {
  const auto& table = Settings();
  auto origin_of = [&](const std::string& key) {
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i].key == key) return origins[i];
    }
    return std::string();
  };
  config->remote = !config->remote_url.empty();
  if (config->remote) {
    std::string source = origin_of("remote.url");
    if (source.find(':') != std::string::npos && source.rfind("--", 0) != 0) {
      source = StrCat(source, ": remote.url");  // FILE:LINE
    }
    auto parsed = ParseRemoteCacheUrl(config->remote_url, source, config->remote_password_file);
    if (!parsed.ok()) return parsed.status();
    config->remote_cache = std::move(*parsed);
  }
  return absl::OkStatus();
}

// ---- The config file ------------------------------------------------------------------------

const char* TypeName(SettingType type) {
  switch (type) {
    case SettingType::kString:
      return "a string";
    case SettingType::kInteger:
      return "an integer";
    case SettingType::kNumber:
      return "a number";
    case SettingType::kBool:
      return "a boolean (true or false)";
    case SettingType::kList:
      return "an array of strings";
  }
  return "a value";
}

std::string NodeTypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

// A file value: its text (the items of a list) and FILE:LINE.
struct FileValue {
  std::vector<std::string> values;
  std::string where;
};

absl::Status ReadConfigFile(const std::string& path, std::map<std::string, FileValue>* out) {
  toml::parse_result parsed = toml::parse_file(path);
  if (!parsed) {
    const auto& e = parsed.error();
    // toml++ quotes what it saw raw (a newline, a control byte): escaped, so the error stays one
    // line (found by the settings fuzz target).
    return absl::InvalidArgumentError(StrCat(EscapeText(path), ":", e.source().begin.line, ":",
                                             e.source().begin.column, ": ",
                                             EscapeText(e.description())));
  }
  const auto& table = Settings();
  std::map<std::string, const SettingSpec*> by_key;
  std::map<std::string, std::vector<std::string>> section_keys;
  std::vector<std::string> all_keys;  // and the sections, for typos of a section's name
  for (const auto& s : table) {
    by_key[s.key] = &s;
    const size_t dot = s.key.find('.');
    section_keys[s.key.substr(0, dot)].push_back(s.key.substr(dot + 1));
    all_keys.push_back(s.key);
  }
  for (const auto& [name, keys] : section_keys) all_keys.push_back(name);
  auto unknown = [&](const std::string& key, int line, const std::string& section) {
    std::string msg = StrCat(path, ":", line, ": unknown key ", QuoteValue(key));
    // A typo of a whole key ("cach_dir"), or a key put in the wrong section ("dir" at the top).
    const std::string leaf = key.substr(key.rfind('.') + 1);
    std::string guess = DidYouMean(key, all_keys);
    if (guess.empty()) guess = DidYouMean(leaf, all_keys);  // "cach_dir" under [cache]
    if (guess.empty()) {
      for (const auto& k : all_keys) {
        if (k.substr(k.find('.') + 1) == leaf) guess = k;
      }
    }
    if (!guess.empty()) StrAppend(&msg, " (did you mean \"", guess, "\"?)");
    auto it = section_keys.find(section);
    if (it != section_keys.end()) {
      StrAppend(&msg, "; the keys of [", section, "] are ", StrJoin(it->second, ", "));
    } else {
      std::vector<std::string> sections;
      for (const auto& [name, keys] : section_keys) sections.push_back(name);
      StrAppend(&msg, "; the sections are ", StrJoin(sections, ", "),
                " (coopd --print-config lists every key)");
    }
    return absl::InvalidArgumentError(msg);
  };
  for (const auto& [section_key, section_node] : parsed.table()) {
    const std::string section(section_key.str());
    const int section_line = static_cast<int>(section_key.source().begin.line);
    const toml::table* keys = section_node.as_table();
    if (section_keys.count(section) == 0) {
      return unknown(section, section_line, keys == nullptr ? "" : section);
    }
    if (keys == nullptr) {
      return absl::InvalidArgumentError(StrCat(path, ":", section_line, ": [", section,
                                               "] must be a table, got ",
                                               NodeTypeName(section_node)));
    }
    for (const auto& [name_key, node] : *keys) {
      const std::string key = StrCat(section, ".", std::string(name_key.str()));
      const int line = static_cast<int>(name_key.source().begin.line);
      auto it = by_key.find(key);
      if (it == by_key.end()) return unknown(key, line, section);
      const SettingSpec& spec = *it->second;
      const std::string where = StrCat(path, ":", line);
      auto wrong_type = [&] {
        return absl::InvalidArgumentError(StrCat(where, ": ", key, ": must be ",
                                                 TypeName(spec.codec.type), ", got ",
                                                 NodeTypeName(node)));
      };
      FileValue value{{}, where};
      switch (spec.codec.type) {
        case SettingType::kString:
          if (!node.is_string()) return wrong_type();
          value.values.push_back(*node.value<std::string>());
          break;
        case SettingType::kInteger:
          if (!node.is_integer()) return wrong_type();
          value.values.push_back(StrCat(*node.value<int64_t>()));
          break;
        case SettingType::kNumber:
          if (node.is_integer()) {
            value.values.push_back(StrCat(*node.value<int64_t>()));
          } else if (node.is_floating_point()) {
            value.values.push_back(NumberText(*node.value<double>()));
          } else {
            return wrong_type();
          }
          break;
        case SettingType::kBool:
          if (!node.is_boolean()) return wrong_type();
          value.values.push_back(*node.value<bool>() ? "true" : "false");
          break;
        case SettingType::kList: {
          const toml::array* items = node.as_array();
          if (items == nullptr) return wrong_type();
          for (const auto& item : *items) {
            if (!item.is_string()) {
              return absl::InvalidArgumentError(StrCat(where, ": ", key,
                                                       ": must be an array of strings, got ",
                                                       NodeTypeName(item), " in it"));
            }
            value.values.push_back(*item.value<std::string>());
          }
          break;
        }
      }
      (*out)[key] = std::move(value);
    }
  }
  return absl::OkStatus();
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// $XDG_CONFIG_HOME/coopd/coopd.toml, else ~/.config/coopd/coopd.toml; empty without either.
std::string DefaultConfigFile() {
  std::string base = EnvOr("XDG_CONFIG_HOME", "");
  if (base.empty()) {
    const std::string home = EnvOr("HOME", "");
    if (home.empty()) return "";
    base = home + "/.config";
  }
  return base + "/coopd/coopd.toml";
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= s.size();) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string Wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      StrAppend(&out, out.empty() ? "" : "\n" + std::string(indent, ' '), line);
      line.clear();
    }
    StrAppend(&line, line.empty() ? "" : " ", word);
    start = end + 1;
  }
  if (!line.empty()) StrAppend(&out, out.empty() ? "" : "\n" + std::string(indent, ' '), line);
  return out;
}

}  // namespace

const std::vector<SettingSpec>& Settings() {
  static const std::vector<SettingSpec>* table = new std::vector<SettingSpec>(MakeTable());
  return *table;
}

absl::Status CheckSettingsTable(const std::vector<SettingSpec>& table) {
  std::set<std::string> seen;
  for (const auto& s : table) {
    auto bad = [&](const std::string& what) {
      return absl::InternalError(
          StrCat("settings table: ", s.key.empty() ? s.flag : s.key, ": ", what));
    };
    const size_t dot = s.key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.key.size() ||
        s.key.find('.', dot + 1) != std::string::npos) {
      return bad("the key must be \"section.name\"");
    }
    if (s.env.rfind("COOPD_", 0) != 0) return bad("the variable must start with COOPD_");
    if (s.flag.rfind("--", 0) != 0) return bad("the flag must start with --");
    for (const std::string* name : {&s.key, &s.env, &s.flag}) {
      if (!seen.insert(*name).second) return bad(StrCat(*name, " is used twice"));
    }
    if (s.help.empty()) return bad("no help line");
    if (!s.codec.apply || !s.codec.show) return bad("no codec");
    if (s.arg.empty() && s.flag_value.empty()) {
      return bad("a flag without a value name must set flag_value");
    }
    if (s.default_fn && s.default_help.empty()) return bad("a computed default needs default_help");
    if (s.codec.type != SettingType::kList && s.default_value.size() > 1) {
      return bad("a scalar has one default");
    }
  }
  return absl::OkStatus();
}

std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string SettingsHelp() {
  constexpr size_t kIndent = 26, kWidth = 100;
  std::string out =
      "usage: coopd [--config FILE] [--print-config] [SETTINGS...] [--version] [--help]\n"
      "       coopd sandbox-exec [SETTINGS...] [--read PATH]... -- PROG [ARGS...]\n"
      "       coopd check-sandbox\n"
      "\n"
      "Serves CUB block/warp primitive specializations over gRPC on a Unix socket.\n"
      "sandbox-exec runs PROG under a compile worker's confinement (PROG may also be executed;\n"
      "exit status PROG's, 125 when confinement fails); check-sandbox prints what this kernel\n"
      "confines (exit status 0: everything, 1: not everything). docs/security.md says more.\n"
      "\n"
      "  --config FILE           the TOML config file (env COOPD_CONFIG; default\n"
      "                          $XDG_CONFIG_HOME/coopd/coopd.toml or ~/.config/coopd/coopd.toml\n"
      "                          when it exists; deploy/coopd.toml is a sample with every key)\n"
      "  --print-config          print the effective configuration as TOML, each value's\n"
      "                          source (default, FILE:LINE, variable, flag) beside it; then exit\n"
      "\n"
      "Settings: each is a flag, a COOPD_* variable and a key of the config file. Flags win over\n"
      "the environment, the environment over the file, the file over the defaults.\n";
  for (const auto& s : Settings()) {
    std::string name = StrCat("  ", s.flag, s.arg.empty() ? "" : " ", s.arg);
    if (name.size() + 1 > kIndent) {
      name += "\n" + std::string(kIndent, ' ');
    } else {
      name.resize(kIndent, ' ');
    }
    std::string def;
    if (!s.default_help.empty()) {
      def = s.default_help;
    } else if (!s.default_value.empty()) {
      def = StrJoin(s.default_value, ",");
    } else {
      def = "none";
    }
    StrAppend(&out, name,
              Wrap(StrCat(s.help, " [key ", s.key, ", env ", s.env, "; default ", def, "]"),
                   kIndent, kWidth),
              "\n");
  }
  StrAppend(&out,
            "\n"
            "Started by systemd socket activation (LISTEN_FDS), coopd serves on the inherited "
            "socket\n"
            "and ignores --socket. Health: grpc.health.v1.Health (service \"\" or coop.v1.Coop);\n"
            "server reflection is on. docs/operators.md describes every setting.\n");
  return out;
}

absl::StatusOr<LoadedSettings> LoadSettings(int argc, char** argv, DaemonConfig* config) {
  const auto& table = Settings();
  LoadedSettings loaded;
  loaded.origins.assign(table.size(), "default");

  // 1. The flags (CLI11). Every value is taken as text and checked by the codecs below, so a
  // bad value's error reads the same whichever source it came from.
  CLI::App app{"coopd"};
  app.set_help_flag();  // --help is ours: SettingsHelp() states keys, variables and defaults
  app.allow_extras(true);
  std::vector<std::vector<std::string>> flag_values(table.size());
  std::vector<CLI::Option*> flag_options(table.size(), nullptr);
  std::string config_flag;
  CLI::Option* config_option = app.add_option("--config", config_flag);
  config_option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("-h,--help", loaded.help);
  app.add_flag("--version", loaded.version);
  app.add_flag("--print-config", loaded.print_config);
  for (size_t i = 0; i < table.size(); ++i) {
    const SettingSpec& s = table[i];
    if (s.arg.empty()) {
      flag_options[i] = app.add_flag(s.flag);
    } else if (s.codec.type == SettingType::kList) {
      flag_options[i] = app.add_option(s.flag, flag_values[i])->allow_extra_args(false);
    } else {
      flag_options[i] = app.add_option(s.flag, flag_values[i])
                            ->expected(1)
                            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // CLI11 says "--flag: 1 required TEXT missing".
    if (const size_t colon = what.find(": 1 required");
        colon != std::string::npos && what.size() > 8 &&
        what.compare(what.size() - 8, 8, " missing") == 0) {
      return absl::InvalidArgumentError(StrCat(what.substr(0, colon), ": missing value"));
    }
    return absl::InvalidArgumentError(StrCat(what, " (see coopd --help)"));
  }
  if (!app.remaining().empty()) {
    const std::string arg = app.remaining().front();
    std::vector<std::string> flags = {"--config", "--print-config", "--help", "--version"};
    for (const auto& s : table) flags.push_back(s.flag);
    const std::string guess = DidYouMean(arg.substr(0, arg.find('=')), flags);
    return absl::InvalidArgumentError(
        StrCat("unknown argument ", QuoteValue(arg),
               guess.empty() ? "" : StrCat(" (did you mean ", guess, "?)"), " (see coopd --help)"));
  }
  if (loaded.help || loaded.version) return loaded;

  // 2. The config file.
  std::map<std::string, FileValue> file;
  std::string config_source;
  if (config_option->count() > 0) {
    loaded.config_file = config_flag;
    config_source = "--config";
  } else if (std::string env = EnvOr("COOPD_CONFIG", ""); !env.empty()) {
    loaded.config_file = env;
    config_source = "COOPD_CONFIG";
  } else if (std::string path = DefaultConfigFile();
             !path.empty() && std::filesystem::exists(path)) {
    loaded.config_file = path;
  }
  if (!loaded.config_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(loaded.config_file, ec)) {
      return absl::InvalidArgumentError(StrCat(
          config_source.empty() ? "config file" : config_source, ": ",
          QuoteValue(loaded.config_file), " is not a readable file",
          ec ? StrCat(" (", ec.message(), ")")
             : std::string(std::filesystem::exists(loaded.config_file) ? "" : " (no such file)")));
    }
    if (absl::Status s = ReadConfigFile(loaded.config_file, &file); !s.ok()) return s;
  }
  config->config_file = loaded.config_file;

  // 3. Each setting from its highest source: flag > environment > file > default.
  for (size_t i = 0; i < table.size(); ++i) {
    const SettingSpec& s = table[i];
    std::vector<std::string> values;
    std::string source;
    if (flag_options[i]->count() > 0) {
      if (s.arg.empty()) {
        values = {s.flag_value};
      } else if (s.codec.type == SettingType::kList) {
        for (const auto& v : flag_values[i]) {
          for (auto& item : SplitCommas(v)) values.push_back(std::move(item));
        }
      } else {
        values = {flag_values[i].back()};
      }
      source = loaded.origins[i] = s.flag;
    } else if (std::string env = EnvOr(s.env.c_str(), ""); !env.empty()) {
      values =
          s.codec.type == SettingType::kList ? SplitCommas(env) : std::vector<std::string>{env};
      source = loaded.origins[i] = s.env;
    } else if (auto it = file.find(s.key); it != file.end()) {
      values = it->second.values;
      loaded.origins[i] = it->second.where;
      source = StrCat(it->second.where, ": ", s.key);
    } else {
      values = s.default_fn ? std::vector<std::string>{s.default_fn()} : s.default_value;
      source = StrCat("the default of ", s.key);
    }
    if (s.codec.type != SettingType::kList && values.empty()) values.push_back("");
    if (absl::Status st = s.codec.apply(values, source, config); !st.ok()) return st;
  }
  if (absl::Status s = Finish(loaded.origins, config); !s.ok()) return s;
  return loaded;
}

std::string PrintConfig(const DaemonConfig& config, const LoadedSettings& loaded) {
  const auto& table = Settings();
  std::string out = StrCat(
      "# coopd's effective configuration (coopd --print-config), each value's source after it:\n"
      "# default, FILE:LINE, a COOPD_* variable or a flag. Valid TOML: save it as a config file\n"
      "# (coopd --config FILE). Secrets are not printed.\n",
      loaded.config_file.empty() ? "# No config file was read.\n"
                                 : StrCat("# Config file: ", loaded.config_file, "\n"));
  std::string section;
  for (size_t i = 0; i < table.size(); ++i) {
    const SettingSpec& s = table[i];
    const size_t dot = s.key.find('.');
    if (s.key.substr(0, dot) != section) {
      section = s.key.substr(0, dot);
      StrAppend(&out, "\n[", section, "]\n");
    }
    const std::string value = s.codec.show(config);
    StrAppend(&out, s.key.substr(dot + 1), " = ", value, "  # ", EscapeText(loaded.origins[i]),
              s.secret && value.find("***") != std::string::npos
                  ? " (the password is not shown; give it in remote.password_file)"
                  : "",
              "\n");
  }
  if (config.tuning_tables != nullptr) {
    StrAppend(&out, "\n# Tuning tables in use (algorithm \"auto\"; digest ",
              config.tuning_tables->digest.empty() ? "none" : config.tuning_tables->digest, "):\n");
    for (const auto& t : config.tuning_tables->tables) {
      StrAppend(&out, "#   ", t.arch, " version ", EscapeText(t.version), " sha256 ", t.digest,
                " (", EscapeText(t.source), ", ", t.cells.size(), " cells",
                t.placeholder() ? ", placeholder: not measured" : "", ")\n");
    }
  }
  return out;
}

}  // namespace coopd
