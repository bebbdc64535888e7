// toolchain.h: what compiles coopd's artifacts, probed once at start-up.
//
// The identity (NVRTC and nvJitLink versions, CCCL version, header digest) goes into every cache
// key and every artifact. The header digest covers every file NVRTC can see through coopd's
// include path (the CCCL tree) and coopd's embedded device headers, so editing, upgrading or
// swapping any header changes every key.
//
// The clang that compiles LLVM bitcode (a second backend, for frontends that link bitcode
// rather than LTO-IR) is optional: it is probed too, and its identity goes into the keys of
// bitcode artifacts only, so LTO-IR never depends on clang being installed.
//
// Immutable after Probe(); safe to share between threads.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/catalog/spec.h"

namespace coopd {

struct EmbeddedHeader {
  std::string name;  // include name, e.g. "coop/device/prelude.cuh"
  std::string contents;
};

// A CCCL header tree beside the default one (--cccl NAME=DIR, a [[cccl]] table).
struct CcclSource {
  std::string name;    // [A-Za-z0-9._-]{1,64}; not "toolkit" or "default", which are coopd's
  std::string path;    // an include root, or a directory holding one (FindCcclInclude)
  std::string origin;  // where it was configured, for errors and listings: "--cccl", "[[cccl]]"
};

struct ToolchainOptions {
  // Root of the default CCCL's headers (holds cub/, thrust/, cuda/): what a spec that names no
  // CCCL compiles against. Default: the CUDA toolkit's, $CUDA_HOME/include/cccl, else
  // /usr/local/cuda/include/cccl.
  std::string cccl_include;
  // Further CCCLs a spec may name (PrimitiveSpec.cccl). The toolkit's is always there too.
  std::vector<CcclSource> extra_cccls;
  // The CUDA toolkit's include directory (cuda_fp16.h, ...). Default: $CUDA_HOME/include, else
  // /usr/local/cuda/include.
  std::string cuda_include;
  // The clang for bitcode artifacts: a path, or a name looked up on PATH. Default clang++-22.
  std::string clang = "clang++-22";
  // Where to keep the header manifest (relative path, size, mtime, sha256 per file), so a
  // restart re-hashes only files that changed. Empty: hash everything every time.
  std::string manifest_path;
};

// Debian's package for the default clang, named by the error a bitcode request gets without it.
inline constexpr char kClangPackage[] = "clang-22";

// The clang found at start-up (or why none).
struct ClangToolchain {
  std::string requested;  // as configured: "clang++-22" or a path
  std::string path;       // the program run, absolute; empty when not found
  std::string version;    // first line of `clang --version`: "Debian clang version 22.1.8 (...)"
  int major = 0;          // 22
  // Every NVPTX processor it knows (`--print-supported-cpus`): "sm_90", "sm_90a", ...
  std::vector<std::string> gpu_archs;
  // When the CUDA toolkit is newer than this clang knows (CUDA 13 for clang 22), the newest
  // version it does know ("12.9"): clang then parses CCCL's host-side kernel launches (which a
  // device-only compile never emits) with that release's launch API. Empty otherwise.
  std::string newest_cuda_known;
  std::string error;  // why it cannot be used; empty when it can

  bool available() const { return error.empty() && !path.empty(); }
  // Identity for keys and artifacts: version and path ("Debian clang version 22.1.8 (1~deb12u1)
  // at /usr/lib/llvm-22/bin/clang").
  std::string Identity() const;
  // FAILED_PRECONDITION for a bitcode request when unavailable: names the Debian package to
  // install and the flag that points coopd at another clang, and why this one cannot be used.
  std::string UnavailableMessage() const;
};

// Runs `requested --version`, asks for its NVPTX processors and whether it knows the CUDA
// toolkit at `cuda_path`. Never fails: an unusable clang is reported in ClangToolchain::error
// (coopd then serves LTO-IR only).
ClangToolchain ProbeClang(const std::string& requested, const std::string& cuda_path);

// One Toolchain per CCCL a daemon compiles against (ProbeToolchains): the same NVRTC, nvJitLink,
// CUDA headers and clang, each with its own CCCL tree, and so its own header digest (keys) and
// include option (the workers' PCH affinity).
struct Toolchain {
  int nvrtc_major = 0, nvrtc_minor = 0;
  int nvjitlink_major = 0, nvjitlink_minor = 0;
  std::string cccl_name;    // "toolkit", "default" or a CcclSource's name
  std::string cccl_origin;  // "CUDA toolkit", "--cccl-include", or the CcclSource's origin
  std::string cccl_include;
  std::string cuda_include;
  std::string cccl_version;   // "3.0.1"
  std::string cccl_digest;    // sha256 over (relative path, contents) of every file in the tree
  std::string cuda_digest;    // the same over the CUDA include directory
  std::string device_digest;  // sha256 over coopd's embedded device headers
  std::string header_digest;  // sha256 over both of the above
  std::vector<int> supported_archs;
  std::string nvrtc_library;  // the file NVRTC was loaded from (the workers' sandbox reads it)
  std::vector<EmbeddedHeader> device_headers;
  ClangToolchain clang;       // the bitcode backend (optional)
  size_t headers_hashed = 0;  // files read at start-up (the rest came from the manifest)
  size_t headers_total = 0;

  std::string NvrtcVersion() const;
  std::string NvJitLinkVersion() const;
  std::vector<std::string> cccl_headers_present;  // of OptionalCcclHeaders()

  TargetInfo Target() const {
    return TargetInfo{supported_archs, cccl_version, cccl_include, cccl_headers_present, nullptr};
  }
};

// FAILED_PRECONDITION when the CCCL headers cannot be found or read. The default CCCL's.
absl::StatusOr<Toolchain> ProbeToolchain(const ToolchainOptions& options);

// Every CCCL: the default first (named "toolkit" when it is the CUDA toolkit's, else "default"),
// then the toolkit's when the default is another tree (skipped, with `*note` saying so, when the
// toolkit has none), then `extra_cccls` in order. FAILED_PRECONDITION naming the source when a
// configured tree cannot be found or read; INVALID_ARGUMENT for a bad or repeated name.
absl::StatusOr<std::vector<Toolchain>> ProbeToolchains(const ToolchainOptions& options,
                                                       std::string* note = nullptr);

// The CCCL include root at or under `path`: `path` itself when it holds
// cuda/std/__cccl/version.h, else the first of its layouts that does: include/, include/cccl/
// (a toolkit), nvidia/cu13/include/cccl/, nvidia/cu12/include/cccl/ (PyPI's nvidia-cuda-cccl in
// a site-packages directory), cuda/cccl/headers/include/ (a cuda-cccl wheel). `what` names the
// setting in the error, which lists every place looked at.
absl::StatusOr<std::string> FindCcclInclude(const std::string& path, const std::string& what);

// Default CCCL include directory (see ToolchainOptions::cccl_include).
std::string DefaultCcclInclude();
std::string DefaultCudaInclude();

}  // namespace coopd
