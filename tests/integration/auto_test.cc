// Algorithm "auto" against a real coopd (docs/tuning.md): resolved before the key, so an auto
// request and the explicit request for the algorithm it chose share one cache entry; the choice
// travels per reply, never in the stored entry; Explain, Stats and the catalogue say what the
// tables are; --tuning-table replaces the embedded table of its arch.
#include <gtest/gtest.h>

#include <fstream>

#include "coop/client.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

// block_load/load S=2 T=128 N=16 is a cell of the embedded table (server/catalog/tuning/
// sm_90.json). The tests read the choice from the reply, not from the table, so a regenerated
// table that picks another algorithm passes them too.
coop::Spec AutoLoad() {
  coop::Spec s;
  s.family = "block_load";
  s.dtype = "int16";
  s.block = {128, 1, 1};
  s.items_per_thread = 16;
  s.algorithm = "auto";
  s.arch = "sm_90";
  return s;
}

TEST(Auto, AutoAndTheAlgorithmItChoseShareOneEntryAndOnlyAutoRepliesCarryTheChoice) {
  TestDaemon daemon;
  auto client = daemon.Client();
  auto first = client.Specialize(AutoLoad());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->origin, coop::Origin::kCompiled);
  const coop::AlgorithmChoice& choice = first->algorithm_choice;
  EXPECT_EQ(choice.requested, "auto");
  ASSERT_FALSE(choice.chosen.empty());
  EXPECT_NE(choice.chosen, "auto");
  EXPECT_NE(choice.chosen, "striped");  // never: it changes the arrangement
  EXPECT_EQ(first->spec.algorithm, choice.chosen) << "the resolved spec names the choice";
  ASSERT_EQ(first->parts.size(), 1u);
  EXPECT_EQ(first->parts[0].algorithm_choice.chosen, choice.chosen);
  EXPECT_NE(choice.reason.find("cell block_load/load S=2 T=128 N=16"), std::string::npos)
      << choice.reason;
  const coop::Stats stats = daemon.Stats();
  ASSERT_EQ(stats.tuning_tables.size(), 1u);
  EXPECT_EQ(choice.table_version, stats.tuning_tables[0].version);
  EXPECT_EQ(choice.table_digest, stats.tuning_tables[0].digest);
  EXPECT_EQ(stats.auto_resolutions, 1u);

  // The explicit request for the chosen algorithm: the same key, a memory hit, and no choice
  // (the stored entry carries none).
  coop::Spec explicit_spec = AutoLoad();
  explicit_spec.algorithm = choice.chosen;
  auto second = client.Specialize(explicit_spec);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(second->origin, coop::Origin::kMemory);
  EXPECT_TRUE(second->algorithm_choice.requested.empty());
  EXPECT_TRUE(second->parts[0].algorithm_choice.requested.empty());
  // Auto again: a hit on the same entry, through the request memo (which remembers the choice
  // with the keys, under the tables' digest), with the choice.
  const uint64_t memo_hits = daemon.Stats().memo_hits;
  auto third = client.Specialize(AutoLoad());
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->key, first->key);
  EXPECT_EQ(third->origin, coop::Origin::kMemory);
  EXPECT_EQ(third->algorithm_choice.reason, choice.reason);
  EXPECT_EQ(third->parts[0].algorithm_choice.chosen, choice.chosen);
  const coop::Stats after = daemon.Stats();
  EXPECT_EQ(after.memo_hits, memo_hits + 1) << "served from the memo";
  EXPECT_EQ(after.compiles, stats.compiles);
  EXPECT_EQ(after.auto_resolutions, 2u);

  // In a bundle, each part says its own: the auto part has a choice, the explicit one none.
  coop::Spec store = AutoLoad();
  store.family = "block_store";
  store.algorithm = "direct";
  auto bundle = client.SpecializeBundle({AutoLoad(), store});
  ASSERT_TRUE(bundle) << bundle.error().message;
  ASSERT_EQ(bundle->parts.size(), 2u);
  EXPECT_EQ(bundle->parts[0].algorithm_choice.chosen, choice.chosen);
  EXPECT_EQ(bundle->parts[0].spec.algorithm, choice.chosen);
  EXPECT_TRUE(bundle->parts[1].algorithm_choice.requested.empty());
  EXPECT_TRUE(bundle->algorithm_choice.requested.empty()) << "only single-spec replies";
}

