// manifest.h: the manifest `coopctl warm` reads and `coopctl ls --manifest` writes (JSON or
// YAML; format in docs/operators.md, example in deploy/warm-manifest.example.yaml).
//
//   {"coopctl_manifest": 1,
//    "defaults": {"arch": "sm_90", "cccl": "3.5"},         (optional: keys every spec lacks)
//    "specs": [
//      {"family": "block_reduce", "dtype": "float32", "threads": 256},
//      {"family": "block_scan", "method": "exclusive_sum", "dtype": "int32",
//       "threads": [128, 1, 1], "format": "both"},
//      {"bundle": [{...}, {...}], "format": "ltoir"}]}
//
// A spec's keys are specialize's flags without the leading "--" ("-" or "_" between words):
// each spec goes through the same CLI11 options as `coopctl specialize`.
#pragma once

#include <string>
#include <vector>

#include "coop/client.h"
#include "nlohmann/json.hpp"

namespace coopctl {

using Json = nlohmann::ordered_json;

inline constexpr int kManifestVersion = 1;

struct ManifestItem {
  std::vector<coop::Spec> specs;  // one, or a bundle's
  coop::Formats formats = coop::Formats::kLtoIr;
  std::string where;  // "specs[3]", for messages
};

// Reads and checks a whole manifest (a usage CommandError naming the item and key otherwise).
// `path` "-" reads stdin. Files the specs name (op_source, ...) are relative to the manifest.
std::vector<ManifestItem> LoadManifest(const std::string& path);

// One spec as a manifest object; false (and `why`) when it cannot be written as one (a user
// operator or prefix callback: coopd keeps no operator source).
bool SpecToManifest(const coop::Spec& s, Json* out, std::string* why);

// The manifest of listed entries (ListEntries with specs); entries that cannot be written are
// appended to `left_out` as "KEY16 (why)". Identical items are written once.
Json ManifestOf(const std::vector<coop::CacheEntry>& entries, std::vector<std::string>* left_out);

// Serializes for output: one line, invalid UTF-8 replaced.
std::string Dump(const Json& j);

}  // namespace coopctl
