// block_topk exists from CCCL 3.3 on: against the toolkit's CCCL 3.0 coopd refuses it with
// FAILED_PRECONDITION naming the release it needs; against PyPI's CCCL 3.3 headers and the
// CCCL 3.5 of the cuda-cccl 1.1.1 wheel (deploy/install-deps.sh unpacks both into .deps/) it
// compiles, links, and reports the layout nvcc reports. Two header roots never share a cache
// entry.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"
#include "server/engine/compiler.h"
#include "test_util.h"

namespace coopd_test {
namespace {

#define REQUIRE_NEWER_CCCL() REQUIRE_CCCL_HEADERS(NEWER_CCCL_INCLUDE, "CCCL 3.3")
#define REQUIRE_CCCL35() REQUIRE_CCCL_HEADERS(CCCL35_INCLUDE, "CCCL 3.5")

coop::Spec TopK(const std::string& method, const std::string& dtype, uint32_t threads,
                uint32_t items, const std::string& value_dtype = "") {
  coop::Spec s;
  s.family = "block_topk";
  s.method = method;
  s.dtype = dtype;
  s.block = {threads};
  s.items_per_thread = items;
  s.top_k.value_dtype = value_dtype;
  s.arch = "sm_90";
  return s;
}

TEST(TopK, RefusedByTheToolkitsCccl30WithTheReleaseItNeeds) {
  TestDaemon daemon;
  auto client = daemon.Client();
  auto a = client.Specialize(TopK("max_keys", "uint32", 128, 4));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kFailedPrecondition);
  EXPECT_NE(a.error().message.find("block_topk: needs CCCL 3.3 or newer "
                                   "(cub/block/block_topk.cuh); the spec compiles against "
                                   "CCCL 3.0."),
            std::string::npos)
      << a.error().message;
  EXPECT_NE(a.error().message.find("coopd --cccl NAME=DIR"), std::string::npos);
  auto catalog = client.GetCatalog();
  ASSERT_TRUE(catalog) << catalog.error().message;
  bool listed = false;
  for (const auto& f : catalog->families) {
    if (f.name != "block_topk") continue;
    listed = true;
    EXPECT_FALSE(f.available);
    EXPECT_EQ(f.requires, "CCCL 3.3 or newer (cub/block/block_topk.cuh)");
  }
  EXPECT_TRUE(listed);
  // The daemon is fine afterwards.
  EXPECT_TRUE(client.Specialize(BlockReduceF32()));
}

// Links a float32 128x4 top-k artifact's entry with a kernel calling it (keys, values for pairs,
// num_valid for the partial form) into an sm_90 cubin.
void LinkWithCallingKernel(const coop::Artifact& a, bool pairs, bool partial) {
  const auto& e = a.entries.at(0);
  const std::string kernel =
      e.declaration +
      "\nextern \"C\" __global__ void top(float* keys, int* values, int k, int n) {\n"
      "  __shared__ __align__(" +
      std::to_string(a.temp_storage_align) + ") unsigned char temp[" +
      std::to_string(a.temp_storage_bytes) +
      "];\n"
      "  float* my_keys = keys + 4 * threadIdx.x;\n"
      "  int* my_values = values + 4 * threadIdx.x; (void)my_values; (void)n;\n  " +
      e.symbol + "(temp, my_keys" + (pairs ? ", my_values" : "") + ", k" + (partial ? ", n" : "") +
      ", 0, 32);\n}\n";
  const std::string kernel_ltoir = CompileKernel(kernel);
  ASSERT_FALSE(kernel_ltoir.empty()) << kernel;
  auto cubin = coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", kernel_ltoir},
                                 {coopd::LinkInput::kLtoIr, "artifact", a.ltoir}},
                                "sm_90", {"-optimize-unused-variables"});
  ASSERT_TRUE(cubin.ok()) << e.symbol << ": " << cubin.status();
}

// Against the CCCL at `root` (version `version`, e.g. "3.3."): the catalogue lists block_topk,
// every row of nvcc's layout truth (`truth`, built against the same root) matches from NVRTC and
// clang, and every method links with a calling kernel into an sm_90 cubin.
void CheckTopKAgainst(const std::string& root, const std::string& truth,
                      const std::string& version) {
  TestDaemon daemon({"--cccl-include", root});
  auto client = daemon.Client();
  auto catalog = client.GetCatalog();
  ASSERT_TRUE(catalog);
  for (const auto& f : catalog->families) {
    if (f.name == "block_topk") {
      EXPECT_TRUE(f.available);
    }
  }

  // Layout against nvcc's, for every row of the truth table, from NVRTC and clang.
  std::string out, err;
  ASSERT_EQ(RunCommand({truth}, &out, &err), 0) << err;
  std::istringstream rows(out);
  int checked = 0;
  for (std::string line; std::getline(rows, line); ++checked) {
    std::istringstream f(line);
    std::string family, method, dtype, algorithm, options;
    uint32_t bx, by, bz, items, warp;
    uint64_t bytes, align;
    f >> family >> method >> dtype >> bx >> by >> bz >> items >> algorithm >> warp >> bytes >>
        align >> options;
    ASSERT_FALSE(f.fail()) << line;
    const std::string value_dtype = options == "-" ? "" : options.substr(options.find('=') + 1);
    // Both backends: clang's layout must equal NVRTC's (coopd checks), and both nvcc's.
    auto a = client.Specialize(TopK(method, dtype, bx, items, value_dtype), coop::Formats::kBoth);
    ASSERT_TRUE(a) << line << ": " << a.error().message;
    EXPECT_FALSE(a->bitcode.data.empty()) << line;
    EXPECT_EQ(a->temp_storage_bytes, bytes) << line;
    EXPECT_EQ(a->temp_storage_align, align) << line;
    EXPECT_EQ(a->toolchain.cccl_version.rfind(version, 0), 0u) << a->toolchain.cccl_version;
  }
  EXPECT_EQ(checked, 4);

  // Every method links with a calling kernel into an sm_90 cubin.
  for (const std::string method : {"max_keys", "min_keys", "max_pairs", "min_pairs"}) {
    const bool pairs = method.find("pairs") != std::string::npos;
    auto a = client.Specialize(TopK(method, "float32", 128, 4, pairs ? "int32" : ""));
    ASSERT_TRUE(a) << method << ": " << a.error().message;
    LinkWithCallingKernel(*a, pairs, false);
  }
}

