// The Plan RPC through a real coopd: spec uses resolved to the temp storage Specialize reports,
// layouts checked byte by byte (tests/plan_checker.h), errors, and a kernel laid out by a plan
// that compiles and links.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "coop/client.h"
#include "server/plan/planner.h"
#include "test_util.h"
#include "tests/plan_checker.h"

namespace coopd_test {
namespace {

// A block_* spec of 256 threads.
coop::Spec Block(const std::string& family, const std::string& method, const std::string& dtype,
                 uint32_t items, const std::string& algorithm = "") {
  coop::Spec s = BlockSpec(family, method, dtype, {256}, items);
  s.algorithm = algorithm;
  return s;
}

coop::PlanUse SpecUse(const std::string& name, const coop::Spec& spec, uint32_t first,
                      uint32_t last, uint32_t count = 0) {
  coop::PlanUse u;
  u.name = name;
  u.spec = spec;
  u.first = first;
  u.last = last;
  u.count = count;
  return u;
}

coop::PlanUse SizedUse(const std::string& name, uint64_t bytes, uint64_t align, uint32_t first,
                       uint32_t last) {
  coop::PlanUse u;
  u.name = name;
  u.bytes = bytes;
  u.align = align;
  u.first = first;
  u.last = last;
  return u;
}

// A kernel's primitives, each specialized first (as a frontend does before planning).
struct Kernel {
  std::vector<coop::PlanUse> uses;
  std::map<std::string, coop::Artifact> artifacts;  // by use name
};

Kernel Specialized(coop::Client& client, std::vector<coop::PlanUse> uses) {
  Kernel k;
  for (const auto& u : uses) {
    auto a = client.Specialize(*u.spec);
    EXPECT_TRUE(a) << u.name << ": " << a.error().message;
    if (a) k.artifacts[u.name] = *a;
  }
  k.uses = std::move(uses);
  return k;
}

// The request as the planner sees it, with each spec use sized as Specialize reported, and the
// reply as a layout: what tests/plan_checker.h checks.
coopd::PlanInput Input(const coop::PlanRequest& request, const Kernel& k) {
  coopd::PlanInput in;
  in.base_offset = request.base_offset;
  for (const auto& r : request.reservations) {
    in.reservations.push_back({r.name, r.bytes, r.align, r.count, 0, 0, true});
  }
  for (const auto& u : request.uses) {
    coopd::PlanRegionInput r{u.name, u.bytes, u.align, u.count, u.first, u.last, true};
    if (u.spec) {
      const coop::Artifact& a = k.artifacts.at(u.name);
      r.bytes = a.temp_storage_bytes;
      r.align = a.temp_storage_align;
    }
    in.uses.push_back(r);
  }
  return in;
}

coopd::PlanLayout Layout(const coop::PlanResult& plan) {
  coopd::PlanLayout out;
  auto placed = [](const coop::PlanRegion& r) {
    return coopd::PlacedRegion{r.offset, r.bytes, r.align, r.padding, r.stride, r.count};
  };
  for (const auto& r : plan.reservations) out.reservations.push_back(placed(r));
  for (const auto& r : plan.uses) out.uses.push_back(placed(r));
  out.total = plan.dynamic_shared_bytes;
  out.base_align = plan.base_align;
  out.reserved_bytes = plan.reserved_bytes;
  out.no_reuse_bytes = plan.no_reuse_bytes;
  return out;
}

bool ShareBytes(const coop::PlanRegion& a, const coop::PlanRegion& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

TEST(Plan, SpecUsesGetTheTempStorageSpecializeReportsAndReuseBytesWhereLifetimesAllow) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.started);
  auto client = daemon.Client();
  coop::Spec warp;
  warp.family = "warp_reduce";
  warp.dtype = "int32";
  warp.arch = "sm_90";
  // load (point 0) -> sort (1) -> scan (2) -> store (3); one warp reduction per warp of the
  // 8-warp block during the sort and the scan.
  Kernel k = Specialized(
      client,
      {SpecUse("load", Block("block_load", "load", "float32", 4, "warp_transpose"), 0, 0),
       SpecUse("sort", Block("block_radix_sort", "sort", "uint32", 4), 1, 1),
       SpecUse("scan", Block("block_scan", "exclusive_sum", "int32", 4), 2, 2),
       SpecUse("store", Block("block_store", "store", "float32", 4, "warp_transpose"), 3, 3),
       SpecUse("warps", warp, 1, 2, 8)});
  ASSERT_EQ(k.artifacts.size(), 5u);
  coop::PlanRequest request;
  request.uses = k.uses;
  request.reservations = {{"tile", 1024, 16, 0}};

