// settings_internal.h: declarations shared by the settings' implementation files (internal; the
// interface is settings.h).
//
//   settings.cc               Settings() and its check, LoadSettings (the layering, the flags,
//                             the checks across settings), SettingsHelp, PrintConfig, DidYouMean
//   settings_table.cc         the codecs and the table's rows from [server] to [metrics]
//   settings_table_limits.cc  the table's [limits] and [log] rows, and their Limit codec
//   settings_file.cc          TOML: values as --print-config writes them; the config file read
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/daemon/daemon.h"
#include "server/daemon/settings.h"

namespace coopd {

namespace settings_internal {

// ---- settings_file.cc: TOML values, as codecs show them -------------------------------------

std::string TomlString(const std::string& s);
std::string TomlList(const std::vector<std::string>& items);
// Seconds as a TOML number: "5", "0.25".
std::string TomlSeconds(std::chrono::milliseconds ms);
// A floating-point value as text (%.15g), as the file's numbers are read.
std::string NumberText(double d);

// ---- settings_file.cc: the config file ------------------------------------------------------

// A file value: its text (the items of a list) and FILE:LINE.
struct FileValue {
  std::vector<std::string> values;
  std::string where;
};

// Reads the TOML file at `path` into `out`, by key ("cache.dir"): INVALID_ARGUMENT for a parse
// error, an unknown key (with a guess) or a value of the wrong TOML type, naming FILE:LINE.
absl::Status ReadConfigFile(const std::string& path, std::map<std::string, FileValue>* out);

// ---- settings_table.cc: codecs, the checks each kind of setting shares ----------------------

// INVALID_ARGUMENT "SOURCE: must be WHAT, got "VALUE"".
absl::Status Bad(const std::string& source, const std::string& what, const std::string& value);

SettingCodec Text(std::string DaemonConfig::*field);
// A whole number min..max of units of 2^shift (MiB: shift 20), stored as bytes.
SettingCodec Whole(uint64_t DaemonConfig::*field, uint64_t min, uint64_t max, int shift,
                   std::string what);
SettingCodec Count(int DaemonConfig::*field, int max, std::string what);
SettingCodec Seconds(std::chrono::milliseconds DaemonConfig::*field, bool zero_ok);
SettingCodec OneOf(std::string DaemonConfig::*field, std::vector<std::string> allowed);
SettingCodec Bool(bool DaemonConfig::*field);
// A list; `check` validates each item (empty items are dropped).
SettingCodec List(
    std::vector<std::string> DaemonConfig::*field,
    std::function<absl::Status(const std::string& item, const std::string& source)> check);

// ---- The table ------------------------------------------------------------------------------

// settings_table.cc: every row, in --help and --print-config order (Settings() keeps it).
std::vector<SettingSpec> MakeTable();
// settings_table_limits.cc: the rows of [limits] and [log], the table's last sections.
std::vector<SettingSpec> LimitAndLogSettings();

}  // namespace settings_internal

}  // namespace coopd
