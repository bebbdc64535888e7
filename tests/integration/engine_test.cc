// Integration tests of the compile engine: worker processes, supervision, single-flight,
// bundles, the Link RPC and pre-warm. Real coopd, real NVRTC and nvJitLink. No timing
// thresholds: where a test needs a compile to outlast something (a 50 ms timeout, a 300 ms
// client deadline), it uses a cold worker's first compile, which builds the CCCL PCH and takes
// seconds.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "coop/client.h"
#include "coopd_process.h"
#include "server/engine/compiler.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

using Daemon = TestDaemon;

TEST(Engine, ThirtyTwoIdenticalColdRequestsShareOneCompile) {
  Daemon d({"--workers", "2"});
  ASSERT_TRUE(d.started);
  std::vector<std::future<coop::Result<coop::Artifact>>> replies;
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  for (int i = 0; i < 32; ++i) {
    replies.push_back(std::async(std::launch::async, [&, start] {
      auto client = d.process.MakeClient();
      start.wait();
      return client.Specialize(BlockReduceF32());
    }));
  }
  go.set_value();
  std::vector<coop::Artifact> artifacts;
  for (auto& r : replies) {
    auto a = r.get();
    ASSERT_TRUE(a) << a.error().message;
    artifacts.push_back(std::move(*a));
  }
  for (const auto& a : artifacts) {
    EXPECT_EQ(a.key, artifacts[0].key);
    EXPECT_EQ(a.ltoir, artifacts[0].ltoir);
    EXPECT_EQ(a.temp_storage_bytes, artifacts[0].temp_storage_bytes);
    EXPECT_FALSE(a.ltoir.empty());
  }
  coop::Stats s = d.Stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.requests, 32u);
  // Every request either joined the one compile or arrived after it and hit the cache.
  EXPECT_EQ(s.joined_requests + s.memory_hits + 1, 32u);
}

