// Integration tests of LLVM bitcode artifacts (FORMAT_BITCODE): a real coopd with Debian's
// clang-22 as its second backend, the real client, coopctl, and LLVM's own tools (llvm-dis-22,
// from llvm-22) to read what coopd serves.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "coop/client.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kMagic[] = "BC\xC0\xDE";

bool IsBitcode(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4, kMagic) == 0;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The textual IR of `bitcode`, by llvm-dis-22 (fails the test when it cannot read it).
std::string Disassemble(const std::string& bitcode, const std::string& dir) {
  EXPECT_TRUE(fs::exists(LLVM_DIS_BINARY))
      << "llvm-dis-22 not found (" << LLVM_DIS_BINARY << "): apt-get install llvm-22";
  const std::string bc = dir + "/module.bc";
  WriteFile(bc, bitcode);
  std::string out, err;
  EXPECT_EQ(RunCommand({LLVM_DIS_BINARY, bc, "-o", "-"}, &out, &err), 0) << err;
  return out;
}

std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

// The name of the function a `define` line defines.
std::string DefinedName(const std::string& define) {
  const size_t at = define.find('@');
  const size_t end = define.find('(', at);
  return define.substr(at + 1, end - at - 1);
}

// What libNVVM-based bitcode linkers (CuTe DSL) need of a module: optimized (-O0 code carries
// optnone and explicit alignment, which CuTe DSL 4.8.1's libNVVM rejects), nothing external but
// `entries`, no alignment on functions. Returns the number of definitions checked.
int ExpectHygienic(const std::string& ir, const std::set<std::string>& entries,
                   const std::string& what) {
  EXPECT_NE(ir.find("target triple = \"nvptx64-nvidia-cuda\""), std::string::npos) << what;
  EXPECT_EQ(ir.find("optnone"), std::string::npos) << what << ": unoptimized code\n" << ir;
  int defined = 0;
  std::set<std::string> external;
  for (const auto& d : LinesStartingWith(ir, "define ")) {
    ++defined;
    const std::string name = DefinedName(d);
    const bool local = d.rfind("define internal ", 0) == 0 || d.rfind("define private ", 0) == 0;
    if (!local) external.insert(name);
    EXPECT_EQ(d.find(" align ", d.rfind(')')), std::string::npos)
        << what << ": a function with explicit alignment: " << d;
  }
  EXPECT_EQ(external, entries) << what << ": external definitions other than the entries\n" << ir;
  for (const auto& g : LinesStartingWith(ir, "@")) {
    if (g.find(" = external ") != std::string::npos) continue;  // a declaration
    EXPECT_TRUE(g.find(" = internal ") != std::string::npos ||
                g.find(" = private ") != std::string::npos)
        << what << ": an external global: " << g;
  }
  return defined;
}

std::set<std::string> Symbols(const coop::Artifact& a) {
  std::set<std::string> out;
  for (const auto& e : a.entries) out.insert(e.symbol);
  return out;
}

class BitcodeDaemon : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new TestDaemon();
    ASSERT_TRUE(daemon_->started);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  coop::Client Client() { return daemon_->Client(); }
  static TestDaemon* daemon_;
};
TestDaemon* BitcodeDaemon::daemon_ = nullptr;

coop::Spec ReduceF32Sm90a() {
  coop::Spec s = BlockReduceF32();
  s.arch = "sm_90a";
  return s;
}

