// bitcode.h: the clang backend. The rendered unit NVRTC compiles to LTO-IR, compiled by clang as
// CUDA into LLVM bitcode, for frontends that link bitcode libraries rather than LTO-IR (CuTe
// DSL's `cute.ffi(..., source=cute.BitCode(path))` has no nvJitLink step).
//
// A compile runs clang twice:
//   1. the unit to optimized textual IR (`-O3 -S -emit-llvm`), against a precompiled header of
//      the prelude (`-include-pch`) built once per daemon, arch and option set;
//   2. after llvm_ir.h's rewrite (layout globals read and removed, everything but the entries
//      internal, no function alignment), the IR to bitcode (`-x ir -O3 -c -emit-llvm`).
// clang runs as a child of the worker and dies with it (a worker killed for a timeout takes its
// clang along).
//
// clang reads headers from disk, so coopd's embedded device headers are written into a
// ClangWorkspace, a directory per daemon; their content is in every key (device_headers), their
// path in none (kDeviceIncludePlaceholder stands for it in the option list).
//
// Thread-safe; a worker runs one compile at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/compiler.h"
#include "server/engine/llvm_ir.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// Stands for the workspace's include directory in semantic option lists (keys, explain).
inline constexpr char kDeviceIncludePlaceholder[] = "-I<coopd device headers>";

// The options of step 1 that determine the output, for `arch` ("sm_90", "sm_90a").
std::vector<std::string> ClangSemanticOptions(const Toolchain& tc, const std::string& arch);
// The options of step 2 (IR to bitcode), for `arch`.
std::vector<std::string> ClangAssembleOptions(const std::string& arch);

// The archs a bitcode request may name: ArchNames() of NVRTC's that clang also knows; empty
// without a usable clang.
std::vector<std::string> BitcodeArchs(const Toolchain& tc);

// OK when both compilers report the same TempStorage size and alignment for every part;
// otherwise INTERNAL naming `what`, the part and both layouts. A bitcode artifact whose layout
// differs from NVRTC's is never served: the frontend would reserve the wrong shared memory.
absl::Status CompareLayouts(const std::string& what, const std::vector<Layout>& nvrtc,
                            const std::vector<Layout>& clang);

// The daemon's clang workspace, <parent>/clang-XXXXXX inside its private temporary directory
// (private_dir.h): include/ (the device headers) and pch/ (precompiled headers). Workers may only
// read it (the Landlock rule is a read rule): a compile, however compromised, can neither rewrite
// the headers or precompiled headers every worker uses nor leave files for another compile to
// read. Units and outputs go to each worker's own scratch directory (BitcodeJob::scratch); a
// precompiled header a worker built there is published into pch/ by the daemon (PublishPch).
// Removed on destruction. Create() first removes, safely (private_dir.h), the workspaces under
// the old name $TMPDIR/coopd-clang-<pid> that killed daemons left.
class ClangWorkspace {
 public:
  static absl::StatusOr<std::unique_ptr<ClangWorkspace>> Create(
      const std::vector<EmbeddedHeader>& headers, const std::string& parent);
  ~ClangWorkspace();
  ClangWorkspace(const ClangWorkspace&) = delete;
  ClangWorkspace& operator=(const ClangWorkspace&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit ClangWorkspace(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The daemon's half of a precompiled-header build: moves `name` (as a worker reported it in
// its reply: 24 hex digits and ".pch") from `worker_temp`/pch-out/ into `workspace`/pch/, unless
// one is there already (the first build wins). The source must be a regular file (never a
// link) owned by coopd's uid. INVALID_ARGUMENT for a bad name, FAILED_PRECONDITION otherwise.
absl::Status PublishPch(const std::string& workspace, const std::string& worker_temp,
                        const std::string& name);

struct BitcodeJob {
  std::string clang;      // the program (ClangToolchain::path)
  std::string identity;   // ClangToolchain::Identity(), names the precompiled header
  std::string workspace;  // ClangWorkspace::path(): read only
  // The worker's own temporary directory (its TMPDIR). Its clang/ subdirectory holds the unit
  // and clang's outputs: emptied before and after every compile, so no unit outlives its job;
  // pch-out/ receives a precompiled header this compile builds (BitcodeOutput::pch_built).
  std::string scratch;
  std::string source;
  std::string arch;
  std::vector<std::string> options;  // ClangSemanticOptions (with the placeholder)
  std::vector<std::string> entries;  // the extern "C" entry points: all that stays external
  std::vector<IrLayoutSymbols> layouts;
  bool pch = true;  // the unit starts with the prelude: use (and build) its precompiled header
};

struct BitcodeOutput {
  std::string bitcode;
  std::string log;  // clang's warnings (step 1)
  double compile_ms = 0;
  // "created" (this compile built the precompiled header), "used", "off", or why none was used.
  std::string pch_status;
  std::vector<Layout> layouts;  // per BitcodeJob::layouts
  std::vector<std::string> internalized;
  // The file name in <scratch>/pch-out/ of the precompiled header this compile built (for
  // PublishPch), or "".
  std::string pch_built;
};

// INTERNAL with clang's whole log (the RPC edge bounds what the status message carries) when the
// unit does not compile; FAILED_PRECONDITION when clang cannot be run or the workspace is gone.
absl::StatusOr<BitcodeOutput> CompileToBitcode(const BitcodeJob& job);

}  // namespace coopd
