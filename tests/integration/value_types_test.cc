// Value types beyond the built-in arithmetic ones: float16 / bfloat16 through several families,
// linked with a kernel that uses the same CUDA types.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coop/client.h"
#include "server/engine/compiler.h"
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

namespace coopd_test {
namespace {

coop::Spec UserTyped(const std::string& family, const std::string& method) {
  coop::Spec s;
  s.family = family;
  s.method = method;
  s.dtype = "user";
  s.user_type_size = 12;
  s.user_type_align = 4;
  s.block = {128};
  s.items_per_thread = 4;
  s.arch = "sm_90";
  return s;
}

// A frontend's 12-byte struct, loaded, sorted by a user comparator, exchanged, shuffled and
// stored by coopd artifacts, in one kernel that links into an sm_90 cubin.
TEST(ValueTypes, UserTypeFlowsThroughLoadSortExchangeShuffleAndStore) {
  TestDaemon daemon;
  auto client = daemon.Client();
  coop::Spec load = UserTyped("block_load", "load");
  load.algorithm = "warp_transpose";
  coop::Spec sort = UserTyped("block_merge_sort", "sort");
  sort.user_op.name = "by_key";
  sort.user_op.source =
      "struct Pair { int key; float value; int tag; };\n"
      "__device__ bool by_key(Pair a, Pair b) { return a.key < b.key; }\n";
  coop::Spec exchange = UserTyped("block_exchange", "blocked_to_striped");
  coop::Spec shuffle = UserTyped("block_shuffle", "up");
  coop::Spec store = UserTyped("block_store", "store");
  store.algorithm = "striped";

  auto bundle = client.SpecializeBundle({load, sort, exchange, shuffle, store});
  ASSERT_TRUE(bundle) << bundle.error().message;
  ASSERT_EQ(bundle->parts.size(), 5u);
  ASSERT_EQ(bundle->link_inputs.size(), 1u);
  EXPECT_NE(bundle->type_definitions.find("struct alignas(4) coop_user_12_4"), std::string::npos)
      << bundle->type_definitions;
  for (const auto& p : bundle->parts) {
    EXPECT_EQ(p.spec.user_type_size, 12u);
    EXPECT_NE(p.entries.at(0).declaration.find("coop_user_12_4"), std::string::npos);
  }

  std::string kernel = bundle->type_definitions;
  for (const auto& e : bundle->entries) kernel += e.declaration + "\n";
  uint64_t bytes = 0, align = 1;
  for (const auto& p : bundle->parts) {
    bytes = std::max(bytes, p.temp_storage_bytes);
    align = std::max(align, p.temp_storage_align);
  }
  auto entry = [&](size_t i) { return bundle->parts[i].entries.at(0).symbol; };
  kernel +=
      "extern \"C\" __global__ void pairs(const coop_user_12_4* in, coop_user_12_4* out) {\n"
      "  __shared__ __align__(" +
      std::to_string(align) + ") unsigned char temp[" + std::to_string(bytes) +
      "];\n"
      "  coop_user_12_4 items[4], prev[4];\n"
      "  const int tile = blockIdx.x * 512;\n  " +
      entry(0) + "(temp, in + tile, items);\n  __syncthreads();\n  " + entry(1) +
      "(temp, items);\n  __syncthreads();\n  " + entry(2) +
      "(temp, items, items);\n  __syncthreads();\n"
      "  for (int i = 0; i < 4; ++i) prev[i] = items[i];\n  " +
      entry(3) + "(temp, items, prev);\n  __syncthreads();\n  " + entry(4) +
      "(temp, out + tile, prev);\n"
      "}\n";
  const std::string kernel_ltoir = CompileKernel(kernel);
  ASSERT_FALSE(kernel_ltoir.empty()) << kernel;
  auto cubin =
      coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", kernel_ltoir},
                        {coopd::LinkInput::kLtoIr, "bundle", bundle->ltoir},
                        {coopd::LinkInput::kLtoIr, "by_key", bundle->link_inputs[0].ltoir}},
                       "sm_90", {"-optimize-unused-variables"});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_EQ(cubin->substr(1, 3), "ELF");
}

TEST(ValueTypes, UserTypeRulesHaveSpecificErrors) {
  TestDaemon daemon;
  auto client = daemon.Client();
  auto error = [&](coop::Spec s) {
    auto a = client.Specialize(s);
    EXPECT_FALSE(a);
    return a ? std::string() : a.error().message;
  };
  EXPECT_EQ(error(UserTyped("block_radix_sort", "sort")),
            "block_radix_sort: dtype must be one of int8, int16, int32, int64, uint8, uint16, "
            "uint32, uint64, float32, float64, float16, bfloat16; got \"user\" (user types work in "
            "block_load, block_store, block_exchange, block_shuffle, block_merge_sort, "
            "warp_merge_sort, warp_load, warp_store, warp_exchange, block_reduce, block_scan, "
            "warp_reduce, warp_scan)");
  coop::Spec sort = UserTyped("block_merge_sort", "sort");
  sort.op = "less";
  EXPECT_EQ(error(sort),
            "block_merge_sort: method \"sort\" on a user type needs op.user (a comparator operator "
            "on your struct, (T, T) -> bool); builtin operators work on arithmetic dtypes only");
  coop::Spec odd = UserTyped("block_exchange", "striped_to_blocked");
  odd.user_type_align = 3;
  EXPECT_EQ(error(odd), "block_exchange: user_type.align must be a power of two 1..16, got 3");
  odd.user_type_align = 8;
  EXPECT_EQ(error(odd),
            "block_exchange: user_type.size must be 1..1024 bytes and a multiple of "
            "user_type.align (8), got 12");
  // A comparator over a struct of another size is caught by the static_assert.
  sort.op.clear();
  sort.user_op.name = "by_key";
  sort.user_op.source =
      "struct Pair { int key; float value; };\n"
      "__device__ bool by_key(Pair a, Pair b) { return a.key < b.key; }\n";
  EXPECT_NE(error(sort).find("op.user: by_key's operand type must have the size and alignment of "
                             "user_type (12 bytes, aligned to 4)"),
            std::string::npos);
  // The warp families that move values take user types too.
  for (const char* family : {"warp_load", "warp_store", "warp_exchange"}) {
    coop::Spec s = UserTyped(family, "");
    s.block = {};
    s.warp_threads = 16;
    if (std::string(family) != "warp_exchange") s.algorithm = "transpose";
    auto a = client.Specialize(s);
    ASSERT_TRUE(a) << family << ": " << a.error().message;
    ExpectEntriesLinkIntoACubin(*a, family);
  }
  // The daemon stays up.
  EXPECT_TRUE(client.Specialize(BlockReduceF32()));
}

}  // namespace
}  // namespace coopd_test
