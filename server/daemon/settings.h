// settings.h: coopd's settings, declared once each in one table (settings_table.cc), and the
// loader that layers them: built-in defaults < config file < COOPD_* environment < command-line
// flags.
//
// A setting is one row of the table: its TOML key ("cache.memory_mb": section and name), its
// COOPD_* environment variable, its flag, its default, a codec (the TOML type it takes, how its
// text is validated into DaemonConfig and how the effective value is written back as TOML) and
// its help line. --help, --print-config, the config file's key check and the flags all come
// from the table, so adding a setting is adding a row (settings_table.cc says how).
//
// The config file is `--config FILE` (or $COOPD_CONFIG), else $XDG_CONFIG_HOME/coopd/coopd.toml
// (XDG_CONFIG_HOME defaulting to ~/.config) when that file exists. Errors are INVALID_ARGUMENT
// and name their source: the flag, the variable, or FILE:LINE with the key
// (`coopd.toml:12: unknown key "cach_dir" (did you mean "cache.dir"?)`), and the allowed values.
//
// Not thread-safe (it reads the environment); called once, at start-up.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/daemon/daemon.h"

namespace coopd {

// The TOML type a setting takes in the file; the environment and flags give its text.
enum class SettingType { kString, kInteger, kNumber, kBool, kList };

// How a setting's value is checked, stored and shown.
struct SettingCodec {
  SettingType type = SettingType::kString;
  // Parses `values` (one for scalars; the items of a list) from `source` into the config:
  // INVALID_ARGUMENT "SOURCE: must be ..., got "VALUE"" for a bad value.
  std::function<absl::Status(const std::vector<std::string>& values, const std::string& source,
                             DaemonConfig* config)>
      apply = {};
  // The effective value as a TOML value (`"text"`, `256`, `2.5`, `true`, `["a", "b"]`).
  std::function<std::string(const DaemonConfig& config)> show = {};
};

struct SettingSpec {
  std::string key = {};   // TOML key, "section.name"
  std::string env = {};   // COOPD_* variable
  std::string flag = {};  // "--flag"
  // The flag's value name in --help ("DIR"); empty: the flag takes no value and sets
  // `flag_value` (--no-pch sets compile.pch to "false").
  std::string arg = {};
  std::string flag_value = {};
  std::vector<std::string> default_value = {};   // as text; a list's items
  std::function<std::string()> default_fn = {};  // a default computed at start-up (paths)
  std::string default_help = {};                 // how --help states a computed default
  std::string help = {};
  bool secret = false;  // --print-config shows it redacted (a password in a URL)
  SettingCodec codec = {};
};

// The table, in --help and --print-config order (grouped by section).
const std::vector<SettingSpec>& Settings();

// OK when every row of `table` is well-formed: a "section.name" key, a COOPD_* variable, a
// "--flag", each unique, a help line, a codec, a default or none (empty, or a list); otherwise
// INTERNAL naming the row. The unit tests run it on Settings().
absl::Status CheckSettingsTable(const std::vector<SettingSpec>& table);

// What LoadSettings() found besides the config itself.
struct LoadedSettings {
  bool help = false, version = false, print_config = false;
  std::string config_file;           // the file read, or empty
  std::vector<std::string> origins;  // per Settings() row: "default", "FILE:LINE", "COOPD_X", "--x"
};

// Fills `config` from defaults < file < environment < `argv`'s flags (argv[0] is skipped).
absl::StatusOr<LoadedSettings> LoadSettings(int argc, char** argv, DaemonConfig* config);

// coopd --help.
std::string SettingsHelp();

// coopd --print-config: the effective configuration as TOML, each value's origin in a comment
// after it; secrets redacted.
std::string PrintConfig(const DaemonConfig& config, const LoadedSettings& loaded);

// The closest of `candidates` to `word` by edit distance, if close enough to be a likely typo;
// otherwise empty.
std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace coopd
