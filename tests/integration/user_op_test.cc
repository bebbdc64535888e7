// User operators ("typed scalar callbacks") end to end: a real coopd compiles or takes the
// frontend's operator, the primitive calls it, and the artifact links with a kernel (and its
// operator LTO-IR) into an sm_90 cubin with real NVRTC and nvJitLink.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"
#include "server/engine/compiler.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

constexpr char kClampAdd[] =
    "// a user's operator file\n"
    "__device__ float clamp_add(float a, float b) {\n"
    "  return fminf(a + b, 1000.0f);\n"
    "}\n";

class UserOperators : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new TestDaemon(); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static coop::Client Client() { return daemon_->Client(); }
  static uint64_t Compiles() { return daemon_->Stats().compiles; }

  static coop::Spec Reduce(const coop::UserOperator& op) {
    coop::Spec s;
    s.family = "block_reduce";
    s.method = "reduce";
    s.dtype = "float32";
    s.block = {128};
    s.arch = "sm_90";
    s.user_op = op;
    return s;
  }
  static coop::Spec Scan(const coop::UserOperator& op) {
    coop::Spec s = Reduce(op);
    s.family = "block_scan";
    s.method = "inclusive_scan";
    return s;
  }
  static coop::UserOperator Source(const std::string& name, const std::string& source) {
    coop::UserOperator op;
    op.name = name;
    op.source = source;
    return op;
  }

  static TestDaemon* daemon_;
};
TestDaemon* UserOperators::daemon_ = nullptr;

// A kernel that reduces and scans 128-thread blocks through the two artifacts' entries.
std::string ReduceScanKernel(const coop::Artifact& reduce, const coop::Artifact& scan,
                             const std::string& extra_arg = "") {
  auto temp = [](const coop::Artifact& a, const char* name) {
    return "  __shared__ __align__(" + std::to_string(a.temp_storage_align) + ") unsigned char " +
           name + "[" + std::to_string(a.temp_storage_bytes) + "];\n";
  };
  return reduce.entries.at(0).declaration + "\n" + scan.entries.at(0).declaration + "\n" +
         "extern \"C\" __global__ void reduce_scan(const float* in, float* sums, float* scans) "
         "{\n" +
         temp(reduce, "t_reduce") + temp(scan, "t_scan") +
         "  float scale = 2.0f; (void)scale;\n"
         "  float v = in[blockIdx.x * 128 + threadIdx.x];\n"
         "  float r = " +
         reduce.entries[0].symbol + "(t_reduce, v" + extra_arg +
         ");\n"
         "  if (threadIdx.x == 0) sums[blockIdx.x] = r;\n"
         "  scans[blockIdx.x * 128 + threadIdx.x] = " +
         scan.entries[0].symbol + "(t_scan, v" + extra_arg +
         ");\n"
         "}\n";
}

absl::StatusOr<std::string> LinkAll(const std::vector<std::string>& modules) {
  std::vector<coopd::LinkInput> inputs;
  for (size_t i = 0; i < modules.size(); ++i) {
    inputs.push_back({coopd::LinkInput::kLtoIr, "module" + std::to_string(i), modules[i]});
  }
  return coopd::LinkCubin(inputs, "sm_90", {"-optimize-unused-variables"});
}

