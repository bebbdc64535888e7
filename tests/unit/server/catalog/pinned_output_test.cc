// Pins what a request turns into: for one representative spec of every family, the canonical
// encoding (the key's "canonical request") and the rendered unit, byte for byte, against golden
// files captured before a refactor. Any difference fails.
//
// COOPD_UPDATE_GOLDEN=1 rewrites the golden files from the current code instead of comparing
// (do that only when a change of output is intended, and say so: it changes every cache key).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "server/catalog/render.h"
#include "server/catalog/spec.h"

#ifndef COOPD_GOLDEN_DIR
#error "COOPD_GOLDEN_DIR must name tests/unit/server/catalog/golden"
#endif

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

TargetInfo Target() {
  TargetInfo t;
  t.supported_archs = {75, 80, 86, 89, 90, 100, 120};
  t.cccl_version = "3.3.1";
  t.cccl_include = "/opt/cccl";
  t.cccl_headers_present = OptionalCcclHeaders();  // every optional family (block_topk)
  return t;
}

PrimitiveSpec Block(const std::string& family, const std::string& method, const std::string& dtype,
                    uint32_t x, uint32_t items) {
  PrimitiveSpec s;
  s.set_family(family);
  s.set_method(method);
  s.set_dtype(dtype);
  s.mutable_block()->set_x(x);
  s.set_items_per_thread(items);
  s.set_arch("sm_90");
  return s;
}

PrimitiveSpec Warp(const std::string& family, const std::string& method, const std::string& dtype,
                   uint32_t items) {
  PrimitiveSpec s;
  s.set_family(family);
  s.set_method(method);
  s.set_dtype(dtype);
  s.set_items_per_thread(items);
  s.set_arch("sm_90");
  return s;
}

// One representative request per family: non-default choices where the family has them
// (operators, algorithms, options, shapes), so more of the encoding and the renderer is pinned.
std::map<std::string, PrimitiveSpec> Representatives() {
  std::map<std::string, PrimitiveSpec> r;

  auto reduce = Block("block_reduce", "reduce", "float32", 128, 4);
  reduce.mutable_op()->set_builtin("max");
  reduce.set_algorithm("raking");
  r["block_reduce"] = reduce;

  auto scan = Block("block_scan", "exclusive_scan", "int64", 256, 2);
  scan.mutable_op()->set_builtin("sum");
  scan.set_algorithm("warp_scans");
  scan.mutable_scan()->set_with_aggregate(true);
  r["block_scan"] = scan;

  auto load = Block("block_load", "load_guarded_default", "int16", 128, 4);
  load.set_algorithm("warp_transpose");
  r["block_load"] = load;

  auto store = Block("block_store", "store_guarded", "float64", 64, 2);
  store.set_algorithm("vectorize");
  r["block_store"] = store;

  auto exchange = Block("block_exchange", "scatter_to_striped_guarded", "uint32", 128, 4);
  exchange.mutable_exchange()->set_warp_time_slicing(false);
  r["block_exchange"] = exchange;

  auto shuffle = Block("block_shuffle", "up", "float16", 128, 4);
  shuffle.mutable_block()->set_y(2);
  r["block_shuffle"] = shuffle;

  auto radix_sort =
      Block("block_radix_sort", "sort_descending_blocked_to_striped", "uint64", 128, 4);
  radix_sort.mutable_radix_sort()->set_value_dtype("int32");
  radix_sort.mutable_radix_sort()->set_radix_bits(5);
  r["block_radix_sort"] = radix_sort;

  auto merge_sort = Block("block_merge_sort", "stable_sort_guarded", "int32", 128, 4);
  merge_sort.mutable_op()->set_builtin("greater");
  merge_sort.mutable_merge_sort()->set_value_dtype("float32");
  r["block_merge_sort"] = merge_sort;

  auto histogram = Block("block_histogram", "composite", "uint8", 128, 4);
  histogram.set_algorithm("atomic");
  histogram.mutable_histogram()->set_bins(256);
  r["block_histogram"] = histogram;

  auto discontinuity =
      Block("block_discontinuity", "flag_heads_and_tails_with_predecessor", "int32", 128, 4);
  discontinuity.mutable_op()->set_builtin("not_equal");
  r["block_discontinuity"] = discontinuity;

  auto adjacent = Block("block_adjacent_difference", "subtract_left_partial_with_predecessor",
                        "float32", 128, 4);
  adjacent.mutable_op()->set_builtin("difference");
  r["block_adjacent_difference"] = adjacent;

  auto rld = Block("block_run_length_decode", "decode_with_offsets", "int32", 128, 2);
  rld.mutable_run_length_decode()->set_decoded_items_per_thread(4);
  r["block_run_length_decode"] = rld;

  auto rank = Block("block_radix_rank", "rank_keys_descending", "uint32", 128, 4);
  rank.mutable_radix_rank()->set_radix_bits(4);
  r["block_radix_rank"] = rank;

  auto warp_reduce = Warp("warp_reduce", "head_segmented_reduce", "int32", 1);
  warp_reduce.mutable_op()->set_builtin("min");
  warp_reduce.set_warp_threads(16);
  r["warp_reduce"] = warp_reduce;

  auto warp_scan = Warp("warp_scan", "inclusive_scan", "uint16", 1);
  warp_scan.mutable_op()->set_builtin("bit_xor");
  r["warp_scan"] = warp_scan;

  auto warp_load = Warp("warp_load", "load_guarded", "float32", 4);
  warp_load.set_algorithm("transpose");
  warp_load.set_warp_threads(16);
  r["warp_load"] = warp_load;

  auto warp_store = Warp("warp_store", "store", "int8", 4);
  warp_store.set_algorithm("striped");
  r["warp_store"] = warp_store;

  auto warp_exchange = Warp("warp_exchange", "blocked_to_striped", "bfloat16", 8);
  warp_exchange.set_algorithm("shuffle");
  warp_exchange.set_warp_threads(8);
  r["warp_exchange"] = warp_exchange;

  auto warp_merge_sort = Warp("warp_merge_sort", "sort", "float64", 2);
  warp_merge_sort.mutable_op()->set_builtin("less");
  warp_merge_sort.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
  r["warp_merge_sort"] = warp_merge_sort;

  auto topk = Block("block_topk", "max_pairs", "uint32", 128, 4);
  topk.mutable_top_k()->set_value_dtype("int32");
  r["block_topk"] = topk;

  return r;
}

