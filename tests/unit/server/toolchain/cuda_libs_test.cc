#include "server/toolchain/cuda_libs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace coopd {
namespace {

// Lines of /proc/self/maps that map a file whose name contains `name`.
int Mappings(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find(name) != std::string::npos;
  return n;
}

TEST(CudaLibs, TheProbeReadsVersionsAndArchsAndLeavesNeitherLibraryMapped) {
  // ctest runs each test in its own process, where nothing has loaded them yet; run by hand
  // after a test that called LoadCuda(), the libraries stay mapped before and after.
  const int nvrtc_before = Mappings("libnvrtc.so");
  const int jitlink_before = Mappings("libnvJitLink.so");
  auto probe = ProbeCudaLibraries();
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_GE(probe->nvrtc_major, 12);
  EXPECT_GE(probe->nvjitlink_major, 12);
  EXPECT_FALSE(probe->supported_archs.empty());
  EXPECT_NE(probe->nvrtc_path.find(BuiltCudaLibraries().nvrtc), std::string::npos)
      << probe->nvrtc_path;
  EXPECT_EQ(Mappings("libnvrtc.so"), nvrtc_before);
  EXPECT_EQ(Mappings("libnvJitLink.so"), jitlink_before);
}

TEST(CudaLibs, LoadCudaKeepsBothLoadedWithEveryFunction) {
  auto api = LoadCuda();
  ASSERT_TRUE(api.ok()) << api.status();
#define COOPD_EXPECT_SET(name) EXPECT_NE((*api)->name, nullptr) << #name;
  COOPD_NVRTC_FUNCTIONS(COOPD_EXPECT_SET)
  COOPD_NVJITLINK_FUNCTIONS(COOPD_EXPECT_SET)
#undef COOPD_EXPECT_SET
  int major = 0, minor = 0;
  ASSERT_EQ((*api)->nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  auto probe = ProbeCudaLibraries();
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ(major, probe->nvrtc_major);
  EXPECT_EQ(minor, probe->nvrtc_minor);
  EXPECT_GT(Mappings("libnvrtc.so"), 0);
  EXPECT_GT(Mappings("libnvJitLink.so"), 0);
  auto again = LoadCuda();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);
}

TEST(CudaLibs, AMissingLibraryIsFailedPreconditionNamingItAndWhereItWasLookedFor) {
  CudaLibraryNames names = BuiltCudaLibraries();
  names.nvjitlink = "libnvJitLink.so.999";
  names.fallback_dir = "/nonexistent/cuda/lib";
  auto probe = ProbeCudaLibraries(names);
  ASSERT_EQ(probe.status().code(), absl::StatusCode::kFailedPrecondition) << probe.status();
  const std::string m(probe.status().message());
  EXPECT_NE(m.find("cannot load libnvJitLink.so.999"), std::string::npos) << m;
  EXPECT_NE(m.find("/nonexistent/cuda/lib"), std::string::npos) << m;
}

TEST(CudaLibs, ALibraryWithoutTheFunctionsIsFailedPreconditionNamingTheFunction) {
  CudaLibraryNames names = BuiltCudaLibraries();
  names.nvrtc = "libz.so.1";  // a real library, not NVRTC
  auto probe = ProbeCudaLibraries(names);
  ASSERT_EQ(probe.status().code(), absl::StatusCode::kFailedPrecondition) << probe.status();
  const std::string m(probe.status().message());
  EXPECT_NE(m.find("has no function nvrtcVersion"), std::string::npos) << m;
  EXPECT_NE(m.find("libz.so.1"), std::string::npos) << m;
}

}  // namespace
}  // namespace coopd
