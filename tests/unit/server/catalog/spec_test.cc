#include "server/catalog/spec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "absl/status/status.h"

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

TargetInfo Target() {
  TargetInfo t;
  t.supported_archs = {75, 80, 86, 89, 90, 100, 120};
  t.cccl_version = "3.0.1";
  t.cccl_include = "/opt/cccl";
  return t;
}

PrimitiveSpec BlockReduce() {
  PrimitiveSpec s;
  s.set_family("block_reduce");
  s.set_dtype("float32");
  s.mutable_block()->set_x(256);
  s.set_arch("sm_90");
  return s;
}

PrimitiveSpec WarpReduce() {
  PrimitiveSpec s;
  s.set_family("warp_reduce");
  s.set_dtype("int32");
  s.set_arch("sm_90");
  return s;
}

std::string Error(const PrimitiveSpec& s) {
  auto r = Canonicalize(s, Target());
  EXPECT_FALSE(r.ok()) << "accepted: " << s.ShortDebugString();
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(Spec, FillsDefaults) {
  auto r = Canonicalize(BlockReduce(), Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method(), "sum");
  EXPECT_EQ(r->algorithm(), "warp_reductions");
  EXPECT_EQ(r->block().y(), 1u);
  EXPECT_EQ(r->block().z(), 1u);
  EXPECT_EQ(r->items_per_thread(), 1u);
  EXPECT_EQ(r->calling_convention(), coop::v1::CALLING_CONVENTION_C);

  auto scan = BlockReduce();
  scan.set_family("block_scan");
  r = Canonicalize(scan, Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method(), "inclusive_sum");
  EXPECT_EQ(r->algorithm(), "raking");

  r = Canonicalize(WarpReduce(), Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->warp_threads(), 32u);
  EXPECT_FALSE(r->has_block());
}

TEST(Spec, ExplicitDefaultsAndOmittedDefaultsAreOneCanonicalSpec) {
  auto explicit_spec = BlockReduce();
  explicit_spec.set_method("sum");
  explicit_spec.set_algorithm("warp_reductions");
  explicit_spec.mutable_block()->set_y(1);
  explicit_spec.set_items_per_thread(1);
  explicit_spec.set_calling_convention(coop::v1::CALLING_CONVENTION_C);
  auto a = Canonicalize(BlockReduce(), Target());
  auto b = Canonicalize(explicit_spec, Target());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(CanonicalEncoding(*a), CanonicalEncoding(*b));
}

TEST(Spec, WarpFamilyIgnoresBlockShape) {
  auto with_block = WarpReduce();
  with_block.mutable_block()->set_x(128);
  auto a = Canonicalize(WarpReduce(), Target());
  auto b = Canonicalize(with_block, Target());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(CanonicalEncoding(*a), CanonicalEncoding(*b));
}

TEST(Spec, DistinctSpecsHaveDistinctEncodings) {
  auto base = Canonicalize(BlockReduce(), Target());
  ASSERT_TRUE(base.ok());
  std::vector<PrimitiveSpec> variants(8, BlockReduce());
  variants[0].set_method("max");
  variants[1].set_dtype("float64");
  variants[2].mutable_block()->set_x(128);
  variants[3].mutable_block()->set_y(2);
  variants[4].set_items_per_thread(2);
  variants[5].set_algorithm("raking");
  variants[6].set_arch("sm_80");
  variants[7].set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  for (const auto& v : variants) {
    auto c = Canonicalize(v, Target());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_NE(CanonicalEncoding(*c), CanonicalEncoding(*base)) << v.ShortDebugString();
  }
}

TEST(Spec, RejectsUnknownFamily) {
  auto s = BlockReduce();
  s.set_family("block_sort");
  EXPECT_EQ(Error(s),
            "spec: family must be one of block_reduce, block_scan, block_load, block_store, "
            "block_exchange, block_shuffle, block_radix_sort, block_merge_sort, block_histogram, "
            "block_discontinuity, block_adjacent_difference, block_run_length_decode, "
            "block_radix_rank, warp_reduce, warp_scan, warp_load, warp_store, warp_exchange, "
            "warp_merge_sort, block_topk; got \"block_sort\"");
}

TEST(Spec, RejectsUnknownMethod) {
  auto s = BlockReduce();
  s.set_method("inclusive_sum");
  EXPECT_EQ(Error(s),
            "block_reduce: method must be one of sum, max, min, reduce, sum_partial, "
            "reduce_partial; got \"inclusive_sum\"");
}

TEST(Spec, RejectsUnknownDtype) {
  auto s = BlockReduce();
  s.set_dtype("float16x");
  EXPECT_EQ(Error(s),
            "block_reduce: dtype must be one of int8, int16, int32, int64, uint8, uint16, uint32, "
            "uint64, float32, float64, float16, bfloat16, or \"user\" (with user_type); got "
            "\"float16x\"");
}

TEST(Spec, RejectsThreadCounts) {
  auto s = BlockReduce();
  s.mutable_block()->set_x(0);
  EXPECT_EQ(Error(s), "block_reduce: block.x (threads) must be 1..1024, got 0");
  s.mutable_block()->set_x(1025);
  EXPECT_EQ(Error(s), "block_reduce: block.x must be 1..1024, got 1025");
  s.mutable_block()->set_x(64);
  s.mutable_block()->set_y(32);
  EXPECT_EQ(Error(s), "block_reduce: block threads (x*y*z) must be 1..1024, got 64*32*1 = 2048");
  s.mutable_block()->set_y(1);
  s.mutable_block()->set_z(65);
  EXPECT_EQ(Error(s), "block_reduce: block.z must be 1..64, got 65");
  s.clear_block();
  EXPECT_EQ(Error(s), "block_reduce: block.x (threads) must be 1..1024, got 0");
}

TEST(Spec, RejectsItemsPerThread) {
  auto s = BlockReduce();
  s.set_items_per_thread(65);
  EXPECT_EQ(Error(s), "block_reduce: items_per_thread must be 1..64, got 65");
  auto w = WarpReduce();
  w.set_items_per_thread(4);
  EXPECT_EQ(Error(w), "warp_reduce: items_per_thread must be 1, got 4");
}

TEST(Spec, RejectsArch) {
  auto s = BlockReduce();
  for (const char* arch :
       {"sm_91", "sm90", "compute_90", "", "sm_9x", "sm_1234567", "sm_89a", "sm_90A", "sm_90f"}) {
    s.set_arch(arch);
    EXPECT_EQ(Error(s), std::string("block_reduce: arch must be one of sm_75, sm_80, sm_86, "
                                    "sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_120, sm_120a (the "
                                    "architectures this NVRTC supports); got \"") +
                            arch + "\"");
  }
}

// sm_90a (the arch-specific feature set CuTe DSL kernels target) is a spec of its own: the
// canonical spec keeps the suffix, so keys and symbols differ from sm_90's.
TEST(Spec, AcceptsArchSpecificArchsFromSm90On) {
  auto s = BlockReduce();
  s.set_arch("sm_90a");
  auto a = Canonicalize(s, Target());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->arch(), "sm_90a");
  s.set_arch("sm_90");
  auto b = Canonicalize(s, Target());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(CanonicalEncoding(*a), CanonicalEncoding(*b));
  EXPECT_EQ(ArchNames({80, 90, 100}),
            (std::vector<std::string>{"sm_80", "sm_90", "sm_90a", "sm_100", "sm_100a"}));
}

