// render.h: turns a canonical spec into the C++ translation unit NVRTC compiles.
//
// The rendered unit starts with `#include <coop/device/prelude.cuh>` (the shared PCH prefix),
// aliases the CUB primitive, defines the layout globals and one extern "C" entry function per
// entry point. Each entry's declaration string is produced from the same signature text as its
// definition, so the declaration handed to the frontend is exactly what was compiled.
//
// Thread-safe: pure function.
#pragma once

#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"

namespace coopd {

// The first line of every rendered unit: the shared prefix whose PCH each worker keeps. Compiled
// alone, it builds that PCH (pre-warm).
inline constexpr char kPreludeUnit[] = "#include <coop/device/prelude.cuh>\n";

struct RenderedEntry {
  std::string symbol;
  std::string declaration;  // `extern "C" __device__ float sym(void* temp_storage, float input);`
  std::string description;
};

// One spec's part of a unit.
struct RenderedPart {
  std::string symbol_base;        // prefix shared by the entries and the layout globals
  std::string temp_bytes_symbol;  // extern "C" global holding sizeof(TempStorage)
  std::string temp_align_symbol;  // extern "C" global holding alignof(TempStorage)
  std::vector<RenderedEntry> entries;
};

struct RenderedUnit {
  std::string source;
  std::vector<RenderedPart> parts;  // one per spec, in order
  // Definitions of the user types the declarations name (Artifact.type_definitions).
  std::string type_definitions;
};

// Renders one translation unit holding every spec (a bundle). Specs must come from
// Canonicalize() and be distinct.
RenderedUnit Render(const std::vector<coop::v1::PrimitiveSpec>& specs);
inline RenderedUnit Render(const coop::v1::PrimitiveSpec& spec) {
  return Render(std::vector<coop::v1::PrimitiveSpec>{spec});
}

}  // namespace coopd
