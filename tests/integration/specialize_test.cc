// Integration tests: a real coopd on a temporary socket and cache directory, real NVRTC and
// nvJitLink, the real client library and coopctl binary.
#include <gtest/gtest.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <thread>

#include "coop/client.h"
#include "coopd_process.h"
#include "server/engine/compiler.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

// One daemon shared by the tests of this suite (its worker PCH is built once).
class SharedDaemon : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    daemon_ = new CoopdProcess(dir_->path() + "/coopd.sock", dir_->path() + "/cache");
    std::string error;
    ASSERT_TRUE(daemon_->Start(&error)) << error;
    ASSERT_TRUE(daemon_->WaitReady(120s, &error)) << error;
  }
  static void TearDownTestSuite() {
    if (daemon_ != nullptr) {
      EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->Log();
    }
    delete daemon_;
    delete dir_;
    daemon_ = nullptr;
    dir_ = nullptr;
  }
  coop::Client Client() { return daemon_->MakeClient(); }

  static TempDir* dir_;
  static CoopdProcess* daemon_;
};
TempDir* SharedDaemon::dir_ = nullptr;
CoopdProcess* SharedDaemon::daemon_ = nullptr;

TEST_F(SharedDaemon, ReturnsAnArtifactThenServesItFromCache) {
  auto client = Client();
  auto first = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->origin, coop::Origin::kCompiled);
  EXPECT_EQ(first->key.size(), 64u);
  EXPECT_GT(first->ltoir.size(), 1000u);
  ASSERT_EQ(first->entries.size(), 1u);
  EXPECT_NE(first->entries[0].declaration.find(first->entries[0].symbol + "(void* temp_storage"),
            std::string::npos);
  EXPECT_EQ(first->arch, "sm_90");
  EXPECT_EQ(first->spec.algorithm, "warp_reductions");  // resolved default
  EXPECT_FALSE(first->toolchain.nvrtc_version.empty());
  EXPECT_FALSE(first->toolchain.cccl_version.empty());
  EXPECT_EQ(first->toolchain.header_digest.size(), 64u);
  EXPECT_GT(first->compile_ms, 0);
  EXPECT_NE(first->source.find("#include <coop/device/prelude.cuh>"), std::string::npos);

  auto stats_before = client.GetStats();
  ASSERT_TRUE(stats_before);
  auto second = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->origin, coop::Origin::kMemory);
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(second->ltoir, first->ltoir);
  EXPECT_EQ(second->temp_storage_bytes, first->temp_storage_bytes);
  auto stats_after = client.GetStats();
  ASSERT_TRUE(stats_after);
  EXPECT_EQ(stats_after->compiles, stats_before->compiles) << "a hit must not compile";
  EXPECT_EQ(stats_after->memory_hits, stats_before->memory_hits + 1);
}

TEST_F(SharedDaemon, ArtifactLinksIntoAnSm90CubinWithAKernelThatCallsIt) {
  auto client = Client();
  auto a = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(a) << a.error().message;
  const auto& e = a->entries[0];
  const std::string kernel = BlockSumKernel(*a);
  const std::string kernel_ltoir = CompileKernel(kernel);
  ASSERT_FALSE(kernel_ltoir.empty());

  auto cubin = coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", kernel_ltoir},
                                 {coopd::LinkInput::kLtoIr, "artifact", a->ltoir}},
                                "sm_90", {"-optimize-unused-variables"});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  ASSERT_GT(cubin->size(), 4u);
  EXPECT_EQ(cubin->substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_NE(cubin->find("block_sums"), std::string::npos);

  // The same link without the artifact must fail on the unresolved entry symbol: this is what
  // the successful link above proves absent.
  auto unresolved =
      coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", kernel_ltoir}}, "sm_90", {});
  ASSERT_FALSE(unresolved.ok());
  EXPECT_NE(std::string(unresolved.status().message()).find(e.symbol), std::string::npos)
      << unresolved.status();
}

// A kernel built from a bundle: load a tile, scan it, store it. Every entry is called with the
// declarations coopd returned, and the LTO-IR links into an sm_90 cubin.
TEST_F(SharedDaemon, LoadScanStoreBundleLinksIntoOneKernel) {
  coop::Spec load = BlockReduceF32();
  load.family = "block_load";
  load.method = "load_guarded_default";
  load.algorithm = "warp_transpose";
  load.dtype = "int32";
  load.block = {128};
  load.items_per_thread = 4;
  coop::Spec scan = load;
  scan.family = "block_scan";
  scan.method = "exclusive_sum";
  scan.algorithm = "warp_scans";
  coop::Spec store = load;
  store.family = "block_store";
  store.method = "store_guarded";
  auto a = Client().SpecializeBundle({load, scan, store});
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->parts.size(), 3u);
  std::string kernel;
  for (const auto& e : a->entries) kernel += e.declaration + "\n";
  auto bytes = [&](int i) { return std::to_string(a->parts[i].temp_storage_bytes); };
  kernel +=
      "extern \"C\" __global__ void scan_tiles(const int* in, int* out, int n) {\n"
      "  __shared__ __align__(16) unsigned char t0[" +
      bytes(0) +
      "];\n"
      "  __shared__ __align__(16) unsigned char t1[" +
      bytes(1) +
      "];\n"
      "  __shared__ __align__(16) unsigned char t2[" +
      bytes(2) +
      "];\n"
      "  int items[4];\n"
      "  const int tile = blockIdx.x * 512;\n"
      "  const int valid = n - tile < 512 ? n - tile : 512;\n"
      "  " +
      a->parts[0].entries[0].symbol +
      "(t0, in + tile, items, valid, 0);\n"
      "  " +
      a->parts[1].entries[0].symbol +
      "(t1, items, items);\n"
      "  " +
      a->parts[2].entries[0].symbol +
      "(t2, out + tile, items, valid);\n"
      "}\n";
  auto cubin = coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "kernel", CompileKernel(kernel)},
                                 {coopd::LinkInput::kLtoIr, "bundle", a->ltoir}},
                                "sm_90", {"-optimize-unused-variables"});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_NE(cubin->find("scan_tiles"), std::string::npos);
}

