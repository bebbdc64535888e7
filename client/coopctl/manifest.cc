#include "coopctl/manifest.h"

#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "coopctl/spec_args.h"
#include "yaml-cpp/yaml.h"

namespace coopctl {
namespace {

// YAML scalars stay text: the spec flags take text, as on the command line.
Json FromYaml(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = FromYaml(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& v : n) out.push_back(FromYaml(v));
      return out;
    }
    case YAML::NodeType::Scalar:
      return n.Scalar();
    default:
      return nullptr;
  }
}

std::string Scalar(const Json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  UsageFail(where + ": expected a string or a non-negative whole number, got " + Dump(v));
}

// A manifest spec object as specialize's argument list, parsed by the same CLI11 options.
coop::Spec ParseManifestSpec(const Json& item, const Json& defaults, const std::string& where,
                             const std::filesystem::path& base) {
  if (!item.is_object()) UsageFail(where + ": expected an object with a \"family\"");
  Json merged = item;
  for (const auto& [k, v] : defaults.items()) {
    if (!merged.contains(k)) merged[k] = v;
  }
  SpecArgs args;
  CLI::App app;
  AddSpecOptions(&app, &args);
  std::vector<std::string> argv;
  for (const auto& [key, value] : merged.items()) {
    if (key == "family") continue;
    std::string flag = "--" + key;
    for (char& c : flag) c = c == '_' ? '-' : c;
    const CLI::Option* opt = app.get_option_no_throw(flag);
    if (opt == nullptr || flag == "--help") {
      std::string keys;
      for (const CLI::Option* o : app.get_options()) {
        if (o->get_lnames().empty() || o->get_lnames()[0] == "help") continue;
        std::string k = o->get_lnames()[0];
        for (char& c : k) c = c == '-' ? '_' : c;
        keys += (keys.empty() ? "" : ", ") + k;
      }
      UsageFail(where + ": unknown key \"" + key + "\" (spec keys: family, " + keys +
                (where.find("bundle") == std::string::npos ? ", format; or bundle)" : ")"));
    }
    const std::string field = where + "." + key;
    if (opt->get_expected_max() == 0) {  // a flag: true or false
      const std::string v = value.is_boolean()  ? (value.get<bool>() ? "true" : "false")
                            : value.is_string() ? value.get<std::string>()
                                                : "";
      if (v != "true" && v != "false") UsageFail(field + ": expected true or false");
      if (v == "true") argv.push_back(flag);
    } else if (value.is_array()) {  // threads: [x, y, z]
      std::string joined;
      for (const auto& v : value) joined += (joined.empty() ? "" : ",") + Scalar(v, field);
      argv.push_back(flag);
      argv.push_back(joined);
    } else {
      argv.push_back(flag);
      argv.push_back(Scalar(value, field));
    }
  }
  if (!merged.contains("family")) UsageFail(where + ": missing \"family\" (see coopctl catalog)");
  argv.insert(argv.begin(), Scalar(merged["family"], where + ".family"));
  ParseSegment(&app, where, argv);
  return ToSpec(args, base);
}

