// toolchain.h: what compiles coopd's artifacts, probed once at start-up.
//
// The identity (NVRTC and nvJitLink versions, CCCL version, header digest) goes into every cache
// key and every artifact. The header digest covers every file NVRTC can see through coopd's
// include path (the CCCL tree) and coopd's embedded device headers, so editing, upgrading or
// swapping any header changes every key.
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

struct ToolchainOptions {
  // Root of the CCCL headers (holds cub/, thrust/, cuda/). Default: $CUDA_HOME/include/cccl,
  // else /usr/local/cuda/include/cccl.
  std::string cccl_include;
  // The CUDA toolkit's include directory (cuda_fp16.h, ...). Default: $CUDA_HOME/include, else
  // /usr/local/cuda/include.
  std::string cuda_include;
  // Where to keep the header manifest (relative path, size, mtime, sha256 per file), so a
  // restart re-hashes only files that changed. Empty: hash everything every time.
  std::string manifest_path;
};

struct Toolchain {
  int nvrtc_major = 0, nvrtc_minor = 0;
  int nvjitlink_major = 0, nvjitlink_minor = 0;
  std::string cccl_include;
  std::string cuda_include;
  std::string cccl_version;   // "3.0.1"
  std::string cccl_digest;    // sha256 over (relative path, contents) of every file in the tree
  std::string cuda_digest;    // the same over the CUDA include directory
  std::string device_digest;  // sha256 over coopd's embedded device headers
  std::string header_digest;  // sha256 over both of the above
  std::vector<int> supported_archs;
  std::vector<EmbeddedHeader> device_headers;
  size_t headers_hashed = 0;  // files read at start-up (the rest came from the manifest)
  size_t headers_total = 0;

  std::string NvrtcVersion() const;
  std::string NvJitLinkVersion() const;
  std::vector<std::string> cccl_headers_present;  // of OptionalCcclHeaders()

  TargetInfo Target() const {
    return TargetInfo{supported_archs, cccl_version, cccl_include, cccl_headers_present};
  }
};

// FAILED_PRECONDITION when the CCCL headers cannot be found or read.
absl::StatusOr<Toolchain> ProbeToolchain(const ToolchainOptions& options);

// Default CCCL include directory (see ToolchainOptions::cccl_include).
std::string DefaultCcclInclude();
std::string DefaultCudaInclude();

}  // namespace coopd