TEST_F(UserOperators, SourceOperatorServesBlockReduceAndBlockScanFromOneCompile) {
  auto client = Client();
  const auto op = Source("clamp_add", kClampAdd);
  const uint64_t compiles_before = Compiles();
  auto reduce = client.Specialize(Reduce(op));
  ASSERT_TRUE(reduce) << reduce.error().message;
  auto scan = client.Specialize(Scan(op));
  ASSERT_TRUE(scan) << scan.error().message;
  // The operator compiled once (content-named, cached under its own key), then the two
  // primitives: three compiles.
  EXPECT_EQ(Compiles() - compiles_before, 3u);

  ASSERT_EQ(reduce->link_inputs.size(), 1u);
  ASSERT_EQ(scan->link_inputs.size(), 1u);
  const auto& in = reduce->link_inputs[0];
  EXPECT_EQ(in.symbol.rfind("coop_op_", 0), 0u) << in.symbol;
  EXPECT_EQ(in.symbol, scan->link_inputs[0].symbol);
  EXPECT_EQ(in.key, scan->link_inputs[0].key);
  EXPECT_EQ(in.ltoir, scan->link_inputs[0].ltoir);
  EXPECT_FALSE(in.key.empty());
  // The resolved spec names the operator by digest and carries no source.
  EXPECT_EQ(reduce->spec.user_op.name, "clamp_add");
  EXPECT_TRUE(reduce->spec.user_op.source.empty());
  EXPECT_EQ(reduce->spec.user_op.digest.size(), 65u);
  EXPECT_NE(reduce->source.find(in.symbol), std::string::npos);

  const std::string kernel = CompileKernel(ReduceScanKernel(*reduce, *scan));
  ASSERT_FALSE(kernel.empty());
  auto cubin = LinkAll({kernel, reduce->ltoir, scan->ltoir, in.ltoir});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_EQ(cubin->substr(1, 3), "ELF");
  // Without the operator's LTO-IR the link fails on its symbol: the artifact really calls it.
  auto unresolved = LinkAll({kernel, reduce->ltoir, scan->ltoir});
  ASSERT_FALSE(unresolved.ok());
  EXPECT_NE(std::string(unresolved.status().message()).find(in.symbol), std::string::npos)
      << unresolved.status();

  // coopd's Link adds the operator by itself.
  coop::LinkRequest link;
  link.arch = "sm_90";
  link.modules = {{coop::LinkInputKind::kLtoIr, "kernel", kernel}};
  link.artifact_keys = {reduce->key, scan->key};
  auto linked = client.Link(link);
  ASSERT_TRUE(linked) << linked.error().message;
  EXPECT_EQ(linked->cubin.substr(1, 3), "ELF");

  // A different body is a different operator and a different primitive key.
  auto other = client.Specialize(
      Reduce(Source("clamp_add", std::string(kClampAdd) + "// a comment changes the content\n")));
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_NE(other->key, reduce->key);
  EXPECT_NE(other->link_inputs.at(0).symbol, in.symbol);
}

TEST_F(UserOperators, LtoIrOperatorServesBlockReduceAndBlockScan) {
  auto client = Client();
  coop::UserOperator op;
  op.name = "frontend_max";
  op.ltoir = CompileKernel(
      "extern \"C\" __device__ float frontend_max(float a, float b) { return a > b ? a : b; }\n");
  ASSERT_FALSE(op.ltoir.empty());
  auto reduce = client.Specialize(Reduce(op));
  ASSERT_TRUE(reduce) << reduce.error().message;
  auto scan = client.Specialize(Scan(op));
  ASSERT_TRUE(scan) << scan.error().message;
  ASSERT_EQ(reduce->link_inputs.size(), 1u);
  EXPECT_EQ(reduce->link_inputs[0].symbol, "frontend_max");
  EXPECT_TRUE(reduce->link_inputs[0].key.empty());
  EXPECT_EQ(reduce->link_inputs[0].ltoir, op.ltoir);

  const std::string kernel = CompileKernel(ReduceScanKernel(*reduce, *scan));
  auto cubin = LinkAll({kernel, reduce->ltoir, scan->ltoir, op.ltoir});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  auto unresolved = LinkAll({kernel, reduce->ltoir, scan->ltoir});
  ASSERT_FALSE(unresolved.ok());
  EXPECT_NE(std::string(unresolved.status().message()).find("frontend_max"), std::string::npos);
}