TEST(Spec, RejectsAlgorithmTheFamilyLacks) {
  auto s = BlockReduce();
  s.set_algorithm("warp_scans");
  EXPECT_EQ(Error(s),
            "block_reduce: algorithm must be one of raking, raking_commutative_only, "
            "warp_reductions; got \"warp_scans\"");
  s.set_family("block_scan");
  s.set_algorithm("warp_reductions");
  EXPECT_EQ(Error(s),
            "block_scan: algorithm must be one of raking, raking_memoize, warp_scans; got "
            "\"warp_reductions\"");
  auto w = WarpReduce();
  w.set_algorithm("raking");
  EXPECT_EQ(Error(w),
            "warp_reduce: algorithm does not apply (this family has none); got \"raking\"");
}

TEST(Spec, RejectsWarpThreads) {
  auto w = WarpReduce();
  for (uint32_t bad : {3u, 48u, 64u, 33u}) {
    w.set_warp_threads(bad);
    EXPECT_EQ(Error(w),
              "warp_reduce: warp_threads must be a power of two 1..32 (1, 2, 4, 8, 16, "
              "32), got " +
                  std::to_string(bad));
  }
  for (uint32_t good : {1u, 2u, 4u, 8u, 16u, 32u}) {
    w.set_warp_threads(good);
    EXPECT_TRUE(Canonicalize(w, Target()).ok()) << good;
  }
  auto s = BlockReduce();
  s.set_warp_threads(16);
  EXPECT_EQ(Error(s), "block_reduce: warp_threads applies only to warp_* families, got 16");
}