TEST_F(SharedDaemon, CoopctlCatalogListsEveryFamily) {
  std::string out, err;
  int rc = RunCommand({COOPCTL_BINARY, "--socket", daemon_->socket_path(), "catalog", "--json"},
                      &out, &err);
  ASSERT_EQ(rc, 0) << err;
  // Every family the catalogue issue lists (block_topk is listed even where unavailable).
  for (const char* family : {"block_reduce",
                             "block_scan",
                             "block_load",
                             "block_store",
                             "block_exchange",
                             "block_shuffle",
                             "block_radix_sort",
                             "block_radix_rank",
                             "block_merge_sort",
                             "block_histogram",
                             "block_discontinuity",
                             "block_adjacent_difference",
                             "block_run_length_decode",
                             "block_topk",
                             "warp_load",
                             "warp_store",
                             "warp_exchange",
                             "warp_reduce",
                             "warp_scan",
                             "warp_merge_sort"}) {
    EXPECT_NE(out.find(std::string("\"name\":\"") + family + "\""), std::string::npos) << family;
  }
  EXPECT_NE(out.find("\"archs\":[\"sm_"), std::string::npos) << out;
  auto catalog = Client().GetCatalog();
  ASSERT_TRUE(catalog) << catalog.error().message;
  EXPECT_EQ(catalog->families.size(), 20u);
  EXPECT_NE(out.find("\"op_kind\":\"comparator\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"family_options\":\"radix_sort\""), std::string::npos) << out;
}

// Regression for a CCCL 3.0.1 bug found on the GPU (device/gpu_check): without <cuda_fp16.h>
// on the include path, ThreadReduce over 4+ items of int or float with max/min/plus takes a
// SIMD path meant for __half that asserts (or, under NDEBUG, returns the first item only). The
// kernel below, linked to PTX, must not contain that assertion.
TEST_F(SharedDaemon, MultiItemReductionsDoNotTakeTheBrokenSimdPath) {
  struct Case {
    const char* family;
    const char* method;
    const char* dtype;
    const char* op;
  } cases[] = {{"block_reduce", "max", "int32", ""},
               {"block_reduce", "sum", "float32", ""},
               {"block_reduce", "min", "uint32", ""},
               {"block_scan", "inclusive_scan", "int32", "max"},
               {"block_scan", "inclusive_sum", "float32", ""}};
  for (const auto& c : cases) {
    coop::Spec s = BlockReduceF32();
    s.family = c.family;
    s.method = c.method;
    s.dtype = c.dtype;
    s.op = c.op;
    s.block = {128};
    s.items_per_thread = 4;
    auto a = Client().Specialize(s);
    ASSERT_TRUE(a) << a.error().message;
    const auto& e = a->entries.at(0);
    const std::string t = s.dtype == "int32"    ? "int"
                          : s.dtype == "uint32" ? "unsigned int"
                                                : "float";
    const bool scan = s.family == "block_scan";
    std::string kernel = e.declaration + "\nextern \"C\" __global__ void k(" + t + "* io) {\n" +
                         "  __shared__ __align__(16) unsigned char temp[" +
                         std::to_string(a->temp_storage_bytes) + "];\n  " + t +
                         " v[4];\n  for (int i = 0; i < 4; ++i) v[i] = io[threadIdx.x * 4 + i];\n";
    kernel += scan ? "  " + e.symbol + "(temp, v, v);\n  io[threadIdx.x] = v[3];\n}\n"
                   : "  io[threadIdx.x] = " + e.symbol + "(temp, v);\n}\n";
    const std::string ptx = LinkToPtx({CompileKernel(kernel), a->ltoir});
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(ptx.find("__assertfail"), std::string::npos)
        << c.family << " " << c.method << " " << c.dtype << ": the kernel reaches an assertion";
  }
}

TEST_F(SharedDaemon, TempStorageMatchesWhatNvccReports) {
  auto rows = LoadLayoutTruth(LAYOUT_TRUTH_BINARY);
  ASSERT_GE(rows.size(), 20u);
  auto client = Client();
  for (const auto& row : rows) {
    auto a = client.Specialize(row.spec);
    ASSERT_TRUE(a) << row.line << ": " << a.error().message;
    EXPECT_EQ(a->temp_storage_bytes, row.bytes) << row.line;
    EXPECT_EQ(a->temp_storage_align, row.align) << row.line;
  }
}

// Every method, algorithm, dtype, shape and convention of the slice renders and compiles.
TEST_F(SharedDaemon, EveryFamilyMethodAlgorithmAndDtypeCompiles) {
  std::vector<coop::Spec> specs;
  for (const char* dtype : {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                            "uint64", "float32", "float64"}) {
    coop::Spec s = BlockReduceF32();
    s.dtype = dtype;
    s.method = "max";
    s.block = {64, 2};
    specs.push_back(s);
  }
  for (const char* method : {"sum", "max", "min"}) {
    for (const char* algorithm : {"raking", "raking_commutative_only", "warp_reductions"}) {
      coop::Spec s = BlockReduceF32();
      s.method = method;
      s.algorithm = algorithm;
      s.items_per_thread = 3;
      s.block = {8, 4, 2};
      specs.push_back(s);
    }
  }
  {
    coop::Spec s = BlockReduceF32();
    s.method = "reduce";
    s.op = "bit_xor";
    s.dtype = "uint64";
    specs.push_back(s);
  }
  for (const char* method :
       {"inclusive_sum", "exclusive_sum", "inclusive_scan", "exclusive_scan"}) {
    for (const char* algorithm : {"raking", "raking_memoize", "warp_scans"}) {
      for (uint32_t items : {1u, 4u}) {
        coop::Spec s = BlockReduceF32();
        s.family = "block_scan";
        s.method = method;
        s.algorithm = algorithm;
        s.dtype = "int32";
        s.items_per_thread = items;
        s.scan.with_aggregate = items == 4;
        if (std::string(method).find("_scan") != std::string::npos) s.op = "max";
        specs.push_back(s);
      }
    }
  }
  for (uint32_t warp : {1u, 2u, 4u, 8u, 16u, 32u}) {
    for (const char* method : {"sum", "max", "min"}) {
      coop::Spec s;
      s.family = "warp_reduce";
      s.method = method;
      s.dtype = "float64";
      s.warp_threads = warp;
      s.arch = "sm_90";
      specs.push_back(s);
    }
  }
  for (const char* family : {"block_load", "block_store"}) {
    const bool load = std::string(family) == "block_load";
    for (const char* algorithm : {"direct", "striped", "vectorize", "transpose", "warp_transpose",
                                  "warp_transpose_timesliced"}) {
      for (const char* method :
           load ? std::vector<const char*>{"load", "load_guarded", "load_guarded_default"}
                : std::vector<const char*>{"store", "store_guarded"}) {
        coop::Spec s = BlockReduceF32();
        s.family = family;
        s.method = method;
        s.algorithm = algorithm;
        s.dtype = "int16";
        s.block = {64, 2};
        s.items_per_thread = 8;
        specs.push_back(s);
      }
    }
  }
  for (const char* method : {"striped_to_blocked", "blocked_to_striped", "warp_striped_to_blocked",
                             "blocked_to_warp_striped"}) {
    for (bool slicing : {false, true}) {
      coop::Spec s = BlockReduceF32();
      s.family = "block_exchange";
      s.method = method;
      s.dtype = "float64";
      s.block = {128};
      s.items_per_thread = 4;
      s.exchange.warp_time_slicing = slicing;
      specs.push_back(s);
    }
  }
  for (const char* method : {"offset", "rotate", "up", "down"}) {
    coop::Spec s = BlockReduceF32();
    s.family = "block_shuffle";
    s.method = method;
    s.dtype = "uint16";
    s.block = {32, 4};
    s.items_per_thread = std::string(method).size() <= 4 ? 3 : 1;  // up/down: 3 items
    specs.push_back(s);
  }
  for (uint32_t warp : {1u, 4u, 32u}) {
    for (const char* method :
         {"inclusive_sum", "exclusive_sum", "inclusive_scan", "exclusive_scan"}) {
      coop::Spec s;
      s.family = "warp_scan";
      s.method = method;
      s.dtype = "uint32";
      s.warp_threads = warp;
      s.arch = "sm_90";
      s.scan.with_aggregate = warp == 4;
      if (std::string(method).find("_scan") != std::string::npos) s.op = "min";
      specs.push_back(s);
    }
  }
  {
    coop::Spec s = BlockReduceF32();
    s.calling_convention = coop::CallingConvention::kNumba;
    specs.push_back(s);
    s.arch = "sm_80";
    specs.push_back(s);
  }
  auto client = Client();
  for (const auto& s : specs) {
    auto a = client.Specialize(s);
    ASSERT_TRUE(a) << s.family << " " << s.method << " " << s.dtype << " " << s.algorithm << ": "
                   << a.error().message;
    EXPECT_FALSE(a->ltoir.empty());
    EXPECT_GT(a->temp_storage_align, 0u);
    EXPECT_EQ(a->entries.size(), s.scan.with_aggregate ? 2u : 1u);
  }
}

