// test_util.h: helpers shared by the integration tests.
#pragma once

#include <string>
#include <vector>

#include "coop/client.h"

namespace coopd_test {

// block_reduce sum float32, 256 threads, sm_90: the README's example.
coop::Spec BlockReduceF32();

// Compiles CUDA source to LTO-IR (or, with `ptx`, relocatable PTX) for sm_90 with NVRTC; fails
// the calling test (with NVRTC's log) if it does not compile.
std::string CompileKernel(const std::string& source, bool ptx = false);

// Links LTO-IR modules to PTX for sm_90 with nvJitLink; fails the test on a link error.
std::string LinkToPtx(const std::vector<std::string>& ltoir_modules);

// A kernel that calls a block_reduce sum float32 entry over 256-thread blocks.
std::string BlockSumKernel(const coop::Artifact& artifact);

}  // namespace coopd_test
