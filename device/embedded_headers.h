// embedded_headers.h: coopd's device headers (device/include/coop/device/*.cuh), compiled into
// the binary so the daemon never depends on install paths. Generated at build time by
// cmake/EmbedFiles.cmake; handed to NVRTC as in-memory headers.
#pragma once

#include <string_view>
#include <vector>

namespace coop_device {

struct EmbeddedFile {
  std::string_view name;  // include name: "coop/device/prelude.cuh"
  std::string_view contents;
};

// In include-name order. Immutable; thread-safe.
const std::vector<EmbeddedFile>& EmbeddedHeaders();

}  // namespace coop_device