// Specializes each spec and links every entry, called as declared, into an sm_90 cubin.
void ExpectEachLinks(coop::Client& client, const std::vector<coop::Spec>& specs) {
  for (const auto& s : specs) {
    const std::string what = s.family + " " + s.method + " " + s.dtype + " values \"" +
                             s.radix_sort.value_dtype + s.merge_sort.value_dtype + "\" op " + s.op;
    auto a = client.Specialize(s);
    ASSERT_TRUE(a) << what << ": " << a.error().message;
    EXPECT_GT(a->temp_storage_bytes, 0u) << what;
    ASSERT_EQ(a->entries.size(), 1u) << what;
    ExpectEntriesLinkIntoACubin(*a, what);
  }
}

// Radix sort: every method, keys only and pairs, a 2D block and a non-default radix width.
TEST_F(SharedDaemon, RadixSortEveryMethodLinksWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* method : {"sort", "sort_descending", "sort_blocked_to_striped",
                             "sort_descending_blocked_to_striped"}) {
    for (const char* values : {"", "float64"}) {
      coop::Spec s =
          BlockSpec("block_radix_sort", method, *values ? "int16" : "float32", {32, 3}, 4);
      s.radix_sort.value_dtype = values;
      s.radix_sort.radix_bits = *values ? 6 : 0;
      specs.push_back(s);
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  // The entry takes keys, then values, then the bit range.
  auto a = client.Specialize(specs[1]);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find(
                "(void* temp_storage, short* keys, double* values, int begin_bit, int end_bit)"),
            std::string::npos)
      << a->entries[0].declaration;
  EXPECT_EQ(a->spec.radix_sort.radix_bits, 6u);
}

// Merge sort, block and warp: every method, keys only and pairs, both comparators.
TEST_F(SharedDaemon, MergeSortEveryMethodLinksWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* family : {"block_merge_sort", "warp_merge_sort"}) {
    const bool warp = std::string(family) == "warp_merge_sort";
    for (const char* method : {"sort", "sort_guarded", "stable_sort", "stable_sort_guarded"}) {
      for (const char* values : {"", "uint8"}) {
        coop::Spec s;
        s.family = family;
        s.method = method;
        s.dtype = *values ? "float64" : "int32";
        s.merge_sort.value_dtype = values;
        s.op = *values ? "greater" : "less";
        if (warp) {
          s.warp_threads = *values ? 8 : 32;
        } else {
          s.block = {16, 2, 2};
        }
        s.items_per_thread = 3;
        s.arch = "sm_90";
        specs.push_back(s);
      }
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs[3]);  // block sort_guarded with values
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find("(void* temp_storage, double* keys, unsigned char* "
                                           "values, int valid_items, double oob_default)"),
            std::string::npos)
      << a->entries[0].declaration;
}

// Histogram: every method and algorithm, each unsigned sample dtype, a 2D block.
TEST_F(SharedDaemon, HistogramEveryMethodLinksWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* method : {"histogram", "init_histogram", "composite"}) {
    for (const char* algorithm : {"sort", "atomic"}) {
      for (const char* dtype : {"uint8", "uint16", "uint32", "uint64"}) {
        coop::Spec s = BlockSpec("block_histogram", method, dtype, {64, 2}, 4);
        s.algorithm = algorithm;
        s.histogram.bins = std::string(dtype) == "uint8" ? 256 : 100;
        // Atomic histograms need no temp storage: CUB's TempStorage is an empty struct (1 byte).
        specs.push_back(s);
      }
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs[0]);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find(
                "(void* temp_storage, const unsigned char* samples, unsigned int* histogram)"),
            std::string::npos)
      << a->entries[0].declaration;
  EXPECT_EQ(a->spec.histogram.bins, 256u);
}

