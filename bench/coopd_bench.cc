// coopd_bench: the compile engine's speed, measured side by side in one run. Prints ratios
// against baselines taken in the same run; see docs/benchmarks.md.
//
//   A. latency of one new specialization: a fresh process running NVRTC once (what a frontend
//      without coopd pays) vs coopd's first compile on a cold worker vs a new specialization
//      on a warm worker;
//   B. throughput of distinct compiles with 1 worker vs 2 workers (workers pre-warmed);
//   C. 32 identical cold requests at once: how many compiles, and the slowest reply vs one
//      request alone;
//   E. LLVM bitcode (clang-22) vs LTO-IR (NVRTC): the warm compile of a new specialization by
//      each backend on one warm worker (both precompiled headers built), and clang without its
//      precompiled header.
//   F. the farm tier (a real redis-server on loopback): a remote hit next to a memory hit, a
//      disk hit and a warm compile, and 16 identical cold requests over two replicas with and
//      without the tier (compiles in total, slowest reply vs one warm compile). Not in the
//      default sections: --sections F (needs /usr/bin/redis-server).
//
// The sections bench/run.sh renders (not in the default sections; they record figures for
// --json, see bench/report.h):
//   T. time to artifact for the same specs: one-shot NVRTC in a fresh process, coopd's cold
//      worker, warm worker (--warm-specs new specs per round, default 3), memory hit, disk hit
//      and remote hit (Redis, when redis-server is installed), and the stored bytes per
//      artifact;
//   S. single-flight: N identical requests for a spec not yet compiled (--flight 1,8,32,128),
//      on pre-warmed workers (--flight-workers, default 2): the slowest reply against N = 1, and
//      the compiles per N;
//   G. a frontend's fresh process, from start to a linked cubin (bench/frontend_e2e): through
//      coopd (a hit, then nvJitLink in the process, or coopd's Link RPC) vs NVRTC + nvJitLink
//      in the process;
//   K. a compile whose only caller gave up: from its DEADLINE_EXCEEDED to the worker running it
//      gone, next to the same compile run to its end.
//
// usage: coopd_bench [--rounds N] [--sections ABCEFTSGK] [--warm-specs N] [--flight 1,8,32,128]
//                    [--flight-workers N] [--json FILE]
//        (binaries are found next to this one in the build tree; D, the storage of B's
//        artifacts, comes with B)
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/frontend_spec.h"
#include "bench/report.h"
#include "coop/client.h"
#include "integration/coopd_process.h"
#include "integration/redis_harness.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using coopd_test::CoopdProcess;
using coopd_test::RunCommand;
using coopd_test::TempDir;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "coopd_bench: %s\n", what.c_str());
  std::exit(1);
}

// Distinct specializations: every one a new compile (different dtype / shape / family).
std::vector<coop::Spec> DistinctSpecs(int n, int salt) {
  const char* dtypes[] = {"int8",   "int16",  "int32",  "int64",   "uint8",
                          "uint16", "uint32", "uint64", "float32", "float64"};
  std::vector<coop::Spec> out;
  for (int i = 0; i < n; ++i) {
    coop::Spec s;
    s.family = i % 3 == 2 ? "block_scan" : "block_reduce";
    s.method = s.family == "block_scan" ? "exclusive_sum" : "sum";
    s.dtype = dtypes[i % 10];
    s.block = {static_cast<uint32_t>(32 * (1 + (i + salt) % 16)), 1, 1};
    s.items_per_thread = static_cast<uint32_t>(1 + (i / 10) + salt % 5);
    s.arch = "sm_90";
    out.push_back(s);
  }
  return out;
}

struct Daemon {
  explicit Daemon(std::vector<std::string> args)
      : process(dir.path() + "/coopd.sock", dir.path() + "/cache", std::move(args)) {
    std::string error;
    if (!process.Start(&error) || !process.WaitReady(120s, &error)) Die(error);
  }
  ~Daemon() { process.Stop(SIGTERM); }
  coop::Stats Stats() {
    auto s = process.MakeClient().GetStats();
    if (!s) Die(s.error().message);
    return *s;
  }
  void WaitWarm() {
    for (;;) {
      coop::Stats s = Stats();
      bool warm = !s.worker_status.empty();
      for (const auto& w : s.worker_status) warm = warm && !w.header_set.empty();
      if (warm && s.queue_depth == 0 && s.workers_busy == 0) return;
      std::this_thread::sleep_for(20ms);
    }
  }
  TempDir dir;
  CoopdProcess process;
};

