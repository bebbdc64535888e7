// compiler.h: NVRTC and nvJitLink, wrapped.
//
// CompileToLtoIr() compiles one rendered unit to LTO-IR. QueryLayout() reads the TempStorage
// layout globals back from the PTX nvJitLink makes of that LTO-IR (tens of milliseconds; no
// second parse of the CCCL headers). LinkCubin() links LTO-IR/PTX inputs into a cubin.
//
// Every failure carries the compiler's or linker's full log in the status message. NVRTC
// serializes compiles inside one process, so callers gain nothing by calling CompileToLtoIr()
// from several threads (the compile engine runs separate processes for parallelism); all
// functions here are nevertheless thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/render.h"
#include "server/toolchain.h"

namespace coopd {

// The option list that determines the output (and goes into the cache key).
std::vector<std::string> SemanticOptions(const Toolchain& tc, const std::string& arch,
                                         bool needs_cuda_include);

struct CompileOutput {
  std::string ltoir;
  std::string log;
  double compile_ms = 0;
  // NVRTC's automatic-PCH outcome for this compile: "created", "used" (heap hit), or the reason
  // it was not built (e.g. "heap exhausted").
  std::string pch_status;
};

struct CompileSettings {
  bool pch = true;                            // NVRTC automatic precompiled headers
  size_t pch_heap_bytes = size_t{256} << 20;  // must exceed ~195 MB for the full prelude
};

// INTERNAL with the NVRTC log when the source does not compile.
absl::StatusOr<CompileOutput> CompileToLtoIr(const Toolchain& tc, const std::string& source,
                                             const std::vector<std::string>& semantic_options,
                                             const CompileSettings& settings);

struct Layout {
  uint64_t bytes = 0;
  uint64_t align = 0;
};

// Links `ltoir` to PTX for `arch` and reads the two extern "C" u64 globals.
absl::StatusOr<Layout> QueryLayout(const std::string& ltoir, const std::string& arch,
                                   const std::string& bytes_symbol,
                                   const std::string& align_symbol);

struct LinkInput {
  enum Kind { kLtoIr, kPtx, kCubin } kind;
  std::string name;  // for error messages
  std::string data;
};

// Links inputs into a cubin for `arch` (e.g. "sm_90") with LTO. INTERNAL with the full linker
// log on failure (unresolved symbols, type mismatches, ...).
absl::StatusOr<std::string> LinkCubin(const std::vector<LinkInput>& inputs, const std::string& arch,
                                      const std::vector<std::string>& extra_options);

}  // namespace coopd