// An idle worker killed from outside: the pool notices before it sends the next job, restarts
// the worker and runs the job on the new one (no SIGPIPE takes the daemon down, no request
// fails), and the precompiled header NVRTC kept in /tmp for the dead worker is removed, not
// leaked (~200 MB each).
TEST(Engine, AKilledIdleWorkerNeitherKillsTheDaemonNorLeaksItsPch) {
  TestDaemon daemon({"--workers", "1"});
  auto client = daemon.Client();
  ASSERT_TRUE(client.Specialize(BlockReduceF32()));
  const auto before = daemon.Stats();
  ASSERT_EQ(before.worker_status.size(), 1u);
  const int pid = before.worker_status[0].pid;
  ASSERT_GT(pid, 0);
  // NVRTC's PCH, in the worker's own temporary directory (its TMPDIR, the one it may write).
  const std::string worker_tmp = WorkerTmpdir(pid);
  ASSERT_NE(worker_tmp, "");
  const std::string pch = worker_tmp + "/__nvrtc_auto_pch_" + std::to_string(pid) + "_0";
  ASSERT_TRUE(std::filesystem::exists(pch)) << "NVRTC's PCH directory moved? " << pch;
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  // Until coopd reaps it, the dead worker is a zombie ('Z' in /proc/PID/stat).
  for (int i = 0; i < 3000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line) || line.find(") Z ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  coop::Spec other = BlockReduceF32();
  other.dtype = "float64";
  // The pool finds the worker dead before handing it the job and restarts it first: the job it
  // never saw does not fail.
  auto first = client.Specialize(other);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_NE(daemon.process.Log().find("died while idle"), std::string::npos);
  auto second = client.Specialize(other);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(std::filesystem::exists(pch)) << pch << " leaked";
  EXPECT_FALSE(std::filesystem::exists(worker_tmp)) << worker_tmp << " leaked";
  EXPECT_NE(daemon.Stats().worker_status.at(0).pid, pid);
}

TEST(Engine, KillingAWorkerMidCompileFailsOnlyItsRequest) {
  Daemon d({"--workers", "2"});
  ASSERT_TRUE(d.started);
  coop::Spec a = BlockReduceF32();
  coop::Spec b = BlockReduceF32();
  b.dtype = "float64";
  auto ra = std::async(std::launch::async, [&] { return d.process.MakeClient().Specialize(a); });
  auto rb = std::async(std::launch::async, [&] { return d.process.MakeClient().Specialize(b); });
  // Both workers are busy with cold compiles (seconds each); kill the first one.
  int victim = 0;
  for (;;) {
    coop::Stats s = d.Stats();
    if (s.workers_busy == 2) {
      victim = s.worker_status.at(0).pid;
      break;
    }
    ASSERT_EQ(s.compiles, 0u) << "a compile finished before both workers were busy";
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  auto result_a = ra.get();
  auto result_b = rb.get();
  ASSERT_NE(static_cast<bool>(result_a), static_cast<bool>(result_b))
      << "exactly one request ran on the killed worker";
  const coop::Error& err = result_a ? result_b.error() : result_a.error();
  EXPECT_EQ(err.code, coop::ErrorCode::kUnavailable);
  EXPECT_NE(err.message.find("compile worker (pid " + std::to_string(victim) + ") died"),
            std::string::npos)
      << err.message;
  EXPECT_NE(err.message.find("killed by signal 9"), std::string::npos) << err.message;

  coop::Stats s = d.Stats();
  EXPECT_EQ(s.worker_crashes, 1u);
  EXPECT_EQ(s.worker_restarts, 1u);
  EXPECT_EQ(s.compile_failures, 1u);
  EXPECT_NE(s.worker_status.at(0).pid, victim);
  EXPECT_GT(s.worker_status.at(0).pid, 0);

  // The failed request was not cached as a success: asking again compiles it, on a live worker.
  auto retry = d.process.MakeClient().Specialize(result_a ? b : a);
  ASSERT_TRUE(retry) << retry.error().message;
  EXPECT_EQ(retry->origin, coop::Origin::kCompiled);
}

TEST(Engine, CompilePastTheTimeoutIsStoppedAtTheTimeout) {
  // A cold worker's first compile builds the CCCL PCH: far longer than 50 ms.
  Daemon d({"--workers", "1", "--compile-timeout", "0.05"});
  ASSERT_TRUE(d.started);
  const int worker = d.Stats().worker_status.at(0).pid;
  auto a = d.process.MakeClient().Specialize(BlockReduceF32());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kDeadlineExceeded);
  EXPECT_NE(a.error().message.find("block_reduce sum float32 sm_90: compile exceeded the 0.05 s "
                                   "timeout (--compile-timeout)"),
            std::string::npos)
      << a.error().message;
  coop::Stats s = d.Stats();
  EXPECT_EQ(s.compile_timeouts, 1u);
  EXPECT_EQ(s.worker_restarts, 1u);
  EXPECT_NE(s.worker_status.at(0).pid, worker) << "the timed-out worker was replaced";
  EXPECT_EQ(s.compiles, 0u);
}

TEST(Engine, ClientDeadlineDoesNotCancelACompileOthersWaitFor) {
  Daemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  coop::ClientOptions impatient_options;
  impatient_options.socket_path = d.process.socket_path();
  impatient_options.timeout = 300ms;
  auto patient = std::async(std::launch::async,
                            [&] { return d.process.MakeClient().Specialize(BlockReduceF32()); });
  for (;;) {  // the patient request is being compiled
    if (d.Stats().workers_busy == 1) break;
    std::this_thread::sleep_for(5ms);
  }
  auto impatient = coop::Client(impatient_options).Specialize(BlockReduceF32());
  ASSERT_FALSE(impatient);
  EXPECT_EQ(impatient.error().code, coop::ErrorCode::kDeadlineExceeded);
  auto a = patient.get();
  ASSERT_TRUE(a) << a.error().message;
  coop::Stats s = d.Stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.joined_requests, 1u);
}

// A CCCL tree whose block_reduce header does not compile: every compile fails, for real.
std::string BrokenCcclCopy(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string root = dir + "/cccl";
  fs::copy("/usr/local/cuda/include/cccl", root, fs::copy_options::recursive);
  const std::string header = root + "/cub/block/block_reduce.cuh";
  std::ifstream in(header);
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  std::ofstream out(header, std::ios::trunc);
  out << "#error coopd-test: this CCCL copy is broken on purpose\n" << text.str();
  return root;
}

