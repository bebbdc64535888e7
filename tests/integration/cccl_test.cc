// One coopd, several CCCLs (--cccl NAME=DIR): a spec names its CCCL by name or version, the key
// covers the tree it compiled against, each reply names its CCCL, every family's layouts match
// nvcc's on each CCCL, and a CCCL on which a family does not compile refuses that family after
// the start-up probe, naming the CCCL and the compiler's error, while serving the rest.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

namespace fs = std::filesystem;

coop::Spec TopK8() {
  coop::Spec s;
  s.family = "block_topk";
  s.method = "max_keys";
  s.dtype = "float32";
  s.block = {128};
  s.items_per_thread = 8;
  s.arch = "sm_90";
  return s;
}

coop::Spec On(coop::Spec s, const std::string& cccl) {
  s.cccl = cccl;
  return s;
}

const coop::CcclInfo* Find(const std::vector<coop::CcclInfo>& cccls, const std::string& name) {
  for (const auto& c : cccls) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(Cccls, OneDaemonServesTwoCcclsToTwoClientsAtOnceEachReplyNamingItsOwn) {
  REQUIRE_CCCL_HEADERS(CCCL35_INCLUDE, "CCCL 3.5");
  TestDaemon daemon({"--cccl", std::string("cccl35=") + CCCL35_INCLUDE, "--probe-cccl", "off"});
  // Two clients at once: block_reduce on the default (the toolkit's 3.0.1), block_topk on 3.5.
  auto reduce = std::async(std::launch::async, [&] {
    auto client = daemon.Client();
    return client.Specialize(BlockReduceF32());
  });
  auto topk = std::async(std::launch::async, [&] {
    auto client = daemon.Client();
    return client.Specialize(On(TopK8(), "cccl35"));
  });
  auto r = reduce.get();
  auto t = topk.get();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_NE(r->key, t->key);
  EXPECT_EQ(r->toolchain.cccl_name, "toolkit");
  EXPECT_EQ(r->toolchain.cccl_version, "3.0.1");
  EXPECT_EQ(t->toolchain.cccl_name, "cccl35");
  EXPECT_EQ(t->toolchain.cccl_version.rfind("3.5.", 0), 0u) << t->toolchain.cccl_version;
  EXPECT_NE(r->toolchain.header_digest, t->toolchain.header_digest);
  EXPECT_EQ(t->spec.cccl, "cccl35") << "the resolved spec names the CCCL";
  ExpectEntriesLinkIntoACubin(*t, "block_topk on CCCL 3.5");

  // The same block_reduce on 3.5: another key; named by version or by name, the same one.
  auto client = daemon.Client();
  auto by_version = client.Specialize(On(BlockReduceF32(), "3.5"));
  ASSERT_TRUE(by_version) << by_version.error().message;
  EXPECT_NE(by_version->key, r->key);
  EXPECT_EQ(by_version->toolchain.cccl_name, "cccl35");
  auto by_name = client.Specialize(On(BlockReduceF32(), "cccl35"));
  ASSERT_TRUE(by_name) << by_name.error().message;
  EXPECT_EQ(by_name->key, by_version->key) << "the key covers the tree, not the name used";
  EXPECT_NE(by_name->origin, coop::Origin::kCompiled);
  auto by_default_name = client.Specialize(On(BlockReduceF32(), "toolkit"));
  ASSERT_TRUE(by_default_name) << by_default_name.error().message;
  EXPECT_EQ(by_default_name->key, r->key);

  // Stats and the catalogue list both, the default first.
  auto stats = client.GetStats();
  ASSERT_TRUE(stats) << stats.error().message;
  ASSERT_EQ(stats->cccls.size(), 2u);
  EXPECT_EQ(stats->cccls[0].name, "toolkit");
  EXPECT_TRUE(stats->cccls[0].is_default);
  EXPECT_EQ(stats->cccls[0].origin, "CUDA toolkit");
  EXPECT_EQ(stats->cccls[1].name, "cccl35");
  EXPECT_FALSE(stats->cccls[1].is_default);
  EXPECT_EQ(stats->cccls[1].origin, "--cccl");
  EXPECT_EQ(stats->cccls[1].probe, "off");
  EXPECT_EQ(stats->cccls[1].include, fs::canonical(CCCL35_INCLUDE).string());
  EXPECT_EQ(stats->cccls[1].digest.size(), 64u);
  auto on_default = client.GetCatalog();
  auto on_35 = client.GetCatalog("cccl35");
  ASSERT_TRUE(on_default && on_35);
  EXPECT_EQ(on_default->cccl, "toolkit");
  EXPECT_EQ(on_35->cccl, "cccl35");
  for (const auto& f : on_35->families) EXPECT_TRUE(f.available) << f.name;
  bool topk_listed = false;
  for (const auto& f : on_default->families) {
    if (f.name != "block_topk") continue;
    topk_listed = true;
    EXPECT_FALSE(f.available) << "3.0.1 has no block_topk";
  }
  EXPECT_TRUE(topk_listed);
}

TEST(Cccls, AnUnknownAmbiguousOrMixedCcclIsRefusedNamingTheCcclsAndTheDaemonStaysUp) {
  REQUIRE_CCCL_HEADERS(CCCL35_INCLUDE, "CCCL 3.5");
  // The same tree under two names: named by version it is ambiguous; by name, one key.
  TestDaemon daemon({"--cccl", std::string("cccl35=") + CCCL35_INCLUDE, "--cccl",
                     std::string("again=") + CCCL35_INCLUDE, "--probe-cccl", "off"});
  auto client = daemon.Client();
  auto unknown = client.Specialize(On(BlockReduceF32(), "nope"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, coop::ErrorCode::kInvalidArgument);
  for (const char* part :
       {"cccl must name one of this coopd's CCCLs, by name or version: ",
        "toolkit (3.0.1, default)", "cccl35 (3.5.", "again (3.5.", "got \"nope\""}) {
    EXPECT_NE(unknown.error().message.find(part), std::string::npos)
        << part << " in " << unknown.error().message;
  }
  auto catalog = client.GetCatalog("nope");
  ASSERT_FALSE(catalog);
  EXPECT_EQ(catalog.error().code, coop::ErrorCode::kInvalidArgument);

  auto ambiguous = client.Specialize(On(BlockReduceF32(), "3.5"));
  ASSERT_FALSE(ambiguous);
  EXPECT_EQ(ambiguous.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(ambiguous.error().message.find("the version matches several"), std::string::npos)
      << ambiguous.error().message;

  auto first = client.Specialize(On(BlockReduceF32(), "cccl35"));
  auto second = client.Specialize(On(BlockReduceF32(), "again"));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->key, second->key) << "one tree, one entry, whatever it is called";

  // block_topk on the default: refused, naming the CCCL it compiled against.
  auto topk = client.Specialize(TopK8());
  ASSERT_FALSE(topk);
  EXPECT_EQ(topk.error().code, coop::ErrorCode::kFailedPrecondition);
  EXPECT_NE(topk.error().message.find("CCCL 3.0.1"), std::string::npos) << topk.error().message;

  // A bundle is one unit: one CCCL.
  auto mixed = client.SpecializeBundle({BlockReduceF32(), On(TopK8(), "cccl35")});
  ASSERT_FALSE(mixed);
  EXPECT_EQ(mixed.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(mixed.error().message.find("specs[1]: cccl must name specs[0]'s CCCL \"toolkit\""),
            std::string::npos)
      << mixed.error().message;
  auto same = client.SpecializeBundle({On(BlockReduceF32(), "cccl35"), On(TopK8(), "3.5.0")});
  EXPECT_FALSE(same) << "3.5.0 is ambiguous here too";
  auto named = client.SpecializeBundle({On(BlockReduceF32(), "again"), On(TopK8(), "again")});
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->toolchain.cccl_name, "again");

  EXPECT_TRUE(client.Specialize(BlockReduceF32())) << "the daemon is fine afterwards";
}

// Every row of nvcc's layout truth, built against each CCCL, matches what coopd reports for a
// spec naming that CCCL, in one daemon serving all of them (sent as bundles of up to 49 rows).
TEST(Cccls, EveryFamilyMatchesNvccsLayoutOnEveryCccl) {
  REQUIRE_CCCL_HEADERS(NEWER_CCCL_INCLUDE, "CCCL 3.3");
  REQUIRE_CCCL_HEADERS(CCCL35_INCLUDE, "CCCL 3.5");
  REQUIRE_CCCL_HEADERS(CCCL36_INCLUDE, "CCCL 3.6");
  TestDaemon daemon({"--cccl", std::string("cccl33=") + NEWER_CCCL_INCLUDE, "--cccl",
                     std::string("cccl35=") + CCCL35_INCLUDE, "--cccl",
                     std::string("cccl36=") + CCCL36_INCLUDE, "--probe-cccl", "off"});
  auto client = daemon.Client();
  const std::pair<std::string, std::string> truths[] = {{"toolkit", LAYOUT_TRUTH_BINARY},
                                                        {"cccl33", LAYOUT_TRUTH_CCCL33_BINARY},
                                                        {"cccl35", LAYOUT_TRUTH_CCCL35_BINARY},
                                                        {"cccl36", LAYOUT_TRUTH_CCCL36_BINARY}};
  for (const auto& [cccl, truth] : truths) {
    auto rows = LoadLayoutTruth(truth);
    ASSERT_GE(rows.size(), 20u) << truth;
    for (size_t begin = 0; begin < rows.size(); begin += 49) {
      std::vector<coop::Spec> specs;
      const size_t end = std::min(rows.size(), begin + 49);
      for (size_t i = begin; i < end; ++i) specs.push_back(On(rows[i].spec, cccl));
      auto a = client.SpecializeBundle(specs);
      ASSERT_TRUE(a) << cccl << ": " << a.error().message;
      EXPECT_EQ(a->toolchain.cccl_name, cccl);
      ASSERT_EQ(a->parts.size(), specs.size());
      for (size_t i = begin; i < end; ++i) {
        const auto& part = a->parts[i - begin];
        EXPECT_EQ(part.temp_storage_bytes, rows[i].bytes) << cccl << ": " << rows[i].line;
        EXPECT_EQ(part.temp_storage_align, rows[i].align) << cccl << ": " << rows[i].line;
      }
    }
  }
}

// A CCCL tree on which block_shuffle's API is missing: the toolkit's headers, with cub/ copied
// and its block_shuffle.cuh replaced by a class without methods.
std::string BrokenCccl(const std::string& dir) {
  const fs::path toolkit = fs::path(CUDA_INCLUDE_DIR) / "cccl";
  const fs::path root = fs::path(dir) / "broken";
  fs::create_directories(root);
  for (const auto& entry : fs::directory_iterator(toolkit)) {
    if (entry.path().filename() == "cub") continue;
    fs::create_directory_symlink(fs::canonical(entry.path()), root / entry.path().filename());
  }
  fs::copy(toolkit / "cub", root / "cub", fs::copy_options::recursive);
  std::ofstream(root / "cub/block/block_shuffle.cuh", std::ios::trunc)
      << "#pragma once\n#include <cub/config.cuh>\nCUB_NAMESPACE_BEGIN\n"
         "template <typename T, int BLOCK_DIM_X, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>\n"
         "class BlockShuffle {\n public:\n  struct TempStorage {};\n"
         "  __device__ BlockShuffle(TempStorage&) {}\n};\nCUB_NAMESPACE_END\n";
  return root.string();
}

TEST(Cccls, TheProbeRefusesAFamilyThatDoesNotCompileNamingTheCcclAndServesTheRest) {
  TempDir dir;
  const std::string broken = BrokenCccl(dir.path());
  TestDaemon daemon({"--cccl", "broken=" + broken, "--workers", "2"});
  auto client = daemon.Client();
  // The probe runs in the background after start-up; wait for its verdict.
  coop::CcclInfo info;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (true) {
    auto stats = client.GetStats();
    ASSERT_TRUE(stats) << stats.error().message;
    const coop::CcclInfo* found = Find(stats->cccls, "broken");
    ASSERT_NE(found, nullptr);
    info = *found;
    if (info.probe != "pending" || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_EQ(info.probe, "failed");
  ASSERT_EQ(info.unavailable.size(), 2u) << "block_topk (no header) and block_shuffle";
  EXPECT_EQ(info.unavailable[0].rfind("block_topk: needs CCCL 3.3", 0), 0u) << info.unavailable[0];
  EXPECT_EQ(info.unavailable[1].rfind("block_shuffle: ", 0), 0u) << info.unavailable[1];
  EXPECT_NE(info.unavailable[1].find("error"), std::string::npos) << info.unavailable[1];

  coop::Spec shuffle;
  shuffle.family = "block_shuffle";
  shuffle.method = "offset";
  shuffle.dtype = "int32";
  shuffle.block = {128};
  shuffle.arch = "sm_90";
  auto refused = client.Specialize(On(shuffle, "broken"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, coop::ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("block_shuffle: does not compile against CCCL 3.0.1 "
                                         "(\"broken\" at " +
                                         broken),
            std::string::npos)
      << refused.error().message;
  auto catalog = client.GetCatalog("broken");
  ASSERT_TRUE(catalog) << catalog.error().message;
  for (const auto& f : catalog->families) {
    if (f.name == "block_shuffle") {
      EXPECT_FALSE(f.available);
      EXPECT_EQ(f.requires.rfind("a CCCL on which it compiles (on this one: ", 0), 0u)
          << f.requires;
    }
  }
  // The rest of that CCCL serves, and the toolkit's block_shuffle too.
  auto reduce = client.Specialize(On(BlockReduceF32(), "broken"));
  ASSERT_TRUE(reduce) << reduce.error().message;
  EXPECT_EQ(reduce->toolchain.cccl_name, "broken");
  auto fine = client.Specialize(shuffle);
  ASSERT_TRUE(fine) << fine.error().message;
  EXPECT_EQ(fine->toolchain.cccl_name, "toolkit");
  // The toolkit's CCCL was not probed (--probe-cccl auto probes those added with --cccl).
  auto stats = client.GetStats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(Find(stats->cccls, "toolkit")->probe, "off");
}

TEST(Cccls, AConfiguredTreeThatIsNotThereStopsTheStartNamingItsSource) {
  TempDir dir;
  std::string out, err;
  const int status = RunCommand({COOPD_BINARY, "--socket", dir.path() + "/s.sock", "--cache-dir",
                                 dir.path() + "/cache", "--cccl", "gone=" + dir.path() + "/none"},
                                &out, &err);
  EXPECT_NE(status, 0);
  EXPECT_NE(err.find("--cccl gone=" + dir.path() +
                     "/none: no CCCL headers "
                     "(cuda/std/__cccl/version.h) in " +
                     dir.path() + "/none, "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("site-packages"), std::string::npos) << err;
  const int reserved = RunCommand(
      {COOPD_BINARY, "--socket", dir.path() + "/s.sock", "--cache-dir", dir.path() + "/cache",
       "--cccl", std::string("toolkit=") + CUDA_INCLUDE_DIR + "/cccl"},
      &out, &err);
  EXPECT_NE(reserved, 0);
  EXPECT_NE(err.find("the CCCL name \"toolkit\" is coopd's own"), std::string::npos) << err;
}

}  // namespace
}  // namespace coopd_test
