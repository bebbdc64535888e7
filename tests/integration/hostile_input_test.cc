// Hostile and odd input against a real coopd (issue 14, item 9): zero, huge and (on the wire)
// negative numbers in every numeric field, non-ASCII names, and identifiers that try to inject
// code into the rendered source. Each gets INVALID_ARGUMENT naming the field (and the allowed
// values); no input becomes a symbol (symbols are generated from the spec's digest); another
// client is served throughout.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"
#include "test_util.h"

namespace coopd_test {
namespace {

constexpr uint32_t kHuge = 4294967295u;  // also what -1 becomes in a uint32 field

coop::Spec Histogram() {
  return BlockSpec("block_histogram", "histogram", "uint8", {128}, 4);
}

struct Case {
  std::string what;
  std::function<void(coop::Spec&)> mutate;
  coop::Spec base = BlockReduceF32();
  // Every one of these must be in the error message.
  std::vector<std::string> expected;
};

std::vector<Case> Cases() {
  const coop::Spec warp = [] {
    coop::Spec s;
    s.family = "warp_reduce";
    s.dtype = "float32";
    s.arch = "sm_90";
    return s;
  }();
  const coop::Spec sort = BlockSpec("block_radix_sort", "sort", "uint32", {128}, 4);
  const coop::Spec rank = BlockSpec("block_radix_rank", "rank_keys", "uint32", {128}, 4);
  const coop::Spec rld = BlockSpec("block_run_length_decode", "decode", "uint32", {128}, 2);
  const coop::Spec load = BlockSpec("block_load", "load", "user", {128}, 2);
  std::vector<Case> c = {
      // Numbers: zero, one past the range, the largest uint32.
      {"block.x 0",
       [](auto& s) { s.block.x = 0; },
       BlockReduceF32(),
       {"block.x", "1..1024", "got 0"}},
      {"block.x huge",
       [](auto& s) { s.block.x = kHuge; },
       BlockReduceF32(),
       {"block.x", "1..1024", "got 4294967295"}},
      {"block.y huge",
       [](auto& s) { s.block.y = kHuge; },
       BlockReduceF32(),
       {"block.y", "1..1024"}},
      {"block.z 65", [](auto& s) { s.block.z = 65; }, BlockReduceF32(), {"block.z", "1..64"}},
      {"block 1024x1024",
       [](auto& s) {
         s.block = {1024, 1024, 1};
       },
       BlockReduceF32(),
       {"block threads (x*y*z)", "1..1024"}},
      {"block huge product",
       [](auto& s) {
         s.block = {1024, 1024, 64};
       },
       BlockReduceF32(),
       {"block threads (x*y*z)", "1..1024"}},
      {"items_per_thread 65",
       [](auto& s) { s.items_per_thread = 65; },
       BlockReduceF32(),
       {"items_per_thread", "1..64", "got 65"}},
      {"items_per_thread huge",
       [](auto& s) { s.items_per_thread = kHuge; },
       BlockReduceF32(),
       {"items_per_thread", "1..64", "got 4294967295"}},
      {"warp_threads 3", [](auto& s) { s.warp_threads = 3; }, warp, {"warp_threads", "1..32"}},
      {"warp_threads huge",
       [](auto& s) { s.warp_threads = kHuge; },
       warp,
       {"warp_threads", "1..32"}},
      {"warp_threads on a block family",
       [](auto& s) { s.warp_threads = 32; },
       BlockReduceF32(),
       {"warp_threads"}},
      {"radix_sort.radix_bits 9",
       [](auto& s) { s.radix_sort.radix_bits = 9; },
       sort,
       {"radix_sort.radix_bits", "1..8"}},
      {"radix_sort.radix_bits huge",
       [](auto& s) { s.radix_sort.radix_bits = kHuge; },
       sort,
       {"radix_sort.radix_bits", "1..8"}},
      {"radix_rank.radix_bits 0",
       [](auto& s) { s.radix_rank.radix_bits = 0; },
       rank,
       {"radix_rank.radix_bits"}},
      {"radix_rank.radix_bits huge",
       [](auto& s) { s.radix_rank.radix_bits = kHuge; },
       rank,
       {"radix_rank.radix_bits"}},
      {"histogram.bins 0", [](auto& s) { s.histogram.bins = 0; }, Histogram(), {"histogram.bins"}},
      {"histogram.bins huge",
       [](auto& s) { s.histogram.bins = kHuge; },
       Histogram(),
       {"histogram.bins", "65536"}},
      {"run_length_decode.decoded_items_per_thread 0",
       [](auto& s) { s.run_length_decode.decoded_items_per_thread = 0; },
       rld,
       {"run_length_decode.decoded_items_per_thread"}},
      {"run_length_decode.decoded_items_per_thread huge",
       [](auto& s) { s.run_length_decode.decoded_items_per_thread = kHuge; },
       rld,
       {"run_length_decode.decoded_items_per_thread"}},
      {"user_type.size 0",
       [](auto& s) {
         s.user_type_size = 0;
         s.user_type_align = 4;
       },
       load,
       {"user_type.size", "1..1024"}},
      {"user_type.size huge",
       [](auto& s) {
         s.user_type_size = kHuge;
         s.user_type_align = 4;
       },
       load,
       {"user_type.size", "1..1024"}},
      {"user_type.align 3",
       [](auto& s) {
         s.user_type_size = 12;
         s.user_type_align = 3;
       },
       load,
       {"user_type.align", "power of two 1..16"}},
      {"user_type.align huge",
       [](auto& s) {
         s.user_type_size = 16;
         s.user_type_align = kHuge;
       },
       load,
       {"user_type.align", "power of two 1..16"}},
      // Non-ASCII names.
      {"family in Cyrillic",
       [](auto& s) { s.family = "\xd0\xb1\xd0\xbb\xd0\xbe\xd0\xba_reduce"; },
       BlockReduceF32(),
       {"family must be one of", "block_reduce", "\"\xd0\xb1\xd0\xbb"}},
      {"dtype in CJK",
       [](auto& s) { s.dtype = "\xe6\xb5\xae\xe7\x82\xb9"; },
       BlockReduceF32(),
       {"dtype must be one of", "float32"}},
      {"method with a fullwidth letter",
       [](auto& s) { s.method = "s\xef\xbd\x95m"; },
       BlockReduceF32(),
       {"method must be one of", "sum"}},
      {"arch with fullwidth digits",
       [](auto& s) { s.arch = "sm_\xef\xbc\x99\xef\xbc\x90"; },
       BlockReduceF32(),
       {"arch must be one of", "sm_90"}},
      {"op.user.name accented",
       [](auto& s) {
         s.method = "reduce";
         s.user_op.name = "\xc3\xa9vil";
         s.user_op.source = "__device__ float evil(float a, float b) { return a; }";
       },
       BlockReduceF32(),
       {"op.user.name must be a C identifier", "[A-Za-z_][A-Za-z0-9_]*"}},
      // Identifiers that try to inject code into the rendered unit.
      {"dtype injection",
       [](auto& s) { s.dtype = "float); system(\"x\"); //"; },
       BlockReduceF32(),
       {"dtype must be one of", "float32", "got \"float); system(\\\"x\\\"); //\""}},
      {"method injection",
       [](auto& s) { s.method = "sum(); asm(\"trap;\"); //"; },
       BlockReduceF32(),
       {"method must be one of"}},
      {"algorithm injection",
       [](auto& s) { s.algorithm = "raking> x; system(\"x\"); //"; },
       BlockReduceF32(),
       {"algorithm must be one of", "raking"}},
      {"op.builtin injection",
       [](auto& s) {
         s.method = "reduce";
         s.op = "plus<float>{}); system(\"x\"); //";
       },
       BlockReduceF32(),
       {"op.builtin must be one of", "sum"}},
      {"op.user.name injection",
       [](auto& s) {
         s.method = "reduce";
         s.user_op.name = "evil(float a, float b) { return a; } //";
         s.user_op.source = "__device__ float evil(float a, float b) { return a; }";
       },
       BlockReduceF32(),
       {"op.user.name must be a C identifier"}},
      {"op.user.name of coopd's own",
       [](auto& s) {
         s.method = "reduce";
         s.user_op.name = "coop_block_reduce_sum";
         s.user_op.source =
             "__device__ float coop_block_reduce_sum(float a, float b) { return a; }";
       },
       BlockReduceF32(),
       {"op.user.name must not start with \"coop_\""}},
      {"op.user.operand_dtypes injection",
       [](auto& s) {
         s.method = "reduce";
         s.user_op.name = "evil";
         s.user_op.source = "__device__ float evil(float a, float b) { return a; }";
         s.user_op.operand_dtypes = {"float); system(\"x\"); //", "float32"};
       },
       BlockReduceF32(),
       {"op.user.operand_dtypes must be (float32, float32)"}},
      {"op.user.result_dtype injection",
       [](auto& s) {
         s.method = "reduce";
         s.user_op.name = "evil";
         s.user_op.source = "__device__ float evil(float a, float b) { return a; }";
         s.user_op.result_dtype = "float; system(\"x\")";
       },
       BlockReduceF32(),
       {"op.user.result_dtype must be \"float32\""}},
      {"radix_sort.value_dtype injection",
       [](auto& s) { s.radix_sort.value_dtype = "int); system(\"x\"); //"; },
       sort,
       {"value_dtype"}},
  };
  return c;
}

TEST(HostileInput, EveryBadFieldGetsASpecificErrorAndOthersAreServed) {
  TestDaemon d;
  coop::ClientOptions options;
  options.socket_path = d.process.socket_path();
  options.autostart = false;
  options.client_name = "hostile";
  coop::Client hostile(options);
  for (const Case& c : Cases()) {
    coop::Spec s = c.base;
    c.mutate(s);
    auto r = hostile.Specialize(s);
    ASSERT_FALSE(r.ok()) << c.what << ": accepted";
    EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument)
        << c.what << ": " << r.error().message;
    for (const std::string& e : c.expected) {
      EXPECT_NE(r.error().message.find(e), std::string::npos)
          << c.what << ": expected \"" << e << "\" in: " << r.error().message;
    }
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << c.what;
    EXPECT_LT(r.error().message.size(), 2048u) << c.what;
  }
  // Another client, afterwards: served, and nothing of the hostile requests reached a compile.
  auto good = d.Client().Specialize(BlockReduceF32());
  ASSERT_TRUE(good.ok()) << good.error().message;
  auto stats = d.Client().GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->compiles, 1u) << "only the good request compiled";
}