// Discontinuity and adjacent difference: every method with each builtin of its op kind.
TEST_F(SharedDaemon, NeighbourFamiliesEveryMethodLinksWithACallingKernel) {
  auto catalog = Client().GetCatalog();
  ASSERT_TRUE(catalog) << catalog.error().message;
  std::vector<coop::Spec> specs;
  for (const auto& f : catalog->families) {
    if (f.name != "block_discontinuity" && f.name != "block_adjacent_difference") continue;
    for (const auto& m : f.methods) {
      for (const char* op : f.name == "block_discontinuity"
                                ? std::vector<const char*>{"not_equal", "equal"}
                                : std::vector<const char*>{"difference", "sum"}) {
        coop::Spec s =
            BlockSpec(f.name, m.name, std::string(op) == "sum" ? "uint64" : "int16", {32, 2, 2}, 5);
        s.op = op;
        specs.push_back(s);
      }
    }
  }
  ASSERT_EQ(specs.size(), 2u * (8 + 7));
  auto client = Client();
  ExpectEachLinks(client, specs);
  coop::Spec both = specs[14];  // flag_heads_and_tails_with_predecessor_and_successor, not_equal
  ASSERT_EQ(both.method, "flag_heads_and_tails_with_predecessor_and_successor");
  auto a = client.Specialize(both);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find(
                "(void* temp_storage, const short* input, int* head_flags, int* tail_flags, short "
                "tile_predecessor_item, short tile_successor_item)"),
            std::string::npos)
      << a->entries[0].declaration;
}

// block_exchange's scatters: each method, with and without warp time slicing where CUB allows it.
TEST_F(SharedDaemon, ExchangeScattersLinkWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* method : {"scatter_to_blocked", "scatter_to_striped",
                             "scatter_to_striped_guarded", "scatter_to_striped_flagged"}) {
    for (bool slicing : {false, true}) {
      coop::Spec s = BlockReduceF32();
      s.family = "block_exchange";
      s.method = method;
      s.dtype = "float64";
      // Guarded and flagged scatters take time slicing only up to one warp (see spec.cc).
      s.block = std::string(method).find("_striped_") != std::string::npos && slicing
                    ? coop::Dim3{16, 2}
                    : coop::Dim3{64, 2};
      s.items_per_thread = 3;
      s.exchange.warp_time_slicing = slicing;
      specs.push_back(s);
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs.back());
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find("(void* temp_storage, const double* input, double* "
                                           "output, const int* ranks, const int* is_valid)"),
            std::string::npos)
      << a->entries[0].declaration;
}

// block_reduce over the first num_valid threads: both methods, every algorithm, a 2D block.
TEST_F(SharedDaemon, PartialReductionsLinkWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* algorithm : {"raking", "raking_commutative_only", "warp_reductions"}) {
    for (const char* method : {"sum_partial", "reduce_partial"}) {
      coop::Spec s = BlockReduceF32();
      s.method = method;
      s.algorithm = algorithm;
      s.block = {48, 2};
      if (std::string(method) == "reduce_partial") s.op = "min";
      specs.push_back(s);
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs[1]);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find("float " + a->entries[0].symbol +
                                           "(void* temp_storage, float input, int num_valid)"),
            std::string::npos)
      << a->entries[0].declaration;
}

// Run-length decode: both methods, several run and window sizes, a 2D block.
TEST_F(SharedDaemon, RunLengthDecodeLinksWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* method : {"decode", "decode_with_offsets"}) {
    for (uint32_t runs : {1u, 3u}) {
      coop::Spec s = BlockSpec("block_run_length_decode", method, runs == 1 ? "int64" : "uint8",
                               {32, 2}, runs);
      s.run_length_decode.decoded_items_per_thread = runs == 1 ? 4 : 2;
      specs.push_back(s);
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs[2]);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find(
                "unsigned int " + a->entries[0].symbol +
                "(void* temp_storage, const long long* run_values, const unsigned int* "
                "run_lengths, long long* decoded_items, unsigned int* relative_offsets, unsigned "
                "int from_decoded_offset)"),
            std::string::npos)
      << a->entries[0].declaration;
  EXPECT_EQ(a->spec.run_length_decode.decoded_items_per_thread, 4u);
}

// warp_load, warp_store, warp_exchange: every method and algorithm, two logical warp sizes.
TEST_F(SharedDaemon, WarpLoadStoreExchangeLinkWithACallingKernel) {
  auto catalog = Client().GetCatalog();
  ASSERT_TRUE(catalog) << catalog.error().message;
  std::vector<coop::Spec> specs;
  for (const auto& f : catalog->families) {
    if (f.name != "warp_load" && f.name != "warp_store" && f.name != "warp_exchange") continue;
    for (const auto& m : f.methods) {
      for (const auto& algorithm : f.algorithms) {
        for (uint32_t warp : {8u, 32u}) {
          if (algorithm == "shuffle" && m.name == "scatter_to_striped") continue;
          coop::Spec s;
          s.family = f.name;
          s.method = m.name;
          s.algorithm = algorithm;
          s.dtype = warp == 8 ? "int16" : "float64";
          s.warp_threads = warp;
          s.items_per_thread = algorithm == "shuffle" ? warp : 4;
          s.arch = "sm_90";
          specs.push_back(s);
        }
      }
    }
  }
  ASSERT_EQ(specs.size(), 2u * (3 * 4 + 2 * 4 + 3 + 2));
  auto client = Client();
  ExpectEachLinks(client, specs);
}

// Radix rank: both directions, every unsigned key dtype, two digit widths, a 2D block.
TEST_F(SharedDaemon, RadixRankLinksWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* method : {"rank_keys", "rank_keys_descending"}) {
    for (const char* dtype : {"uint8", "uint16", "uint32", "uint64"}) {
      coop::Spec s = BlockSpec("block_radix_rank", method, dtype, {64, 2}, 3);
      s.radix_rank.radix_bits = std::string(dtype) == "uint8" ? 3 : 5;
      specs.push_back(s);
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs[2]);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find(
                "(void* temp_storage, const unsigned int* keys, int* ranks, int begin_bit)"),
            std::string::npos)
      << a->entries[0].declaration;
  EXPECT_EQ(a->spec.radix_rank.radix_bits, 5u);
}

// block_scan with the running-total prefix callback: every method and algorithm, 1 and 4 items.
TEST_F(SharedDaemon, ScanWithRunningPrefixLinksWithACallingKernel) {
  std::vector<coop::Spec> specs;
  for (const char* method : {"exclusive_sum_prefix", "inclusive_sum_prefix",
                             "exclusive_scan_prefix", "inclusive_scan_prefix"}) {
    for (const char* algorithm : {"raking", "raking_memoize", "warp_scans"}) {
      for (uint32_t items : {1u, 4u}) {
        coop::Spec s =
            BlockSpec("block_scan", method, items == 1 ? "int64" : "float32", {32, 4}, items);
        s.algorithm = algorithm;
        if (std::string(method).find("_scan_") != std::string::npos) s.op = "max";
        specs.push_back(s);
      }
    }
  }
  auto client = Client();
  ExpectEachLinks(client, specs);
  auto a = client.Specialize(specs[0]);  // exclusive_sum_prefix, raking, 1 item, int64
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(a->entries[0].declaration.find(
                "long long " + a->entries[0].symbol +
                "(void* temp_storage, long long input, long long* running_prefix)"),
            std::string::npos)
      << a->entries[0].declaration;
  // The callback is the running total: the rendered unit passes it the sum operator.
  EXPECT_NE(a->source.find("exclusive_sum_prefix<Prim>(temp_storage, input, "
                           "::coop::device::RunningPrefix<long long, "
                           "decltype(::cuda::std::plus<long long>{})>{running_prefix, "
                           "::cuda::std::plus<long long>{}}"),
            std::string::npos)
      << a->source;
}

