// The tuning tables of algorithm "auto": the loader's schema errors, the grid check, the
// resolution rule (docs/tuning.md), and "auto" in Canonicalize (resolved before the key).
#include "server/catalog/tuning.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "server/catalog/family.h"
#include "server/catalog/spec.h"
#include "server/catalog/tuning_embedded.h"
#include "server/util/sha256.h"

namespace coopd::tuning {
namespace {

using coop::v1::PrimitiveSpec;
using Json = nlohmann::json;

// A cell of `family`'s measured method with the given medians (min/max 1% around them).
Json CellJson(const std::string& family, uint32_t s, uint32_t t, uint32_t n,
              const std::vector<std::pair<std::string, double>>& medians) {
  Json measured = Json::object();
  std::string choice;
  double best = -1;
  for (const auto& [alg, g] : medians) {
    measured[alg] = {{"median_gbps", g}, {"min_gbps", g * 0.99}, {"max_gbps", g * 1.01}, {"n", 15}};
    if (g > best) {
      best = g;
      choice = alg;
    }
  }
  return {
      {"family", family},      {"method", std::string(FindFamily(family)->auto_measured_method)},
      {"dtype_size", s},       {"threads", t},
      {"items_per_thread", n}, {"choice", choice},
      {"run", "r1"},           {"measured", measured}};
}

Json TableJson(Json cells, const std::string& arch = "sm_90") {
  return {{"schema", 1},
          {"version", arch + "-test.1"},
          {"arch", arch},
          {"device", "test"},
          {"toolchain", "CUDA 13.0, CCCL 3.0.1"},
          {"generated_by", "tuning_test.cc"},
          {"runs", {{"r1", "by the test"}}},
          {"cells", std::move(cells)}};
}

Table Parse(const Json& j) {
  auto t = ParseTable(j.dump(), "t.json");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Table{};
}

std::string ParseError(const Json& j) {
  auto t = ParseTable(j.dump(), "t.json");
  EXPECT_FALSE(t.ok());
  if (t.ok()) return "";
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(t.status().message());
}

std::shared_ptr<const TableSet> Set(const Json& j) {
  std::vector<Table> tables;
  tables.push_back(Parse(j));
  auto set = MakeTableSet(std::move(tables));
  EXPECT_TRUE(set.ok());
  return *set;
}

// Every cell of the grid (docs/tuning.md), each measuring every auto algorithm of its family
// eligible at its shape, with the baseline slowest.
Json FullGrid() {
  Json cells = Json::array();
  for (const Family* f : Families()) {
    if (f->auto_algorithms.empty()) continue;
    const bool histogram = f->name == "block_histogram";
    for (uint32_t s : histogram ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{1, 2, 4, 8}) {
      for (uint32_t t :
           f->warp ? std::vector<uint32_t>{8, 16, 32} : std::vector<uint32_t>{64, 128, 256, 512}) {
        for (uint32_t n : {1u, 2u, 4u, 8u, 16u}) {
          std::vector<std::pair<std::string, double>> medians;
          double g = 100;
          for (auto a : f->auto_algorithms) {
            medians.emplace_back(std::string(a), a == f->auto_baseline ? 50 : (g += 10));
          }
          cells.push_back(CellJson(std::string(f->name), s, t, n, medians));
        }
      }
    }
  }
  return TableJson(cells);
}

Query BlockLoadQuery(uint32_t s, uint32_t t, uint32_t n, std::string_view arch = "sm_90") {
  Query q;
  q.family = FindFamily("block_load");
  q.arch = arch;
  q.dtype_size = s;
  q.threads = t;
  q.items_per_thread = n;
  return q;
}

TEST(Tuning, TheEmbeddedTablesParseAndCarryTheirFilesDigest) {
  ASSERT_FALSE(EmbeddedTableFiles().empty());
  auto set = EmbeddedTables();
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ((*set)->tables.size(), EmbeddedTableFiles().size());
  const Table& t = (*set)->tables[0];
  EXPECT_EQ(t.digest, Sha256::Hex(EmbeddedTableFiles()[0].contents));
  EXPECT_EQ(t.source, std::string("embedded:") + std::string(EmbeddedTableFiles()[0].name));
  EXPECT_EQ((*set)->ForArch("sm_90a"), (*set)->ForArch("sm_90"));
  EXPECT_EQ((*set)->digest.size(), 64u);
  EXPECT_EQ(ActiveTableDigest(), ActiveTables()->digest);
}

TEST(Tuning, SchemaErrorsNameTheCellAndTheField) {
  const Json good = TableJson(
      Json::array({CellJson("block_load", 4, 128, 8, {{"direct", 100}, {"vectorize", 200}})}));
  Parse(good);
  struct Case {
    std::function<void(Json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j["schema"] = 2; },
       "t.json: schema: must be 1 (the schema this coopd reads), got 2"},
      {[](Json& j) { j.erase("version"); }, "t.json: version: missing (a string)"},
      {[](Json& j) { j["arch"] = "sm_90a"; },
       "t.json: arch: must be \"sm_N\" (e.g. \"sm_90\"; it also covers sm_Na), got \"sm_90a\""},
      {[](Json& j) { j["colour"] = 1; }, "t.json: colour: unknown field; allowed: "},
      {[](Json& j) { j["cells"][0].erase("threads"); },
       "t.json: cells[0].threads: missing (an integer 1..1024)"},
      {[](Json& j) { j["cells"][0]["items_per_thread"] = 0; },
       "t.json: cells[0].items_per_thread: must be an integer 1..64, got 0"},
      {[](Json& j) { j["cells"][0]["family"] = "block_exchange"; },
       "t.json: cells[0].family: must be a family that offers auto (block_reduce, block_scan, "
       "block_load, block_store, block_histogram, warp_load, warp_store), got "
       "\"block_exchange\""},
      {[](Json& j) { j["cells"][0]["method"] = "load_guarded"; },
       "t.json: cells[0].method: must be \"load\" for block_load (the measured method; its "
       "other methods use its cells), got \"load_guarded\""},
      {[](Json& j) { j["cells"][0]["run"] = "r9"; },
       "t.json: cells[0].run: must name one of runs (r1), got \"r9\""},
      {[](Json& j) { j["cells"][0]["choice"] = "direct"; },
       "t.json: cells[0].choice: must be the algorithm with the highest median: \"direct\" has "
       "100.0 GB/s, \"vectorize\" 200.0 GB/s"},
      {[](Json& j) { j["cells"][0]["choice"] = "transpose"; },
       "t.json: cells[0].choice: must be one of the measured algorithms (direct, vectorize), "
       "got \"transpose\""},
      {[](Json& j) { j["cells"][0]["measured"]["striped"] = j["cells"][0]["measured"]["direct"]; },
       "t.json: cells[0].measured.striped: not an auto algorithm of block_load (direct, "
       "vectorize, transpose, warp_transpose, warp_transpose_timesliced)"},
      {[](Json& j) { j["cells"][0]["measured"]["direct"]["median_gbps"] = "fast"; },
       "t.json: cells[0].measured.direct.median_gbps: must be a number >= 0 (GB/s), got "
       "\"fast\""},
      {[](Json& j) { j["cells"][0]["measured"]["direct"]["min_gbps"] = 150; },
       "t.json: cells[0].measured.direct: must have min_gbps <= median_gbps <= max_gbps, got "
       "150.0, 100.0, 101.0"},
      {[](Json& j) { j["cells"][0]["measured"]["direct"]["p10"] = 1; },
       "t.json: cells[0].measured.direct.p10: unknown field; allowed: "},
      {[](Json& j) { j["cells"].push_back(j["cells"][0]); },
       "t.json: cells[1]: duplicates cells[0] (block_load/load S=4 T=128 N=8)"},
      {[](Json& j) {
         j["cells"][0]["threads"] = 80;
         j["cells"][0]["measured"]["warp_transpose"] = j["cells"][0]["measured"]["direct"];
       },
       "t.json: cells[0].measured.warp_transpose: cannot be measured at threads 80 (it needs a "
       "multiple of 32 threads)"},
  };
  for (const auto& c : cases) {
    Json j = good;
    c.edit(j);
    const std::string error = ParseError(j);
    EXPECT_EQ(error.substr(0, c.message.size()), c.message) << j["cells"].dump();
  }
  auto broken = ParseTable("{\"schema\": 1,", "t.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("t.json: not valid JSON: "), std::string::npos);
}

TEST(Tuning, CoverageCheckPassesTheFullGridAndNamesWhatIsMissing) {
  Json grid = FullGrid();
  EXPECT_TRUE(CheckCoverage(Parse(grid)).ok()) << CheckCoverage(Parse(grid));
  // One cell gone.
  Json missing = grid;
  missing["cells"].erase(missing["cells"].begin() + 7);  // block_reduce S=1 T=128 N=4
  absl::Status s = CheckCoverage(Parse(missing));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("t.json: 1 cells of the tuning grid are missing or do not measure "
                             "the family's baseline"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("block_reduce/sum S=1 T=128 N=4"), std::string::npos) << s;
  // A cell without the baseline does not count.
  Json no_baseline = grid;
  no_baseline["cells"][0]["measured"].erase("warp_reductions");
  s = CheckCoverage(Parse(no_baseline));
  EXPECT_NE(s.message().find("block_reduce/sum S=1 T=64 N=1"), std::string::npos) << s;
  // The checked-in (measured) table covers the grid.
  const auto embedded = EmbeddedTables();
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  for (const Table& t : (*embedded)->tables) {
    EXPECT_FALSE(t.placeholder()) << t.source;
    EXPECT_TRUE(CheckCoverage(t).ok()) << CheckCoverage(t);
  }
}

TEST(Tuning, AnExactCellChoosesItsBestEligibleAlgorithm) {
  auto set = Set(TableJson(
      Json::array({CellJson("block_load", 2, 128, 16,
                            {{"direct", 406}, {"transpose", 2980}, {"warp_transpose", 3210.4}})})));
  Resolution r = Resolve(BlockLoadQuery(2, 128, 16), *set);
  EXPECT_EQ(r.chosen, "warp_transpose");
  EXPECT_EQ(r.explanation.choice().reason(),
            "table sm_90-test.1 cell block_load/load S=2 T=128 N=16 (run r1): warp_transpose "
            "3210.4 GB/s vs baseline direct 406.0 GB/s");
  EXPECT_EQ(r.explanation.rule(), "exact");
  EXPECT_EQ(r.explanation.choice().table_version(), "sm_90-test.1");
  EXPECT_EQ(r.explanation.choice().table_digest(), set->tables[0].digest);
  EXPECT_EQ(r.explanation.measured_size(), 3);
  // sm_90a reads sm_90's table.
  EXPECT_EQ(Resolve(BlockLoadQuery(2, 128, 16, "sm_90a"), *set).chosen, "warp_transpose");
}

TEST(Tuning, WithoutATableForTheArchItFallsBackToCubsDefault) {
  auto set = Set(TableJson(Json::array({
      CellJson("block_load", 2, 128, 16, {{"direct", 1}}),
  })));
  Resolution r = Resolve(BlockLoadQuery(2, 128, 16, "sm_80"), *set);
  EXPECT_EQ(r.chosen, "direct");
  EXPECT_EQ(r.explanation.choice().reason(),
            "fallback: no tuning table for sm_80; CUB's default direct");
  EXPECT_EQ(r.explanation.rule(), "no_table");
  Query scan = BlockLoadQuery(4, 128, 4);
  scan.family = FindFamily("block_scan");
  r = Resolve(scan, *set);
  EXPECT_EQ(r.chosen, "raking");
  EXPECT_EQ(r.explanation.choice().reason(),
            "fallback: table sm_90-test.1 has no cells for block_scan/inclusive_sum; CUB's "
            "default raking");
}

TEST(Tuning, TheNearestCellLeavesTheBaselineOnlyForTwoAndAHalfTimesItsSpeed) {
  // Both cells have S=4; the request (T=128, N=12) is nearer N=16 (log2 12/16 = 0.415) than
  // N=8 (0.585).
  auto set = Set(TableJson(
      Json::array({CellJson("block_load", 4, 128, 8, {{"direct", 100}, {"vectorize", 900}}),
                   CellJson("block_load", 4, 128, 16, {{"direct", 100}, {"vectorize", 249.9}})})));
  Resolution r = Resolve(BlockLoadQuery(4, 128, 12), *set);
  EXPECT_EQ(r.chosen, "direct");
  EXPECT_EQ(r.explanation.rule(), "nearest");
  EXPECT_EQ(r.explanation.cell().items_per_thread(), 16u);
  EXPECT_NEAR(r.explanation.distance(), 0.415, 0.001);
  EXPECT_EQ(r.explanation.choice().reason(),
            "fallback: nearest cell block_load/load S=4 T=128 N=16 (distance 0.42) of table "
            "sm_90-test.1 (run r1): vectorize 249.9 GB/s vs baseline direct 100.0 GB/s; not 2.5x "
            "the baseline there, so CUB's default direct");
  set = Set(TableJson(
      Json::array({CellJson("block_load", 4, 128, 16, {{"direct", 100}, {"vectorize", 250}})})));
  EXPECT_EQ(Resolve(BlockLoadQuery(4, 128, 12), *set).chosen, "vectorize");
}

TEST(Tuning, NearestTiesGoToTheSmallerItemsThenTheSmallerThreadsAndSize) {
  auto set = Set(TableJson(Json::array({
      CellJson("block_load", 4, 128, 4, {{"direct", 100}, {"vectorize", 300}}),
      CellJson("block_load", 4, 128, 16, {{"direct", 100}, {"transpose", 300}}),
      CellJson("block_load", 4, 64, 8, {{"direct", 100}, {"warp_transpose", 300}}),
      CellJson("block_load", 4, 256, 8, {{"direct", 100}, {"warp_transpose_timesliced", 300}}),
      CellJson("block_load", 1, 128, 8, {{"direct", 100}, {"transpose", 300}}),
      CellJson("block_load", 16, 128, 8, {{"direct", 100}, {"vectorize", 300}}),
  })));
  // N=8 T=128 S=4: N=4 and N=16 are 1 away, as are T=64 and T=256: the smaller N wins.
  Resolution r = Resolve(BlockLoadQuery(4, 128, 8), *set);
  EXPECT_EQ(r.explanation.cell().items_per_thread(), 4u);
  EXPECT_EQ(r.chosen, "vectorize");
  // S=4 is in the table; S=3 is not: log2(4/3) < log2(3/1), so S=4's cells.
  EXPECT_EQ(Resolve(BlockLoadQuery(3, 128, 8), *set).explanation.cell().dtype_size(), 4u);
  // S=8: 4 and 16 are both 1 away in log2: the smaller, 4.
  EXPECT_EQ(Resolve(BlockLoadQuery(8, 128, 8), *set).explanation.cell().dtype_size(), 4u);
  // S=1 exists: an exact S with the only T/N at distance 0.
  r = Resolve(BlockLoadQuery(1, 128, 8), *set);
  EXPECT_EQ(r.explanation.rule(), "exact");
  EXPECT_EQ(r.chosen, "transpose");
  // Between T=64 and T=256 at N=8 (a request for T=128 N=8 at S=4 without the N cells).
  set = Set(TableJson(Json::array({
      CellJson("block_load", 4, 256, 8, {{"direct", 100}, {"vectorize", 300}}),
      CellJson("block_load", 4, 64, 8, {{"direct", 100}, {"transpose", 300}}),
  })));
  EXPECT_EQ(Resolve(BlockLoadQuery(4, 128, 8), *set).explanation.cell().threads(), 64u);
}

TEST(Tuning, SemanticFiltersKeepAlgorithmsThatWouldChangeTheResult) {
  auto set = Set(TableJson(Json::array({
      CellJson("block_reduce", 4, 256, 16,
               {{"raking", 3710}, {"raking_commutative_only", 4120}, {"warp_reductions", 1830}}),
      CellJson("block_load", 4, 128, 8, {{"direct", 100}, {"warp_transpose", 900}}),
  })));
  Query q;
  q.family = FindFamily("block_reduce");
  q.arch = "sm_90";
  q.dtype_size = 4;
  q.threads = 256;
  q.items_per_thread = 16;
  q.commutative = true;
  EXPECT_EQ(Resolve(q, *set).chosen, "raking_commutative_only");
  q.commutative = false;
  Resolution r = Resolve(q, *set);
  EXPECT_EQ(r.chosen, "raking");
  ASSERT_EQ(r.explanation.eligible_size(), 2);
  EXPECT_EQ(r.explanation.filtered_out(0).substr(0, 24), "raking_commutative_only:");
  // The measured but ineligible algorithm is reported, marked.
  for (const auto& m : r.explanation.measured()) {
    EXPECT_EQ(m.eligible(), m.algorithm() != "raking_commutative_only") << m.algorithm();
  }
  // 80 threads: no warp_transpose*; striped never.
  r = Resolve(BlockLoadQuery(4, 80, 8), *set);
  EXPECT_EQ(r.chosen, "direct");
  EXPECT_EQ(
      std::vector<std::string>(r.explanation.eligible().begin(), r.explanation.eligible().end()),
      (std::vector<std::string>{"direct", "vectorize", "transpose"}));
  EXPECT_EQ(r.explanation.filtered_out_size(), 3);
}

TEST(Tuning, AUserTableReplacesTheEmbeddedTableOfItsArchOnly) {
  const std::string path = ::testing::TempDir() + "/tuning_test_sm_80.json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string text =
        TableJson(Json::array({CellJson("block_load", 4, 128, 8, {{"direct", 1}})}), "sm_80")
            .dump();
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  auto set = LoadTables(path);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_NE((*set)->ForArch("sm_80"), nullptr);
  EXPECT_EQ((*set)->ForArch("sm_80")->source, path);
  ASSERT_NE((*set)->ForArch("sm_90"), nullptr);
  EXPECT_NE((*set)->digest, (*EmbeddedTables())->digest);
  auto missing = LoadTables(path + ".nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "--tuning-table: cannot read \"" + path + ".nope\" (a tuning table, docs/tuning.md)");
  std::remove(path.c_str());
}

// ---- "auto" in Canonicalize ----

TargetInfo Target(std::shared_ptr<const TableSet> tables) {
  TargetInfo t;
  t.supported_archs = {80, 90};
  t.cccl_version = "3.0.1";
  t.cccl_include = "/opt/cccl";
  t.tuning = std::move(tables);
  return t;
}

TEST(Tuning, AutoCanonicalizesToTheExplicitChoiceSoBothShareAKey) {
  auto set = Set(TableJson(Json::array(
      {CellJson("block_load", 2, 128, 16, {{"direct", 406}, {"warp_transpose", 3210}})})));
  PrimitiveSpec s;
  s.set_family("block_load");
  s.set_method("load_guarded");  // uses load's cells
  s.set_dtype("int16");
  s.mutable_block()->set_x(64);
  s.mutable_block()->set_y(2);
  s.set_items_per_thread(16);
  s.set_arch("sm_90");
  s.set_algorithm("auto");
  coop::v1::AutoExplanation e;
  auto a = Canonicalize(s, Target(set), &e);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->algorithm(), "warp_transpose");
  EXPECT_EQ(e.choice().requested(), "auto");
  EXPECT_EQ(e.choice().chosen(), "warp_transpose");
  EXPECT_EQ(e.threads(), 128u);
  s.set_algorithm("warp_transpose");
  auto b = Canonicalize(s, Target(set));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(CanonicalEncoding(*a), CanonicalEncoding(*b));
}

TEST(Tuning, AutoSeesTheOperatorsCommutativity) {
  auto set = Set(TableJson(Json::array({CellJson(
      "block_reduce", 8, 256, 16,
      {{"raking", 3710}, {"raking_commutative_only", 4120}, {"warp_reductions", 1830}})})));
  PrimitiveSpec s;
  s.set_family("block_reduce");
  s.set_method("reduce");
  s.set_dtype("int64");
  s.mutable_block()->set_x(256);
  s.set_items_per_thread(16);
  s.set_arch("sm_90");
  s.set_algorithm("auto");
  const auto chosen = [&](const PrimitiveSpec& spec) {
    auto r = Canonicalize(spec, Target(set));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->algorithm() : "";
  };
  s.mutable_op()->set_builtin("max");
  EXPECT_EQ(chosen(s), "raking_commutative_only");
  s.mutable_op()->set_builtin("bit_xor");  // commutative, but the contract lists sum/min/max
  EXPECT_EQ(chosen(s), "raking");
  s.set_method("sum");
  s.clear_op();
  EXPECT_EQ(chosen(s), "raking_commutative_only");
}

TEST(Tuning, AutoElsewhereNamesTheFieldAndTheFamiliesThatAcceptIt) {
  PrimitiveSpec s;
  s.set_family("warp_exchange");
  s.set_dtype("int32");
  s.set_arch("sm_90");
  s.set_algorithm("auto");
  auto r = Canonicalize(s, Target(ActiveTables()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "warp_exchange: algorithm \"auto\" is accepted only by block_reduce, block_scan, "
            "block_load, block_store, block_histogram, warp_load, warp_store (families whose "
            "algorithms change only speed); choose one of smem, shuffle");
  s.set_family("warp_reduce");
  r = Canonicalize(s, Target(ActiveTables()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("; this family has no algorithm"), std::string::npos);
}

TEST(Tuning, TheCatalogSaysWhichFamiliesAcceptAuto) {
  const auto c = Catalog(Target(ActiveTables()));
  std::vector<std::string> with_auto;
  for (const auto& f : c.families()) {
    if (f.auto_algorithms_size() == 0) continue;
    with_auto.push_back(f.name());
    EXPECT_FALSE(f.auto_baseline().empty()) << f.name();
    EXPECT_FALSE(f.auto_measured_method().empty()) << f.name();
    for (const auto& a : f.auto_algorithms()) {
      EXPECT_NE(a, "striped") << f.name();
      EXPECT_NE(std::find(f.algorithms().begin(), f.algorithms().end(), a), f.algorithms().end());
    }
  }
  EXPECT_EQ(with_auto,
            (std::vector<std::string>{"block_reduce", "block_scan", "block_load", "block_store",
                                      "block_histogram", "warp_load", "warp_store"}));
}

}  // namespace
}  // namespace coopd::tuning
