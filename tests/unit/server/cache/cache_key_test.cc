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

Toolchain WithClang(const std::string& version, const std::string& path = "/usr/bin/clang++-22") {
  Toolchain tc = Tc();
  tc.clang.version = version;
  tc.clang.path = path;
  return tc;
}

const std::vector<std::string> kClang = {"-x", "cuda", "--cuda-gpu-arch=sm_90a", "-O3"};
const std::vector<std::string> kAssemble = {"-x", "ir", "-O3"};

std::vector<std::string> Names(const KeyComponents& k) {
  std::vector<std::string> out;
  const coop::v1::KeyComponents proto = k.ToProto();
  for (const auto& c : proto.components()) out.push_back(c.name());
  return out;
}

TEST(CacheKey, ABitcodeKeyIsNeverTheLtoIrKeyOfTheSameRequest) {
  const Toolchain tc = WithClang("clang version 22.1.8");
  const auto ltoir = ComputeKey("req", "src", kOptions, tc);
  // Even with the very same option list, the format keeps them apart.
  const auto bitcode = ComputeBitcodeKey("req", "src", kOptions, {}, tc);
  EXPECT_NE(ltoir.key, bitcode.key);
  EXPECT_EQ(bitcode.schema, kBitcodeKeySchema);
  EXPECT_NE(ltoir.RequestDigest(), bitcode.RequestDigest());
}

TEST(CacheKey, OnlyBitcodeKeysNameClang) {
  const Toolchain a = WithClang("clang version 22.1.8");
  const Toolchain b = WithClang("clang version 22.1.9");
  const Toolchain elsewhere = WithClang("clang version 22.1.8", "/opt/llvm/bin/clang");
  const Toolchain none;  // no clang at all
  // LTO-IR keys do not depend on clang, or on whether it is installed.
  EXPECT_EQ(ComputeKey("req", "src", kOptions, a).key, ComputeKey("req", "src", kOptions, b).key);
  Toolchain no_clang = Tc();
  no_clang.clang = none.clang;
  EXPECT_EQ(ComputeKey("req", "src", kOptions, a).key,
            ComputeKey("req", "src", kOptions, no_clang).key);
  // Bitcode keys change with clang's version and path, but not with NVRTC's.
  const std::string base = ComputeBitcodeKey("req", "src", kClang, kAssemble, a).key;
  EXPECT_NE(ComputeBitcodeKey("req", "src", kClang, kAssemble, b).key, base);
  EXPECT_NE(ComputeBitcodeKey("req", "src", kClang, kAssemble, elsewhere).key, base);
  Toolchain nvrtc = a;
  nvrtc.nvrtc_minor = 1;
  EXPECT_EQ(ComputeBitcodeKey("req", "src", kClang, kAssemble, nvrtc).key, base);
}

TEST(CacheKey, EveryBitcodeComponentChangesTheBitcodeKey) {
  const Toolchain tc = WithClang("clang version 22.1.8");
  const std::string base = ComputeBitcodeKey("req", "src", kClang, kAssemble, tc).key;
  EXPECT_NE(ComputeBitcodeKey("req2", "src", kClang, kAssemble, tc).key, base);
  EXPECT_NE(ComputeBitcodeKey("req", "src2", kClang, kAssemble, tc).key, base);
  EXPECT_NE(ComputeBitcodeKey("req", "src", {"-x", "cuda", "-O3"}, kAssemble, tc).key, base);
  EXPECT_NE(ComputeBitcodeKey("req", "src", kClang, {"-x", "ir", "-O1"}, tc).key, base);
  // The two lists are kept apart: moving an option from one to the other changes the key.
  EXPECT_NE(ComputeBitcodeKey("req", "src", {"-x", "cuda", "--cuda-gpu-arch=sm_90a"},
                              {"-O3", "-x", "ir", "-O3"}, tc)
                .key,
            base);
  Toolchain headers = tc;
  headers.header_digest = std::string(64, 'b');
  EXPECT_NE(ComputeBitcodeKey("req", "src", kClang, kAssemble, headers).key, base);
}

TEST(CacheKey, ExplainNamesEachFormatsComponents) {
  const Toolchain tc = WithClang("clang version 22.1.8");
  EXPECT_EQ(
      Names(ComputeKey("req", "src", kOptions, tc)),
      (std::vector<std::string>{"schema", "canonical_request", "source", "options", "nvrtc",
                                "nvjitlink", "cccl_headers", "cuda_headers", "device_headers"}));
  const auto bitcode = ComputeBitcodeKey("req", "src", kClang, kAssemble, tc);
  EXPECT_EQ(Names(bitcode),
            (std::vector<std::string>{"schema", "format", "canonical_request", "source", "options",
                                      "clang", "cccl_headers", "cuda_headers", "device_headers"}));
  EXPECT_EQ(bitcode.clang, "clang version 22.1.8 at /usr/bin/clang++-22");
  EXPECT_EQ(bitcode.options, "-x cuda --cuda-gpu-arch=sm_90a -O3 | -x ir -O3");
}

}  // namespace
}  // namespace coopd
