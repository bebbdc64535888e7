// tuning_embedded.h: the tuning tables of server/catalog/tuning/*.json, compiled into the binary
// (cmake/EmbedFiles.cmake generates the definition at build time), so the daemon needs no file
// at run time. tuning.h parses them.
#pragma once

#include <string_view>
#include <vector>

namespace coopd::tuning {

struct EmbeddedFile {
  std::string_view name;  // the file's name: "sm_90.json"
  std::string_view contents;
};

// In name order. Immutable; thread-safe.
const std::vector<EmbeddedFile>& EmbeddedTableFiles();

}  // namespace coopd::tuning