  auto plan = client.Plan(request);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->uses.size(), 5u);
  for (const auto& u : plan->uses) {
    const coop::Artifact& a = k.artifacts.at(u.name);
    EXPECT_EQ(u.artifact_key, a.key) << u.name;
    EXPECT_EQ(u.align, a.temp_storage_align) << u.name;
    EXPECT_EQ(u.bytes, (u.count - 1) * u.stride + a.temp_storage_bytes) << u.name;
  }
  EXPECT_EQ(plan->Find("warps")->count, 8u);
  const coopd::PlanInput in = Input(request, k);
  EXPECT_EQ(coopd::PlanViolations(in, Layout(*plan)), "");

  // The sort is the largest, so the most bytes live at once are at point 1: the tile, the sort
  // and the warps' array. No layout can do with less, and this one does with no more.
  const auto& sort = k.artifacts.at("sort");
  for (const char* other : {"load", "scan", "store"}) {
    ASSERT_LT(k.artifacts.at(other).temp_storage_bytes, sort.temp_storage_bytes) << other;
    EXPECT_TRUE(ShareBytes(*plan->Find(other), *plan->Find("sort"))) << other;
  }
  EXPECT_EQ(plan->dynamic_shared_bytes,
            1024 + sort.temp_storage_bytes + plan->Find("warps")->bytes);
  EXPECT_LT(plan->dynamic_shared_bytes, plan->no_reuse_bytes);
  EXPECT_EQ(plan->reserved_bytes, 1024u);
  EXPECT_EQ(plan->base_align, 16u);

  // Every use live at once: nothing is shared, and the total is the no-reuse layout's.
  for (auto& u : request.uses) u.first = u.last = 0;
  auto all_live = client.Plan(request);
  ASSERT_TRUE(all_live) << all_live.error().message;
  EXPECT_EQ(coopd::PlanViolations(Input(request, k), Layout(*all_live)), "");
  EXPECT_EQ(all_live->dynamic_shared_bytes, all_live->no_reuse_bytes);

  // Resolving the specs hit the cache: nothing was compiled again.
  auto stats = client.GetStats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->compiles, 5u);
}

TEST(Plan, TheSameRequestGetsTheSamePlan) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.started);
  auto client = daemon.Client();
  coop::PlanRequest request;
  request.base_offset = 12;
  request.reservations = {{"mine", 100, 8, 0}, {"flags", 33, 1, 0}};
  for (uint32_t i = 0; i < 40; ++i) {
    request.uses.push_back(
        SizedUse("u" + std::to_string(i), 16 * (i % 5 + 1), 1u << (i % 5), i % 7, i % 7 + i % 3));
  }
  request.uses.push_back(SpecUse("reduce", BlockReduceF32(), 2, 4));
  auto a = client.Plan(request), b = client.Plan(request);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(a->uses.size(), b->uses.size());
  auto same = [](const coop::PlanRegion& x, const coop::PlanRegion& y) {
    return x.name == y.name && x.offset == y.offset && x.bytes == y.bytes && x.align == y.align &&
           x.padding == y.padding && x.count == y.count && x.stride == y.stride &&
           x.first == y.first && x.last == y.last && x.artifact_key == y.artifact_key;
  };
  for (size_t i = 0; i < a->uses.size(); ++i) EXPECT_TRUE(same(a->uses[i], b->uses[i])) << i;
  for (size_t i = 0; i < a->reservations.size(); ++i) {
    EXPECT_TRUE(same(a->reservations[i], b->reservations[i])) << i;
  }
  EXPECT_EQ(a->dynamic_shared_bytes, b->dynamic_shared_bytes);
  EXPECT_EQ(a->no_reuse_bytes, b->no_reuse_bytes);
  EXPECT_EQ(a->Find("reduce")->bytes, 44u);  // BlockReduce<float, 256> (BRIEF.md section 4)
  EXPECT_GE(a->Find("u0")->offset, 12u) << "nothing below the base offset";
}