TEST_F(BitcodeDaemon, EachFormatAloneOrBothInOneReply) {
  auto client = Client();
  auto ltoir = client.Specialize(ReduceF32Sm90a());
  ASSERT_TRUE(ltoir) << ltoir.error().message;
  EXPECT_FALSE(ltoir->ltoir.empty());
  EXPECT_TRUE(ltoir->bitcode.key.empty()) << "LTO-IR is the default, and alone";
  EXPECT_TRUE(ltoir->bitcode.data.empty());

  auto bitcode = client.Specialize(ReduceF32Sm90a(), coop::Formats::kBitcode);
  ASSERT_TRUE(bitcode) << bitcode.error().message;
  EXPECT_TRUE(bitcode->ltoir.empty()) << "bitcode alone carries no LTO-IR";
  EXPECT_TRUE(IsBitcode(bitcode->bitcode.data));
  EXPECT_EQ(bitcode->bitcode.origin, coop::Origin::kCompiled);
  EXPECT_EQ(bitcode->key, bitcode->bitcode.key) << "the artifact's key is its one format's";
  EXPECT_NE(bitcode->bitcode.key, ltoir->key) << "bitcode is an entry of its own";
  EXPECT_NE(bitcode->toolchain.clang_version.find("clang version 22."), std::string::npos)
      << bitcode->toolchain.clang_version;
  EXPECT_TRUE(ltoir->toolchain.clang_version.empty()) << "LTO-IR does not involve clang";

  // The same entry points, declared the same way, with the same temp storage.
  ASSERT_EQ(bitcode->entries.size(), ltoir->entries.size());
  for (size_t i = 0; i < ltoir->entries.size(); ++i) {
    EXPECT_EQ(bitcode->entries[i].symbol, ltoir->entries[i].symbol);
    EXPECT_EQ(bitcode->entries[i].declaration, ltoir->entries[i].declaration);
  }
  EXPECT_EQ(bitcode->temp_storage_bytes, ltoir->temp_storage_bytes);
  EXPECT_EQ(bitcode->temp_storage_align, ltoir->temp_storage_align);
  EXPECT_EQ(bitcode->temp_storage_bytes, 44u);

  auto both = client.Specialize(ReduceF32Sm90a(), coop::Formats::kBoth);
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->key, ltoir->key);
  EXPECT_EQ(both->ltoir, ltoir->ltoir);
  EXPECT_EQ(both->bitcode.key, bitcode->bitcode.key);
  EXPECT_EQ(both->bitcode.data, bitcode->bitcode.data);
  EXPECT_EQ(both->origin, coop::Origin::kMemory);
  EXPECT_EQ(both->bitcode.origin, coop::Origin::kMemory);
}

TEST_F(BitcodeDaemon, BitcodeIsOptimizedAndExportsOnlyTheEntries) {
  auto client = Client();
  TempDir dir;
  // One of each kind of primitive: block collectives with and without items, sorts with and
  // without a comparator, a load with a warp algorithm, a logical warp.
  auto make = [](const char* family, const char* method, const char* dtype, uint32_t items) {
    coop::Spec s = ReduceF32Sm90a();
    s.family = family;
    s.method = method;
    s.dtype = dtype;
    s.items_per_thread = items;
    return s;
  };
  std::vector<coop::Spec> specs = {ReduceF32Sm90a(),
                                   make("block_scan", "exclusive_sum", "int32", 4),
                                   make("block_radix_sort", "sort", "uint32", 4),
                                   make("block_merge_sort", "sort", "float32", 4),
                                   make("block_load", "load_guarded", "float32", 8),
                                   make("warp_reduce", "max", "float64", 1)};
  specs[1].scan.with_aggregate = true;
  specs[3].op = "less";
  specs[3].block = {128};
  specs[4].algorithm = "warp_transpose";
  specs[5].block = {};
  specs[5].warp_threads = 16;
  specs[5].arch = "sm_90";
  for (const auto& s : specs) {
    auto a = client.Specialize(s, coop::Formats::kBitcode);
    ASSERT_TRUE(a) << s.family << ": " << a.error().message;
    const std::string ir = Disassemble(a->bitcode.data, dir.path());
    EXPECT_GE(ExpectHygienic(ir, Symbols(*a), s.family), static_cast<int>(a->entries.size()));
    EXPECT_NE(ir.find("\"target-cpu\"=\"" + s.arch + "\""), std::string::npos) << s.family;
    // The layout globals the unit defines for the layout query are not part of the module.
    EXPECT_EQ(ir.find("__temp_bytes"), std::string::npos) << s.family;
  }
  // A bundle: one module, every part's entries external.
  auto bundle = client.SpecializeBundle({specs[0], specs[1]}, coop::Formats::kBitcode);
  ASSERT_TRUE(bundle) << bundle.error().message;
  ExpectHygienic(Disassemble(bundle->bitcode.data, dir.path()), Symbols(*bundle), "bundle");
}

