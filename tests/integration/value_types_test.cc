// Value types beyond the built-in arithmetic ones: float16 / bfloat16 through several families,
// linked with a kernel that uses the same CUDA types.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coop/client.h"
#include "server/compiler.h"
#include "test_util.h"

namespace coopd_test {
namespace {

TEST(ValueTypes, HalfAndBfloat16ReduceScanAndWarpReduceLinkIntoOneKernel) {
  TestDaemon daemon;
  auto client = daemon.Client();
  std::vector<coop::Spec> specs;
  {
    coop::Spec s = BlockReduceF32();
    s.dtype = "float16";
    s.items_per_thread = 4;
    specs.push_back(s);  // block-wide sum of 4 __half per thread
  }
  {
    coop::Spec s = BlockReduceF32();
    s.family = "block_scan";
    s.method = "inclusive_scan";
    s.op = "max";
    s.dtype = "bfloat16";
    specs.push_back(s);
  }
  {
    coop::Spec s;
    s.family = "warp_reduce";
    s.method = "min";
    s.dtype = "float16";
    s.arch = "sm_90";
    specs.push_back(s);
  }
  std::vector<coop::Artifact> artifacts;
  for (const auto& s : specs) {
    auto a = client.Specialize(s);
    ASSERT_TRUE(a) << s.family << " " << s.dtype << ": " << a.error().message;
    artifacts.push_back(*a);
  }
  // The declarations name the CUDA half types.
  EXPECT_NE(artifacts[0].entries[0].declaration.find("__half"), std::string::npos);
  EXPECT_NE(artifacts[1].entries[0].declaration.find("__nv_bfloat16"), std::string::npos);

  std::string kernel = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n";
  for (const auto& a : artifacts) kernel += a.entries[0].declaration + "\n";
  auto temp = [&](size_t i) {
    return "  __shared__ __align__(" + std::to_string(artifacts[i].temp_storage_align) +
           ") unsigned char t" + std::to_string(i) + "[" +
           std::to_string(artifacts[i].temp_storage_bytes) + "];\n";
  };
  kernel +=
      "extern \"C\" __global__ void halves(const __half* h, const __nv_bfloat16* b,\n"
      "                                    __half* out_h, __nv_bfloat16* out_b) {\n" +
      temp(0) + temp(1) + temp(2) +
      "  const int i = blockIdx.x * 256 + threadIdx.x;\n"
      "  __half r = " +
      artifacts[0].entries[0].symbol +
      "(t0, h + 4 * i);\n"
      "  if (threadIdx.x == 0) out_h[blockIdx.x] = r;\n"
      "  out_b[i] = " +
      artifacts[1].entries[0].symbol +
      "(t1, b[i]);\n"
      "  __half m = " +
      artifacts[2].entries[0].symbol +
      "(t2 + 0 * (threadIdx.x / 32), h[i]);\n"
      "  if (threadIdx.x % 32 == 0) out_h[1024 + i / 32] = m;\n"
      "}\n";
  const std::string kernel_ltoir = CompileKernel(kernel);
  ASSERT_FALSE(kernel_ltoir.empty());
  std::vector<coopd::LinkInput> inputs = {{coopd::LinkInput::kLtoIr, "kernel", kernel_ltoir}};
  for (const auto& a : artifacts) inputs.push_back({coopd::LinkInput::kLtoIr, a.key, a.ltoir});
  auto cubin = coopd::LinkCubin(inputs, "sm_90", {"-optimize-unused-variables"});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_EQ(cubin->substr(1, 3), "ELF");
}

TEST(ValueTypes, BitwiseOperatorsNeedIntegers) {
  TestDaemon daemon;
  coop::Spec s = BlockReduceF32();
  s.method = "reduce";
  s.op = "bit_or";
  s.dtype = "bfloat16";
  auto a = daemon.Client().Specialize(s);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message,
            "block_reduce: op.builtin \"bit_or\" needs an integer dtype; got \"bfloat16\"");
}

}  // namespace
}  // namespace coopd_test