TEST(Spec, OperatorRules) {
  auto s = BlockReduce();
  s.set_method("reduce");
  EXPECT_EQ(Error(s),
            "block_reduce: method \"reduce\" needs a binary operator (T, T) -> T: op.builtin must "
            "be one of sum, max, min, bit_and, bit_or, bit_xor, or op.user");
  s.mutable_op()->set_builtin("avg");
  EXPECT_EQ(Error(s),
            "block_reduce: op.builtin must be one of sum, max, min, bit_and, bit_or, bit_xor; got "
            "\"avg\"");
  // A builtin of another kind is named as such.
  s.mutable_op()->set_builtin("less");
  EXPECT_EQ(Error(s),
            "block_reduce: op.builtin \"less\" is a comparator operator, but method \"reduce\" "
            "takes a binary operator (T, T) -> T: one of sum, max, min, bit_and, bit_or, bit_xor");
  s.mutable_op()->set_builtin("bit_xor");
  EXPECT_EQ(Error(s),
            "block_reduce: op.builtin \"bit_xor\" needs an integer dtype; got \"float32\"");
  s.set_dtype("uint32");
  EXPECT_TRUE(Canonicalize(s, Target()).ok());
  auto sum = BlockReduce();
  sum.mutable_op()->set_builtin("max");
  EXPECT_EQ(Error(sum),
            "block_reduce: op applies only to methods that take an operator; method "
            "\"sum\" does not");
}

TEST(Spec, UserOperatorRules) {
  auto s = BlockReduce();
  s.set_method("reduce");
  auto* user = s.mutable_op()->mutable_user();
  user->set_name("my op");
  user->set_source("__device__ float f(float a, float b) { return a + b; }");
  EXPECT_EQ(Error(s),
            "block_reduce: op.user.name must be a C identifier of 1..128 characters "
            "([A-Za-z_][A-Za-z0-9_]*); got \"my op\"");
  user->set_name("coop_x");
  EXPECT_EQ(Error(s),
            "block_reduce: op.user.name must not start with \"coop_\" (coopd's own symbols); got "
            "\"coop_x\"");
  user->set_name("f");
  user->set_ltoir("bytes");
  EXPECT_EQ(Error(s), "block_reduce: op.user: exactly one of source and ltoir must be set");
  user->clear_ltoir();
  user->add_operand_dtypes("float64");
  user->add_operand_dtypes("float64");
  EXPECT_EQ(Error(s),
            "block_reduce: op.user.operand_dtypes must be (float32, float32) for this method and "
            "dtype; got (float64, float64)");
  user->clear_operand_dtypes();
  user->set_result_dtype("bool");
  EXPECT_EQ(Error(s),
            "block_reduce: op.user.result_dtype must be \"float32\" for this method and dtype; "
            "got \"bool\"");
  user->clear_result_dtype();
  user->set_digest("abc");
  EXPECT_EQ(Error(s), "block_reduce: op.user.digest is set by coopd; leave it empty in requests");
  user->clear_digest();

  // The resolved operator carries a digest and its signature, never the source.
  auto resolved = Canonicalize(s, Target());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const auto& r = resolved->op().user();
  EXPECT_TRUE(r.source().empty());
  EXPECT_EQ(r.result_dtype(), "float32");
  ASSERT_EQ(r.operand_dtypes_size(), 2);
  EXPECT_EQ(r.digest().size(), 65u);
  // Another body is another key; the same body is the same key.
  auto other = s;
  other.mutable_op()->mutable_user()->set_source(
      "__device__ float f(float a, float b) { return a * b; }");
  auto resolved_other = Canonicalize(other, Target());
  ASSERT_TRUE(resolved_other.ok());
  EXPECT_NE(CanonicalEncoding(*resolved), CanonicalEncoding(*resolved_other));
  EXPECT_EQ(CanonicalEncoding(*resolved), CanonicalEncoding(*Canonicalize(s, Target())));
}

