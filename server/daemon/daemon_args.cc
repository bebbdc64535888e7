// daemon_args.cc: ParseDaemonArgs: the settings (settings.h), access control's settings checked
// together, the tuning tables, and --help, --version and --print-config.
#include <grp.h>

#include <cstdint>
#include <cstring>
#include <iostream>

#include "absl/strings/numbers.h"
#include "server/catalog/tuning.h"
#include "server/daemon/daemon.h"
#include "server/daemon/settings.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// A setting's value and where it came from (a flag or a COOPD_* variable), for errors.
struct Setting {
  std::string value, source;
};

absl::Status BoolSetting(const Setting& s, bool* out) {
  if (s.value.empty() || s.value == "0" || s.value == "false" || s.value == "no") {
    *out = false;
  } else if (s.value == "1" || s.value == "true" || s.value == "yes") {
    *out = true;
  } else {
    return absl::InvalidArgumentError(
        StrCat(s.source, ": must be 1 or 0 (true/false, yes/no), got ", QuoteValue(s.value)));
  }
  return absl::OkStatus();
}

// Access control's settings (docs/security.md), checked together: TCP listeners need TLS and
// client authentication unless --insecure.
absl::Status AccessSettings(const Setting& socket_group, const Setting& tls_cert,
                            const Setting& tls_key, const Setting& tls_client_ca,
                            const Setting& tokens_file, const Setting& insecure,
                            const Setting& tokens_unix, DaemonConfig* config) {
  if (absl::Status s = BoolSetting(insecure, &config->insecure); !s.ok()) return s;
  if (absl::Status s = BoolSetting(tokens_unix, &config->tokens_unix); !s.ok()) return s;
  config->socket_group = socket_group.value;
  config->socket_gid = -1;
  if (!socket_group.value.empty()) {
    std::vector<char> buf(16384);
    struct group gr {};
    struct group* found = nullptr;
    const int err = getgrnam_r(socket_group.value.c_str(), &gr, buf.data(), buf.size(), &found);
    uint64_t gid = 0;
    if (found != nullptr) {
      config->socket_gid = found->gr_gid;
    } else if (absl::SimpleAtoi(socket_group.value, &gid) && gid < (uint64_t{1} << 31)) {
      config->socket_gid = static_cast<int64_t>(gid);
    } else {
      return absl::InvalidArgumentError(
          StrCat(socket_group.source, ": no such group ", QuoteValue(socket_group.value),
                 err != 0 ? StrCat(" (", std::strerror(err), ")") : std::string(),
                 "; give a group name from /etc/group (getent group) or a numeric gid"));
    }
  }
  config->tokens_file = tokens_file.value;
  if (config->tokens_unix && config->tokens_file.empty()) {
    return absl::InvalidArgumentError(StrCat(
        tokens_unix.source, ": needs --tokens-file (COOPD_TOKENS_FILE): the tokens to require"));
  }
  config->tls_cert = tls_cert.value;
  config->tls_key = tls_key.value;
  config->tls_client_ca = tls_client_ca.value;
  // TLS settings matter only for TCP listeners: a daemon that a client started with its own
  // COOPD_TLS_* in the environment (auto-start) must not fail on them.
  if (config->listen.empty()) return absl::OkStatus();
  if (tls_cert.value.empty() != tls_key.value.empty()) {
    const Setting& given = tls_cert.value.empty() ? tls_key : tls_cert;
    return absl::InvalidArgumentError(
        StrCat(given.source,
               ": --tls-cert and --tls-key (COOPD_TLS_CERT, COOPD_TLS_KEY) go "
               "together; the other one is missing"));
  }
  if (!tls_client_ca.value.empty() && tls_cert.value.empty()) {
    return absl::InvalidArgumentError(StrCat(
        tls_client_ca.source, ": client certificates need TLS: give --tls-cert and --tls-key"));
  }
  if (config->insecure) return absl::OkStatus();
  if (tls_cert.value.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--listen ", config->listen[0],
               ": TCP needs TLS: give --tls-cert FILE and --tls-key FILE (COOPD_TLS_CERT, "
               "COOPD_TLS_KEY), or --insecure (COOPD_INSECURE=1) to serve plaintext to anyone "
               "who can reach the port (docs/security.md)"));
  }
  if (tokens_file.value.empty() && tls_client_ca.value.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--listen ", config->listen[0],
               ": TCP clients must authenticate: give --tokens-file FILE (bearer tokens with "
               "roles) or --tls-client-ca FILE (client certificates), or --insecure "
               "(COOPD_INSECURE=1) to serve anyone who can reach the port (docs/security.md)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseDaemonArgs(int argc, char** argv, DaemonConfig* config, bool* exit_now) {
  *exit_now = false;
  auto loaded = LoadSettings(argc, argv, config);
  if (!loaded.ok()) return loaded.status();
  {
    // Access control's settings are checked together (AccessSettings), each named by where it
    // came from.
    const auto& table = Settings();
    auto setting = [&](const char* key, std::string value) {
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i].key == key) {
          const std::string& origin = loaded->origins[i];
          const bool file =
              origin != "default" && origin.rfind("--", 0) != 0 && origin.rfind("COOPD_", 0) != 0;
          return Setting{std::move(value), file ? StrCat(origin, ": ", key) : origin};
        }
      }
      return Setting{std::move(value), key};
    };
    if (absl::Status s =
            AccessSettings(setting("server.socket_group", config->socket_group),
                           setting("listen.tls_cert", config->tls_cert),
                           setting("listen.tls_key", config->tls_key),
                           setting("listen.tls_client_ca", config->tls_client_ca),
                           setting("auth.tokens_file", config->tokens_file),
                           setting("listen.insecure", config->insecure ? "1" : "0"),
                           setting("auth.tokens_unix", config->tokens_unix ? "1" : "0"), config);
        !s.ok()) {
      return s;
    }
  }
  {
    // The tuning tables are read now: a bad --tuning-table stops coopd before it serves.
    auto tables = tuning::LoadTables(config->tuning_table);
    if (!tables.ok()) return tables.status();
    config->tuning_tables = std::move(*tables);
  }
  if (loaded->help) {
    std::cout << SettingsHelp();
  } else if (loaded->version) {
    std::cout << "coopd 0.1.0\n";
  } else if (loaded->print_config) {
    std::cout << PrintConfig(*config, *loaded);
  } else {
    return absl::OkStatus();
  }
  *exit_now = true;
  return absl::OkStatus();
}

}  // namespace coopd
