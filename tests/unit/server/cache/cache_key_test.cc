#include "server/cache/cache_key.h"

#include <gtest/gtest.h>

namespace coopd {
namespace {

Toolchain Tc() {
  Toolchain tc;
  tc.nvrtc_major = 13;
  tc.nvrtc_minor = 0;
  tc.nvjitlink_major = 13;
  tc.nvjitlink_minor = 0;
  tc.header_digest = std::string(64, 'a');
  return tc;
}

const std::vector<std::string> kOptions = {"-dlto", "-arch=sm_90"};

TEST(CacheKey, SameInputsSameKey) {
  auto a = ComputeKey("family=block_reduce\n", "src", kOptions, Tc());
  auto b = ComputeKey("family=block_reduce\n", "src", kOptions, Tc());
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.key.size(), 64u);
  EXPECT_EQ(a.schema, kKeySchema);
}

TEST(CacheKey, EveryComponentChangesTheKey) {
  const std::string base = ComputeKey("req", "src", kOptions, Tc()).key;
  EXPECT_NE(ComputeKey("req2", "src", kOptions, Tc()).key, base);
  EXPECT_NE(ComputeKey("req", "src2", kOptions, Tc()).key, base);
  EXPECT_NE(ComputeKey("req", "src", {"-dlto", "-arch=sm_80"}, Tc()).key, base);
  EXPECT_NE(ComputeKey("req", "src", {"-dlto"}, Tc()).key, base);
  // Option boundaries matter: {"-a", "b"} is not {"-ab"}.
  EXPECT_NE(ComputeKey("req", "src", {"-a", "b"}, Tc()).key,
            ComputeKey("req", "src", {"-ab"}, Tc()).key);
  Toolchain nvrtc = Tc();
  nvrtc.nvrtc_minor = 1;
  EXPECT_NE(ComputeKey("req", "src", kOptions, nvrtc).key, base);
  Toolchain jl = Tc();
  jl.nvjitlink_minor = 2;
  EXPECT_NE(ComputeKey("req", "src", kOptions, jl).key, base);
  Toolchain headers = Tc();
  headers.header_digest = std::string(64, 'b');
  EXPECT_NE(ComputeKey("req", "src", kOptions, headers).key, base);
}

TEST(CacheKey, ComponentsAreReported) {
  auto k = ComputeKey("req", "src", kOptions, Tc());
  EXPECT_EQ(k.canonical_request, "req");
  EXPECT_EQ(k.options, "-dlto -arch=sm_90");
  EXPECT_EQ(k.nvrtc_version, "13.0");
  EXPECT_EQ(k.nvjitlink_version, "13.0");
  EXPECT_EQ(k.header_digest, std::string(64, 'a'));
  EXPECT_EQ(k.source_digest.size(), 64u);
}

}  // namespace
}  // namespace coopd