coop::Formats ParseFormat(const Json& v, const std::string& where) {
  const std::string f = v.is_string() ? v.get<std::string>() : "";
  if (f == "ltoir") return coop::Formats::kLtoIr;
  if (f == "bitcode") return coop::Formats::kBitcode;
  if (f == "both") return coop::Formats::kBoth;
  UsageFail(where + ".format: must be ltoir, bitcode or both, got " + Dump(v));
}

}  // namespace

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::vector<ManifestItem> LoadManifest(const std::string& path) {
  std::string text;
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    text = ReadFileOrFail("MANIFEST", path);
  }
  const std::string ext = std::filesystem::path(path).extension().string();
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool json =
      ext == ".json" || (ext != ".yaml" && ext != ".yml" && first != std::string::npos &&
                         (text[first] == '{' || text[first] == '['));
  Json doc;
  if (json) {
    try {
      doc = Json::parse(text);
    } catch (const Json::parse_error& e) {
      UsageFail(path + ": not valid JSON: " + e.what());
    }
  } else {
    try {
      doc = FromYaml(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      UsageFail(path + ": not valid YAML: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
  }
  if (!doc.is_object()) UsageFail(path + ": expected an object with \"specs\"");
  for (const auto& [key, value] : doc.items()) {
    if (key != "coopctl_manifest" && key != "defaults" && key != "specs") {
      UsageFail(path + ": unknown key \"" + key + "\" (coopctl_manifest, defaults, specs)");
    }
  }
  if (doc.contains("coopctl_manifest")) {
    const Json& v = doc["coopctl_manifest"];
    const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    if (s != std::to_string(kManifestVersion)) {
      UsageFail(path + ": coopctl_manifest: this coopctl reads version " +
                std::to_string(kManifestVersion) + ", got " + s);
    }
  }
  const Json defaults = doc.contains("defaults") ? doc["defaults"] : Json::object();
  if (!defaults.is_object()) UsageFail(path + ": defaults: expected an object of spec keys");
  if (!doc.contains("specs") || !doc["specs"].is_array()) {
    UsageFail(path + ": specs: expected a list of specs");
  }
  const std::filesystem::path base =
      path == "-" ? std::filesystem::path() : std::filesystem::path(path).parent_path();
  std::vector<ManifestItem> out;
  const Json& specs = doc["specs"];
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string where = "specs[" + std::to_string(i) + "]";
    Json item = specs[i];
    ManifestItem m;
    m.where = where;
    if (item.is_object() && item.contains("format")) {
      m.formats = ParseFormat(item["format"], where);
      item.erase("format");
    }
    if (item.is_object() && item.contains("bundle")) {
      if (item.size() != 1) UsageFail(where + ": a bundle takes only \"bundle\" and \"format\"");
      const Json& parts = item["bundle"];
      if (!parts.is_array() || parts.empty())
        UsageFail(where + ".bundle: expected a list of specs");
      for (size_t k = 0; k < parts.size(); ++k) {
        m.specs.push_back(ParseManifestSpec(parts[k], defaults,
                                            where + ".bundle[" + std::to_string(k) + "]", base));
      }
    } else {
      m.specs.push_back(ParseManifestSpec(item, defaults, where, base));
    }
    out.push_back(std::move(m));
  }
  return out;
}

bool SpecToManifest(const coop::Spec& s, Json* out, std::string* why) {
  if (!s.user_op.name.empty() || !s.prefix_callback.name.empty()) {
    *why = "a user operator: coopd keeps no operator source";
    return false;
  }
  Json j = Json::object();
  j["family"] = s.family;
  if (!s.method.empty()) j["method"] = s.method;
  if (s.dtype == "user") {
    j["user_type"] = std::to_string(s.user_type_size) + "," + std::to_string(s.user_type_align);
  } else if (!s.dtype.empty()) {
    j["dtype"] = s.dtype;
  }
  if (s.block.x != 0) j["threads"] = Json::array({s.block.x, s.block.y, s.block.z});
  if (s.items_per_thread != 0) j["items"] = s.items_per_thread;
  if (!s.algorithm.empty()) j["algorithm"] = s.algorithm;
  if (!s.op.empty()) j["op"] = s.op;
  if (s.warp_threads != 0) j["warp_threads"] = s.warp_threads;
  if (s.scan.with_aggregate) j["with_aggregate"] = true;
  if (s.exchange.warp_time_slicing) j["warp_time_slicing"] = true;
  if (s.top_k.valid_items) j["valid_items"] = true;
  if (!s.cccl.empty()) j["cccl"] = s.cccl;
  if (!ValueDtype(s).empty()) j["value_dtype"] = ValueDtype(s);
  if (RadixBits(s) != 0) j["radix_bits"] = RadixBits(s);
  if (s.histogram.bins != 0) j["bins"] = s.histogram.bins;
  if (s.run_length_decode.decoded_items_per_thread != 0) {
    j["decoded_items"] = s.run_length_decode.decoded_items_per_thread;
  }
  if (s.calling_convention == coop::CallingConvention::kNumba) j["abi"] = "numba";
  j["arch"] = s.arch;
  *out = std::move(j);
  return true;
}

Json ManifestOf(const std::vector<coop::CacheEntry>& entries, std::vector<std::string>* left_out) {
  Json specs = Json::array();
  std::set<std::string> seen;
  for (const auto& e : entries) {
    if (e.specs.empty()) continue;  // link results and user operators: made by the others
    Json item = Json::object();
    std::string why;
    bool ok = true;
    if (e.specs.size() == 1) {
      ok = SpecToManifest(e.specs[0], &item, &why);
    } else {
      Json parts = Json::array();
      for (const auto& s : e.specs) {
        Json part;
        ok = ok && SpecToManifest(s, &part, &why);
        parts.push_back(std::move(part));
      }
      item["bundle"] = std::move(parts);
    }
    if (!ok) {
      left_out->push_back(e.key.substr(0, 16) + " (" + why + ")");
      continue;
    }
    item["format"] = e.format == coop::Formats::kBitcode ? "bitcode" : "ltoir";
    if (seen.insert(Dump(item)).second) specs.push_back(std::move(item));
  }
  Json doc = Json::object();
  doc["coopctl_manifest"] = kManifestVersion;
  doc["specs"] = std::move(specs);
  return doc;
}

}  // namespace coopctl