TEST_F(UserOperators, LtoIrThatDoesNotDefineTheOperatorIsRejected) {
  auto client = Client();
  // Each bad LTO-IR gets INVALID_ARGUMENT with its own reason.
  auto expect_rejected = [&](const std::string& ltoir, const std::string& reason) {
    coop::UserOperator op;
    op.name = "frontend_min";
    op.ltoir = ltoir;
    auto a = client.Specialize(Reduce(op));
    ASSERT_FALSE(a) << reason;
    EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument) << a.error().message;
    EXPECT_NE(a.error().message.find(reason), std::string::npos) << a.error().message;
  };
  const std::string frontend_min =
      "extern \"C\" __device__ float frontend_min(float a, float b) { return a < b ? a : b; }\n";
  expect_rejected(CompileKernel("extern \"C\" __device__ float some_other_name(float a, float b) "
                                "{ return a; }\n"),
                  "op.user.name: the operator's LTO-IR does not define \"frontend_min\"");
  expect_rejected(CompileKernel(frontend_min, false, "sm_100"),
                  "op.user: the operator's LTO-IR does not link");
  expect_rejected("definitely not NVVM IR", "op.user: the operator's LTO-IR does not link");
  // The daemon is still up and serves the next request.
  EXPECT_TRUE(client.Specialize(Reduce(Source("clamp_add", kClampAdd))));
}

TEST_F(UserOperators, CompileErrorInUserSourcePointsAtTheUsersLines) {
  auto client = Client();
  auto a = client.Specialize(Reduce(Source("bad_add",
                                           "__device__ float bad_add(float a, float b) {\n"
                                           "  return a + undefined_thing;\n"
                                           "}\n")));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument);
  const std::string& m = a.error().message;
  EXPECT_NE(m.find("block_reduce: op.user.source (bad_add) does not compile for sm_90"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("bad_add.cu(2): error: identifier \"undefined_thing\" is undefined"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("coop_unit.cu("), std::string::npos) << m;
  EXPECT_EQ(m.find("prelude"), std::string::npos) << m;
}

TEST_F(UserOperators, SignatureMismatchesAreRejected) {
  auto client = Client();
  auto op = Source("clamp_add", kClampAdd);
  op.operand_dtypes = {"float64", "float64"};
  auto a = client.Specialize(Reduce(op));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.error().message,
            "block_reduce: op.user.operand_dtypes must be (float32, float32) for this method and "
            "dtype; got (float64, float64)");

  // The declared signature is checked against the function itself.
  a = client.Specialize(Reduce(
      Source("to_int", "__device__ int to_int(float a, float b) { return (int)(a + b); }\n")));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(a.error().message.find("op.user: to_int(float, float) must return float"),
            std::string::npos)
      << a.error().message;
}

TEST_F(UserOperators, StatefulOperatorGetsItsStateThroughEveryEntry) {
  auto client = Client();
  auto op = Source("scaled_add",
                   "__device__ float scaled_add(void* state, float a, float b) {\n"
                   "  return a + b * *static_cast<const float*>(state);\n"
                   "}\n");
  op.stateful = true;
  auto reduce = client.Specialize(Reduce(op));
  ASSERT_TRUE(reduce) << reduce.error().message;
  auto scan = client.Specialize(Scan(op));
  ASSERT_TRUE(scan) << scan.error().message;
  for (const auto* a : {&*reduce, &*scan}) {
    const std::string& decl = a->entries.at(0).declaration;
    EXPECT_NE(decl.find("void* op_state);"), std::string::npos) << decl;
  }
  const std::string kernel = CompileKernel(ReduceScanKernel(*reduce, *scan, ", &scale"));
  auto cubin = LinkAll({kernel, reduce->ltoir, scan->ltoir, reduce->link_inputs.at(0).ltoir});
  ASSERT_TRUE(cubin.ok()) << cubin.status();
}

TEST_F(UserOperators, ComparatorsAndFlagOperatorsReturnBool) {
  auto client = Client();
  coop::Spec sort;
  sort.family = "block_merge_sort";
  sort.method = "sort";
  sort.dtype = "float32";
  sort.block = {128};
  sort.items_per_thread = 4;
  sort.arch = "sm_90";
  sort.user_op = Source("by_magnitude",
                        "__device__ bool by_magnitude(float a, float b) { return fabsf(a) < "
                        "fabsf(b); }\n");
  auto a = client.Specialize(sort);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->link_inputs.size(), 1u);
  EXPECT_EQ(a->spec.user_op.result_dtype, "bool");
  EXPECT_NE(a->entries.at(0).description.find("by_magnitude"), std::string::npos);

  // A comparator that returns the value type is caught by the signature check.
  sort.user_op = Source("not_a_comparator",
                        "__device__ float not_a_comparator(float a, float b) { return a - b; }\n");
  a = client.Specialize(sort);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("not_a_comparator(float, float) must return bool"),
            std::string::npos)
      << a.error().message;

  coop::Spec flags;
  flags.family = "block_discontinuity";
  flags.method = "flag_heads";
  flags.dtype = "int32";
  flags.block = {64};
  flags.items_per_thread = 2;
  flags.arch = "sm_90";
  flags.user_op =
      Source("far_apart", "__device__ bool far_apart(int a, int b) { return abs(a - b) > 10; }\n");
  auto f = client.Specialize(flags);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->link_inputs.size(), 1u);
}