// The bitcode links into a kernel that clang compiles, inlines, and assembles with ptxas: what a
// frontend that links bitcode libraries does (CuTe DSL uses its own LLVM and libNVVM).
TEST_F(BitcodeDaemon, LinksIntoAClangKernelWithTheEntryInlined) {
  auto a = Client().Specialize(ReduceF32Sm90a(), coop::Formats::kBitcode);
  ASSERT_TRUE(a) << a.error().message;
  TempDir dir;
  WriteFile(dir.path() + "/artifact.bc", a->bitcode.data);
  const auto& e = a->entries.at(0);
  WriteFile(dir.path() + "/kernel.cu",
            e.declaration +
                "\nextern \"C\" __global__ void __launch_bounds__(256) sums(const "
                "float* in, float* out) {\n  __shared__ __align__(" +
                std::to_string(a->temp_storage_align) + ") unsigned char temp[" +
                std::to_string(a->temp_storage_bytes) + "];\n  float s = " + e.symbol +
                "(temp, in[blockIdx.x * 256 + threadIdx.x]);\n  if (threadIdx.x == 0) "
                "out[blockIdx.x] = s;\n}\n");
  std::string out, err;
  ASSERT_EQ(RunCommand({CLANG_BINARY, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90a",
                        "-fcuda-short-ptr", "-O3", "-nocudalib", "-Wno-unknown-cuda-version",
                        "--cuda-path=" CUDA_INCLUDE_DIR "/..", "-S", "-Xclang",
                        "-mlink-bitcode-file", "-Xclang", dir.path() + "/artifact.bc",
                        dir.path() + "/kernel.cu", "-o", dir.path() + "/kernel.ptx"},
                       &out, &err),
            0)
      << err;
  const std::string ptx = ReadFile(dir.path() + "/kernel.ptx");
  // The kernel's body: BlockReduce's shuffles and barrier inlined, no call. (The entry's own
  // definition stays beside it, external, as a library function does until a final link.)
  const size_t begin = ptx.find(".entry sums");
  ASSERT_NE(begin, std::string::npos) << ptx;
  const std::string kernel = ptx.substr(begin, ptx.find("\n}\n", begin) - begin);
  EXPECT_EQ(kernel.find("call"), std::string::npos) << "the entry was not inlined:\n" << kernel;
  EXPECT_NE(kernel.find("shfl.sync"), std::string::npos) << "BlockReduce's shuffles\n" << kernel;
  EXPECT_NE(kernel.find("bar.sync"), std::string::npos) << kernel;
  ASSERT_EQ(RunCommand({PTXAS_BINARY, "-arch=sm_90a", dir.path() + "/kernel.ptx", "-o",
                        dir.path() + "/kernel.cubin"},
                       &out, &err),
            0)
      << err;
  EXPECT_GT(fs::file_size(dir.path() + "/kernel.cubin"), 0u);
}

// Both compilers report the layout nvcc does, for every row of the ground-truth table (coopd
// refuses bitcode whose layouts differ from NVRTC's; the test compares them with nvcc's).
TEST_F(BitcodeDaemon, TempStorageOfBothBackendsMatchesWhatNvccReports) {
  auto rows = LoadLayoutTruth(LAYOUT_TRUTH_BINARY);
  ASSERT_GE(rows.size(), 20u);
  auto client = Client();
  for (const auto& row : rows) {
    auto a = client.Specialize(row.spec, coop::Formats::kBoth);
    ASSERT_TRUE(a) << row.line << ": " << a.error().message;
    ASSERT_TRUE(IsBitcode(a->bitcode.data)) << row.line;
    EXPECT_EQ(a->temp_storage_bytes, row.bytes) << row.line;
    EXPECT_EQ(a->temp_storage_align, row.align) << row.line;
  }
}

TEST_F(BitcodeDaemon, ExplainGivesTheBitcodeKeyItsOwnComponents) {
  auto client = Client();
  coop::Spec s = ReduceF32Sm90a();
  s.method = "max";
  auto before = client.Explain(s, coop::Formats::kBitcode);
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_FALSE(before->cached);
  auto a = client.Specialize(s, coop::Formats::kBitcode);
  ASSERT_TRUE(a) << a.error().message;
  auto e = client.Explain(s, coop::Formats::kBitcode);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_TRUE(e->cached);
  EXPECT_EQ(e->key, a->bitcode.key);
  std::map<std::string, std::string> values;
  for (const auto& c : e->components) values[c.name] = c.value;
  EXPECT_EQ(values.count("nvrtc"), 0u);
  EXPECT_EQ(values["format"], "bitcode");
  EXPECT_NE(values["clang"].find("clang version 22."), std::string::npos) << values["clang"];
  EXPECT_NE(values["options"].find("--cuda-gpu-arch=sm_90a"), std::string::npos);
  EXPECT_NE(values["options"].find("-O3"), std::string::npos);
  EXPECT_NE(values["options"].find("-I<coopd device headers>"), std::string::npos);
  auto lto = client.Explain(s);
  ASSERT_TRUE(lto) << lto.error().message;
  EXPECT_NE(lto->key, e->key);
  EXPECT_TRUE(lto->cached) << "the LTO-IR the bitcode was checked against is cached too";
  auto both = client.Explain(s, coop::Formats::kBoth);
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(both.error().message.find("formats must name one format"), std::string::npos)
      << both.error().message;
}

