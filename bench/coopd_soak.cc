// coopd_soak: a long run of a real coopd under many concurrent clients (issue 14, item 8).
//
// Starts coopd on a temporary socket and cache, compiles a small set of hit specs, then runs
// --requests requests from --clients threads, each with its own coop::Client (its own channel).
// One request in --miss-every asks for a spec no one asked for before (a compile); the rest ask
// for the hit set. While it runs, a sampler records coopd's RSS, open descriptors and threads,
// and its workers' together, every --sample-ms.
//
// It reports the error count, the samples (first, middle, last and the maxima of each half) and
// latency percentiles (p50, p99, p99.9, max) of hits and misses, and exits 1 when any request
// failed or, outside --quick, when a resource was not bounded: the second half's maximum above
// the first half's by more than the margin (RSS: 10% + 32 MiB; descriptors: 16; threads: 8).
// A bounded process reaches its steady state in the first half; a leak keeps growing. The
// memory tier is limited to --memory-cache-mb (default 32) so that its growth, bounded by
// design, ends early in the run.
//
// usage: coopd_soak [--quick] [--requests N] [--clients N] [--miss-every N] [--workers N]
//                   [--memory-cache-mb N] [--sample-ms N] [--invalid-every N]
//   --invalid-every N: every Nth request has an invalid dtype, so it must fail (the test that
//     the error count and exit status work)
//   --quick: 20,000 requests, 4 hit specs, 8 misses, no bound checks (CI runs it as a test)
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "integration/coopd_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "coopd_soak: %s\n", what.c_str());
  std::exit(2);
}

// Spec `i` of a family of distinct block_reduce specs (6 dtypes x 32 block sizes x 64 items per
// thread = 12,288); the hit set is the first few, misses take the next ones in order.
coop::Spec SoakSpec(uint64_t i) {
  const char* dtypes[] = {"float32", "int32", "float64", "int64", "uint32", "uint64"};
  coop::Spec s;
  s.family = "block_reduce";
  s.method = "sum";
  s.dtype = dtypes[i % 6];
  s.block = {static_cast<uint32_t>(32 * (1 + (i / 6) % 32)), 1, 1};
  s.items_per_thread = static_cast<uint32_t>(1 + (i / 192) % 64);
  s.arch = "sm_90";
  return s;
}
constexpr uint64_t kSpecSpace = 6 * 32 * 64;

struct ProcUsage {
  uint64_t rss_kb = 0;
  uint64_t fds = 0;
  uint64_t threads = 0;
};

// One process's resident set, open descriptors and threads (zeros once it is gone).
ProcUsage Usage(int pid) {
  ProcUsage u;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream in(line);
    std::string key;
    uint64_t value = 0;
    in >> key >> value;
    if (key == "VmRSS:") u.rss_kb = value;
    if (key == "Threads:") u.threads = value;
  }
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ++u.fds;
    }
    closedir(d);
  }
  return u;
}

struct Sample {
  double t_s = 0;
  uint64_t done = 0;
  ProcUsage coopd, workers;  // workers: summed over the live ones
};

struct Latencies {
  std::vector<float> hit_us, miss_us;
};

double Percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

void PrintLatency(const char* what, std::vector<float> v) {
  if (v.empty()) {
    std::printf("  %-6s none\n", what);
    return;
  }
  const double max = *std::max_element(v.begin(), v.end());
  const double p50 = Percentile(v, 0.50), p99 = Percentile(v, 0.99), p999 = Percentile(v, 0.999);
  std::printf("  %-6s n=%zu  p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms\n", what,
              v.size(), p50 / 1000, p99 / 1000, p999 / 1000, max / 1000);
}

// The bound: a series is bounded when the maximum of its second half is at most the first
// half's maximum times `ratio` plus `margin`.
struct Bound {
  uint64_t first = 0, second = 0, limit = 0;
  bool ok = true;
};
Bound Judge(const std::vector<uint64_t>& series, double ratio, uint64_t margin) {
  Bound b;
  const size_t half = series.size() / 2;
  for (size_t i = 0; i < series.size(); ++i) {
    uint64_t& m = i < half ? b.first : b.second;
    m = std::max(m, series[i]);
  }
  b.limit = static_cast<uint64_t>(static_cast<double>(b.first) * ratio) + margin;
  b.ok = b.second <= b.limit;
  return b;
}

// Judge() on made-up series: a plateau with noise is bounded, a steady leak is not.
bool JudgeWorks() {
  std::vector<uint64_t> plateau, leak;
  for (uint64_t i = 0; i < 100; ++i) {
    plateau.push_back(std::min<uint64_t>(i, 20) * 4096 + 100 * 1024 + (i * 7919) % 2048);
    leak.push_back(100 * 1024 + i * 1024);  // 1 MiB per sample
  }
  return Judge(plateau, 1.10, 32 * 1024).ok && !Judge(leak, 1.10, 32 * 1024).ok;
}