coop::Artifact MustSpecialize(coop::Client& client, const coop::Spec& s,
                              coop::Formats formats = coop::Formats::kLtoIr) {
  auto a = client.Specialize(s, formats);
  if (!a) Die(a.error().message);
  return *a;
}

// E: warm compiles of new specializations by both backends, side by side.
void BitcodeVsLtoIr(int rounds) {
  std::vector<double> nvrtc_ms, clang_ms, clang_cold_ms, bitcode_wall;
  for (int r = 0; r < rounds; ++r) {
    std::vector<coop::Spec> specs = DistinctSpecs(5, 400 + r);
    {
      // One worker: its NVRTC PCH and the daemon's clang PCH both warm after the first request,
      // and the two compilers never run at once.
      Daemon d({"--workers", "1"});
      auto client = d.process.MakeClient();
      MustSpecialize(client, specs[0], coop::Formats::kBoth);
      for (size_t i = 1; i < specs.size(); ++i) {
        coop::Artifact a = MustSpecialize(client, specs[i], coop::Formats::kBoth);
        if (a.pch_status != "used" || a.bitcode.pch_status != "used") {
          Die("a warm compile did not use its PCH: NVRTC " + a.pch_status + ", clang " +
              a.bitcode.pch_status);
        }
        nvrtc_ms.push_back(a.compile_ms);
        clang_ms.push_back(a.bitcode.compile_ms);
      }
      // A bitcode request alone, end to end (it also compiles the LTO-IR it is checked against).
      coop::Spec fresh = DistinctSpecs(1, 450 + r)[0];
      auto t0 = Clock::now();
      MustSpecialize(client, fresh, coop::Formats::kBitcode);
      bitcode_wall.push_back(Ms(Clock::now() - t0));
    }
    Daemon d({"--workers", "1", "--no-pch"});
    auto client = d.process.MakeClient();
    for (size_t i = 1; i < specs.size(); ++i) {
      clang_cold_ms.push_back(
          MustSpecialize(client, specs[i], coop::Formats::kBitcode).bitcode.compile_ms);
    }
  }
  const double base = Median(nvrtc_ms);
  std::printf(
      "\nE. a new specialization on a warm worker, by backend (median ms; ratio vs NVRTC)\n");
  std::printf("  %-48s %9.0f  1.00\n", "NVRTC to LTO-IR, warm PCH (worker)", base);
  std::printf("  %-48s %9.0f  %.2f\n", "clang-22 to bitcode, warm PCH (worker)", Median(clang_ms),
              Median(clang_ms) / base);
  std::printf("  %-48s %9.0f  %.2f\n", "clang-22 to bitcode, no PCH (worker)",
              Median(clang_cold_ms), Median(clang_cold_ms) / base);
  std::printf("  %-48s %9.0f  %.2f\n", "bitcode request alone, both compiles (client wall)",
              Median(bitcode_wall), Median(bitcode_wall) / base);
}