TEST(Spec, FamiliesTheHeadersLackAreAFailedPrecondition) {
  PrimitiveSpec s;
  s.set_family("block_topk");
  s.set_method("max_keys");
  s.set_dtype("uint32");
  s.mutable_block()->set_x(128);
  s.set_items_per_thread(4);
  s.set_arch("sm_90");
  auto r = Canonicalize(s, Target());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "block_topk: needs CCCL 3.3 or newer (cub/block/block_topk.cuh); the spec compiles "
            "against CCCL 3.0.1 at /opt/cccl. Name a newer CCCL in cccl (coopctl catalog lists "
            "this coopd's), or serve one with coopd --cccl NAME=DIR, e.g. the headers of `pip "
            "install nvidia-cuda-cccl==13.3.3.3.1` (DIR: its site-packages)");
  // The catalogue lists the family as unavailable, saying what it needs.
  bool listed = false;
  const auto catalog = Catalog(Target());
  for (const auto& f : catalog.families()) {
    if (f.name() != "block_topk") continue;
    listed = true;
    EXPECT_FALSE(f.available());
    EXPECT_EQ(f.requires(), "CCCL 3.3 or newer (cub/block/block_topk.cuh)");
  }
  EXPECT_TRUE(listed);

  // With headers that have it, the same spec is accepted and pairs need a value dtype.
  auto target = Target();
  target.cccl_headers_present = OptionalCcclHeaders();
  EXPECT_TRUE(Canonicalize(s, target).ok());
  s.set_method("min_pairs");
  EXPECT_EQ(Canonicalize(s, target).status().message(),
            "block_topk: method \"min_pairs\" needs top_k.value_dtype (the values' dtype: one of "
            "int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, float16, "
            "bfloat16)");
  s.mutable_top_k()->set_value_dtype("int32");
  EXPECT_TRUE(Canonicalize(s, target).ok());
  s.mutable_block()->set_y(2);
  EXPECT_EQ(Canonicalize(s, target).status().message(),
            "block_topk: block must be one-dimensional (CUB's block_topk has no BLOCK_DIM_Y/Z); "
            "got 128x2x1");
}

// top_k.valid_items exists from CCCL 3.5 on: refused before, kept (and keyed) from then.
TEST(Spec, TopKValidItemsNeedsCccl35) {
  PrimitiveSpec s;
  s.set_family("block_topk");
  s.set_method("max_keys");
  s.set_dtype("uint32");
  s.mutable_block()->set_x(128);
  s.set_items_per_thread(4);
  s.set_arch("sm_90");
  s.mutable_top_k()->set_valid_items(true);
  auto target = Target();
  target.cccl_headers_present = OptionalCcclHeaders();
  for (const char* older : {"3.3.3", "3.4.9", "2.8.0", "unknown"}) {
    target.cccl_version = older;
    auto r = Canonicalize(s, target);
    ASSERT_FALSE(r.ok()) << older;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(r.status().message(),
              std::string("block_topk: top_k.valid_items (the partial-tile form, num_valid) needs "
                          "CCCL 3.5 or newer; the spec compiles against CCCL ") +
                  older +
                  ". Name a CCCL 3.5 or newer in cccl, or serve one with coopd --cccl NAME=DIR, "
                  "e.g. the headers of the cuda-cccl 1.1.1 wheel (site-packages/cuda/cccl/"
                  "headers/include)");
  }
  for (const char* newer : {"3.5.0", "3.10.0", "4.0.0"}) {
    target.cccl_version = newer;
    auto r = Canonicalize(s, target);
    ASSERT_TRUE(r.ok()) << newer << ": " << r.status();
    EXPECT_TRUE(r->top_k().valid_items());
  }
  auto full = s;
  full.mutable_top_k()->set_valid_items(false);
  EXPECT_NE(CanonicalEncoding(*Canonicalize(s, target)),
            CanonicalEncoding(*Canonicalize(full, target)));
}

TEST(Spec, ScanOptionsOnlyForBlockScan) {
  auto s = BlockReduce();
  s.mutable_scan()->set_with_aggregate(true);
  EXPECT_EQ(Error(s), "block_reduce: scan options apply only to block_scan");
}

