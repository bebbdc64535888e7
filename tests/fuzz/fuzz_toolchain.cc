#include "tests/fuzz/fuzz_toolchain.h"

#include "server/util/sha256.h"

namespace coopd::fuzz {

Toolchain FixedToolchain() {
  Toolchain tc;
  tc.nvrtc_major = tc.nvjitlink_major = 13;
  tc.nvrtc_minor = tc.nvjitlink_minor = 0;
  tc.cccl_include = "/usr/local/cuda/include/cccl";
  tc.cuda_include = "/usr/local/cuda/include";
  tc.cccl_version = "3.3.0";
  tc.cccl_digest = Sha256::Hex("fuzz cccl tree");
  tc.cuda_digest = Sha256::Hex("fuzz cuda tree");
  tc.device_digest = Sha256::Hex("fuzz device headers");
  tc.header_digest = Sha256::Hex(tc.cccl_digest + tc.device_digest);
  tc.supported_archs = {75, 80, 86, 87, 89, 90, 100, 103, 120};
  tc.cccl_headers_present = OptionalCcclHeaders();
  tc.clang.requested = "clang++-22";
  tc.clang.path = "/usr/lib/llvm-22/bin/clang";
  tc.clang.version = "Debian clang version 22.1.8";
  tc.clang.major = 22;
  tc.clang.gpu_archs = {"sm_75",  "sm_80",  "sm_86",   "sm_87",  "sm_89",  "sm_90",
                        "sm_90a", "sm_100", "sm_100a", "sm_120", "sm_120a"};
  tc.clang.newest_cuda_known = "12.9";
  return tc;
}

}  // namespace coopd::fuzz