TEST_F(UserOperators, StatefulBlockPrefixCallbackReplacesTheRunningTotal) {
  auto client = Client();
  coop::Spec scan;
  scan.family = "block_scan";
  scan.method = "exclusive_sum_prefix";
  scan.dtype = "int32";
  scan.block = {128};
  scan.items_per_thread = 4;
  scan.arch = "sm_90";
  scan.prefix_callback = Source("tile_prefix",
                                "// state: the running total of earlier tiles\n"
                                "__device__ int tile_prefix(void* state, int aggregate) {\n"
                                "  int* total = static_cast<int*>(state);\n"
                                "  const int prefix = *total;\n"
                                "  *total += aggregate;\n"
                                "  return prefix;\n"
                                "}\n");
  auto a = client.Specialize(scan);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->link_inputs.size(), 1u);
  EXPECT_TRUE(a->spec.prefix_callback.stateful);
  const auto& e = a->entries.at(0);
  EXPECT_NE(e.declaration.find("const int* input, int* output, void* prefix_state);"),
            std::string::npos)
      << e.declaration;
  const std::string kernel =
      e.declaration +
      "\nextern \"C\" __global__ void tiles(const int* in, int* out, int tiles) {\n"
      "  __shared__ __align__(" +
      std::to_string(a->temp_storage_align) + ") unsigned char temp[" +
      std::to_string(a->temp_storage_bytes) +
      "];\n"
      "  int total = 0;\n"
      "  for (int t = 0; t < tiles; ++t) {\n"
      "    const int base = t * 512 + threadIdx.x * 4;\n  " +
      e.symbol +
      "(temp, in + base, out + base, &total);\n"
      "    __syncthreads();\n"
      "  }\n"
      "}\n";
  const std::string kernel_ltoir = CompileKernel(kernel);
  ASSERT_FALSE(kernel_ltoir.empty());
  auto cubin = LinkAll({kernel_ltoir, a->ltoir, a->link_inputs[0].ltoir});
  ASSERT_TRUE(cubin.ok()) << cubin.status();

  // A callback of the wrong shape is caught like any operator.
  scan.prefix_callback =
      Source("two_args", "__device__ int two_args(void* s, int a, int b) { return a + b; }\n");
  auto bad = client.Specialize(scan);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("two_args(void*, int) must return int"), std::string::npos)
      << bad.error().message;
  // Only the *_prefix methods take one.
  scan.method = "exclusive_sum";
  bad = client.Specialize(scan);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "block_scan: prefix_callback applies only to block_scan's *_prefix methods; method "
            "\"exclusive_sum\" takes none");
}

TEST_F(UserOperators, BundleSharesOneOperatorAmongItsSpecs) {
  auto client = Client();
  const auto op = Source("clamp_add", kClampAdd);
  auto bundle = client.SpecializeBundle({Reduce(op), Scan(op)});
  ASSERT_TRUE(bundle) << bundle.error().message;
  ASSERT_EQ(bundle->link_inputs.size(), 1u);
  ASSERT_EQ(bundle->parts.size(), 2u);
  EXPECT_EQ(bundle->parts[1].spec.user_op.digest, bundle->parts[0].spec.user_op.digest);
  // Explain works on a user-operator spec, and names the operator by digest.
  auto explained = client.Explain(Reduce(op));
  ASSERT_TRUE(explained) << explained.error().message;
  bool found = false;
  for (const auto& c : explained->components) {
    if (c.name == "canonical_request") {
      found = c.value.find("op=user:") != std::string::npos;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace coopd_test