// The operator's source is the caller's code (that is what it is for); text that would break
// out of a rendered expression is compiled as the operator's own translation unit and fails
// there, with the compiler's error about its own file. The primitive never pastes it.
TEST(HostileInput, OperatorSourceCannotEscapeItsOwnUnit) {
  TestDaemon d;
  coop::Spec s = BlockReduceF32();
  s.method = "reduce";
  s.user_op.name = "evil";
  s.user_op.source =
      "float); system(\"x\"); //\n__device__ float evil(float a, float b) { return a; }\n";
  auto r = d.Client().Specialize(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument) << r.error().message;
  EXPECT_NE(r.error().message.find("evil.cu(1): error"), std::string::npos) << r.error().message;
  // The same operator, well-formed: its symbol is coopd's, not the name the caller gave.
  s.user_op.source = "__device__ float evil(float a, float b) { return a + b; }\n";
  auto ok = d.Client().Specialize(s);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->link_inputs.size(), 1u);
  EXPECT_EQ(ok->link_inputs[0].symbol.rfind("coop_op_", 0), 0u) << ok->link_inputs[0].symbol;
  for (const auto& e : ok->entries) EXPECT_EQ(e.symbol.rfind("coop_block_reduce_reduce_", 0), 0u);
}

// Negative numbers exist only on the wire: -1 in a uint32 field is a 10-byte varint that
// protobuf reads as 4294967295. Sent raw, it is refused like any huge value.
TEST(HostileInput, NegativeVarintsOnTheWireAreRefusedAsHugeValues) {
  TestDaemon d;
  coop::v1::PrimitiveSpec spec;
  spec.set_family("block_reduce");
  spec.set_dtype("float32");
  spec.set_arch("sm_90");
  std::string spec_bytes = spec.SerializeAsString();
  // block (field 4): { x (field 1) = -1 as int64 varint }.
  const std::string block("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  spec_bytes += std::string("\x22", 1) + static_cast<char>(block.size()) + block;
  // items_per_thread (field 5) = -7.
  spec_bytes += std::string("\x28\xf9\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  std::string request = std::string("\x0a", 1) + static_cast<char>(spec_bytes.size()) + spec_bytes;

  grpc::Status status = RawCall(d.process.socket_path(), "/coop.v1.Coop/Specialize", request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("4294967295"), std::string::npos) << status.error_message();
  auto good = d.Client().Specialize(BlockReduceF32());
  EXPECT_TRUE(good.ok()) << good.error().message;
}

}  // namespace
}  // namespace coopd_test
