// fuzz_toolchain.h: the toolchain the server-side fuzz targets validate, render and key against.
#pragma once

#include "server/toolchain/toolchain.h"

namespace coopd::fuzz {

// A toolchain as ProbeToolchain() would describe CUDA 13.0 with CCCL 3.3 and clang-22, built
// without probing anything (no NVRTC call, no header hashing): validation, rendering and keys
// read only these fields. Every optional CCCL header counts as present and clang as usable, so
// every family and both formats are reachable.
Toolchain FixedToolchain();

}  // namespace coopd::fuzz
