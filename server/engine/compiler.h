// compiler.h: NVRTC and nvJitLink, wrapped.
//
// CompileToLtoIr() compiles one rendered unit to LTO-IR. QueryLayouts() reads the TempStorage
// layout globals back from the PTX nvJitLink makes of that LTO-IR (tens of milliseconds; no
// second parse of the CCCL headers). LinkCubin() links LTO-IR/PTX inputs into a cubin.
//
// Every failure carries the compiler's or linker's full log in the status message. NVRTC
// serializes compiles inside one process, so callers gain nothing by calling CompileToLtoIr()
// from several threads (coopd runs them in worker processes, engine/worker_pool.h); all
// functions here are nevertheless thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/catalog/render.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// The option list that determines the output (and goes into the cache key).
std::vector<std::string> SemanticOptions(const Toolchain& tc, const std::string& arch);

struct CompileOutput {
  std::string ltoir;
  std::string log;
  double compile_ms = 0;
  // NVRTC's automatic-PCH outcome for this compile: "created" (this compile built it), "used"
  // (a PCH from an earlier compile in this process served it), "off", or why none was built
  // ("not created: PCH heap exhausted").
  std::string pch_status;
};

struct CompileSettings {
  bool pch = true;                            // NVRTC automatic precompiled headers
  size_t pch_heap_bytes = size_t{256} << 20;  // must exceed ~195 MB for the full prelude
};

// INTERNAL with the NVRTC log when the source does not compile. `headers` are handed to NVRTC
// as in-memory include files (coopd's embedded device headers).
absl::StatusOr<CompileOutput> CompileToLtoIr(const std::vector<EmbeddedHeader>& headers,
                                             const std::string& source,
                                             const std::vector<std::string>& semantic_options,
                                             const CompileSettings& settings);

struct LinkInput {
  enum Kind { kLtoIr, kPtx, kCubin } kind;
  std::string name;  // for error messages
  std::string data;
};

struct Layout {
  uint64_t bytes = 0;
  uint64_t align = 0;
};

struct LayoutSymbols {
  std::string bytes_symbol;  // extern "C" u64 global holding sizeof(TempStorage)
  std::string align_symbol;  // ... alignof(TempStorage)
};

// Links `ltoir` (with `extra_inputs`, the frontend's operator LTO-IR) to PTX for `arch` once and
// reads each pair of extern "C" u64 globals. Each of `required_symbols` must be defined by the
// inputs. A failure that the extra inputs cause (they do not link, a required symbol is left
// undefined) is INVALID_ARGUMENT naming it; anything else INTERNAL.
absl::StatusOr<std::vector<Layout>> QueryLayouts(
    const std::string& ltoir, const std::string& arch, const std::vector<LayoutSymbols>& symbols,
    const std::vector<LinkInput>& extra_inputs = {},
    const std::vector<std::string>& required_symbols = {});

// Links inputs into a cubin for `arch` (e.g. "sm_90") with LTO. INTERNAL with the full linker
// log on failure (unresolved symbols, type mismatches, ...).
absl::StatusOr<std::string> LinkCubin(const std::vector<LinkInput>& inputs, const std::string& arch,
                                      const std::vector<std::string>& extra_options);

}  // namespace coopd
