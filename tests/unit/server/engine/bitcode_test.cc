// Unit tests of the clang backend's pure parts: the layout comparison with NVRTC and the archs a
// bitcode request may name. (Real clang compiles are tested through a real coopd:
// tests/integration/bitcode_test.cc.)
#include "server/engine/bitcode.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

TEST(Bitcode, EqualLayoutsPass) {
  EXPECT_TRUE(CompareLayouts("x", {{44, 4}, {1184, 16}}, {{44, 4}, {1184, 16}}).ok());
}

TEST(Bitcode, ADifferentSizeIsAnInternalErrorNamingBothLayouts) {
  absl::Status s = CompareLayouts("block_reduce sum float32 sm_90 (bitcode)", {{44, 4}}, {{48, 4}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            "block_reduce sum float32 sm_90 (bitcode): TempStorage layout differs between the "
            "compilers: NVRTC 44 bytes aligned to 4, clang 48 bytes aligned to 4; the bitcode is "
            "not served");
}

TEST(Bitcode, ADifferentAlignmentInABundleNamesThePart) {
  absl::Status s = CompareLayouts("bundle", {{44, 4}, {1184, 16}}, {{44, 4}, {1184, 8}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(s.message())
                .find("in part 1: NVRTC 1184 bytes aligned to 16, clang 1184 "
                      "bytes aligned to 8"),
            std::string::npos)
      << s;
}

TEST(Bitcode, AMissingLayoutIsAnInternalError) {
  EXPECT_EQ(CompareLayouts("x", {{44, 4}}, {}).code(), absl::StatusCode::kInternal);
}

TEST(Bitcode, ArchsAreThoseBothCompilersKnow) {
  Toolchain tc;
  tc.supported_archs = {75, 90, 100};
  EXPECT_TRUE(BitcodeArchs(tc).empty()) << "no clang, no bitcode archs";
  tc.clang.path = "/usr/bin/clang++-22";
  tc.clang.version = "clang version 22.1.8";
  tc.clang.gpu_archs = {"sm_75", "sm_90", "sm_90a", "sm_100"};
  EXPECT_EQ(BitcodeArchs(tc), (std::vector<std::string>{"sm_75", "sm_90", "sm_90a", "sm_100"}));
}

TEST(Bitcode, OptionsNameNoDaemonPath) {
  Toolchain tc;
  tc.cccl_include = "/usr/local/cuda/include/cccl";
  tc.cuda_include = "/usr/local/cuda/include";
  const auto options = ClangSemanticOptions(tc, "sm_90a");
  EXPECT_NE(std::find(options.begin(), options.end(), "--cuda-gpu-arch=sm_90a"), options.end());
  EXPECT_NE(std::find(options.begin(), options.end(), "-O3"), options.end());
  EXPECT_NE(std::find(options.begin(), options.end(), "--cuda-path=/usr/local/cuda"),
            options.end());
  EXPECT_NE(std::find(options.begin(), options.end(), kDeviceIncludePlaceholder), options.end());
  for (const auto& o : options) EXPECT_EQ(o.find("coopd-clang-"), std::string::npos) << o;
}

}  // namespace
}  // namespace coopd
