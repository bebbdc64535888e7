// llvm_ir.h: turns the textual LLVM IR clang made of a rendered unit into the module coopd
// serves as bitcode.
//
// A frontend links the bitcode into its own module (CuTe DSL: a bitcode link library), so
// nothing but the entry points may be visible to it:
//  - the TempStorage layout globals are read (their values are the layout, as sizeof/alignof
//    in the compiler that made the module) and removed;
//  - every other definition (a CUB helper that was not inlined, a constant table) becomes
//    `internal`, so two artifacts, or an artifact and the frontend's own code, never merge
//    definitions by name (linkonce_odr bodies differ between archs and compilers);
//  - functions lose `align N` (libNVVM rejects explicit function alignment) and comdats;
//  - `@llvm.compiler.used` goes: clang keeps device variables alive in it for host-side
//    registration, which a device-only library has none of;
//  - `!srcloc` attachments go: they are source offsets for inline-asm diagnostics, and they
//    differ between a compile with and without a precompiled header.
// The result is assembled by clang again (engine/bitcode.h); this file only edits text, line by
// line, in the grammar clang's IR printer writes (one global or function header per line).
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace coopd {

struct IrLayoutSymbols {
  std::string bytes_symbol;
  std::string align_symbol;
};

struct RewrittenIr {
  std::string ir;
  // (bytes, align) per IrLayoutSymbols, in order.
  std::vector<std::pair<uint64_t, uint64_t>> layouts;
  std::vector<std::string> internalized;  // names of definitions made internal
};

// INTERNAL when a layout global is missing or used by code, or an entry is not defined.
absl::StatusOr<RewrittenIr> RewriteIrForBitcode(std::string_view ir,
                                                const std::vector<std::string>& entries,
                                                const std::vector<IrLayoutSymbols>& layouts);

}  // namespace coopd