TEST(Plan, BadRequestsNameTheUseAndTheFieldAndTheDaemonStaysUp) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.started);
  auto client = daemon.Client();
  auto error = [&](const coop::PlanRequest& request) {
    auto r = client.Plan(request);
    EXPECT_FALSE(r) << "accepted";
    if (r) return std::string();
    EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument) << r.error().message;
    EXPECT_TRUE(r.error().from_server);
    return r.error().message;
  };

  coop::PlanRequest request;
  request.uses = {SpecUse("reduce", BlockReduceF32(), 0, 0),
                  SpecUse("scan", Block("block_scan", "", "int32", 1, "warp_reductions"), 0, 0)};
  EXPECT_EQ(error(request),
            "plan: uses[1] \"scan\": spec: block_scan: algorithm must be one of raking, "
            "raking_memoize, warp_scans; got \"warp_reductions\"");

  // The planner's own checks (planner_test.cc has them all) reach the caller unchanged.
  request.uses = {SizedUse("a", 8, 8, 0, 0), SizedUse("a", 8, 8, 0, 0)};
  EXPECT_EQ(error(request),
            "plan: uses[1].name \"a\" is already uses[0]'s; names must be unique among uses and "
            "reservations");
  coop::Spec other_arch = BlockReduceF32();
  other_arch.arch = "sm_80";
  request.uses = {SizedUse("a", 8, 8, 0, 0), SpecUse("r90", BlockReduceF32(), 0, 0),
                  SpecUse("r80", other_arch, 0, 0)};
  EXPECT_EQ(error(request),
            "plan: uses[2] \"r80\": spec.arch must be uses[1]'s \"sm_90\" (a plan is for one "
            "kernel), got \"sm_80\"");
  request.uses.clear();
  for (int i = 0; i < 1025; ++i) request.uses.push_back(SizedUse(std::to_string(i), 1, 1, 0, 0));
  EXPECT_EQ(error(request), "plan: uses must hold 0..1024 uses, got 1025");

  auto stats = client.GetStats();
  ASSERT_TRUE(stats) << stats.error().message;
  request.uses = {SizedUse("fine", 8, 8, 0, 0)};
  auto fine = client.Plan(request);
  ASSERT_TRUE(fine) << fine.error().message;
  EXPECT_EQ(fine->dynamic_shared_bytes, 8u);
}

TEST(Plan, AKernelLaidOutByAPlanLinks) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.started);
  auto client = daemon.Client();
  coop::Spec max = BlockReduceF32();
  max.method = "max";
  Kernel k =
      Specialized(client, {SpecUse("sum", BlockReduceF32(), 0, 0), SpecUse("max", max, 1, 1)});
  ASSERT_EQ(k.artifacts.size(), 2u);
  coop::PlanRequest request;
  request.uses = k.uses;
  request.reservations = {{"partials", 8 * sizeof(float), 4, 0}};
  auto plan = client.Plan(request);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->Find("sum")->offset, plan->Find("max")->offset) << "their lifetimes are apart";

  // One dynamic shared buffer; the barrier between the two reductions is what lets the second
  // reuse the first one's bytes.
  const auto& sum = k.artifacts.at("sum").entries.at(0);
  const auto& mx = k.artifacts.at("max").entries.at(0);
  auto at = [&](const char* name) { return std::to_string(plan->Find(name)->offset); };
  const std::string source =
      sum.declaration + "\n" + mx.declaration + "\n" +
      "extern \"C\" __global__ void planned(const float* in, float* out) {\n"
      "  extern __shared__ __align__(" +
      std::to_string(plan->base_align) +
      ") unsigned char smem[];\n"
      "  float* partials = reinterpret_cast<float*>(smem + " +
      at("partials") +
      ");\n"
      "  float v = in[blockIdx.x * 256 + threadIdx.x];\n"
      "  float s = " +
      sum.symbol + "(smem + " + at("sum") +
      ", v);\n"
      "  __syncthreads();\n"
      "  float m = " +
      mx.symbol + "(smem + " + at("max") +
      ", v);\n"
      "  if (threadIdx.x == 0) { partials[0] = s; partials[1] = m; }\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x < 2) out[blockIdx.x * 2 + threadIdx.x] = partials[threadIdx.x];\n"
      "}\n";
  const std::string ptx =
      LinkToPtx({CompileKernel(source), k.artifacts.at("sum").ltoir, k.artifacts.at("max").ltoir});
  EXPECT_NE(ptx.find(".entry planned"), std::string::npos) << ptx.substr(0, 2000);
  // The dynamic buffer, aligned to at least the plan's base_align (NVVM may raise it).
  const std::string extern_smem = ".extern .shared .align ";
  const size_t decl = ptx.find(extern_smem);
  ASSERT_NE(decl, std::string::npos) << ptx.substr(0, 2000);
  EXPECT_GE(std::stoul(ptx.substr(decl + extern_smem.size())), plan->base_align);
}

