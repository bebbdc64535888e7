// settings.cc: the settings' loader and what shows them: Settings() and its check, LoadSettings
// (defaults < config file < COOPD_* environment < flags, then the checks across settings),
// SettingsHelp (--help), PrintConfig (--print-config) and DidYouMean. The table is in
// settings_table.cc and settings_table_limits.cc, the config file's reading in settings_file.cc.
#include "server/daemon/settings.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "server/cache/remote_config.h"
#include "server/daemon/settings_internal.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

namespace {

using settings_internal::FileValue;
using settings_internal::MakeTable;
using settings_internal::ReadConfigFile;

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