// F: the farm tier, each latency a client's round trip, medians over distinct specs.
void FarmTier(int rounds) {
  TempDir redis_dir;
  coopd_test::RedisServer redis(redis_dir.path());
  std::string error;
  if (!redis.Start(&error)) Die(error);
  std::vector<double> compile_wall, memory_wall, remote_wall, disk_wall, flight_wall,
      local_flight_wall, one_wall;
  uint64_t flight_compiles = 0, local_flight_compiles = 0;
  for (int r = 0; r < rounds; ++r) {
    const std::string url = "redis://" + redis.Address() + "?prefix=bench" + std::to_string(r);
    std::vector<coop::Spec> specs = DistinctSpecs(9, 600 + r);
    {
      // Writer: compiles every spec once (the first builds its PCH, not measured), then hits
      // each in memory. Reader: memory tier off, so its first request for a spec is a remote
      // hit (which backfills its disk) and the second a disk hit.
      Daemon writer({"--workers", "1", "--remote-cache", url});
      Daemon reader({"--workers", "1", "--memory-cache-mb", "0", "--remote-cache", url});
      auto w = writer.process.MakeClient();
      auto rd = reader.process.MakeClient();
      MustSpecialize(w, specs[0]);
      for (size_t i = 1; i < specs.size(); ++i) {
        auto t0 = Clock::now();
        MustSpecialize(w, specs[i]);
        compile_wall.push_back(Ms(Clock::now() - t0));
      }
      for (size_t i = 1; i < specs.size(); ++i) {
        auto t0 = Clock::now();
        MustSpecialize(w, specs[i]);
        memory_wall.push_back(Ms(Clock::now() - t0));
        t0 = Clock::now();
        coop::Artifact remote = MustSpecialize(rd, specs[i]);
        remote_wall.push_back(Ms(Clock::now() - t0));
        if (remote.origin != coop::Origin::kRemote) Die("expected a remote hit");
        t0 = Clock::now();
        coop::Artifact disk = MustSpecialize(rd, specs[i]);
        disk_wall.push_back(Ms(Clock::now() - t0));
        if (disk.origin != coop::Origin::kDisk) Die("expected a disk hit");
      }
    }
    // 16 identical cold requests over two warm replicas, with the tier and without it.
    for (bool farm : {true, false}) {
      std::vector<std::string> args = {"--workers", "1"};
      if (farm) args.insert(args.end(), {"--remote-cache", url + "f"});
      Daemon a(args), b(args);
      auto ca = a.process.MakeClient(), cb = b.process.MakeClient();
      std::vector<coop::Spec> warm = DistinctSpecs(3, 700 + r);
      MustSpecialize(ca, warm[0]);
      MustSpecialize(cb, warm[1]);
      if (farm) {
        auto t0 = Clock::now();
        MustSpecialize(ca, warm[2]);
        one_wall.push_back(Ms(Clock::now() - t0));
      }
      const coop::Spec cold = DistinctSpecs(1, 750 + r)[0];
      const uint64_t before = a.Stats().compiles + b.Stats().compiles;
      std::vector<std::future<double>> calls;
      auto t0 = Clock::now();
      for (int i = 0; i < 16; ++i) {
        Daemon* d = i % 2 ? &b : &a;
        calls.push_back(std::async(std::launch::async, [d, cold, t0] {
          auto c = d->process.MakeClient();
          MustSpecialize(c, cold);
          return Ms(Clock::now() - t0);
        }));
      }
      double slowest = 0;
      for (auto& c : calls) slowest = std::max(slowest, c.get());
      const uint64_t compiles = a.Stats().compiles + b.Stats().compiles - before;
      (farm ? flight_wall : local_flight_wall).push_back(slowest);
      (farm ? flight_compiles : local_flight_compiles) += compiles;
    }
  }
  const double base = Median(compile_wall);
  std::printf(
      "\nF. the farm tier, Redis on loopback (median client round trip, ms; ratio vs a warm "
      "compile)\n");
  std::printf("  %-48s %9.1f  1.00\n", "new specialization, warm worker (compile)", base);
  std::printf("  %-48s %9.2f  %.4f\n", "memory hit", Median(memory_wall),
              Median(memory_wall) / base);
  std::printf("  %-48s %9.2f  %.4f\n", "disk hit (memory tier off)", Median(disk_wall),
              Median(disk_wall) / base);
  std::printf("  %-48s %9.2f  %.4f\n", "remote hit (Redis; backfills disk)", Median(remote_wall),
              Median(remote_wall) / base);
  const double one = Median(one_wall);
  std::printf(
      "  16 identical cold requests over 2 replicas (slowest reply; ratio vs one warm "
      "compile request, %.0f ms):\n",
      one);
  std::printf("  %-48s %9.0f  %.2f  (%.1f compiles per run)\n", "with the farm tier (lease)",
              Median(flight_wall), Median(flight_wall) / one,
              static_cast<double>(flight_compiles) / rounds);
  std::printf("  %-48s %9.0f  %.2f  (%.1f compiles per run)\n", "without it (local single-flight)",
              Median(local_flight_wall), Median(local_flight_wall) / one,
              static_cast<double>(local_flight_compiles) / rounds);
}

double TimedMs(coop::Client& client, const coop::Spec& s, coop::Origin expect) {
  auto t0 = Clock::now();
  coop::Artifact a = MustSpecialize(client, s);
  const double ms = Ms(Clock::now() - t0);
  if (expect != coop::Origin::kUnspecified && a.origin != expect) {
    Die(std::string("expected a reply from ") + coop::OriginName(expect) + " for " + s.family +
        " " + s.dtype + ", got one from " + coop::OriginName(a.origin));
  }
  return ms;
}

// Runs `argv`, returns its wall time in ms; dies with its stderr when it fails.
double TimedRun(const std::vector<std::string>& argv, std::string* out = nullptr) {
  std::string o, err;
  auto t0 = Clock::now();
  const int rc = RunCommand(argv, &o, &err);
  const double ms = Ms(Clock::now() - t0);
  if (rc != 0) Die(argv[0] + " failed (exit " + std::to_string(rc) + "): " + err);
  if (out) *out = o;
  return ms;
}