TEST(TopK, WorksAgainstNewerCcclAndMatchesNvccsLayout) {
  REQUIRE_NEWER_CCCL();
  CheckTopKAgainst(NEWER_CCCL_INCLUDE, LAYOUT_TRUTH_TOPK_BINARY, "3.3.");
}

// CCCL 3.5 replaced block_topk's methods by NAME<IsFullTile>(keys, [values,] k, num_valid,
// begin_bit, end_bit), a radix selection: the wrappers call the form the headers have.
TEST(TopK, WorksAgainstCccl35sRadixSelectionAndMatchesNvccsLayout) {
  REQUIRE_CCCL35();
  CheckTopKAgainst(CCCL35_INCLUDE, LAYOUT_TRUTH_TOPK35_BINARY, "3.5.");
}

// CCCL 3.6 dropped the bit range: NAME<IsFullTile>(keys, [values,] k, num_valid) compares whole
// keys. The entries keep their signature (a narrower bit range traps).
TEST(TopK, WorksAgainstCccl36sWholeKeySelectionAndMatchesNvccsLayout) {
  REQUIRE_CCCL_HEADERS(CCCL36_INCLUDE, "CCCL 3.6");
  CheckTopKAgainst(CCCL36_INCLUDE, LAYOUT_TRUTH_TOPK36_BINARY, "3.6.");
}

// The partial-tile form (top_k.valid_items): an entry taking num_valid on CCCL 3.5, which links;
// refused on CCCL 3.3, whose block_topk has no such form, with an error naming both.
TEST(TopK, ValidItemsTakesNumValidOnCccl35AndIsRefusedOnCccl33) {
  REQUIRE_NEWER_CCCL();
  REQUIRE_CCCL35();
  {
    TestDaemon older({"--cccl-include", NEWER_CCCL_INCLUDE});
    auto client = older.Client();
    coop::Spec s = TopK("max_keys", "float32", 128, 4);
    s.top_k.valid_items = true;
    auto a = client.Specialize(s);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, coop::ErrorCode::kFailedPrecondition);
    EXPECT_NE(a.error().message.find("block_topk: top_k.valid_items (the partial-tile form, "
                                     "num_valid) needs CCCL 3.5 or newer; the spec compiles "
                                     "against CCCL 3.3."),
              std::string::npos)
        << a.error().message;
    EXPECT_TRUE(client.Specialize(TopK("max_keys", "float32", 128, 4)));  // still serves
  }
  TestDaemon daemon({"--cccl-include", CCCL35_INCLUDE});
  auto client = daemon.Client();
  std::string full_key;
  for (const std::string method : {"max_keys", "min_keys", "max_pairs", "min_pairs"}) {
    const bool pairs = method.find("pairs") != std::string::npos;
    coop::Spec s = TopK(method, "float32", 128, 4, pairs ? "int32" : "");
    auto full = client.Specialize(s);
    ASSERT_TRUE(full) << method << ": " << full.error().message;
    s.top_k.valid_items = true;
    auto a = client.Specialize(s, coop::Formats::kBoth);
    ASSERT_TRUE(a) << method << ": " << a.error().message;
    EXPECT_NE(a->key, full->key);
    EXPECT_TRUE(a->spec.top_k.valid_items);
    const auto& e = a->entries.at(0);
    EXPECT_NE(e.declaration.find("int k, int num_valid, int begin_bit, int end_bit"),
              std::string::npos)
        << e.declaration;
    EXPECT_EQ(full->entries.at(0).declaration.find("num_valid"), std::string::npos);
    LinkWithCallingKernel(*a, pairs, true);
  }
}

TEST(TopK, DifferentHeaderRootsNeverShareCacheEntries) {
  REQUIRE_NEWER_CCCL();
  TempDir dir;
  std::string toolkit_key;
  {
    TestDaemon toolkit(dir.path(), {});
    auto a = toolkit.Client().Specialize(BlockReduceF32());
    ASSERT_TRUE(a) << a.error().message;
    toolkit_key = a->key;
  }
  // The same request, the same cache directory, another CCCL: compiled afresh under another key.
  TestDaemon newer(dir.path(), {"--cccl-include", NEWER_CCCL_INCLUDE});
  auto client = newer.Client();
  auto a = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->origin, coop::Origin::kCompiled);
  EXPECT_NE(a->key, toolkit_key);
  // Explain says why: the options (the -I path) and the CCCL header digest differ.
  auto explained = client.Explain(BlockReduceF32());
  ASSERT_TRUE(explained) << explained.error().message;
  ASSERT_FALSE(explained->others.empty());
  std::vector<std::string> differing;
  for (const auto& other : explained->others) {
    if (other.key == toolkit_key) differing = other.differing;
  }
  EXPECT_NE(std::find(differing.begin(), differing.end(), "cccl_headers"), differing.end());
  EXPECT_NE(std::find(differing.begin(), differing.end(), "options"), differing.end());
}

}  // namespace
}  // namespace coopd_test
