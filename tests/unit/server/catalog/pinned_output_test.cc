// Pins what a request turns into: for one representative spec of every family, the canonical
// encoding (the key's "canonical request") and the rendered unit, byte for byte, against golden
// files captured before a refactor. Also pins the catalogue and the errors a set of bad requests
// get (every family's representative, broken one field at a time). Any difference fails.
//
// The goldens were checked against the code before server/ was split into folders and families
// (commit ac0dd4e): this test, built there, passes on the same golden files.
//
// COOPD_UPDATE_GOLDEN=1 rewrites the golden files from the current code instead of comparing
// (do that only when a change of output is intended, and say so: it changes every cache key).
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "server/catalog/render.h"
#include "server/catalog/spec.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

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

bool UpdateGolden() {
  const char* v = std::getenv("COOPD_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// Compares `actual` with golden/<name>, or writes it there under COOPD_UPDATE_GOLDEN=1.
void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(COOPD_GOLDEN_DIR) + "/" + name;
  if (UpdateGolden()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(out) << "cannot write " << path;
    out << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "no golden file " << path << " (COOPD_UPDATE_GOLDEN=1 writes it)";
  std::ostringstream golden;
  golden << in.rdbuf();
  // EXPECT_EQ on strings prints a diff of the two.
  EXPECT_EQ(golden.str(), actual) << "output differs from " << path;
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

  for (const auto& [family, spec] : specs) {
    SCOPED_TRACE(family);
    ASSERT_EQ(spec.family(), family);
    auto canonical = Canonicalize(spec, Target());
    ASSERT_TRUE(canonical.ok()) << spec.ShortDebugString() << ": " << canonical.status();
    ExpectGolden(family + ".txt", Pinned(*canonical));
  }
}

TEST(PinnedOutput, CatalogueIsUnchanged) {
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(Catalog(Target()), &text));
  ExpectGolden("catalog.txtpb", text);
}

// Every family's representative, broken one field at a time: the errors (or the acceptance)
// are pinned, so a refactor that changes what a user is told fails here.
// What each CCCL release coopd serves (the toolkit's 3.0.1; 3.3, 3.5 and 3.6 from PyPI) changes
// in the catalogue and the validator: which families are available and what the others need,
// and for every family the representative's outcome (its canonical encoding's digest, or the
// error), with and without block_topk's partial-tile form. The rendered units are the same on
// every release (the device headers pick CCCL's API with CCCL_VERSION; the compile tests prove
// each). Pinned in golden/per_cccl.txt.
TEST(PinnedOutput, WhatEachCcclReleaseChangesIsUnchanged) {
  std::string out;
  for (const char* version : {"3.0.1", "3.3.3", "3.5.0", "3.6.0"}) {
    TargetInfo target = Target();
    target.cccl_version = version;
    if (std::string(version) == "3.0.1") target.cccl_headers_present.clear();
    out += StrCat("== CCCL ", version, " ==\n");
    const coop::v1::CatalogResponse catalog = Catalog(target);
    for (const auto& f : catalog.families()) {
      if (!f.available()) out += StrCat("unavailable ", f.name(), ": needs ", f.requires(), "\n");
    }
    for (const auto& [family, spec] : Representatives()) {
      auto canonical = Canonicalize(spec, target);
      out += StrCat(family, ": ",
                    canonical.ok() ? Sha256::Hex(CanonicalEncoding(*canonical)).substr(0, 16)
                                   : std::string(canonical.status().message()),
                    "\n");
    }
    PrimitiveSpec partial = Representatives().at("block_topk");
    partial.mutable_top_k()->set_valid_items(true);
    auto canonical = Canonicalize(partial, target);
    out += StrCat("block_topk valid_items: ",
                  canonical.ok() ? Sha256::Hex(CanonicalEncoding(*canonical)).substr(0, 16)
                                 : std::string(canonical.status().message()),
                  "\n");
  }
  ExpectGolden("per_cccl.txt", out);
}

TEST(PinnedOutput, ErrorsForBadRequestsAreUnchanged) {
  using Mutation = void (*)(PrimitiveSpec&);
  const std::vector<std::pair<std::string, Mutation>> mutations = {
      {"no family", [](PrimitiveSpec& s) { s.clear_family(); }},
      {"unknown family", [](PrimitiveSpec& s) { s.set_family("block_sum"); }},
      {"unknown method", [](PrimitiveSpec& s) { s.set_method("frobnicate"); }},
      {"no dtype", [](PrimitiveSpec& s) { s.clear_dtype(); }},
      {"unknown dtype", [](PrimitiveSpec& s) { s.set_dtype("float8"); }},
      {"user dtype without a size", [](PrimitiveSpec& s) { s.set_dtype("user"); }},
      {"items 65", [](PrimitiveSpec& s) { s.set_items_per_thread(65); }},
      {"items 3", [](PrimitiveSpec& s) { s.set_items_per_thread(3); }},
      {"unknown algorithm", [](PrimitiveSpec& s) { s.set_algorithm("bogus"); }},
      {"builtin op max", [](PrimitiveSpec& s) { s.mutable_op()->set_builtin("max"); }},
      {"unknown builtin op", [](PrimitiveSpec& s) { s.mutable_op()->set_builtin("pow"); }},
      {"no op", [](PrimitiveSpec& s) { s.clear_op(); }},
      {"warp_threads 16", [](PrimitiveSpec& s) { s.set_warp_threads(16); }},
      {"warp_threads 3", [](PrimitiveSpec& s) { s.set_warp_threads(3); }},
      {"block 0", [](PrimitiveSpec& s) { s.mutable_block()->set_x(0); }},
      {"block 2048", [](PrimitiveSpec& s) { s.mutable_block()->set_x(2048); }},
      {"block 96", [](PrimitiveSpec& s) { s.mutable_block()->set_x(96); }},
      {"block 32x3x2",
       [](PrimitiveSpec& s) {
         s.mutable_block()->set_x(32);
         s.mutable_block()->set_y(3);
         s.mutable_block()->set_z(2);
       }},
      {"no arch", [](PrimitiveSpec& s) { s.clear_arch(); }},
      {"arch sm_91", [](PrimitiveSpec& s) { s.set_arch("sm_91"); }},
      {"scan options", [](PrimitiveSpec& s) { s.mutable_scan()->set_with_aggregate(true); }},
      {"exchange options",
       [](PrimitiveSpec& s) { s.mutable_exchange()->set_warp_time_slicing(true); }},
      {"radix_sort options", [](PrimitiveSpec& s) { s.mutable_radix_sort()->set_radix_bits(9); }},
      {"merge_sort options",
       [](PrimitiveSpec& s) { s.mutable_merge_sort()->set_value_dtype("int32"); }},
      {"top_k options", [](PrimitiveSpec& s) { s.mutable_top_k()->set_value_dtype("float8"); }},
      {"histogram options", [](PrimitiveSpec& s) { s.mutable_histogram()->set_bins(0); }},
      {"run_length_decode options",
       [](PrimitiveSpec& s) { s.mutable_run_length_decode()->set_decoded_items_per_thread(65); }},
      {"radix_rank options", [](PrimitiveSpec& s) { s.mutable_radix_rank()->set_radix_bits(0); }},
      {"user type 12x3",
       [](PrimitiveSpec& s) {
         s.set_dtype("user");
         s.mutable_user_type()->set_size(12);
         s.mutable_user_type()->set_align(3);
       }},
      {"numba abi",
       [](PrimitiveSpec& s) { s.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA); }},
  };
  std::string out;
  for (const auto& [family, spec] : Representatives()) {
    for (const auto& [what, mutate] : mutations) {
      PrimitiveSpec bad = spec;
      mutate(bad);
      auto r = Canonicalize(bad, Target());
      out += family + " / " + what + ": ";
      out += r.ok() ? std::string("accepted")
                    : std::string(absl::StatusCodeToString(r.status().code())) + ": " +
                          std::string(r.status().message());
      out += "\n";
    }
  }
  ExpectGolden("errors.txt", out);
}

}  // namespace
}  // namespace coopd