struct InvalidCase {
  std::string name;
  std::function<void(coop::Spec&)> mutate;
  std::string expected_message;
};

// warp_reduce's partial and segmented reductions, and block_scan's inclusive scan seeded by an
// initial value (arrays even for one item; with and without the aggregate entry).
TEST_F(SharedDaemon, WarpSegmentedReductionsAndSeededInclusiveScanLink) {
  auto client = Client();
  std::vector<coop::Spec> specs;
  for (const char* method :
       {"sum_partial", "reduce_partial", "head_segmented_sum", "tail_segmented_sum",
        "head_segmented_reduce", "tail_segmented_reduce"}) {
    coop::Spec s;
    s.family = "warp_reduce";
    s.method = method;
    s.dtype = "int32";
    s.warp_threads = 16;
    s.arch = "sm_90";
    if (std::string(method).find("reduce") != std::string::npos) s.op = "max";
    specs.push_back(s);
  }
  ExpectEachLinks(client, specs);
  for (uint32_t items : {1u, 4u}) {
    for (bool aggregate : {false, true}) {
      coop::Spec s = BlockSpec("block_scan", "inclusive_scan_init", "float32", {64, 2}, items);
      s.op = "max";
      s.scan.with_aggregate = aggregate;
      auto a = client.Specialize(s);
      ASSERT_TRUE(a) << a.error().message;
      ASSERT_EQ(a->entries.size(), aggregate ? 2u : 1u);
      EXPECT_NE(a->entries[0].declaration.find("(void* temp_storage, const float* input, float* "
                                               "output, float initial_value)"),
                std::string::npos)
          << a->entries[0].declaration;
      ExpectEntriesLinkIntoACubin(*a, "inclusive_scan_init");
    }
  }
}