// T: every way to get the same artifact, side by side, each a client's round trip.
void TimeToArtifact(int rounds, int warm_specs, coopd_bench::Report* report) {
  const bool have_redis = access("/usr/bin/redis-server", X_OK) == 0;
  TempDir redis_dir;
  std::unique_ptr<coopd_test::RedisServer> redis;
  std::string error;
  if (have_redis) {
    redis = std::make_unique<coopd_test::RedisServer>(redis_dir.path());
    if (!redis->Start(&error)) Die(error);
  }
  const std::string base = "one-shot NVRTC, fresh process (wall)";
  auto& fig = report->Add("time_to_artifact",
                          "Time to artifact for the same specs (client wall, ms; ratio vs a "
                          "one-shot NVRTC compile in a fresh process)",
                          "ms", base);
  auto& storage = report->Add(
      "storage", "Stored bytes per artifact in the disk cache (ratio vs the raw record)", "bytes",
      "raw bytes per artifact");
  fig.note =
      "Per round, a fresh daemon with one worker: spec 0 is its cold first compile (which builds "
      "the worker's PCH); " +
      (warm_specs == 1 ? std::string("spec 1 is")
                       : "specs 1-" + std::to_string(warm_specs) + " are") +
      " then compiled on the warm worker and fetched again from "
      "memory, and by a second daemon without a memory tier from Redis (which backfills its "
      "disk) and then from disk. The one-shot row compiles spec 1's rendered unit in a fresh "
      "process (bench/nvrtc_oneshot, no PCH).";
  if (!have_redis) fig.note += " No /usr/bin/redis-server here: no remote or disk hit rows.";
  for (int r = 0; r < rounds; ++r) {
    // Spec 0 builds the worker's PCH (the cold row); specs 1..3 are new specs on a warm worker
    // and are then fetched from every tier.
    std::vector<coop::Spec> specs = DistinctSpecs(1 + warm_specs, 800 + r);
    std::vector<std::string> writer_args = {"--workers", "1"},
                             reader_args = {"--workers", "1", "--memory-cache-mb", "0"};
    if (redis) {
      // A generous bound on Redis commands: on a loaded machine the default 200 ms could turn
      // a slow SET into a missing entry (the tier fails open), and the reader's hit into a compile.
      const std::string url =
          "redis://" + redis->Address() + "?prefix=tta" + std::to_string(r) + "&timeout_ms=2000";
      for (auto* a : {&writer_args, &reader_args}) a->insert(a->end(), {"--remote-cache", url});
    }
    Daemon writer(writer_args);
    auto w = writer.process.MakeClient();
    fig.At("coopd, cold worker: first compile")
        .samples.push_back(TimedMs(w, specs[0], coop::Origin::kCompiled));
    for (size_t i = 1; i < specs.size(); ++i) {
      auto t0 = Clock::now();
      coop::Artifact a = MustSpecialize(w, specs[i]);
      fig.At("coopd, warm worker: new spec").samples.push_back(Ms(Clock::now() - t0));
      if (a.pch_status != "used") Die("a warm compile did not use the PCH: " + a.pch_status);
      if (i == 1) {
        const std::string path = writer.dir.path() + "/unit.cu";
        std::ofstream(path) << a.source;
        fig.At(base).samples.push_back(TimedRun({NVRTC_ONESHOT_BINARY, path, "sm_90"}));
      }
    }
    for (size_t i = 1; i < specs.size(); ++i) {
      fig.At("memory hit").samples.push_back(TimedMs(w, specs[i], coop::Origin::kMemory));
    }
    for (const auto& t : writer.Stats().tiers) {
      if (t.name == "disk" && t.entries > 0) {
        storage.At("raw bytes per artifact")
            .samples.push_back(static_cast<double>(t.raw_bytes) / static_cast<double>(t.entries));
        storage.At("stored bytes per artifact (zstd, deduplicated)")
            .samples.push_back(static_cast<double>(t.bytes) / static_cast<double>(t.entries));
      }
    }
    if (!redis) continue;
    // Memory tier off: the first request is a remote hit (which backfills the disk), the
    // second a disk hit.
    Daemon reader(reader_args);
    auto rd = reader.process.MakeClient();
    for (size_t i = 1; i < specs.size(); ++i) {
      fig.At("remote hit (Redis on loopback; backfills disk)")
          .samples.push_back(TimedMs(rd, specs[i], coop::Origin::kRemote));
      fig.At("disk hit (memory tier off)")
          .samples.push_back(TimedMs(rd, specs[i], coop::Origin::kDisk));
    }
  }
  std::printf("\nT. time to artifact (median ms; ratio vs one-shot NVRTC)\n");
  const double b = Median(fig.At(base).samples);
  for (const auto& row : fig.rows) {
    std::printf("  %-48s %9.2f  %.4f\n", row.name.c_str(), Median(row.samples),
                Median(row.samples) / b);
  }
}

