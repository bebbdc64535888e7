#include "server/catalog/render.h"

#include <gtest/gtest.h>

#include "server/catalog/spec.h"

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

PrimitiveSpec Canonical(PrimitiveSpec s) {
  TargetInfo target;
  target.supported_archs = {80, 90};
  auto r = Canonicalize(s, target);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

PrimitiveSpec Spec(const std::string& family, const std::string& method, const std::string& dtype,
                   uint32_t items = 1) {
  PrimitiveSpec s;
  s.set_family(family);
  s.set_method(method);
  s.set_dtype(dtype);
  if (family != "warp_reduce") s.mutable_block()->set_x(128);
  s.set_items_per_thread(items);
  s.set_arch("sm_90");
  return Canonical(s);
}

// The declaration handed to the frontend must be exactly the definition's signature.
void ExpectDeclarationsMatchDefinitions(const RenderedUnit& u) {
  ASSERT_FALSE(u.parts.empty());
  for (const auto& part : u.parts) {
    ASSERT_FALSE(part.entries.empty());
    for (const auto& e : part.entries) {
      ASSERT_EQ(e.declaration.back(), ';');
      const std::string signature = e.declaration.substr(0, e.declaration.size() - 1);
      EXPECT_NE(u.source.find(signature + "\n{"), std::string::npos)
          << "definition of " << e.symbol << " not found in:\n"
          << u.source;
      EXPECT_NE(e.declaration.find(" " + e.symbol + "("), std::string::npos);
      EXPECT_EQ(e.declaration.rfind("extern \"C\" __device__ ", 0), 0u);
    }
  }
}

TEST(Render, StartsWithTheSharedPrefix) {
  for (const auto& s :
       {Spec("block_reduce", "sum", "float32"), Spec("block_scan", "exclusive_sum", "int64", 4),
        Spec("warp_reduce", "max", "uint8")}) {
    RenderedUnit u = Render(s);
    EXPECT_EQ(u.source.rfind("#include <coop/device/prelude.cuh>\n", 0), 0u) << u.source;
  }
}

TEST(Render, BlockReduceScalarEntry) {
  RenderedUnit u = Render(Spec("block_reduce", "sum", "float32"));
  ASSERT_EQ(u.parts[0].entries.size(), 1u);
  EXPECT_EQ(u.parts[0].entries[0].declaration, "extern \"C\" __device__ float " +
                                                   u.parts[0].entries[0].symbol +
                                                   "(void* temp_storage, float input);");
  EXPECT_NE(
      u.source.find("::cub::BlockReduce<float, 128, ::cub::BLOCK_REDUCE_WARP_REDUCTIONS, 1, 1>"),
      std::string::npos)
      << u.source;
  EXPECT_NE(u.source.find("COOP_LAYOUT(" + u.parts[0].symbol_base + ", coop_prim_0_t)"),
            std::string::npos);
  ExpectDeclarationsMatchDefinitions(u);
}

TEST(Render, ItemsPerThreadTakesAPointer) {
  RenderedUnit u = Render(Spec("block_reduce", "max", "int16", 4));
  ASSERT_EQ(u.parts[0].entries.size(), 1u);
  EXPECT_NE(u.parts[0].entries[0].declaration.find("(void* temp_storage, const short* input)"),
            std::string::npos);
  EXPECT_NE(u.source.find("reduce_op_items<Prim, 4>"), std::string::npos);
  EXPECT_NE(u.source.find("::cuda::maximum<short>{}"), std::string::npos);
  ExpectDeclarationsMatchDefinitions(u);
}

TEST(Render, ScanWithAggregateHasTwoEntries) {
  PrimitiveSpec s;
  s.set_family("block_scan");
  s.set_method("exclusive_scan");
  s.set_dtype("uint32");
  s.mutable_block()->set_x(64);
  s.mutable_block()->set_y(2);
  s.set_items_per_thread(2);
  s.set_algorithm("warp_scans");
  s.mutable_op()->set_builtin("max");
  s.set_arch("sm_90");
  s.mutable_scan()->set_with_aggregate(true);
  RenderedUnit u = Render(Canonical(s));
  ASSERT_EQ(u.parts[0].entries.size(), 2u);
  EXPECT_EQ(u.parts[0].entries[1].symbol, u.parts[0].entries[0].symbol + "_aggregate");
  EXPECT_NE(
      u.parts[0].entries[0].declaration.find("(void* temp_storage, const unsigned int* input, "
                                             "unsigned int* output, unsigned int initial_value)"),
      std::string::npos)
      << u.parts[0].entries[0].declaration;
  EXPECT_NE(u.parts[0].entries[1].declaration.find(
                "unsigned int initial_value, unsigned int* block_aggregate)"),
            std::string::npos)
      << u.parts[0].entries[1].declaration;
  EXPECT_NE(u.source.find("::cub::BlockScan<unsigned int, 64, ::cub::BLOCK_SCAN_WARP_SCANS, 2, 1>"),
            std::string::npos);
  ExpectDeclarationsMatchDefinitions(u);
}

TEST(Render, WarpReduceUsesLogicalWarpSize) {
  PrimitiveSpec s;
  s.set_family("warp_reduce");
  s.set_method("min");
  s.set_dtype("float64");
  s.set_warp_threads(8);
  s.set_arch("sm_90");
  RenderedUnit u = Render(Canonical(s));
  EXPECT_NE(u.source.find("::cub::WarpReduce<double, 8>"), std::string::npos) << u.source;
  EXPECT_NE(u.source.find("::cuda::minimum<double>{}"), std::string::npos);
  ExpectDeclarationsMatchDefinitions(u);
}

TEST(Render, NumbaConventionReturnsStatusAndWritesResult) {
  PrimitiveSpec s;
  s.set_family("block_reduce");
  s.set_dtype("float32");
  s.mutable_block()->set_x(256);
  s.set_arch("sm_90");
  s.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  RenderedUnit u = Render(Canonical(s));
  ASSERT_EQ(u.parts[0].entries.size(), 1u);
  EXPECT_EQ(u.parts[0].entries[0].declaration,
            "extern \"C\" __device__ int " + u.parts[0].entries[0].symbol +
                "(float* result, void* temp_storage, float input);");
  EXPECT_NE(u.source.find("*result = "), std::string::npos);
  ExpectDeclarationsMatchDefinitions(u);

  // An entry with no result still takes Numba's result pointer first, and ignores it.
  PrimitiveSpec scan;
  scan.set_family("block_scan");
  scan.set_dtype("int32");
  scan.mutable_block()->set_x(128);
  scan.set_items_per_thread(4);
  scan.set_arch("sm_90");
  scan.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  RenderedUnit v = Render(Canonical(scan));
  EXPECT_EQ(v.parts[0].entries[0].declaration,
            "extern \"C\" __device__ int " + v.parts[0].entries[0].symbol +
                "(void* result, void* temp_storage, const int* input, int* output);");
  ExpectDeclarationsMatchDefinitions(v);
}

TEST(Render, NumbaConventionTakesStructValuesByReference) {
  // Numba's float16 is a 16-bit scalar, NVRTC's __half a struct: by value the signatures differ
  // and LTO would not inline the call. Half, bfloat16 and user-type values come by reference.
  PrimitiveSpec s = Spec("block_reduce", "sum", "float16");
  s.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  RenderedUnit u = Render(s);
  EXPECT_EQ(u.parts[0].entries[0].declaration,
            "extern \"C\" __device__ int " + u.parts[0].entries[0].symbol +
                "(__half* result, void* temp_storage, const __half& input);");
  EXPECT_NE(u.source.find("  *result = ::coop::device::reduce_sum<Prim>(temp_storage, input);\n"),
            std::string::npos)
      << u.source;
  ExpectDeclarationsMatchDefinitions(u);

  PrimitiveSpec load;
  load.set_family("block_load");
  load.set_method("load_guarded_default");
  load.set_dtype("user");
  load.mutable_user_type()->set_size(12);
  load.mutable_user_type()->set_align(4);
  load.set_algorithm("direct");
  load.mutable_block()->set_x(64);
  load.set_items_per_thread(2);
  load.set_arch("sm_90");
  load.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  RenderedUnit v = Render(Canonical(load));
  const std::string& decl = v.parts[0].entries[0].declaration;
  EXPECT_NE(decl.find("(void* result, void* temp_storage, const coop_user_12_4* block_src, "
                      "coop_user_12_4* items, int valid_items, "
                      "const coop_user_12_4& oob_default);"),
            std::string::npos)
      << decl;
  ExpectDeclarationsMatchDefinitions(v);

  // The C convention keeps them by value; arithmetic dtypes are by value in both.
  EXPECT_NE(Render(Spec("block_reduce", "sum", "float16"))
                .parts[0]
                .entries[0]
                .declaration.find("(void* temp_storage, __half input);"),
            std::string::npos);
  s = Spec("block_reduce", "sum", "float32");
  s.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  EXPECT_NE(Render(s).parts[0].entries[0].declaration.find(
                "(float* result, void* temp_storage, float input);"),
            std::string::npos);
}

TEST(Render, SymbolsAreStableAndDistinct) {
  auto a = Spec("block_reduce", "sum", "float32");
  EXPECT_EQ(Render(a).parts[0].symbol_base, Render(a).parts[0].symbol_base);
  auto b = a;
  b.mutable_block()->set_x(256);
  EXPECT_NE(Render(a).parts[0].symbol_base, Render(b).parts[0].symbol_base);
  auto c = a;
  c.set_arch("sm_80");
  EXPECT_NE(Render(a).parts[0].symbol_base, Render(c).parts[0].symbol_base);
  EXPECT_EQ(Render(a).parts[0].symbol_base.rfind("coop_block_reduce_sum_f32_", 0), 0u);
}

TEST(Render, BundleHoldsEveryPartWithItsOwnSymbolsAndLayout) {
  auto a = Spec("block_reduce", "sum", "float32");
  auto b = Spec("block_scan", "inclusive_sum", "int32", 4);
  auto c = Spec("warp_reduce", "min", "uint16");
  RenderedUnit u = Render(std::vector<PrimitiveSpec>{a, b, c});
  ASSERT_EQ(u.parts.size(), 3u);
  EXPECT_EQ(u.source.rfind("#include <coop/device/prelude.cuh>\n", 0), 0u);
  EXPECT_EQ(u.source.find("#include", 1), std::string::npos) << "one include, at the top";
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(u.source.find("COOP_LAYOUT(" + u.parts[i].symbol_base + ", coop_prim_" +
                            std::to_string(i) + "_t)"),
              std::string::npos);
  }
  // A part's symbols do not depend on bundling.
  EXPECT_EQ(u.parts[1].symbol_base, Render(b).parts[0].symbol_base);
  EXPECT_EQ(u.parts[1].entries[0].declaration, Render(b).parts[0].entries[0].declaration);
  ExpectDeclarationsMatchDefinitions(u);
}

