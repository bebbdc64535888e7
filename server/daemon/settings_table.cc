// settings_table.cc: the settings table (settings.h says what a row is): the codecs its rows
// share and the rows from [server] to [metrics]; settings_table_limits.cc holds the rest.
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "coop/paths.h"
#include "server/cache/remote_config.h"
#include "server/daemon/settings.h"
#include "server/daemon/settings_internal.h"
#include "server/metrics/metrics.h"
#include "server/toolchain/toolchain.h"
#include "server/util/escape.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {

// A settings default (cache.dir), here rather than in daemon.cc so that the settings table
// builds without the daemon (tests/fuzz's settings target).
std::string DefaultCacheDir() {
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return std::string(v) + "/coopd";
  if (const char* v = std::getenv("HOME"); v && *v) return std::string(v) + "/.cache/coopd";
  return "/tmp/coopd-" + std::to_string(getuid()) + "/cache";
}

namespace settings_internal {

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

namespace {

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

}  // namespace

// ---- The table ------------------------------------------------------------------------------
//
// Adding a setting: add a field to DaemonConfig (daemon.h) and one row here (a [limits] or [log]
// one in settings_table_limits.cc). The row names the TOML key ("section.name"; a new section is
// fine), the COOPD_* variable, the flag and its value name (or no value name and the text the flag
// sets), the default (as text, or default_fn with default_help for one computed at start-up), the
// help line, and a codec: Text, Whole, Count, Seconds, OneOf, Bool or List above, Limit
// (settings_table_limits.cc), or one of its own ({type, apply, show}). A flag without a value
// (--insecure) leaves .arg empty and sets .flag_value ("true"), with a Bool codec. A secret's codec
// must redact it in show() (mark the row .secret, as remote.url). Add the key to deploy/coopd.toml
// (Config.TheSampleConfigParsesAndHoldsEveryKeyAtItsDefault fails until you do) and, if operators
// set it often, to deploy/coopd.env and docs/operators.md; CheckSettingsTable (a unit test) catches
// a reused variable or flag. Checks that involve several settings go in Finish() (settings.cc). For
// example:
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
  t.push_back(
      {.key = "toolchain.cccl",
       .env = "COOPD_CCCL",
       .flag = "--cccl",
       .arg = "NAME=DIR",
       .help = "a further CCCL that requests may name (PrimitiveSpec.cccl, coopctl --cccl): "
               "DIR is its include root or a site-packages directory holding nvidia-cuda-cccl or "
               "cuda-cccl; repeatable; in the config file also [[cccl]] tables (name, include). "
               "The CUDA toolkit's CCCL is always served, as \"toolkit\"",
       .codec = {
           SettingType::kList,
           [](const std::vector<std::string>& v, const std::string& source, DaemonConfig* c) {
             c->cccls.clear();
             for (const auto& item : v) {
               if (item.empty()) continue;
               const size_t eq = item.find('=');
               if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
                 return Bad(source, "NAME=DIR (e.g. cccl35=/opt/cccl-3.5/include)", item);
               }
               c->cccls.push_back({item.substr(0, eq), item.substr(eq + 1), std::string(source)});
             }
             return absl::OkStatus();
           },
           [](const DaemonConfig& c) {
             std::vector<std::string> items;
             for (const auto& s : c.cccls) items.push_back(s.name + "=" + s.path);
             return TomlList(items);
           }}});
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
  t.push_back({.key = "compile.probe_cccl",
               .env = "COOPD_PROBE_CCCL",
               .flag = "--probe-cccl",
               .arg = "WHICH",
               .default_value = {"auto"},
               .help = "compile every family on these CCCLs in the background at start-up, and "
                       "refuse the families that fail there: auto (those of --cccl and "
                       "[[cccl]]), all (the default and the toolkit's too), off",
               .codec = OneOf(&DaemonConfig::probe_cccl, {"auto", "all", "off"})});
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
  // [limits] and [log], the table's last sections.
  for (SettingSpec& row : LimitAndLogSettings()) t.push_back(std::move(row));
  return t;
}

}  // namespace settings_internal

}  // namespace coopd