TEST_F(BitcodeDaemon, UserOperatorsFromSourceComeAsBitcodeToo) {
  auto client = Client();
  coop::Spec s = ReduceF32Sm90a();
  s.method = "reduce";
  s.user_op.name = "clamp_add";
  s.user_op.source =
      "static __device__ float clamp(float v) { return fminf(v, 100.0f); }\n"
      "__device__ float clamp_add(float a, float b) { return clamp(a + b); }\n";
  auto a = client.Specialize(s, coop::Formats::kBoth);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->link_inputs.size(), 1u);
  const auto& op = a->link_inputs[0];
  EXPECT_FALSE(op.ltoir.empty());
  ASSERT_TRUE(IsBitcode(op.bitcode));
  EXPECT_FALSE(op.bitcode_key.empty());
  TempDir dir;
  ExpectHygienic(Disassemble(op.bitcode, dir.path()), {op.symbol}, "operator");
  // The primitive's module declares the operator and leaves it to the link.
  const std::string ir = Disassemble(a->bitcode.data, dir.path());
  EXPECT_NE(ir.find("declare"), std::string::npos);
  EXPECT_NE(ir.find("@" + op.symbol), std::string::npos) << ir;

  // An operator given as LTO-IR cannot become bitcode.
  coop::Spec given = s;
  given.user_op.name = "my_add";
  given.user_op.source.clear();
  given.user_op.ltoir =
      CompileKernel("extern \"C\" __device__ float my_add(float a, float b) { return a + b; }\n",
                    false, "sm_90a");
  auto refused = client.Specialize(given, coop::Formats::kBitcode);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("block_reduce: op.user.ltoir: FORMAT_BITCODE cannot use "
                                         "an operator given as LTO-IR"),
            std::string::npos)
      << refused.error().message;
  auto lto = client.Specialize(given);
  EXPECT_TRUE(lto) << "LTO-IR alone still takes it: " << lto.error().message;
}

TEST_F(BitcodeDaemon, AnOperatorClangCannotCompileIsTheCallersError) {
  coop::Spec s = ReduceF32Sm90a();
  s.method = "reduce";
  s.user_op.name = "broken";
  s.user_op.source = "__device__ float broken(float a, float b) { return a + ; }\n";
  auto a = Client().Specialize(s, coop::Formats::kBitcode);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(a.error().message.find("op.user.source (broken) does not compile"), std::string::npos)
      << a.error().message;
  EXPECT_NE(a.error().message.find("broken.cu"), std::string::npos)
      << "the log points at the user's file: " << a.error().message;
}

TEST_F(BitcodeDaemon, StatsAndCatalogSayWhatClangDid) {
  auto client = Client();
  ASSERT_TRUE(client.Specialize(ReduceF32Sm90a(), coop::Formats::kBitcode));
  auto s = client.GetStats();
  ASSERT_TRUE(s);
  EXPECT_GE(s->bitcode_compiles, 1u);
  EXPECT_NE(s->toolchain.clang_version.find("clang version 22."), std::string::npos);
  auto c = client.GetCatalog();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->bitcode_unavailable.empty()) << c->bitcode_unavailable;
  for (const char* arch : {"sm_80", "sm_90", "sm_90a", "sm_100a"}) {
    EXPECT_NE(std::find(c->bitcode_archs.begin(), c->bitcode_archs.end(), arch),
              c->bitcode_archs.end())
        << arch;
  }
}

TEST(Bitcode, FormatsAreCheckedAndNamed) {
  TestDaemon d;
  ASSERT_TRUE(d.started);
  // The C++ client cannot send a bad list; coopctl's flag is the user-facing check.
  std::string out, err;
  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", d.process.socket_path(), "specialize", "block_reduce",
                  "--dtype", "float32", "--threads", "256", "--arch", "sm_90", "--format", "ptx"},
                 &out, &err),
      2);
  EXPECT_NE(err.find("--format: must be ltoir, bitcode or both, got \"ptx\""), std::string::npos)
      << err;
}