std::string Pinned(const PrimitiveSpec& canonical) {
  return "== canonical encoding ==\n" + CanonicalEncoding(canonical) + "\n== rendered unit ==\n" +
         Render(canonical).source;
}

TEST(PinnedOutput, CanonicalEncodingAndRenderedUnitOfEveryFamilyAreUnchanged) {
  const std::map<std::string, PrimitiveSpec> specs = Representatives();

  // Every family of the catalogue has a representative, and nothing else does.
  std::set<std::string> families;
  const coop::v1::CatalogResponse catalog = Catalog(Target());
  for (const auto& f : catalog.families()) families.insert(f.name());
  std::set<std::string> pinned;
  for (const auto& [name, spec] : specs) pinned.insert(name);
  EXPECT_EQ(families, pinned);

  const bool update = [] {
    const char* v = std::getenv("COOPD_UPDATE_GOLDEN");
    return v != nullptr && std::string(v) == "1";
  }();
  for (const auto& [family, spec] : specs) {
    SCOPED_TRACE(family);
    ASSERT_EQ(spec.family(), family);
    auto canonical = Canonicalize(spec, Target());
    ASSERT_TRUE(canonical.ok()) << spec.ShortDebugString() << ": " << canonical.status();
    const std::string actual = Pinned(*canonical);
    const std::string path = std::string(COOPD_GOLDEN_DIR) + "/" + family + ".txt";
    if (update) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      ASSERT_TRUE(out) << "cannot write " << path;
      out << actual;
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "no golden file " << path << " (COOPD_UPDATE_GOLDEN=1 writes it)";
    std::ostringstream golden;
    golden << in.rdbuf();
    // EXPECT_EQ on strings prints a diff of the two.
    EXPECT_EQ(golden.str(), actual) << "output differs from " << path;
  }
}

}  // namespace
}  // namespace coopd