TEST_F(SharedDaemon, EachKindOfInvalidRequestGetsItsSpecificError) {
  std::vector<InvalidCase> cases = {
      {"zero threads", [](coop::Spec& s) { s.block = {0}; },
       "block_reduce: block.x (threads) must be 1..1024, got 0"},
      {"too many threads", [](coop::Spec& s) { s.block = {1025}; },
       "block_reduce: block.x must be 1..1024, got 1025"},
      {"too many threads in 3D",
       [](coop::Spec& s) {
         s.block = {32, 32, 2};
       },
       "block_reduce: block threads (x*y*z) must be 1..1024, got 32*32*2 = 2048"},
      {"too many items", [](coop::Spec& s) { s.items_per_thread = 65; },
       "block_reduce: items_per_thread must be 1..64, got 65"},
      {"unknown dtype", [](coop::Spec& s) { s.dtype = "float128"; },
       "block_reduce: dtype must be one of int8, int16, int32, int64, uint8, uint16, uint32, "
       "uint64, float32, float64, float16, bfloat16, or \"user\" (with user_type); got "
       "\"float128\""},
      {"unsupported arch", [](coop::Spec& s) { s.arch = "sm_91"; },
       "block_reduce: arch must be one of "},
      {"algorithm the family lacks", [](coop::Spec& s) { s.algorithm = "warp_scans"; },
       "block_reduce: algorithm must be one of raking, raking_commutative_only, "
       "warp_reductions; got \"warp_scans\""},
      {"warp size not a power of two",
       [](coop::Spec& s) {
         s.family = "warp_reduce";
         s.block = {};
         s.warp_threads = 24;
       },
       "warp_reduce: warp_threads must be a power of two 1..32 (1, 2, 4, 8, 16, 32), got 24"},
      {"warp size above 32",
       [](coop::Spec& s) {
         s.family = "warp_reduce";
         s.block = {};
         s.warp_threads = 64;
       },
       "warp_reduce: warp_threads must be a power of two 1..32 (1, 2, 4, 8, 16, 32), got 64"},
      {"unknown family", [](coop::Spec& s) { s.family = "block_sort"; },
       "spec: family must be one of block_reduce, block_scan, block_load, block_store, "
       "block_exchange, block_shuffle, block_radix_sort, block_merge_sort, block_histogram, "
       "block_discontinuity, block_adjacent_difference, block_run_length_decode, "
       "block_radix_rank, warp_reduce, warp_scan, warp_load, warp_store, warp_exchange, "
       "warp_merge_sort, block_topk; got \"block_sort\""},
      {"unknown method", [](coop::Spec& s) { s.method = "product"; },
       "block_reduce: method must be one of sum, max, min, reduce, sum_partial, reduce_partial; "
       "got \"product\""},
      {"comparator given to a binary-op method",
       [](coop::Spec& s) {
         s.method = "reduce";
         s.op = "less";
       },
       "block_reduce: op.builtin \"less\" is a comparator operator, but method \"reduce\" takes "
       "a binary operator (T, T) -> T: one of sum, max, min, bit_and, bit_or, bit_xor"},
      {"binary op given to merge sort",
       [](coop::Spec& s) {
         s.family = "block_merge_sort";
         s.method = "sort";
         s.op = "max";
       },
       "block_merge_sort: op.builtin \"max\" is a binary operator, but method \"sort\" takes a "
       "comparator operator (T, T) -> bool: one of less, greater"},
      {"merge sort without a comparator",
       [](coop::Spec& s) {
         s.family = "block_merge_sort";
         s.method = "stable_sort";
       },
       "block_merge_sort: method \"stable_sort\" needs a comparator operator (T, T) -> bool: "
       "op.builtin must be one of less, greater, or op.user"},
      {"merge sort on a block that is not a power of two",
       [](coop::Spec& s) {
         s.family = "block_merge_sort";
         s.method = "sort";
         s.op = "less";
         s.block = {32, 3};
       },
       "block_merge_sort: block threads (x*y*z) must be a power of two, got 32*3*1 = 96"},
      {"radix sort with an unknown value dtype",
       [](coop::Spec& s) {
         s.family = "block_radix_sort";
         s.method = "sort";
         s.radix_sort.value_dtype = "float8";
       },
       "block_radix_sort: radix_sort.value_dtype must be empty (keys only) or one of int8, int16, "
       "int32, int64, uint8, uint16, uint32, uint64, float32, float64, float16, bfloat16; got "
       "\"float8\""},
      {"radix sort with 9 radix bits",
       [](coop::Spec& s) {
         s.family = "block_radix_sort";
         s.method = "sort";
         s.radix_sort.radix_bits = 9;
       },
       "block_radix_sort: radix_sort.radix_bits must be 1..8 (0 means 4), got 9"},
      {"histogram with 0 bins",
       [](coop::Spec& s) {
         s.family = "block_histogram";
         s.method = "histogram";
         s.dtype = "uint8";
       },
       "block_histogram: histogram.bins (the number of counters) is required and must be "
       "1..65536, got 0"},
      {"histogram of signed samples",
       [](coop::Spec& s) {
         s.family = "block_histogram";
         s.method = "histogram";
         s.dtype = "int32";
         s.histogram.bins = 16;
       },
       "block_histogram: dtype must be one of uint8, uint16, uint32, uint64; got \"int32\""},
      {"difference operator given to a flag method",
       [](coop::Spec& s) {
         s.family = "block_discontinuity";
         s.method = "flag_tails";
         s.op = "difference";
       },
       "block_discontinuity: op.builtin \"difference\" is a difference operator, but method "
       "\"flag_tails\" takes a flag operator (T, T) -> bool: one of not_equal, equal"},
      {"flag operator given to a difference method",
       [](coop::Spec& s) {
         s.family = "block_adjacent_difference";
         s.method = "subtract_right";
         s.op = "not_equal";
       },
       "block_adjacent_difference: op.builtin \"not_equal\" is a flag operator, but method "
       "\"subtract_right\" takes a difference operator (T, T) -> T: one of difference, sum"},
      {"guarded scatter with warp time slicing past one warp",
       [](coop::Spec& s) {
         s.family = "block_exchange";
         s.method = "scatter_to_striped_guarded";
         s.block = {64};
         s.items_per_thread = 2;
         s.exchange.warp_time_slicing = true;
       },
       "block_exchange: method \"scatter_to_striped_guarded\" does not support "
       "exchange.warp_time_slicing with more than 32 threads (CUB's buffer then holds one warp's "
       "items), got 64"},
      {"partial reduction over several items",
       [](coop::Spec& s) {
         s.method = "sum_partial";
         s.items_per_thread = 4;
       },
       "block_reduce: method \"sum_partial\" takes items_per_thread 1, got 4"},
      {"run-length decode without a window size",
       [](coop::Spec& s) {
         s.family = "block_run_length_decode";
         s.method = "decode";
         s.items_per_thread = 2;
       },
       "block_run_length_decode: run_length_decode.decoded_items_per_thread is required and must "
       "be 1..64, got 0"},
      {"warp exchange by shuffle with fewer items than lanes",
       [](coop::Spec& s) {
         s.family = "warp_exchange";
         s.method = "blocked_to_striped";
         s.algorithm = "shuffle";
         s.block = {};
         s.warp_threads = 16;
         s.items_per_thread = 4;
       },
       "warp_exchange: algorithm \"shuffle\" needs items_per_thread == warp_threads, got 4 items "
       "and 16 threads"},
      {"warp load without an algorithm",
       [](coop::Spec& s) {
         s.family = "warp_load";
         s.method = "load";
         s.block = {};
       },
       "warp_load: algorithm is required (one of direct, striped, vectorize, transpose, or "
       "auto)"},
      {"radix rank of signed keys",
       [](coop::Spec& s) {
         s.family = "block_radix_rank";
         s.method = "rank_keys";
         s.dtype = "int32";
         s.radix_rank.radix_bits = 4;
       },
       "block_radix_rank: dtype must be one of uint8, uint16, uint32, uint64; got \"int32\""},
      {"radix rank without a digit width",
       [](coop::Spec& s) {
         s.family = "block_radix_rank";
         s.method = "rank_keys";
         s.dtype = "uint32";
       },
       "block_radix_rank: radix_rank.radix_bits is required and must be 1..8, got 0"},
      {"radix sort of a 65536-key tile",
       [](coop::Spec& s) {
         s.family = "block_radix_sort";
         s.method = "sort";
         s.block = {1024};
         s.items_per_thread = 64;
       },
       "block_radix_sort: block threads * items_per_thread must be at most 65535 (CUB's radix "
       "rank counts in 16 bits), got 65536"},
      {"aggregate entry for a prefix-callback scan",
       [](coop::Spec& s) {
         s.family = "block_scan";
         s.method = "inclusive_sum_prefix";
         s.scan.with_aggregate = true;
       },
       "block_scan: scan.with_aggregate does not apply to method \"inclusive_sum_prefix\": the "
       "block aggregate goes into the running prefix"},
      {"sort options on another family", [](coop::Spec& s) { s.merge_sort.value_dtype = "int32"; },
       "block_reduce: merge_sort options apply only to block_merge_sort and warp_merge_sort"},
  };
  auto client = Client();
  auto before = client.GetStats();
  ASSERT_TRUE(before);
  for (const auto& c : cases) {
    coop::Spec s = BlockReduceF32();
    c.mutate(s);
    auto a = client.Specialize(s);
    ASSERT_FALSE(a) << c.name;
    EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument) << c.name;
    EXPECT_EQ(a.error().message.rfind(c.expected_message, 0), 0u)
        << c.name << ": got \"" << a.error().message << "\"";
  }
  // The unsupported-arch message lists what this NVRTC supports.
  coop::Spec s = BlockReduceF32();
  s.arch = "sm_91";
  auto a = client.Specialize(s);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("sm_90"), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find("got \"sm_91\""), std::string::npos) << a.error().message;

  // The daemon is still up and counted every rejection.
  auto after = client.GetStats();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->invalid_requests, before->invalid_requests + cases.size() + 1);
  EXPECT_EQ(after->compiles, before->compiles);
}