// S: N identical requests for a spec nobody has compiled yet, at once, on warm workers.
void SingleFlight(int rounds, const std::vector<int>& ns, int workers,
                  coopd_bench::Report* report) {
  const std::string base = "N = 1";
  auto& fig = report->Add("single_flight",
                          "Single-flight: N identical requests for a spec not yet compiled, on " +
                              std::to_string(workers) +
                              " pre-warmed worker(s) (slowest reply, ms; ratio vs N = 1)",
                          "ms", base);
  // Warmed by one compile (the other workers then build the same PCH by themselves), not by
  // --prewarm, which would also build clang's precompiled header for bitcode.
  Daemon d({"--workers", std::to_string(workers), "--prewarm", "none"});
  {
    auto client = d.process.MakeClient();
    MustSpecialize(client, DistinctSpecs(1, 899)[0]);
  }
  d.WaitWarm();
  int salt = 900;
  for (int r = 0; r < rounds; ++r) {
    for (int n : ns) {
      const coop::Spec s = DistinctSpecs(1, salt++)[0];
      const uint64_t before = d.Stats().compiles;
      std::vector<coop::Client> clients;
      for (int i = 0; i < n; ++i) clients.push_back(d.process.MakeClient());
      std::promise<void> go;
      std::shared_future<void> start = go.get_future().share();
      std::vector<std::future<double>> replies;
      for (int i = 0; i < n; ++i) {
        replies.push_back(std::async(std::launch::async, [&clients, i, s, start] {
          start.wait();
          auto t0 = Clock::now();
          MustSpecialize(clients[static_cast<size_t>(i)], s);
          return Ms(Clock::now() - t0);
        }));
      }
      go.set_value();
      double worst = 0;
      for (auto& f : replies) worst = std::max(worst, f.get());
      coopd_bench::Row& row = fig.At("N = " + std::to_string(n));
      row.samples.push_back(worst);
      const double compiles = static_cast<double>(d.Stats().compiles - before);
      row.values["compiles (max per run)"] =
          std::max(row.values["compiles (max per run)"], compiles);
    }
  }
  std::printf("\nS. single-flight, identical cold requests (median of the slowest reply, ms)\n");
  const double b = Median(fig.At(base).samples);
  for (const auto& row : fig.rows) {
    std::printf("  %-48s %9.0f  %.2f  (compiles %.0f)\n", row.name.c_str(), Median(row.samples),
                Median(row.samples) / b, row.values.at("compiles (max per run)"));
  }
}

// G: a frontend's fresh process to a linked cubin, interleaved over the ways to get there.
void FrontendEndToEnd(int rounds, coopd_bench::Report* report) {
  const std::string base = "in-process NVRTC + nvJitLink (no coopd)";
  auto& fig = report->Add("frontend_e2e",
                          "A frontend's fresh process to a linked cubin ready to load (process "
                          "wall, ms; ratio vs in-process NVRTC + nvJitLink)",
                          "ms", base);
  fig.note = "bench/frontend_e2e: " + std::string(coopd_bench::FrontendSpec().family) +
             " float32 256 threads, " + coopd_bench::kFrontendArch +
             "; the kernel is compiled by NVRTC in every variant; no GPU";
  Daemon d({"--workers", "1"});
  auto client = d.process.MakeClient();
  const coop::Artifact a = MustSpecialize(client, coopd_bench::FrontendSpec());
  const std::string source = d.dir.path() + "/unit.cu", cubin = d.dir.path() + "/out.cubin";
  std::ofstream(source) << a.source;
  const std::vector<std::pair<std::string, std::vector<std::string>>> variants = {
      {base,
       {FRONTEND_E2E_BINARY, "nvrtc", source, a.entries.at(0).symbol,
        std::to_string(a.temp_storage_bytes), cubin}},
      {"coopd hit + nvJitLink in the process",
       {FRONTEND_E2E_BINARY, "coopd", d.process.socket_path(), cubin}},
      {"coopd hit + coopd's Link RPC (cached cubin)",
       {FRONTEND_E2E_BINARY, "coopd-link", d.process.socket_path(), cubin}},
  };
  TimedRun(variants[2].second);  // the first Link compiles the cubin; later ones are hits
  for (int r = 0; r < rounds; ++r) {
    for (const auto& [name, argv] : variants) {
      std::string out;
      coopd_bench::Row& row = fig.At(name);
      row.samples.push_back(TimedRun(argv, &out));
      unsigned long long bytes = 0;
      if (std::sscanf(out.c_str(), "cubin %llu", &bytes) != 1 || bytes == 0) {
        Die("frontend_e2e printed no cubin: " + out);
      }
      row.values["cubin bytes"] = static_cast<double>(bytes);
    }
  }
  std::printf("\nG. fresh frontend process to a linked cubin (median ms; ratio vs no coopd)\n");
  const double b = Median(fig.At(base).samples);
  for (const auto& row : fig.rows) {
    std::printf("  %-48s %9.0f  %.2f\n", row.name.c_str(), Median(row.samples),
                Median(row.samples) / b);
  }
}