TEST(Plan, CoopctlPlansFromTheCommandLine) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.started);
  auto client = daemon.Client();
  auto reduce = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(reduce) << reduce.error().message;
  const std::string socket = daemon.process.socket_path();
  std::string out, err;
  ASSERT_EQ(
      RunCommand(
          {COOPCTL_BINARY, "--socket",     socket,     "plan", "--json",  "--reserve", "tile=64,16",
           "red@0-1",      "block_reduce", "--method", "sum",  "--dtype", "float32",   "--threads",
           "256",          "--arch",       "sm_90",    "+",    "mine@2",  "--count",   "2",
           "--bytes",      "20",           "--align",  "8"},
          &out, &err),
      0)
      << err;
  // The reduction (44 bytes, align 4) and `mine` (2 x 24 - 4 = 44 bytes) never live together:
  // the tile goes first (largest alignment), both uses above it, at the same offset.
  EXPECT_EQ(out,
            "{\"dynamic_shared_bytes\":108,\"base_align\":16,\"reserved_bytes\":64,"
            "\"no_reuse_bytes\":152,\"reservations\":[{\"name\":\"tile\",\"offset\":0,"
            "\"bytes\":64,\"align\":16,\"padding\":0,\"count\":1,\"stride\":64}],"
            "\"uses\":[{\"name\":\"red\",\"offset\":64,\"bytes\":44,\"align\":4,"
            "\"padding\":0,\"count\":1,\"stride\":44,\"first\":0,\"last\":1,"
            "\"artifact_key\":\"" +
                reduce->key +
                "\"},{\"name\":\"mine\",\"offset\":64,\"bytes\":44,\"align\":8,"
                "\"padding\":0,\"count\":2,\"stride\":24,\"first\":2,\"last\":2,"
                "\"artifact_key\":\"\"}]}\n");

  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "plan", "a@3-1", "--bytes", "8"}, &out, &err),
      4);  // refused by coopd
  EXPECT_EQ(err,
            "coopctl: INVALID_ARGUMENT: plan: uses[0] \"a\": last must be >= first (the "
            "lifetime [first, last] is inclusive), got first 3, last 1\n");
  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "plan", "a", "--bytes", "8", "block_reduce"},
                 &out, &err),
      2);
  EXPECT_NE(err.find("has --bytes/--align and a spec: give one"), std::string::npos) << err;
}

// A plan's spec uses take the sort flags into their own options message, as specialize does:
// merge sort's --value-dtype goes into merge_sort, radix rank's --radix-bits into radix_rank.
// The client refuses a spec that fills two options messages before sending anything.
TEST(Plan, SpecUsesTakeSortFlagsLikeSpecializeAndOneOptionsMessage) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.started);
  const std::string socket = daemon.process.socket_path();
  std::string out, err;
  ASSERT_EQ(RunCommand({COOPCTL_BINARY,
                        "--socket",
                        socket,
                        "plan",
                        "--json",
                        "sort@0",
                        "block_merge_sort",
                        "--dtype",
                        "float32",
                        "--value-dtype",
                        "int64",
                        "--op",
                        "less",
                        "--threads",
                        "64",
                        "--items",
                        "2",
                        "--arch",
                        "sm_90",
                        "+",
                        "rank@1",
                        "block_radix_rank",
                        "--dtype",
                        "uint32",
                        "--radix-bits",
                        "5",
                        "--threads",
                        "64",
                        "--items",
                        "2",
                        "--arch",
                        "sm_90"},
                       &out, &err),
            0)
      << err;
  auto client = daemon.Client();
  coop::Spec sort = BlockSpec("block_merge_sort", "sort", "float32", {64}, 2);
  sort.op = "less";
  sort.merge_sort.value_dtype = "int64";
  auto a = client.Specialize(sort);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_NE(out.find("\"artifact_key\":\"" + a->key + "\""), std::string::npos)
      << "the plan's sort is the merge sort of int64 values: " << out;

  coop::PlanRequest request;
  coop::PlanUse use;
  use.name = "both";
  coop::Spec two = sort;
  two.histogram.bins = 4;
  use.spec = two;
  request.uses.push_back(use);
  auto plan = client.Plan(request);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_FALSE(plan.error().from_server);
  EXPECT_EQ(plan.error().message.rfind("uses[0] \"both\": family options set in merge_sort, "
                                       "histogram",
                                       0),
            0u)
      << plan.error().message;
}

}  // namespace
}  // namespace coopd_test