TEST(Spec, LoadAndStoreNeedAnExplicitAlgorithm) {
  PrimitiveSpec s;
  s.set_family("block_load");
  s.set_dtype("int16");
  s.mutable_block()->set_x(128);
  s.set_items_per_thread(8);
  s.set_arch("sm_90");
  EXPECT_EQ(Error(s),
            "block_load: algorithm is required (one of direct, striped, vectorize, transpose, "
            "warp_transpose, warp_transpose_timesliced, or auto): CUB's default, direct, is "
            "often several times slower than the best choice, so coopd does not pick it "
            "silently; auto picks from measurements (docs/tuning.md)");
  s.set_algorithm("warp_transpose");
  EXPECT_TRUE(Canonicalize(s, Target()).ok());
  s.mutable_block()->set_x(96);
  EXPECT_TRUE(Canonicalize(s, Target()).ok());
  s.mutable_block()->set_x(100);
  EXPECT_EQ(Error(s),
            "block_load: algorithm \"warp_transpose\" needs a block of a multiple of 32 threads, "
            "got 100");
  s.set_algorithm("transpose");
  EXPECT_TRUE(Canonicalize(s, Target()).ok());
  s.set_family("block_store");
  s.set_method("load");
  EXPECT_EQ(Error(s), "block_store: method must be one of store, store_guarded; got \"load\"");
}

TEST(Spec, ShuffleOffsetAndRotateTakeOneItem) {
  PrimitiveSpec s = BlockReduce();
  s.set_family("block_shuffle");
  s.set_method("rotate");
  s.set_items_per_thread(2);
  EXPECT_EQ(Error(s), "block_shuffle: method \"rotate\" takes items_per_thread 1, got 2");
  s.set_method("up");
  EXPECT_TRUE(Canonicalize(s, Target()).ok());
}

TEST(Spec, WarpScanTakesScanOptionsAndALogicalWarp) {
  PrimitiveSpec s = WarpReduce();
  s.set_family("warp_scan");
  s.set_method("exclusive_sum");
  s.set_warp_threads(16);
  s.mutable_scan()->set_with_aggregate(true);
  auto r = Canonicalize(s, Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->scan().with_aggregate());
  s.set_items_per_thread(2);
  EXPECT_EQ(Error(s), "warp_scan: items_per_thread must be 1, got 2");
}

TEST(Spec, SortOptions) {
  PrimitiveSpec s = BlockReduce();
  s.set_family("block_radix_sort");
  s.set_items_per_thread(4);
  auto r = Canonicalize(s, Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->radix_sort().radix_bits(), 4u) << "CUB's default, resolved";
  EXPECT_EQ(r->method(), "sort");
  // An explicit default shares the key; values change it.
  s.mutable_radix_sort()->set_radix_bits(4);
  auto explicit_bits = Canonicalize(s, Target());
  ASSERT_TRUE(explicit_bits.ok());
  EXPECT_EQ(CanonicalEncoding(*r), CanonicalEncoding(*explicit_bits));
  s.mutable_radix_sort()->set_value_dtype("int32");
  auto pairs = Canonicalize(s, Target());
  ASSERT_TRUE(pairs.ok());
  EXPECT_NE(CanonicalEncoding(*pairs), CanonicalEncoding(*r));
  s.mutable_radix_sort()->set_radix_bits(9);
  EXPECT_EQ(Error(s), "block_radix_sort: radix_sort.radix_bits must be 1..8 (0 means 4), got 9");

  PrimitiveSpec m = BlockReduce();
  m.set_family("warp_merge_sort");
  m.clear_block();
  m.mutable_op()->set_builtin("greater");
  m.mutable_radix_sort()->set_value_dtype("int32");
  EXPECT_EQ(Error(m), "warp_merge_sort: radix_sort options apply only to block_radix_sort");
  m.mutable_merge_sort()->set_value_dtype("int32");
  r = Canonicalize(m, Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->warp_threads(), 32u);
  EXPECT_NE(CanonicalEncoding(*r).find("merge_sort.value_dtype=int32\n"), std::string::npos);
  // Families without sort options keep their encoding free of the sort lines (old keys hold).
  auto reduce = Canonicalize(BlockReduce(), Target());
  ASSERT_TRUE(reduce.ok());
  EXPECT_EQ(CanonicalEncoding(*reduce).find("sort"), std::string::npos);
}

TEST(Spec, HistogramNeedsBinsAndUnsignedSamples) {
  PrimitiveSpec s = BlockReduce();
  s.set_family("block_histogram");
  s.set_dtype("uint8");
  EXPECT_EQ(Error(s),
            "block_histogram: histogram.bins (the number of counters) is required and must be "
            "1..65536, got 0");
  s.mutable_histogram()->set_bins(256);
  auto r = Canonicalize(s, Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->algorithm(), "sort");
  EXPECT_EQ(r->method(), "histogram");
  EXPECT_NE(CanonicalEncoding(*r).find("histogram.bins=256\n"), std::string::npos);
  s.set_dtype("float32");
  EXPECT_EQ(Error(s),
            "block_histogram: dtype must be one of uint8, uint16, uint32, uint64; got \"float32\"");
  auto reduce = BlockReduce();
  reduce.mutable_histogram()->set_bins(4);
  EXPECT_EQ(Error(reduce), "block_reduce: histogram options apply only to block_histogram");
}