TEST(Engine, AFailedCompileReachesEveryWaiterAndIsNotCached) {
  TempDir headers;
  Daemon d({"--workers", "2", "--cccl-include", BrokenCcclCopy(headers.path())});
  ASSERT_TRUE(d.started);
  std::vector<std::future<coop::Result<coop::Artifact>>> replies;
  for (int i = 0; i < 8; ++i) {
    replies.push_back(std::async(
        std::launch::async, [&] { return d.process.MakeClient().Specialize(BlockReduceF32()); }));
  }
  for (auto& r : replies) {
    auto a = r.get();
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, coop::ErrorCode::kInternal);
    EXPECT_NE(a.error().message.find("this CCCL copy is broken on purpose"), std::string::npos)
        << "the compiler log reaches the caller: " << a.error().message;
  }
  coop::Stats s = d.Stats();
  EXPECT_EQ(s.compiles, 0u);
  const uint64_t failures = s.compile_failures;
  EXPECT_GE(failures, 1u);
  EXPECT_EQ(failures + s.joined_requests, 8u) << "joined waiters share the one failure";
  // Nothing was cached: the next request compiles (and fails) again.
  auto again = d.process.MakeClient().Specialize(BlockReduceF32());
  ASSERT_FALSE(again);
  EXPECT_EQ(d.Stats().compile_failures, failures + 1);
  EXPECT_EQ(d.Stats().disk_entries, 0u);
}

TEST(Engine, BundleIsOneLtoIrWithEachSpecsOwnEntriesAndLayout) {
  Daemon d;
  ASSERT_TRUE(d.started);
  auto client = d.process.MakeClient();
  coop::Spec reduce = BlockReduceF32();
  coop::Spec scan;
  scan.family = "block_scan";
  scan.method = "exclusive_sum";
  scan.dtype = "int32";
  scan.block = {256};
  scan.items_per_thread = 4;
  scan.scan.with_aggregate = true;
  scan.arch = "sm_90";
  coop::Spec warp;
  warp.family = "warp_reduce";
  warp.method = "max";
  warp.dtype = "float64";
  warp.warp_threads = 16;
  warp.arch = "sm_90";
  auto bundle = client.SpecializeBundle({reduce, scan, warp});
  ASSERT_TRUE(bundle) << bundle.error().message;
  EXPECT_EQ(bundle->origin, coop::Origin::kCompiled);
  ASSERT_EQ(bundle->parts.size(), 3u);
  EXPECT_EQ(bundle->entries.size(), 4u);  // scan has its _aggregate entry
  EXPECT_EQ(d.Stats().compiles, 1u) << "one NVRTC program for the whole bundle";

  // Each part matches the same spec requested on its own.
  std::vector<coop::Spec> specs = {reduce, scan, warp};
  for (size_t i = 0; i < specs.size(); ++i) {
    auto single = client.Specialize(specs[i]);
    ASSERT_TRUE(single) << single.error().message;
    EXPECT_EQ(bundle->parts[i].temp_storage_bytes, single->temp_storage_bytes) << i;
    EXPECT_EQ(bundle->parts[i].temp_storage_align, single->temp_storage_align) << i;
    ASSERT_EQ(bundle->parts[i].entries.size(), single->entries.size());
    for (size_t e = 0; e < single->entries.size(); ++e) {
      EXPECT_EQ(bundle->parts[i].entries[e].declaration, single->entries[e].declaration);
    }
  }
  // The bundle's LTO-IR alone satisfies a kernel that calls its reduce part.
  coop::Artifact reduce_view = *bundle;
  reduce_view.parts = {bundle->parts[0]};
  auto cubin = coopd::LinkCubin(
      {{coopd::LinkInput::kLtoIr, "kernel", CompileKernel(BlockSumKernel(reduce_view))},
       {coopd::LinkInput::kLtoIr, "bundle", bundle->ltoir}},
      "sm_90", {});
  ASSERT_TRUE(cubin.ok()) << cubin.status();

  auto again = client.SpecializeBundle({reduce, scan, warp});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->origin, coop::Origin::kMemory);
  EXPECT_EQ(again->key, bundle->key);
}