// K: a compile whose only caller gave up (issue 27 item 6). Each round starts a daemon with one
// worker and sends a new spec with a short deadline: the worker is cold, so the compile (which
// first builds the worker's PCH) is still running when the deadline passes. Measured: from the
// caller's DEADLINE_EXCEEDED, and from the deadline itself, to the worker process being gone
// (killed and reaped by coopd), next to the same compile run to its end on the replacement worker
// (the baseline). Nothing here is a test: tests/integration/engine_test.cc (Cancellation.*)
// checks the behaviour by counters.
bool ProcessGone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

void CancelLatency(int rounds, coopd_bench::Report* report) {
  constexpr auto kDeadline = 300ms;
  std::vector<double> from_error, from_deadline, full_compile;
  for (int r = 0; r < rounds; ++r) {
    Daemon d({"--workers", "1", "--compile-timeout", "600"});
    coop::Stats before = d.Stats();
    if (before.worker_status.empty() || before.worker_status[0].pid <= 0) Die("no worker");
    const int worker = before.worker_status[0].pid;
    const coop::Spec spec = DistinctSpecs(1, 700 + r)[0];
    coop::ClientOptions options;
    options.socket_path = d.process.socket_path();
    options.autostart = false;
    options.timeout = kDeadline;
    coop::Client impatient(options);
    const auto sent = Clock::now();
    auto a = impatient.Specialize(spec);
    const auto error = Clock::now();
    if (a) Die("the compile finished inside the deadline: use a slower spec or a shorter deadline");
    if (a.error().code != coop::ErrorCode::kDeadlineExceeded) Die(a.error().message);
    while (!ProcessGone(worker)) {
      if (Clock::now() - error > 60s)
        Die("the worker of a cancelled compile still runs after 60 s");
      std::this_thread::sleep_for(200us);
    }
    const auto gone = Clock::now();
    from_error.push_back(Ms(gone - error));
    from_deadline.push_back(Ms(gone - (sent + kDeadline)));
    // The same spec to its end on the replacement worker (cold too: it builds its PCH first).
    auto client = d.process.MakeClient();
    const auto t0 = Clock::now();
    MustSpecialize(client, spec);
    full_compile.push_back(Ms(Clock::now() - t0));
    if (d.Stats().compiles_cancelled != 1) Die("the first compile was not counted as cancelled");
  }
  const double base = Median(full_compile);
  std::printf(
      "\nK. a compile whose only caller gave up (%lld ms deadline; median ms; ratio vs the same "
      "compile run to its end)\n",
      static_cast<long long>(kDeadline.count()));
  std::printf("  %-48s %9.0f  1.00\n", "the compile run to its end (cold worker)", base);
  std::printf("  %-48s %9.1f  %.3f  (max %.1f)\n", "caller's DEADLINE_EXCEEDED -> worker gone",
              Median(from_error), Median(from_error) / base,
              *std::max_element(from_error.begin(), from_error.end()));
  std::printf("  %-48s %9.1f  %.3f  (max %.1f)\n", "deadline passed -> worker gone",
              Median(from_deadline), Median(from_deadline) / base,
              *std::max_element(from_deadline.begin(), from_deadline.end()));
  auto& f = report->Add("cancel", "A compile whose only caller gave up", "ms",
                        "the compile run to its end (cold worker)");
  f.note =
      "one worker, a new spec sent with a 300 ms deadline while the cold worker compiles; "
      "the worker counts as gone once /proc shows it reaped or a zombie";
  f.At("the compile run to its end (cold worker)").samples = full_compile;
  f.At("caller's DEADLINE_EXCEEDED -> worker gone").samples = from_error;
  f.At("deadline passed -> worker gone").samples = from_deadline;
}