TEST(Bitcode, IsCachedOnDiskVerifiedAndNeverServedDamaged) {
  TempDir dir;
  std::string bytes, key;
  {
    TestDaemon d(dir.path(), {});
    ASSERT_TRUE(d.started);
    auto a = d.Client().Specialize(ReduceF32Sm90a(), coop::Formats::kBitcode);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->bitcode.origin, coop::Origin::kCompiled);
    bytes = a->bitcode.data;
    key = a->bitcode.key;
  }
  TestDaemon d(dir.path(), {"--memory-cache-mb", "0"});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  auto hit = client.Specialize(ReduceF32Sm90a(), coop::Formats::kBitcode);
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_EQ(hit->bitcode.origin, coop::Origin::kDisk) << "a restart serves it from disk";
  EXPECT_EQ(hit->bitcode.data, bytes);
  EXPECT_EQ(hit->bitcode.key, key);
  EXPECT_EQ(d.Stats().compiles, 0u);

  auto report = client.Verify();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_GE(report->entries_checked, 2u) << "the bitcode and the LTO-IR it was checked against";
  EXPECT_EQ(report->bad_removed, 0u);

  // Damage the bitcode's blob (the smallest; the LTO-IR's is ~135 KB): never served, recompiled.
  Sqlite3(dir.path() + "/cache/cache.db",
          "UPDATE blobs SET record = substr(record, 1, 100) || X'DEADBEEF' || substr(record, 105) "
          "WHERE raw_bytes = (SELECT MIN(raw_bytes) FROM blobs);");
  auto after = client.Specialize(ReduceF32Sm90a(), coop::Formats::kBitcode);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->bitcode.origin, coop::Origin::kCompiled);
  EXPECT_EQ(after->bitcode.data, bytes) << "the same bytes again: compiles are deterministic";
  EXPECT_EQ(d.Stats().corruptions, 1u);
}

TEST(Bitcode, WithoutClangABitcodeRequestNamesThePackageToInstall) {
  TestDaemon d({"--clang", "/nonexistent/clang++-22"});
  ASSERT_TRUE(d.started) << "LTO-IR needs no clang: coopd starts without one";
  auto client = d.Client();
  auto a = client.Specialize(BlockReduceF32(), coop::Formats::kBitcode);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kFailedPrecondition);
  EXPECT_NE(
      a.error().message.find("bitcode needs clang-22: apt-get install clang-22 (or --clang PATH)"),
      std::string::npos)
      << a.error().message;
  EXPECT_NE(a.error().message.find("/nonexistent/clang++-22"), std::string::npos)
      << a.error().message;
  auto both = client.Specialize(BlockReduceF32(), coop::Formats::kBoth);
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().code, coop::ErrorCode::kFailedPrecondition);
  auto ltoir = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(ltoir) << ltoir.error().message;
  auto c = client.GetCatalog();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->bitcode_archs.empty());
  EXPECT_NE(c->bitcode_unavailable.find("apt-get install clang-22"), std::string::npos);
  auto s = client.GetStats();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->toolchain.clang_version.empty());
  EXPECT_EQ(s->invalid_requests, 0u) << "a missing compiler is not a bad request";
}

TEST(Bitcode, CoopctlWritesBitcodeFilesForFormatBitcodeAndBoth) {
  TestDaemon d;
  ASSERT_TRUE(d.started);
  TempDir out_dir;
  auto run = [&](const std::string& format, const std::string& sub) {
    std::string out, err;
    EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", d.process.socket_path(), "specialize",
                          "block_reduce", "--dtype", "float32", "--threads", "256", "--arch",
                          "sm_90a", "--format", format, "--out", out_dir.path() + "/" + sub},
                         &out, &err),
              0)
        << err;
    return out;
  };
  const std::string text = run("bitcode", "bc");
  EXPECT_NE(text.find("bitcode:"), std::string::npos) << text;
  EXPECT_EQ(text.find("LTO-IR:"), std::string::npos) << text;
  std::set<std::string> exts;
  for (const auto& f : fs::directory_iterator(out_dir.path() + "/bc")) {
    exts.insert(f.path().extension().string());
    if (f.path().extension() == ".bc") {
      EXPECT_TRUE(IsBitcode(ReadFile(f.path().string())));
    }
  }
  EXPECT_EQ(exts, (std::set<std::string>{".bc", ".h"}));
  run("both", "both");
  exts.clear();
  for (const auto& f : fs::directory_iterator(out_dir.path() + "/both")) {
    exts.insert(f.path().extension().string());
  }
  EXPECT_EQ(exts, (std::set<std::string>{".bc", ".h", ".ltoir"}));

  std::string out, err;
  ASSERT_EQ(RunCommand({COOPCTL_BINARY, "--socket", d.process.socket_path(), "specialize",
                        "block_reduce", "--dtype", "float32", "--threads", "256", "--arch",
                        "sm_90a", "--format", "both", "--json"},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("\"bitcode\":{\"key\":"), std::string::npos) << out;
  EXPECT_NE(out.find("\"clang\":\""), std::string::npos) << out;
}

}  // namespace
}  // namespace coopd_test
