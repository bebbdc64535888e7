// settings_file.cc: the settings as TOML: the values --print-config writes (each codec's show)
// and the config file, read with toml++, each key checked against the table and each value
// against its setting's TOML type.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

// toml++ without exceptions: parse errors come back as values (its parse_result).
#define TOML_EXCEPTIONS 0

#include "server/daemon/settings.h"
#include "server/daemon/settings_internal.h"
#include "server/util/escape.h"
#include "server/util/strings.h"
#include "server/util/toml.h"

namespace coopd {

namespace settings_internal {

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

namespace {

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

// [[cccl]] tables (name, include), the file's form of toolchain.cccl: each becomes an item
// "NAME=DIR" of that setting's value, after any of [toolchain] cccl's.
absl::Status ReadCcclTables(const std::string& path, int line, const toml::node& node,
                            std::map<std::string, FileValue>* out) {
  const toml::array* tables = node.as_array();
  if (tables == nullptr || !tables->is_array_of_tables()) {
    return absl::InvalidArgumentError(
        StrCat(path, ":", line,
               ": cccl must be [[cccl]] tables, each with name = \"NAME\" and include = "
               "\"DIR\", got ",
               NodeTypeName(node)));
  }
  FileValue& value = (*out)["toolchain.cccl"];
  if (value.where.empty()) value.where = StrCat(path, ":", line, ": [[cccl]]");
  for (const auto& item : *tables) {
    const toml::table& t = *item.as_table();
    const int at = static_cast<int>(t.source().begin.line);
    std::string fields[2];
    const char* const names[2] = {"name", "include"};
    for (const auto& [k, v] : t) {
      const std::string key(k.str());
      const int i = key == "name" ? 0 : key == "include" ? 1 : -1;
      if (i < 0 || !v.is_string()) {
        return absl::InvalidArgumentError(
            StrCat(path, ":", static_cast<int>(k.source().begin.line), ": [[cccl]]: ",
                   i < 0 ? StrCat("unknown key ", QuoteValue(key), "; its keys are name, include")
                         : StrCat(key, " must be a string, got ", NodeTypeName(v))));
      }
      fields[i] = *v.value<std::string>();
    }
    for (int i = 0; i < 2; ++i) {
      if (fields[i].empty()) {
        return absl::InvalidArgumentError(
            StrCat(path, ":", at, ": [[cccl]]: ", names[i], " is required and not empty"));
      }
    }
    value.values.push_back(fields[0] + "=" + fields[1]);
  }
  return absl::OkStatus();
}

}  // namespace

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
    if (section == "cccl") {
      if (absl::Status s = ReadCcclTables(path, section_line, section_node, out); !s.ok()) {
        return s;
      }
      continue;
    }
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
      if (auto seen = out->find(key); seen != out->end()) {  // [[cccl]] came first
        value.values.insert(value.values.end(), seen->second.values.begin(),
                            seen->second.values.end());
      }
      (*out)[key] = std::move(value);
    }
  }
  return absl::OkStatus();
}

}  // namespace settings_internal

}  // namespace coopd