TEST(Engine, BundleErrorsNameTheElement) {
  Daemon d;
  ASSERT_TRUE(d.started);
  auto client = d.process.MakeClient();
  coop::Spec ok = BlockReduceF32();
  coop::Spec other_arch = BlockReduceF32();
  other_arch.arch = "sm_80";
  other_arch.dtype = "int32";
  coop::Spec bad = BlockReduceF32();
  bad.items_per_thread = 100;
  struct Case {
    std::vector<coop::Spec> specs;
    std::string message;
  } cases[] = {
      {{}, "bundle: specs must hold 1..64 specs (--max-bundle, COOPD_MAX_BUNDLE), got 0"},
      {{ok, bad}, "specs[1]: block_reduce: items_per_thread must be 1..64, got 100"},
      {{ok, other_arch},
       "specs[1]: arch must match specs[0]'s \"sm_90\" (a bundle is one LTO-IR for one arch), "
       "got \"sm_80\""},
      {{ok, other_arch, ok}, "specs[1]: arch must match"},
      {{ok, ok}, "specs[1]: duplicates specs[0]"},
  };
  for (const auto& c : cases) {
    auto a = client.SpecializeBundle(c.specs);
    ASSERT_FALSE(a) << c.message;
    EXPECT_EQ(a.error().code, coop::ErrorCode::kInvalidArgument);
    EXPECT_EQ(a.error().message.rfind(c.message, 0), 0u) << a.error().message;
  }
}

TEST(Engine, LinkRpcBuildsCachesAndExplainsFailures) {
  Daemon d;
  ASSERT_TRUE(d.started);
  auto client = d.process.MakeClient();
  auto artifact = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(artifact) << artifact.error().message;
  const std::string kernel = BlockSumKernel(*artifact);

  coop::LinkRequest request;
  request.arch = "sm_90";
  request.modules = {{coop::LinkInputKind::kLtoIr, "kernel.ltoir", CompileKernel(kernel)}};
  request.artifact_keys = {artifact->key};
  auto linked = client.Link(request);
  ASSERT_TRUE(linked) << linked.error().message;
  EXPECT_EQ(linked->origin, coop::Origin::kCompiled);
  EXPECT_EQ(linked->cubin.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_NE(linked->cubin.find("block_sums"), std::string::npos);
  EXPECT_EQ(linked->options, std::vector<std::string>{"-optimize-unused-variables"});

  auto again = client.Link(request);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->origin, coop::Origin::kMemory);
  EXPECT_EQ(again->key, linked->key);
  EXPECT_EQ(again->cubin, linked->cubin);

  // Keeping the unused variables is a different link, with a different key and a bigger cubin.
  coop::LinkRequest keep = request;
  keep.keep_unused_variables = true;
  auto kept = client.Link(keep);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_NE(kept->key, linked->key);
  EXPECT_GT(kept->cubin.size(), linked->cubin.size());

  // A PTX kernel links too.
  coop::LinkRequest ptx = request;
  ptx.modules = {{coop::LinkInputKind::kPtx, "kernel.ptx", CompileKernel(kernel, true)}};
  auto from_ptx = client.Link(ptx);
  ASSERT_TRUE(from_ptx) << from_ptx.error().message;
  EXPECT_NE(from_ptx->cubin.find("block_sums"), std::string::npos);

  // Without the artifact the entry symbol is unresolved: the whole linker log comes back.
  coop::LinkRequest missing = request;
  missing.artifact_keys.clear();
  auto unresolved = client.Link(missing);
  ASSERT_FALSE(unresolved);
  EXPECT_EQ(unresolved.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_NE(unresolved.error().message.find(artifact->entries[0].symbol), std::string::npos)
      << unresolved.error().message;

  coop::LinkRequest unknown = request;
  unknown.artifact_keys = {std::string(64, 'a')};
  auto not_found = client.Link(unknown);
  ASSERT_FALSE(not_found);
  EXPECT_EQ(not_found.error().code, coop::ErrorCode::kNotFound);
  EXPECT_NE(not_found.error().message.find("request it with Specialize first"), std::string::npos);

  struct Case {
    std::function<void(coop::LinkRequest&)> mutate;
    std::string message;
  } cases[] = {
      {[](coop::LinkRequest& r) { r.arch = "sm_91"; }, "link: arch must be one of "},
      {[](coop::LinkRequest& r) { r.modules.clear(); },
       "link: modules must hold 1..16 kernel modules (LTO-IR or PTX), got 0"},
      {[](coop::LinkRequest& r) { r.modules[0].data.clear(); }, "link: modules[0].data is empty"},
      {[](coop::LinkRequest& r) { r.options = {"-ptx"}; },
       "link: options[0] \"-ptx\" is set by coopd"},
      {[](coop::LinkRequest& r) { r.options = {"lineinfo"}; },
       "link: options[0] must be an nvJitLink option starting with '-'"},
      {[](coop::LinkRequest& r) { r.artifact_keys = {"xyz"}; },
       "link: artifact_keys[0] must be a 64-digit lowercase hex key, got \"xyz\""},
  };
  for (const auto& c : cases) {
    coop::LinkRequest r = request;
    c.mutate(r);
    auto result = client.Link(r);
    ASSERT_FALSE(result) << c.message;
    EXPECT_EQ(result.error().code, coop::ErrorCode::kInvalidArgument) << result.error().message;
    EXPECT_EQ(result.error().message.rfind(c.message, 0), 0u) << result.error().message;
  }
  coop::Stats s = d.Stats();
  EXPECT_EQ(s.links, 3u);
  EXPECT_EQ(s.link_hits, 1u);
  EXPECT_EQ(s.link_failures, 1u);
}

TEST(Engine, CoopctlLinkWritesTheCubin) {
  Daemon d;
  ASSERT_TRUE(d.started);
  auto artifact = d.process.MakeClient().Specialize(BlockReduceF32());
  ASSERT_TRUE(artifact) << artifact.error().message;
  TempDir work;
  const std::string kernel_path = work.path() + "/kernel.ltoir";
  { std::ofstream(kernel_path, std::ios::binary) << CompileKernel(BlockSumKernel(*artifact)); }
  const std::string cubin_path = work.path() + "/k.cubin";
  std::string out, err;
  int rc = RunCommand(
      {COOPCTL_BINARY, "--socket", d.process.socket_path(), "link", "--arch", "sm_90", "--ltoir",
       kernel_path, "--artifact", artifact->key, "--out", cubin_path, "--json"},
      &out, &err);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(out.find("\"origin\":\"compiled\""), std::string::npos) << out;
  std::ifstream cubin(cubin_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(cubin)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(0, 4),
            "\x7f"
            "ELF");

  // Unresolved symbol: non-zero exit, one line on stderr carrying the linker's complaint.
  rc = RunCommand({COOPCTL_BINARY, "--socket", d.process.socket_path(), "link", "--arch", "sm_90",
                   "--ltoir", kernel_path, "--out", cubin_path},
                  &out, &err);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(artifact->entries[0].symbol), std::string::npos) << err;
}