std::vector<int> ParseCounts(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int n = std::atoi(item.c_str());
    if (n < 1) Die("--flight: counts must be positive integers, got \"" + item + "\"");
    out.push_back(n);
  }
  if (out.empty() || out[0] != 1) Die("--flight: the list must start with 1 (the baseline)");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::string sections = "ABCE", json_path;
  std::vector<int> flight = {1, 8, 32, 128};
  int flight_workers = 2, warm_specs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Die("usage: coopd_bench [--rounds N] [--sections ABCEFTSGK] ...");
    if (a == "--rounds") {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--sections") {
      sections = argv[++i];
    } else if (a == "--flight") {
      flight = ParseCounts(argv[++i]);
    } else if (a == "--warm-specs") {
      warm_specs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--flight-workers") {
      flight_workers = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json") {
      json_path = argv[++i];
    } else {
      Die("unknown argument \"" + a +
          "\"; allowed: --rounds, --sections, --warm-specs, --flight, --flight-workers, "
          "--json");
    }
  }
  coopd_bench::Report report("coopd_bench");
  auto wanted = [&](char section) { return sections.find(section) != std::string::npos; };
  std::printf("coopd_bench: %d round(s) per measurement, %u cores\n\n", rounds,
              std::thread::hardware_concurrency());

  // ---- A: one new specialization -------------------------------------------------------------
  if (wanted('A')) {
    std::vector<double> oneshot_wall, oneshot_compile, minimal_wall, cold_ms, cold_wall, warm_ms,
        warm_wall, layout_ms;
    for (int r = 0; r < rounds; ++r) {
      Daemon d({"--workers", "1"});
      auto client = d.process.MakeClient();
      std::vector<coop::Spec> specs = DistinctSpecs(4, 100 + r);
      auto t0 = Clock::now();
      coop::Artifact cold = MustSpecialize(client, specs[0]);
      cold_wall.push_back(Ms(Clock::now() - t0));
      cold_ms.push_back(cold.compile_ms);
      for (size_t i = 1; i < specs.size(); ++i) {
        t0 = Clock::now();
        coop::Artifact warm = MustSpecialize(client, specs[i]);
        warm_wall.push_back(Ms(Clock::now() - t0));
        warm_ms.push_back(warm.compile_ms);
        layout_ms.push_back(warm.layout_ms);
        if (warm.pch_status != "used")
          Die("a warm compile did not use the PCH: " + warm.pch_status);
        if (i == 1) {
          // The same rendered source, compiled once in a fresh process.
          const std::string path = d.dir.path() + "/unit.cu";
          std::ofstream(path) << warm.source;
          std::string out, err;
          t0 = Clock::now();
          int rc = RunCommand({NVRTC_ONESHOT_BINARY, path, "sm_90"}, &out, &err);
          oneshot_wall.push_back(Ms(Clock::now() - t0));
          if (rc != 0) Die("nvrtc_oneshot failed: " + err);
          oneshot_compile.push_back(std::atof(out.c_str()));
          t0 = Clock::now();
          rc = RunCommand({NVRTC_ONESHOT_BINARY, path, "sm_90", "--minimal"}, &out, &err);
          minimal_wall.push_back(Ms(Clock::now() - t0));
          if (rc != 0) Die("nvrtc_oneshot --minimal failed: " + err);
        }
      }
    }
    const double base = Median(oneshot_wall);
    std::printf("A. one new specialization (median ms; ratio vs one-shot fresh-process NVRTC)\n");
    std::printf("  %-48s %9.0f  1.00\n", "one-shot NVRTC, fresh process (wall)", base);
    std::printf("  %-48s %9.0f  %.2f\n", "  of which the NVRTC compile itself",
                Median(oneshot_compile), Median(oneshot_compile) / base);
    std::printf("  %-48s %9.0f  %.2f\n", "one-shot NVRTC, only the needed headers (wall)",
                Median(minimal_wall), Median(minimal_wall) / base);
    std::printf("  %-48s %9.0f  %.2f\n", "coopd, cold worker: first compile (client wall)",
                Median(cold_wall), Median(cold_wall) / base);
    std::printf("  %-48s %9.0f  %.2f\n", "coopd, warm worker: new spec (client wall)",
                Median(warm_wall), Median(warm_wall) / base);
    std::printf("  %-48s %9.0f  %.2f\n", "  of which the NVRTC compile (worker)", Median(warm_ms),
                Median(warm_ms) / base);
    std::printf("  %-48s %9.1f\n", "  layout query on top (nvJitLink -ptx)", Median(layout_ms));
    std::printf("  %-48s %12.2f\n", "warm new spec vs one-shot with only needed headers",
                Median(warm_wall) / Median(minimal_wall));
  }

  // ---- B: throughput of distinct compiles ----------------------------------------------------
  if (wanted('B')) {
    const int kDistinct = 12;
    std::vector<double> per_worker_count_ms[2];
    uint64_t stored_bytes = 0, raw_bytes = 0, entries = 0;
    for (int workers : {1, 2}) {
      for (int r = 0; r < rounds; ++r) {
        Daemon d({"--workers", std::to_string(workers), "--prewarm", "sm_90"});
        d.WaitWarm();
        std::vector<coop::Spec> specs = DistinctSpecs(kDistinct, 200 + r);
        std::vector<std::future<void>> done;
        auto t0 = Clock::now();
        for (const auto& s : specs) {
          done.push_back(std::async(std::launch::async, [&d, s] {
            auto client = d.process.MakeClient();
            MustSpecialize(client, s);
          }));
        }
        for (auto& f : done) f.get();
        per_worker_count_ms[workers - 1].push_back(Ms(Clock::now() - t0));
        coop::Stats stats = d.Stats();
        if (stats.compiles != static_cast<uint64_t>(kDistinct)) Die("expected distinct compiles");
        for (const auto& t : stats.tiers) {
          if (t.name == "disk") {
            stored_bytes += t.bytes;
            raw_bytes += t.raw_bytes;
            entries += t.entries;
          }
        }
      }
    }
    const double t1 = Median(per_worker_count_ms[0]), t2 = Median(per_worker_count_ms[1]);
    std::printf("\nB. %d distinct compiles on pre-warmed workers (median ms; throughput ratio)\n",
                kDistinct);
    std::printf("  %-48s %9.0f  %.2f compiles/s  1.00\n", "1 worker", t1, kDistinct / (t1 / 1000));
    std::printf("  %-48s %9.0f  %.2f compiles/s  %.2f\n", "2 workers", t2, kDistinct / (t2 / 1000),
                t1 / t2);

    std::printf(
        "\nD. disk cache storage over the %llu artifacts of B (zstd records, deduplicated)\n",
        static_cast<unsigned long long>(entries));
    std::printf("  %-48s %9.0f\n", "raw bytes per artifact",
                static_cast<double>(raw_bytes) / entries);
    std::printf("  %-48s %9.0f  %.2f\n", "stored bytes per artifact",
                static_cast<double>(stored_bytes) / entries,
                static_cast<double>(stored_bytes) / static_cast<double>(raw_bytes));
  }

  // ---- C: 32 identical cold requests ---------------------------------------------------------
  if (wanted('C')) {
    std::vector<double> single, slowest;
    uint64_t compiles = 0;
    for (int r = 0; r < rounds; ++r) {
      coop::Spec s = DistinctSpecs(1, 300 + r)[0];
      {
        Daemon d({"--workers", "2"});
        auto client = d.process.MakeClient();
        auto t0 = Clock::now();
        MustSpecialize(client, s);
        single.push_back(Ms(Clock::now() - t0));
      }
      Daemon d({"--workers", "2"});
      std::vector<std::future<double>> replies;
      std::promise<void> go;
      std::shared_future<void> start = go.get_future().share();
      for (int i = 0; i < 32; ++i) {
        replies.push_back(std::async(std::launch::async, [&d, s, start] {
          auto client = d.process.MakeClient();
          start.wait();
          auto t0 = Clock::now();
          MustSpecialize(client, s);
          return Ms(Clock::now() - t0);
        }));
      }
      go.set_value();
      double worst = 0;
      for (auto& f : replies) worst = std::max(worst, f.get());
      slowest.push_back(worst);
      compiles = std::max(compiles, d.Stats().compiles);
    }
    std::printf("\nC. 32 identical cold requests at once (median ms)\n");
    std::printf("  %-48s %9.0f  1.00\n", "one request alone, cold daemon", Median(single));
    std::printf("  %-48s %9.0f  %.2f\n", "slowest of 32 identical requests", Median(slowest),
                Median(slowest) / Median(single));
    std::printf("  %-48s %9llu\n", "compiles (max over rounds)",
                static_cast<unsigned long long>(compiles));
  }

  // ---- E: bitcode vs LTO-IR -------------------------------------------------------------------
  if (wanted('E')) BitcodeVsLtoIr(rounds);
  if (wanted('F')) FarmTier(rounds);
  if (wanted('T')) TimeToArtifact(rounds, warm_specs, &report);
  if (wanted('S')) SingleFlight(rounds, flight, flight_workers, &report);
  if (wanted('G')) FrontendEndToEnd(rounds, &report);
  if (wanted('K')) CancelLatency(rounds, &report);
  if (!json_path.empty() && !report.Write(json_path, coopd_bench::JoinArgs(argc, argv))) return 1;
  return 0;
}