TEST(Auto, FamiliesWithoutAutoRefuseItNamingTheFieldAndTheFamiliesThatAccept) {
  TestDaemon daemon;
  auto client = daemon.Client();
  coop::Spec s;
  s.family = "block_exchange";
  s.dtype = "int32";
  s.block = {128, 1, 1};
  s.items_per_thread = 4;
  s.algorithm = "auto";
  s.arch = "sm_90";
  auto r = client.Specialize(s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "block_exchange: algorithm \"auto\" is accepted only by block_reduce, block_scan, "
            "block_load, block_store, block_histogram, warp_load, warp_store (families whose "
            "algorithms change only speed); this family has no algorithm");
  auto catalog = client.GetCatalog();
  ASSERT_TRUE(catalog) << catalog.error().message;
  for (const auto& f : catalog->families) {
    const bool offers = f.name == "block_load" || f.name == "block_store" ||
                        f.name == "warp_load" || f.name == "warp_store" || f.name == "block_scan" ||
                        f.name == "block_reduce" || f.name == "block_histogram";
    EXPECT_EQ(!f.auto_algorithms.empty(), offers) << f.name;
  }
}

TEST(Auto, ATuningTableFileReplacesTheEmbeddedOneAndExplainShowsTheCell) {
  TempDir dir;
  // A table of one cell whose best algorithm is transpose, for sm_90; `extra` goes into its
  // measurements.
  const auto write_table = [](const std::string& path, const std::string& extra) {
    std::ofstream f(path, std::ios::trunc);
    f << R"({"schema": 1, "version": "sm_90-farm.7", "arch": "sm_90", "device": "test",
  "toolchain": "CUDA 13.0", "generated_by": "auto_test.cc", "runs": {"f1": "by hand"},
  "cells": [{"family": "block_load", "method": "load", "dtype_size": 2, "threads": 128,
             "items_per_thread": 16, "choice": "transpose", "run": "f1",
             "measured": {"direct": {"median_gbps": 100, "min_gbps": 99, "max_gbps": 101, "n": 3},
                          "transpose": {"median_gbps": 900, "min_gbps": 890, "max_gbps": 910,
                                        "n": 3})"
      << extra << "}}]}";
  };
  const std::string table = dir.path() + "/mine.json";
  {
    // striped is not an auto algorithm: coopd refuses to start, naming the cell and field.
    write_table(table, R"(, "striped": {"median_gbps": 9, "min_gbps": 9, "max_gbps": 9, "n": 3})");
    TempDir bad_dir;
    CoopdProcess bad(bad_dir.path() + "/s.sock", bad_dir.path() + "/cache",
                     {"--tuning-table", table});
    std::string error;
    ASSERT_TRUE(bad.Start(&error)) << error;
    EXPECT_NE(bad.WaitExit(std::chrono::seconds(60)), 0);
    EXPECT_NE(bad.Log().find(table + ": cells[0].measured.striped: not an auto algorithm of "
                                     "block_load"),
              std::string::npos)
        << bad.Log();
  }
  write_table(table, "");
  TestDaemon daemon(dir.path(), {"--tuning-table", table});
  ASSERT_TRUE(daemon.started) << daemon.process.Log();
  auto client = daemon.Client();
  const coop::Stats stats = daemon.Stats();
  ASSERT_EQ(stats.tuning_tables.size(), 1u);
  EXPECT_EQ(stats.tuning_tables[0].version, "sm_90-farm.7");
  EXPECT_EQ(stats.tuning_tables[0].source, table);
  EXPECT_FALSE(stats.tuning_tables[0].placeholder);
  EXPECT_EQ(stats.tuning_digest.size(), 64u);

  auto e = client.Explain(AutoLoad());
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_TRUE(e->auto_choice.has_value());
  const coop::AutoExplanation& a = *e->auto_choice;
  EXPECT_EQ(a.choice.chosen, "transpose");
  EXPECT_EQ(a.choice.reason,
            "table sm_90-farm.7 cell block_load/load S=2 T=128 N=16 (run f1): transpose 900.0 "
            "GB/s vs baseline direct 100.0 GB/s");
  EXPECT_EQ(a.rule, "exact");
  EXPECT_EQ(a.table_arch, "sm_90");
  EXPECT_EQ(a.cell_run, "f1");
  ASSERT_EQ(a.measured.size(), 2u);
  EXPECT_EQ(a.measured[1].algorithm, "transpose");
  EXPECT_EQ(a.measured[1].median_gbps, 900);
  EXPECT_EQ(a.eligible.size(), 5u);
  // The key explained is the explicit spec's.
  coop::Spec explicit_spec = AutoLoad();
  explicit_spec.algorithm = "transpose";
  auto e2 = client.Explain(explicit_spec);
  ASSERT_TRUE(e2) << e2.error().message;
  EXPECT_EQ(e2->key, e->key);
  EXPECT_FALSE(e2->auto_choice.has_value());

  // Outside the table: the nearest cell, or CUB's default without a table for the arch.
  coop::Spec far = AutoLoad();
  far.items_per_thread = 4;
  e = client.Explain(far);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->auto_choice->rule, "nearest");
  EXPECT_EQ(e->auto_choice->distance, 2);
  EXPECT_EQ(e->auto_choice->choice.chosen, "transpose");
  far.arch = "sm_80";
  e = client.Explain(far);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->auto_choice->choice.reason,
            "fallback: no tuning table for sm_80; CUB's default direct");
}

}  // namespace
}  // namespace coopd_test