TEST(Spec, WarpExchangeShuffleConstraints) {
  PrimitiveSpec s = WarpReduce();
  s.set_family("warp_exchange");
  s.set_algorithm("shuffle");
  s.set_warp_threads(8);
  s.set_items_per_thread(4);
  EXPECT_EQ(Error(s),
            "warp_exchange: algorithm \"shuffle\" needs items_per_thread == warp_threads, got 4 "
            "items and 8 threads");
  s.set_items_per_thread(8);
  EXPECT_TRUE(Canonicalize(s, Target()).ok());
  s.set_method("scatter_to_striped");
  EXPECT_EQ(Error(s),
            "warp_exchange: method \"scatter_to_striped\" needs algorithm \"smem\"; CUB's "
            "shuffle exchange does not scatter");
  s.set_algorithm("");
  auto r = Canonicalize(s, Target());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->algorithm(), "smem");
}

// The catalogue and the validator come from one table: everything the catalogue offers
// validates, and the validator's error lists exactly the catalogue's values.
TEST(Spec, CatalogMatchesTheValidator) {
  // Headers that have every optional family (block_topk).
  TargetInfo target = Target();
  target.cccl_headers_present = OptionalCcclHeaders();
  coop::v1::CatalogResponse c = Catalog(target);
  ASSERT_EQ(c.families_size(), 20);
  EXPECT_EQ(c.archs(4), "sm_90");
  ASSERT_EQ(c.op_kinds_size(), 4);
  EXPECT_EQ(c.op_kinds(1).name(), "comparator");
  EXPECT_EQ(c.op_kinds(1).signature(), "(T, T) -> bool");
  EXPECT_EQ(c.builtin_ops_size(), c.op_kinds(0).builtins_size()) << "builtin_ops: binary kind";
  for (const auto& f : c.families()) {
    for (const auto& m : f.methods()) {
      PrimitiveSpec s;
      s.set_family(f.name());
      s.set_method(m.name());
      s.set_dtype(f.dtypes(0));  // the family's first accepted dtype
      if (f.family_options() == "histogram") s.mutable_histogram()->set_bins(8);
      if (f.family_options() == "top_k" && m.name().find("_pairs") != std::string::npos) {
        s.mutable_top_k()->set_value_dtype("int32");
      }
      EXPECT_TRUE(f.available()) << f.name();
      if (f.family_options() == "radix_rank") s.mutable_radix_rank()->set_radix_bits(4);
      if (f.family_options() == "run_length_decode") {
        s.mutable_run_length_decode()->set_decoded_items_per_thread(4);
      }
      if (!f.warp()) s.mutable_block()->set_x(64);
      EXPECT_EQ(m.needs_op(), !m.op_kind().empty()) << m.name();
      if (m.needs_op()) {
        // The first builtin of the method's kind.
        auto kind = std::find_if(c.op_kinds().begin(), c.op_kinds().end(),
                                 [&](const auto& k) { return k.name() == m.op_kind(); });
        ASSERT_NE(kind, c.op_kinds().end()) << m.op_kind();
        s.mutable_op()->set_builtin(kind->builtins(0));
      }
      s.set_arch("sm_90");
      for (int a = 0; a < std::max(1, f.algorithms_size()); ++a) {
        if (f.algorithms_size() > 0) s.set_algorithm(f.algorithms(a));
        // warp_exchange's shuffle needs items_per_thread == warp_threads (32 by default).
        s.set_items_per_thread(s.algorithm() == "shuffle" ? 32 : 0);
        if (s.algorithm() == "shuffle" && m.name() == "scatter_to_striped") continue;
        auto r = Canonicalize(s, target);
        EXPECT_TRUE(r.ok()) << s.ShortDebugString() << ": " << r.status();
      }
    }
    PrimitiveSpec bad;
    bad.set_family(f.name());
    bad.set_method("no_such_method");
    bad.set_dtype("int32");
    bad.set_arch("sm_90");
    std::string listed;
    for (const auto& m : f.methods()) listed += (listed.empty() ? "" : ", ") + m.name();
    EXPECT_NE(std::string(Canonicalize(bad, target).status().message())
                  .find("method must be one of " + listed + ";"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace coopd