// What a caller must know is in the entry's description: the thread order of a 2D or 3D block,
// the barriers before results are read or temp storage reused, and whether a sort is stable.
std::string Description(PrimitiveSpec s) {
  auto u = Render(Canonical(s));
  EXPECT_EQ(u.parts.size(), 1u);
  EXPECT_FALSE(u.parts[0].entries.empty());
  return u.parts[0].entries[0].description;
}

TEST(Render, DescriptionsGiveThreadOrderBarriersAndStability) {
  auto has = [](const std::string& d, const std::string& what) {
    return d.find(what) != std::string::npos;
  };
  PrimitiveSpec scan = Spec("block_scan", "inclusive_sum", "int32", 2);
  EXPECT_FALSE(has(Description(scan), "linear id")) << "a 1D block needs no order note";
  EXPECT_TRUE(has(Description(scan), "__syncthreads() before temp_storage is reused"));
  scan.mutable_block()->set_x(32);
  scan.mutable_block()->set_y(4);
  EXPECT_TRUE(has(Description(scan), "linear id = threadIdx.x + 32 * threadIdx.y (x fastest)"))
      << Description(scan);
  scan.mutable_block()->set_z(2);
  EXPECT_TRUE(has(Description(scan),
                  "linear id = threadIdx.x + 32 * threadIdx.y + 128 * threadIdx.z (x fastest)"))
      << Description(scan);

  PrimitiveSpec histogram = scan;
  histogram.set_family("block_histogram");
  histogram.set_method("histogram");
  histogram.set_dtype("uint8");
  histogram.clear_scan();
  histogram.clear_algorithm();
  histogram.mutable_histogram()->set_bins(256);
  EXPECT_TRUE(has(Description(histogram), "__syncthreads() before any thread reads the counters"))
      << Description(histogram);

  PrimitiveSpec radix = Spec("block_radix_sort", "sort", "uint32", 4);
  EXPECT_TRUE(has(Description(radix), "; stable: ")) << Description(radix);
  PrimitiveSpec merge = radix;
  merge.set_family("block_merge_sort");
  merge.clear_radix_sort();
  merge.clear_algorithm();
  merge.mutable_op()->set_builtin("less");
  EXPECT_TRUE(has(Description(merge), "; not stable: ")) << Description(merge);
  merge.set_method("stable_sort");
  EXPECT_TRUE(has(Description(merge), "; stable: ")) << Description(merge);

  PrimitiveSpec warp = Spec("warp_reduce", "sum", "float32");
  EXPECT_TRUE(has(Description(warp), "__syncwarp() before this logical warp's temp_storage"))
      << Description(warp);
  EXPECT_FALSE(has(Description(warp), "__syncthreads()")) << Description(warp);
}

}  // namespace
}  // namespace coopd