uint64_t Arg(const std::vector<std::string>& args, size_t* i, const std::string& flag) {
  if (*i + 1 >= args.size()) Die(flag + " needs a number");
  const std::string& v = args[++*i];
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n == 0)
    Die(flag + " must be a positive integer, got \"" + v + "\"");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  uint64_t requests = 1000000, clients = 32, miss_every = 1000, workers = 2, memory_mb = 32,
           sample_ms = 1000;
  size_t hit_specs = 16;
  std::vector<std::string> args(argv + 1, argv + argc);
  uint64_t invalid_every = 0;  // 0: none
  bool requests_set = false, miss_set = false, sample_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--requests") {
      requests = Arg(args, &i, a);
      requests_set = true;
    } else if (a == "--clients") {
      clients = Arg(args, &i, a);
    } else if (a == "--miss-every") {
      miss_every = Arg(args, &i, a);
      miss_set = true;
    } else if (a == "--invalid-every") {
      invalid_every = Arg(args, &i, a);
    } else if (a == "--workers") {
      workers = Arg(args, &i, a);
    } else if (a == "--memory-cache-mb") {
      memory_mb = Arg(args, &i, a);
    } else if (a == "--sample-ms") {
      sample_ms = Arg(args, &i, a);
      sample_set = true;
    } else {
      Die("unknown argument \"" + a +
          "\"; usage: coopd_soak [--quick] [--requests N] [--clients N] [--miss-every N] "
          "[--workers N] [--memory-cache-mb N] [--sample-ms N] [--invalid-every N]");
    }
  }
  if (quick) {
    if (!requests_set) requests = 20000;
    if (!miss_set) miss_every = 2500;
    if (!sample_set) sample_ms = 200;
    hit_specs = 4;  // fewer warm-up compiles
  }
  if (requests / miss_every + hit_specs > kSpecSpace) {
    Die("too many misses: at most " + std::to_string(kSpecSpace - hit_specs) + " distinct specs");
  }

  coopd_test::TempDir dir;
  coopd_test::CoopdProcess daemon(
      dir.path() + "/coopd.sock", dir.path() + "/cache",
      {"--workers", std::to_string(workers), "--memory-cache-mb", std::to_string(memory_mb)});
  std::string error;
  if (!daemon.Start(&error) || !daemon.WaitReady(120s, &error)) Die(error);
  coop::ClientOptions options;
  options.socket_path = daemon.socket_path();
  options.autostart = false;
  options.timeout = 10min;
  {
    coop::Client warm(options);
    for (size_t i = 0; i < hit_specs; ++i) {
      auto a = warm.Specialize(SoakSpec(i));
      if (!a) Die("warm-up: " + a.error().message);
    }
  }
  std::printf(
      "coopd_soak: %llu requests from %llu clients, 1 in %llu a miss (%llu distinct), "
      "%llu workers, memory tier %llu MiB, coopd pid %d\n",
      static_cast<unsigned long long>(requests), static_cast<unsigned long long>(clients),
      static_cast<unsigned long long>(miss_every),
      static_cast<unsigned long long>(requests / miss_every),
      static_cast<unsigned long long>(workers), static_cast<unsigned long long>(memory_mb),
      daemon.pid());
  std::fflush(stdout);

  std::atomic<uint64_t> next{0}, done{0}, errors{0}, unexpected_origin{0};
  std::mutex mu;
  std::vector<std::string> first_errors;
  std::vector<Latencies> latencies(clients);
  std::atomic<bool> finished{false};
  std::vector<Sample> samples;
  const auto start = Clock::now();

  std::thread sampler([&] {
    coop::Client stats_client(options);
    while (!finished) {
      Sample s;
      s.t_s = std::chrono::duration<double>(Clock::now() - start).count();
      s.done = done;
      s.coopd = Usage(daemon.pid());
      if (auto st = stats_client.GetStats()) {
        for (const auto& w : st->worker_status) {
          if (w.pid <= 0) continue;
          ProcUsage u = Usage(w.pid);
          s.workers.rss_kb += u.rss_kb;
          s.workers.fds += u.fds;
          s.workers.threads += u.threads;
        }
      }
      samples.push_back(s);
      for (uint64_t slept = 0; slept < sample_ms && !finished; slept += 10) {
        std::this_thread::sleep_for(10ms);
      }
    }
  });

  std::vector<std::thread> threads;
  for (uint64_t c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      coop::ClientOptions mine = options;
      mine.client_name = "soak-" + std::to_string(c);
      coop::Client client(mine);
      Latencies& lat = latencies[c];
      uint64_t rng = 0x9e3779b97f4a7c15ull * (c + 1);
      for (uint64_t r; (r = next++) < requests;) {
        const bool miss = r % miss_every == miss_every / 2;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        const uint64_t index = miss ? hit_specs + r / miss_every : rng % hit_specs;
        const auto t0 = Clock::now();
        coop::Spec spec = SoakSpec(index);
        if (invalid_every > 0 && r % invalid_every == 0) spec.dtype = "float33";  // must count
        auto a = client.Specialize(spec);
        const float us = std::chrono::duration<float, std::micro>(Clock::now() - t0).count();
        ++done;
        if (!a) {
          ++errors;
          std::lock_guard<std::mutex> lock(mu);
          if (first_errors.size() < 5) {
            first_errors.push_back(std::string(coop::ErrorCodeName(a.error().code)) + ": " +
                                   a.error().message);
          }
          continue;
        }
        const bool compiled = a->origin == coop::Origin::kCompiled;
        if (compiled != miss) ++unexpected_origin;
        (miss ? lat.miss_us : lat.hit_us).push_back(us);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  finished = true;
  sampler.join();

  coop::Stats stats;
  if (auto s = coop::Client(options).GetStats()) stats = *s;
  Latencies all;
  for (auto& l : latencies) {
    all.hit_us.insert(all.hit_us.end(), l.hit_us.begin(), l.hit_us.end());
    all.miss_us.insert(all.miss_us.end(), l.miss_us.begin(), l.miss_us.end());
  }

  std::printf(
      "requests %llu in %.1f s (%.0f/s); errors %llu; hits %zu, misses %zu (%llu served "
      "from another origin than expected); coopd: %llu compiles, %llu worker crashes\n",
      static_cast<unsigned long long>(done.load()), elapsed,
      static_cast<double>(done.load()) / elapsed, static_cast<unsigned long long>(errors.load()),
      all.hit_us.size(), all.miss_us.size(),
      static_cast<unsigned long long>(unexpected_origin.load()),
      static_cast<unsigned long long>(stats.compiles),
      static_cast<unsigned long long>(stats.worker_crashes));
  for (const auto& e : first_errors) std::printf("  error: %s\n", e.c_str());
  std::printf("latency (client-side, whole call):\n");
  PrintLatency("hit", std::move(all.hit_us));
  PrintLatency("miss", std::move(all.miss_us));

  // Resources: a few samples, then each half's maximum.
  auto row = [](const char* label, const Sample& s) {
    std::printf(
        "  %-8s t=%7.1f s done=%8llu  coopd rss %6.1f MiB fds %3llu threads %3llu  "
        "workers rss %6.1f MiB fds %3llu threads %3llu\n",
        label, s.t_s, static_cast<unsigned long long>(s.done), s.coopd.rss_kb / 1024.0,
        static_cast<unsigned long long>(s.coopd.fds),
        static_cast<unsigned long long>(s.coopd.threads), s.workers.rss_kb / 1024.0,
        static_cast<unsigned long long>(s.workers.fds),
        static_cast<unsigned long long>(s.workers.threads));
  };
  bool bounded = true;
  std::printf("resources (%zu samples, every %llu ms):\n", samples.size(),
              static_cast<unsigned long long>(sample_ms));
  if (samples.size() >= 4) {
    row("first", samples.front());
    row("middle", samples[samples.size() / 2]);
    row("last", samples.back());
    struct Check {
      const char* name;
      uint64_t (*get)(const Sample&);
      double ratio;
      uint64_t margin;
    };
    const Check checks[] = {
        {"coopd rss (KiB)", [](const Sample& s) { return s.coopd.rss_kb; }, 1.10, 32 * 1024},
        {"coopd fds", [](const Sample& s) { return s.coopd.fds; }, 1.0, 16},
        {"coopd threads", [](const Sample& s) { return s.coopd.threads; }, 1.0, 8},
        {"workers rss (KiB)", [](const Sample& s) { return s.workers.rss_kb; }, 1.10, 32 * 1024},
        {"workers fds", [](const Sample& s) { return s.workers.fds; }, 1.0, 16},
        {"workers threads", [](const Sample& s) { return s.workers.threads; }, 1.0, 8},
    };
    for (const Check& c : checks) {
      std::vector<uint64_t> series;
      for (const Sample& sample : samples) series.push_back(c.get(sample));
      const Bound b = Judge(series, c.ratio, c.margin);
      if (!b.ok) bounded = false;
      std::printf("  %-18s max first half %9llu, second half %9llu, limit %9llu  %s\n", c.name,
                  static_cast<unsigned long long>(b.first),
                  static_cast<unsigned long long>(b.second),
                  static_cast<unsigned long long>(b.limit), b.ok ? "ok" : "GROWING");
    }
  } else {
    std::printf("  too few samples to judge\n");
    bounded = quick;
  }
  const int stop = daemon.Stop(SIGTERM);
  if (stop != 0) std::printf("coopd exited with status %d:\n%s\n", stop, daemon.Log().c_str());
  const bool judge_works = JudgeWorks();
  if (!judge_works) std::printf("coopd_soak: the bound check misjudged its made-up series\n");
  const bool pass =
      errors == 0 && done == requests && stop == 0 && judge_works && (quick || bounded);
  std::printf("coopd_soak: %s%s\n", pass ? "PASS" : "FAIL",
              quick ? " (--quick: resource bounds reported, not judged)" : "");
  return pass ? 0 : 1;
}