TEST(Engine, PrewarmBuildsEveryWorkersPchInTheBackground) {
  Daemon d({"--workers", "2", "--prewarm", "sm_90"});
  ASSERT_TRUE(d.started);  // readiness did not wait for the pre-warm
  for (;;) {
    coop::Stats s = d.Stats();
    ASSERT_EQ(s.worker_status.size(), 2u);
    if (!s.worker_status[0].header_set.empty() && !s.worker_status[1].header_set.empty()) {
      EXPECT_NE(s.worker_status[0].header_set.find("-arch=sm_90"), std::string::npos);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  auto a = d.process.MakeClient().Specialize(BlockReduceF32());
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->origin, coop::Origin::kCompiled);
  EXPECT_EQ(a->pch_status, "used") << "a pre-warmed worker serves the first request warm";
  EXPECT_EQ(d.Stats().pch_warm_compiles, 1u);
}

// Waits (a liveness deadline, not a threshold) until every worker holds a PCH for sm_90.
void WaitEveryWorkerWarm(const Daemon& d, size_t workers) {
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  for (;;) {
    coop::Stats s = d.Stats();
    ASSERT_EQ(s.worker_status.size(), workers);
    size_t warm = 0;
    for (const auto& w : s.worker_status) {
      if (!w.busy && w.header_set.find("-arch=sm_90") != std::string::npos) ++warm;
    }
    if (warm == workers) return;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "workers never all held the sm_90 PCH:\n"
        << d.process.Log();
    std::this_thread::sleep_for(20ms);
  }
}

TEST(Engine, AfterTheFirstRequestEveryLaterDistinctSpecCompilesWarm) {
  TempDir dir;
  {
    Daemon d(dir.path(), {"--workers", "2"});
    ASSERT_TRUE(d.started);
    coop::Client client = d.process.MakeClient();
    auto first = client.Specialize(BlockSpec("block_reduce", "sum", "float32", {128}, 1));
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(first->pch_status, "created") << "a fresh daemon has no warm worker";
    // The second distinct spec, right after: the warm worker is idle, the other one cold (or
    // busy warming up): the request must go to the warm one.
    auto second = client.Specialize(BlockSpec("block_reduce", "sum", "float32", {160}, 1));
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(second->pch_status, "used") << d.process.Log();
    // The header set was seen: the other worker builds its PCH by itself, so that two distinct
    // specs at once both compile warm.
    WaitEveryWorkerWarm(d, 2);
    auto c = std::async(std::launch::async, [&d] {
      return d.process.MakeClient().Specialize(
          BlockSpec("block_scan", "inclusive_sum", "int32", {128}, 1));
    });
    auto e = client.Specialize(BlockSpec("block_reduce", "max", "int32", {192}, 1));
    auto c_result = c.get();
    ASSERT_TRUE(c_result) << c_result.error().message;
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ(c_result->pch_status, "used");
    EXPECT_EQ(e->pch_status, "used");
    EXPECT_EQ(d.Stats().pch_warm_compiles, 3u);
  }
  // The cache remembers the arch it compiled for: the next daemon on it pre-warms that arch by
  // itself, so even its first request compiles warm.
  std::ifstream history(dir.path() + "/cache/prewarm-archs");
  std::string line;
  ASSERT_TRUE(std::getline(history, line)) << "no prewarm-archs in the cache directory";
  EXPECT_EQ(line, "sm_90");
  {
    Daemon d(dir.path(), {"--workers", "2"});
    ASSERT_TRUE(d.started);
    WaitEveryWorkerWarm(d, 2);
    auto a =
        d.process.MakeClient().Specialize(BlockSpec("block_reduce", "sum", "float32", {224}, 1));
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->pch_status, "used");
    EXPECT_NE(d.process.Log().find("pre-warming sm_90"), std::string::npos) << d.process.Log();
  }
  {
    // --prewarm none: nothing is pre-warmed at start. (The log file is shared by the three
    // daemons: only this one's lines count.)
    auto prewarm_lines = [](const std::string& log) {
      size_t n = 0;
      for (size_t at = log.find("pre-warm"); at != std::string::npos;
           at = log.find("pre-warm", at + 1)) {
        ++n;
      }
      return n;
    };
    std::ifstream earlier_log(dir.path() + "/coopd.sock.log");
    const std::string earlier((std::istreambuf_iterator<char>(earlier_log)),
                              std::istreambuf_iterator<char>());
    ASSERT_GT(prewarm_lines(earlier), 0u) << "the second daemon's pre-warm is not in the log";
    Daemon d(dir.path(), {"--workers", "1", "--prewarm", "none"});
    ASSERT_TRUE(d.started);
    auto a =
        d.process.MakeClient().Specialize(BlockSpec("block_reduce", "sum", "float32", {96}, 1));
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->pch_status, "created") << d.process.Log();
    EXPECT_EQ(prewarm_lines(d.process.Log()), prewarm_lines(earlier)) << d.process.Log();
  }
}