// The proto carries one options message per spec; the client refuses a spec that fills two
// rather than send only one of them.
TEST_F(SharedDaemon, ClientRefusesASpecWithTwoOptionsMessages) {
  auto client = Client();
  auto before = client.GetStats();
  ASSERT_TRUE(before) << before.error().message;
  coop::Spec s = BlockSpec("block_radix_sort", "sort", "uint32", {128}, 4);
  s.radix_sort.value_dtype = "int32";
  s.histogram.bins = 8;
  for (int bundle = 0; bundle < 2; ++bundle) {
    auto a = bundle ? client.SpecializeBundle({BlockReduceF32(), s}) : client.Specialize(s);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument);
    EXPECT_FALSE(a.error().from_server);
    EXPECT_EQ(a.error().message,
              std::string(bundle ? "specs[1]" : "spec") +
                  ": family options set in radix_sort, histogram; a spec takes one options "
                  "message, the one its family's catalog entry names (family_options)");
  }
  auto e = client.Explain(s);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, coop::ErrorCode::kInvalidArgument);
  auto after = client.GetStats();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->requests, before->requests) << "nothing was sent";
}

// coopctl's --value-dtype and --radix-bits go into the options message the family's catalog
// entry names: merge sort, top-k and radix rank take them in messages of their own.
TEST_F(SharedDaemon, CoopctlRoutesSortFlagsToTheFamilysOptionsMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;  // in --json
  };
  const std::vector<Case> cases = {
      {{"block_merge_sort", "--dtype", "float32", "--value-dtype", "int64", "--op", "less",
        "--threads", "64", "--items", "2"},
       "\"value_dtype\":\"int64\""},
      {{"warp_merge_sort", "--dtype", "int32", "--value-dtype", "uint8", "--op", "less",
        "--warp-threads", "16", "--items", "2"},
       "\"value_dtype\":\"uint8\""},
      {{"block_radix_rank", "--dtype", "uint32", "--radix-bits", "5", "--threads", "128", "--items",
        "2"},
       "\"radix_bits\":5"},
      {{"block_radix_sort", "--dtype", "uint32", "--value-dtype", "float32", "--radix-bits", "6",
        "--threads", "128", "--items", "2"},
       "\"radix_bits\":6"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> cmd = {COOPCTL_BINARY, "--socket", daemon_->socket_path(),
                                    "specialize"};
    cmd.insert(cmd.end(), c.args.begin(), c.args.end());
    cmd.insert(cmd.end(), {"--arch", "sm_90", "--json"});
    std::string out, err;
    ASSERT_EQ(RunCommand(cmd, &out, &err), 0) << c.args[0] << ": " << err;
    EXPECT_NE(out.find(c.expect), std::string::npos) << c.args[0] << ": " << out;
  }
  // A flag the family's options do not take is still coopd's error, named by the field.
  std::string out, err;
  EXPECT_NE(RunCommand({COOPCTL_BINARY, "--socket", daemon_->socket_path(), "specialize",
                        "block_merge_sort", "--dtype", "float32", "--radix-bits", "4", "--op",
                        "less", "--threads", "64", "--items", "2", "--arch", "sm_90"},
                       &out, &err),
            0);
  EXPECT_NE(err.find("INVALID_ARGUMENT"), std::string::npos) << err;
  EXPECT_NE(err.find("radix_sort"), std::string::npos) << err;
}

TEST_F(SharedDaemon, SocketIsPrivate) {
  struct stat st;
  ASSERT_EQ(stat(daemon_->socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// --json carries the whole resolved spec (defaults filled in) and the type definitions the
// declarations need, as the header written by --out does.
TEST_F(SharedDaemon, CoopctlJsonHasTheWholeResolvedSpecAndTypeDefinitions) {
  std::string out, err;
  int rc = RunCommand({COOPCTL_BINARY, "--socket", daemon_->socket_path(), "specialize",
                       "block_radix_sort", "--dtype", "uint32", "--value-dtype", "float32",
                       "--threads", "128", "--items", "4", "--arch", "sm_90", "--json"},
                      &out, &err);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(out.find("\"value_dtype\":\"float32\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"radix_bits\":4"), std::string::npos) << "the resolved default: " << out;
  EXPECT_NE(out.find("\"type_definitions\":\"\""), std::string::npos) << out;

  rc = RunCommand({COOPCTL_BINARY, "--socket", daemon_->socket_path(), "specialize", "block_load",
                   "--user-type", "12,4", "--threads", "64", "--items", "2", "--algorithm",
                   "direct", "--arch", "sm_90", "--json"},
                  &out, &err);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(out.find("\"user_type\":{\"size\":12,\"align\":4}"), std::string::npos) << out;
  const size_t defs = out.find("\"type_definitions\":\"");
  ASSERT_NE(defs, std::string::npos) << out;
  EXPECT_NE(out.compare(defs, 21, "\"type_definitions\":\"\""), 0)
      << "a user type's struct is defined: " << out;
}

TEST_F(SharedDaemon, CoopctlJsonContract) {
  std::string out, err;
  int rc = RunCommand(
      {COOPCTL_BINARY, "--socket", daemon_->socket_path(), "specialize", "block_reduce", "--method",
       "sum", "--dtype", "float32", "--threads", "256", "--arch", "sm_90", "--json"},
      &out, &err);
  ASSERT_EQ(rc, 0) << err;
  auto reference = Client().Specialize(BlockReduceF32());
  ASSERT_TRUE(reference);
  for (const std::string& needle :
       {std::string("\"key\":\"") + reference->key + "\"", std::string("\"origin\":\""),
        std::string("\"compile_ms\":"),
        "\"ltoir_bytes\":" + std::to_string(reference->ltoir.size()),
        "\"temp_storage\":{\"bytes\":" + std::to_string(reference->temp_storage_bytes) +
            ",\"align\":" + std::to_string(reference->temp_storage_align) + "}",
        "\"entries\":[{\"symbol\":\"" + reference->entries[0].symbol + "\",\"declaration\":",
        std::string("\"toolchain\":{\"nvrtc\":\"")}) {
    EXPECT_NE(out.find(needle), std::string::npos) << "missing " << needle << " in " << out;
  }
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one JSON object on one line";

  // --out writes the LTO-IR and a header with the declarations.
  TempDir out_dir;
  rc = RunCommand(
      {COOPCTL_BINARY, "--socket", daemon_->socket_path(), "specialize", "block_reduce", "--dtype",
       "float32", "--threads", "256", "--arch", "sm_90", "--out", out_dir.path()},
      &out, &err);
  ASSERT_EQ(rc, 0) << err;
  const std::string base = out_dir.path() + "/" + reference->entries[0].symbol;
  std::ifstream ltoir(base + ".ltoir", std::ios::binary), header(base + ".h");
  ASSERT_TRUE(ltoir && header) << out;
  std::stringstream l, h;
  l << ltoir.rdbuf();
  h << header.rdbuf();
  EXPECT_EQ(l.str(), reference->ltoir);
  EXPECT_NE(h.str().find(reference->entries[0].declaration), std::string::npos) << h.str();

  // A bad request exits non-zero with one line on stderr.
  rc = RunCommand({COOPCTL_BINARY, "--socket", daemon_->socket_path(), "specialize", "block_reduce",
                   "--dtype", "float32", "--threads", "0", "--arch", "sm_90"},
                  &out, &err);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(err,
            "coopctl: INVALID_ARGUMENT: block_reduce: block.x (threads) must be 1..1024, got 0\n");
  EXPECT_TRUE(out.empty()) << out;
}

TEST_F(SharedDaemon, CoopctlStatsJson) {
  std::string out, err;
  int rc = RunCommand({COOPCTL_BINARY, "--socket", daemon_->socket_path(), "stats", "--json"}, &out,
                      &err);
  ASSERT_EQ(rc, 0) << err;
  for (const char* key : {"\"requests\":", "\"memory_hits\":", "\"disk_hits\":", "\"misses\":",
                          "\"compiles\":", "\"disk_entries\":", "\"toolchain\":"}) {
    EXPECT_NE(out.find(key), std::string::npos) << key << " in " << out;
  }
}

// ---- Tests that own their daemon -------------------------------------------------------------

TEST(Daemon, RestartServesTheSameRequestFromDisk) {
  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock", cache = dir.path() + "/cache";
  std::string key, ltoir, error;
  {
    CoopdProcess d(socket, cache);
    ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
    auto a = d.MakeClient().Specialize(BlockReduceF32());
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->origin, coop::Origin::kCompiled);
    key = a->key;
    ltoir = a->ltoir;
    ASSERT_EQ(d.Stop(SIGTERM), 0) << d.Log();
  }
  CoopdProcess d(socket, cache);
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  auto client = d.MakeClient();
  auto a = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->origin, coop::Origin::kDisk);
  EXPECT_EQ(a->key, key);
  EXPECT_EQ(a->ltoir, ltoir);
  auto stats = client.GetStats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->compiles, 0u);
  EXPECT_EQ(stats->disk_hits, 1u);
  // Served from disk once, the entry is now in memory.
  auto again = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->origin, coop::Origin::kMemory);
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