TEST(Engine, WorkerMemoryLimitFailsCleanly) {
  Daemon d({"--workers", "1", "--worker-memory-mb", "64"});
  ASSERT_TRUE(d.started);
  auto a = d.process.MakeClient().Specialize(BlockReduceF32());
  ASSERT_FALSE(a) << "a 64 MiB address space cannot hold NVRTC's work";
  // A clean error (RESOURCE_EXHAUSTED) or a worker that died (UNAVAILABLE, restarted): both
  // name the limit.
  EXPECT_TRUE(a.error().code == coop::ErrorCode::kUnavailable ||
              a.error().code == coop::ErrorCode::kResourceExhausted ||
              a.error().code == coop::ErrorCode::kInternal)
      << coop::ErrorCodeName(a.error().code) << ": " << a.error().message;
  EXPECT_NE(a.error().message.find("limited to 64 MiB by --worker-memory-mb"), std::string::npos)
      << a.error().message;
  // The daemon is still up and serving.
  EXPECT_GT(d.Stats().workers, 0u);
}

// Below a warm worker's measured peak (~500 MiB of address space for NVRTC, ~330 MiB for a
// clang compile): both backends answer RESOURCE_EXHAUSTED, the limit said first.
TEST(Engine, CompilesPastTheWorkerMemoryLimitAreResourceExhausted) {
  Daemon d({"--workers", "1", "--worker-memory-mb", "300"});
  ASSERT_TRUE(d.started);
  coop::Client client = d.process.MakeClient();
  auto catalog = client.GetCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  std::vector<coop::Formats> formats = {coop::Formats::kLtoIr};
  if (!catalog->bitcode_archs.empty()) formats.push_back(coop::Formats::kBitcode);
  for (coop::Formats f : formats) {
    auto a = client.Specialize(BlockReduceF32(), f);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, coop::ErrorCode::kResourceExhausted) << a.error().message;
    EXPECT_NE(a.error().message.find("compile ran out of memory: this worker's address space is "
                                     "limited to 300 MiB by --worker-memory-mb"),
              std::string::npos)
        << a.error().message;
  }
  // The daemon keeps serving.
  auto stats = client.GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->workers, 1u);
}

// The default limit (2048 MiB) serves both formats (the rest of the suite runs under it too).
TEST(Engine, DefaultWorkerMemoryLimitIsSetAndServes) {
  Daemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  EXPECT_NE(d.process.Log().find("memory limit 2048 MiB"), std::string::npos) << d.process.Log();
  auto a = d.process.MakeClient().Specialize(BlockReduceF32());
  EXPECT_TRUE(a.ok()) << a.error().message;
}

// Cancellation (issue 27, finding 12: four 30-second compiles sent with a 1 s deadline kept both
// workers busy for 30 s each). The compile worker is stopped (SIGSTOP), so a compile it is given
// never finishes by itself, whatever the machine's speed; coopd must stop it when its only
// caller's deadline passes. Nothing is timed: the tests poll Stats with a generous bound.

// Polls the daemon's Stats until `done(stats)` or 120 s; returns the last Stats.
coop::Stats PollStats(const TestDaemon& d, const std::function<bool(const coop::Stats&)>& done) {
  coop::Stats s = d.Stats();
  for (int i = 0; i < 12000 && !done(s); ++i) {
    std::this_thread::sleep_for(10ms);
    s = d.Stats();
  }
  return s;
}

coop::Client ClientWithDeadline(const TestDaemon& d, std::chrono::milliseconds deadline) {
  coop::ClientOptions options;
  options.socket_path = d.process.socket_path();
  options.autostart = false;
  options.timeout = deadline;
  return coop::Client(options);
}

TEST(Cancellation, ACompileWhoseOnlyCallerGaveUpIsStoppedAndItsWorkerFreed) {
  Daemon d({"--workers", "1", "--compile-timeout", "600"});
  ASSERT_TRUE(d.started);
  const int worker = d.Stats().worker_status.at(0).pid;
  StoppedWorkers stopped(d.process.pid());
  ASSERT_EQ(stopped.size(), 1u);
  auto a = ClientWithDeadline(d, 500ms).Specialize(BlockReduceF32());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, coop::ErrorCode::kDeadlineExceeded) << a.error().message;
  // The stopped worker was killed and replaced, not left busy until --compile-timeout.
  coop::Stats s = PollStats(d, [&](const coop::Stats& s) {
    return s.compiles_cancelled == 1 && s.workers_busy == 0 &&
           s.worker_status.at(0).pid != worker && s.worker_status.at(0).pid > 0;
  });
  EXPECT_EQ(s.compiles_cancelled, 1u) << d.process.Log();
  EXPECT_EQ(s.requests_cancelled, 1u);
  EXPECT_EQ(s.workers_busy, 0u);
  EXPECT_EQ(s.queue_depth, 0u);
  EXPECT_NE(s.worker_status.at(0).pid, worker) << "the worker running it was killed";
  EXPECT_EQ(s.worker_restarts, 1u);
  EXPECT_EQ(s.compile_timeouts, 0u);
  EXPECT_EQ(s.compile_failures, 0u) << "a cancelled compile is not a failure";
  EXPECT_NE(d.process.Log().find("was cancelled"), std::string::npos) << d.process.Log();
  stopped.Resume();
  // The new worker serves the next request (another spec: nothing of the first was cached).
  coop::Spec other = BlockReduceF32();
  other.dtype = "int32";
  auto b = d.Client().Specialize(other);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->origin, coop::Origin::kCompiled);
  EXPECT_EQ(d.Stats().compiles, 1u);
}