TEST(Daemon, RefusesToStartWhenAnotherOwnsTheSocket) {
  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock";
  std::string error;
  CoopdProcess first(socket, dir.path() + "/cache1");
  ASSERT_TRUE(first.Start(&error) && first.WaitReady(120s, &error)) << error;
  CoopdProcess second(socket, dir.path() + "/cache2");
  ASSERT_TRUE(second.Start(&error)) << error;
  EXPECT_EQ(second.WaitExit(60s), 1);
  EXPECT_NE(second.Log().find("another coopd (pid " + std::to_string(first.pid()) +
                              ") already owns " + socket),
            std::string::npos)
      << second.Log();
  // The first daemon is unaffected.
  EXPECT_TRUE(first.MakeClient().GetStats());
  EXPECT_EQ(first.Stop(SIGTERM), 0);
}

TEST(Daemon, ReplacesAStaleSocketLeftByAKilledDaemon) {
  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock";
  std::string error;
  {
    CoopdProcess d(socket, dir.path() + "/cache");
    ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
    EXPECT_EQ(d.Stop(SIGKILL), 128 + SIGKILL);
  }
  struct stat st;
  ASSERT_EQ(stat(socket.c_str(), &st), 0) << "SIGKILL leaves the socket file behind";
  CoopdProcess d(socket, dir.path() + "/cache");
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

TEST(Daemon, SigtermFinishesRequestsInFlight) {
  for (int sig : {SIGTERM, SIGINT}) {
    TempDir dir;
    std::string error;
    // A grace no compile on a loaded machine reaches, so the outcome never depends on speed
    // (the 5 s default is a deployment choice, tested by the SIGTERM-under-load bench).
    CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache", {"--shutdown-grace", "600"});
    ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
    auto client = d.MakeClient();
    auto pending = StartFirstCompile(client);  // seconds of work in flight
    d.Signal(sig);
    auto a = pending.get();
    ASSERT_TRUE(a) << strsignal(sig) << ": " << a.error().message << "\n" << d.Log();
    EXPECT_EQ(a->origin, coop::Origin::kCompiled);
    EXPECT_EQ(d.WaitExit(120s), 0) << d.Log();
    EXPECT_NE(d.Log().find("finishing 1 request(s) in flight"), std::string::npos) << d.Log();
    struct stat st;
    EXPECT_NE(stat(d.socket_path().c_str(), &st), 0) << "socket removed on clean exit";
  }
}

// A pre-warm that is still building its PCH when SIGTERM comes is stopped, not waited for: no
// request needs it, and under load it could hold the exit for as long as the compile timeout.
// The worker is stopped (SIGSTOP) while the pre-warm runs on it, so it never finishes by itself;
// a shutdown that waited for it would wait out --compile-timeout (600 s).
TEST(Daemon, SigtermStopsAPreWarmInsteadOfWaitingForIt) {
  TempDir dir;
  std::string error;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--prewarm", "sm_90", "--compile-timeout", "600"});
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  StoppedWorkers stopped(d.pid());
  ASSERT_EQ(stopped.size(), 1u) << "one compile worker";
  // The pre-warm is queued just after readiness; once picked it stays busy on the stopped worker.
  auto client = d.MakeClient();
  bool busy = false;
  for (int i = 0; i < 600 && !busy; ++i) {
    auto st = client.GetStats();
    ASSERT_TRUE(st.ok()) << st.error().message;
    busy = st->workers_busy == 1;
    if (!busy) std::this_thread::sleep_for(100ms);
  }
  if (!busy) GTEST_SKIP() << "the pre-warm finished before its worker was stopped";
  d.Signal(SIGTERM);
  EXPECT_EQ(d.WaitExit(120s), 0) << d.Log();
  EXPECT_NE(d.Log().find("pre-warm for sm_90 failed"), std::string::npos) << d.Log();
  EXPECT_NE(d.Log().find("stopped"), std::string::npos) << d.Log();
}

TEST(Daemon, ClientReportsAnUnreachableDaemonAsUnavailable) {
  TempDir dir;
  coop::ClientOptions options;
  options.socket_path = dir.path() + "/nobody.sock";
  options.timeout = 2s;
  coop::Client client(options);
  auto a = client.Specialize(BlockReduceF32());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kUnavailable);
  EXPECT_NE(a.error().message.find("is it running?"), std::string::npos);
}

}  // namespace
}  // namespace coopd_test