TEST(Cancellation, ACompileAnotherCallerJoinedGoesOnWhenOneGivesUp) {
  Daemon d({"--workers", "1", "--compile-timeout", "600"});
  ASSERT_TRUE(d.started);
  const int worker = d.Stats().worker_status.at(0).pid;
  StoppedWorkers stopped(d.process.pid());
  auto patient = std::async(std::launch::async,
                            [&] { return d.process.MakeClient().Specialize(BlockReduceF32()); });
  ASSERT_EQ(PollStats(d, [](const coop::Stats& s) { return s.workers_busy == 1; }).workers_busy,
            1u);
  auto impatient = ClientWithDeadline(d, 500ms).Specialize(BlockReduceF32());
  ASSERT_FALSE(impatient);
  EXPECT_EQ(impatient.error().code, coop::ErrorCode::kDeadlineExceeded);
  coop::Stats s = PollStats(d, [](const coop::Stats& s) { return s.requests_cancelled == 1; });
  EXPECT_EQ(s.requests_cancelled, 1u) << "the impatient request left the compile";
  EXPECT_EQ(s.joined_requests, 1u);
  EXPECT_EQ(s.compiles_cancelled, 0u) << "the patient caller still waits for it";
  EXPECT_EQ(s.workers_busy, 1u);
  EXPECT_EQ(s.worker_status.at(0).pid, worker);
  stopped.Resume();
  auto a = patient.get();
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->origin, coop::Origin::kCompiled);
  s = d.Stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.worker_restarts, 0u);
  EXPECT_EQ(s.compiles_cancelled, 0u);
}

TEST(Cancellation, AQueuedCompileWhoseCallerGaveUpIsNeverStarted) {
  Daemon d({"--workers", "1", "--compile-timeout", "600"});
  ASSERT_TRUE(d.started);
  StoppedWorkers stopped(d.process.pid());
  auto patient = std::async(std::launch::async,
                            [&] { return d.process.MakeClient().Specialize(BlockReduceF32()); });
  ASSERT_EQ(PollStats(d, [](const coop::Stats& s) { return s.workers_busy == 1; }).workers_busy,
            1u);
  coop::Spec queued = BlockReduceF32();
  queued.dtype = "int32";
  auto impatient = ClientWithDeadline(d, 500ms).Specialize(queued);
  ASSERT_FALSE(impatient);
  EXPECT_EQ(impatient.error().code, coop::ErrorCode::kDeadlineExceeded);
  coop::Stats s = PollStats(
      d, [](const coop::Stats& s) { return s.compiles_cancelled == 1 && s.queue_depth == 0; });
  EXPECT_EQ(s.compiles_cancelled, 1u) << "dropped from the queue";
  EXPECT_EQ(s.queue_depth, 0u);
  EXPECT_EQ(s.workers_busy, 1u) << "the patient request's compile goes on";
  EXPECT_EQ(s.worker_restarts, 0u) << "no worker was killed for a job none had taken";
  stopped.Resume();
  auto a = patient.get();
  ASSERT_TRUE(a) << a.error().message;
  // The dropped job never ran: once the worker is idle, one compile in all, one job done.
  s = PollStats(d, [](const coop::Stats& s) { return s.workers_busy == 0; });
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.compile_failures, 0u);
  EXPECT_EQ(s.queue_depth, 0u);
  EXPECT_EQ(s.worker_status.at(0).jobs, 1u);
  // Asked again, the dropped spec compiles normally.
  auto again = d.Client().Specialize(queued);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->origin, coop::Origin::kCompiled);
}

}  // namespace
}  // namespace coopd_test
