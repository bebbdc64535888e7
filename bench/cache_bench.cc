// cache_bench: the disk cache at farm scale, measured side by side in one run. Prints ratios
// against baselines taken in the same run; see docs/benchmarks.md and docs/cache.md.
//
//   A. start to ready: coopd on a cache of 50 entries vs one of N (default 10,000), starts
//      interleaved, median of --rounds each (ready = the first GetStats answered);
//   B. disk hit vs memory hit: the same spec from a coopd with no memory tier and from one with
//      it, both on the N-entry cache, requests interleaved, p50 and p99 of --hits each;
//   C. eviction: coopd started on the N-entry cache with a budget that forces more than 1,000
//      evictions; how long until it is under budget, how many batches, and the memory-hit and
//      GetStats latency while it evicts vs once it is done; then SIGTERM during a second
//      eviction and the time to exit.
//
// Caches are written by coopd_fill (real-sized, verifiable entries; see bench/coopd_fill.cc).
//
// usage: cache_bench [--entries N[,N...]] [--rounds R] [--hits H] [--dir DIR] [--sections ABC]
//                    [--small-fill-above N] [--json FILE]
//   --entries     one or more cache sizes: A and B run at each (against the 50-entry cache), C
//                 at the largest
//   --dir         keeps the filled caches there between runs (default: a temporary directory)
//   --small-fill-above N   caches of more than N entries are filled with 8 KiB payloads instead
//                 of real-sized ones (a shortcut for 100,000 entries: start-up and a hit depend
//                 on the number of rows, and the measured spec is always the real one)
//   --json        writes the figures of A and B (bench/report.h) for bench/run.sh
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/report.h"
#include "coop/client.h"
#include "integration/coopd_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using coopd_test::CoopdProcess;
using coopd_test::RunCommand;
namespace fs = std::filesystem;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "cache_bench: %s\n", what.c_str());
  std::exit(1);
}

// A budget no cache here reaches (1 PiB): sections A and B measure a cache at rest, not one
// the default 5 GiB budget starts evicting (a 100,000-entry cache holds 13 GB).
constexpr char kNoEviction[] = "1073741824";
// Every daemon here runs with --prewarm none: a cache that has compiled for sm_90 would
// otherwise have each start build its workers' precompiled headers in the background, compiles
// that take the 2 cores from the start-up and the hits being measured.

coop::Spec RealSpec() {
  coop::Spec s;
  s.family = "block_reduce";
  s.method = "sum";
  s.dtype = "float32";
  s.block = {256, 1, 1};
  s.arch = "sm_90";
  return s;
}

// Adds `entries` fillers to the cache in `cache_dir` (coopd_fill --ltoir `payload`: no compile);
// `seed` keeps the keys of successive fills apart.
void Fill(const std::string& cache_dir, uint64_t entries, const std::string& payload,
          uint64_t seed) {
  const auto start = Clock::now();
  std::string out, err;
  if (RunCommand({COOPD_FILL_BINARY, "--cache-dir", cache_dir, "--entries", std::to_string(entries),
                  "--ltoir", payload, "--seed", std::to_string(seed)},
                 &out, &err) != 0) {
    Die("coopd_fill failed: " + err);
  }
  std::printf("  %s  (%.1f s)\n", out.substr(0, out.find('\n')).c_str(),
              std::chrono::duration<double>(Clock::now() - start).count());
}

// Copies a cache directory that no daemon is using (checkpointed first, so the main database
// file holds everything).
void CopyCache(const std::string& from, const std::string& to) {
  std::string out, err;
  RunCommand({"/usr/bin/sqlite3", from + "/cache.db", "PRAGMA wal_checkpoint(TRUNCATE)"}, &out,
             &err);
  fs::copy(from, to, fs::copy_options::recursive);
}

coop::Client ClientFor(const std::string& socket, std::chrono::seconds timeout = 60s) {
  coop::ClientOptions o;
  o.socket_path = socket;
  o.timeout = timeout;
  o.autostart = false;  // the bench starts its own daemons
  return coop::Client(o);
}

// Starts coopd and returns the milliseconds from fork to the first answered GetStats.
double StartAndTime(CoopdProcess* p) {
  std::string error;
  const auto start = Clock::now();
  if (!p->Start(&error)) Die(error);
  for (;;) {
    struct stat st;
    if (stat(p->socket_path().c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
        ClientFor(p->socket_path(), 2s).GetStats()) {
      return Ms(Clock::now() - start);
    }
    if (Clock::now() - start > 120s) Die("coopd did not become ready:\n" + p->Log());
    std::this_thread::sleep_for(1ms);
  }
}

std::string JoinSizes(const std::vector<uint64_t>& sizes) {
  std::string s;
  for (uint64_t n : sizes) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

const coop::TierStats* Disk(const coop::Stats& s) {
  for (const auto& t : s.tiers) {
    if (t.name == "disk") return &t;
  }
  return nullptr;
}

// Makes sure the real spec is stored in `cache_dir` (compiling it once) and is the most
// recently used entry there; returns its LTO-IR.
std::string StoreRealSpec(const std::string& dir, const std::string& cache_dir) {
  // One worker without a PCH: this compile happens once, and building a PCH would only add to it.
  CoopdProcess p(
      dir + "/prep.sock", cache_dir,
      {"--cache-max-mb", kNoEviction, "--prewarm", "none", "--workers", "1", "--no-pch"});
  std::string error;
  if (!p.Start(&error) || !p.WaitReady(120s, &error)) Die(error);
  auto a = ClientFor(p.socket_path(), 300s).Specialize(RealSpec());
  if (!a) Die("specialize: " + a.error().message);
  p.Stop(SIGTERM);
  return a->ltoir;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out.flush()) Die("cannot write " + path);
}

std::vector<uint64_t> ParseSizes(const std::string& list) {
  std::vector<uint64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    uint64_t n = 0;
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        (n = std::stoull(item)) <= 50) {
      Die("--entries: each size must be an integer above 50, got \"" + item + "\"");
    }
    out.push_back(n);
  }
  if (out.empty()) Die("--entries: give at least one size");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> sizes = {10000};
  int rounds = 7, hits = 400;
  uint64_t small_fill_above = 0;
  std::string keep_dir, sections = "ABC", json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      Die("usage: cache_bench [--entries N[,N...]] [--rounds R] [--hits H] [--dir DIR] "
          "[--sections ABC] [--small-fill-above N] [--json FILE]");
    }
    if (a == "--entries") {
      sizes = ParseSizes(argv[++i]);
    } else if (a == "--rounds") {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--hits") {
      hits = std::max(10, std::atoi(argv[++i]));
    } else if (a == "--dir") {
      keep_dir = argv[++i];
    } else if (a == "--sections") {
      sections = argv[++i];
    } else if (a == "--small-fill-above") {
      small_fill_above = std::stoull(argv[++i]);
    } else if (a == "--json") {
      json_path = argv[++i];
    } else {
      Die("unknown argument \"" + a +
          "\"; allowed: --entries, --rounds, --hits, --dir, --sections, --small-fill-above, "
          "--json");
    }
  }
  auto wanted = [&](char section) { return sections.find(section) != std::string::npos; };
  const uint64_t entries = sizes.back();
  std::unique_ptr<coopd_test::TempDir> temp;
  std::string dir = keep_dir;
  if (dir.empty()) {
    temp = std::make_unique<coopd_test::TempDir>();
    dir = temp->path();
  }
  fs::create_directories(dir);
  auto cache_of = [&](uint64_t n) {
    const bool small_payload = small_fill_above > 0 && n > small_fill_above;
    return dir + "/cache-" + std::to_string(n) + (small_payload ? "-8k" : "");
  };
  const std::string small = dir + "/cache-50", large = cache_of(entries);
  std::printf("cache_bench: caches of 50 and %s entries under %s\n", JoinSizes(sizes).c_str(),
              dir.c_str());
  // One compile in all: the real spec goes into the 50-entry cache first, and its LTO-IR is the
  // payload of every filler (cut to 8 KiB for the shortcut). Each larger cache starts as a copy
  // of the 50-entry one (the real spec and the header manifest included), plus its fillers; a
  // hit on the real spec then makes it the most recently used entry (section C evicts the
  // least recently used ones).
  if (!fs::exists(small + "/cache.db")) {
    const std::string real = StoreRealSpec(dir, small);
    WriteFile(dir + "/real.ltoir", real);
    WriteFile(dir + "/small.ltoir", real.substr(0, std::min<size_t>(real.size(), 8192)));
    Fill(small, 50, dir + "/real.ltoir", 1);
  }
  for (uint64_t n : sizes) {
    const bool small_payload = small_fill_above > 0 && n > small_fill_above;
    if (fs::exists(cache_of(n) + "/cache.db")) {
      std::printf("  reusing %s\n", cache_of(n).c_str());
      continue;
    }
    CopyCache(small, cache_of(n));
    Fill(cache_of(n), n - 50, dir + (small_payload ? "/small.ltoir" : "/real.ltoir"), 2);
    StoreRealSpec(dir, cache_of(n));
  }
  coopd_bench::Report report("cache_bench");
  const std::string caches_note =
      "Caches: the real spec (block_reduce float32 256, 135 KB of LTO-IR) plus 50 fillers; each "
      "larger cache is a copy of that one plus its fillers (bench/coopd_fill: real-sized "
      "payloads" +
      std::string(small_fill_above
                      ? ", 8 KiB ones above " + std::to_string(small_fill_above) + " entries"
                      : "") +
      "). Every daemon runs with --prewarm none and a budget no cache reaches.";
  auto figure = [&](const std::string& id, const std::string& title, const std::string& baseline,
                    const std::string& method) -> coopd_bench::Figure& {
    coopd_bench::Figure& f = report.Add(id, title, "ms", baseline);
    f.note = caches_note + " " + method;
    return f;
  };
  auto label = [&](uint64_t n) {
    std::string s = std::to_string(n) + " entries";
    if (small_fill_above > 0 && n > small_fill_above) s += " (8 KiB fillers)";
    return s;
  };

  // ---- A. start to ready ------------------------------------------------------------------
  if (wanted('A')) {
    auto& fig = figure("scaling_start",
                       "Start to ready by cache size (fork to the first answered GetStats, ms; "
                       "ratio vs a 50-entry cache)",
                       "50 entries",
                       "Starts interleaved over the caches, each round starting with the next "
                       "one; a first round is dropped.");
    fig.At("50 entries");  // the rows in size order, whatever order the starts take
    for (uint64_t n : sizes) fig.At(label(n));
    for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms the page cache and the manifests
      for (size_t k = 0; k <= sizes.size(); ++k) {
        // Each round starts with the next cache: no size always goes first.
        const size_t which = (k + static_cast<size_t>(r)) % (sizes.size() + 1);
        CoopdProcess p(dir + "/a.sock", which == 0 ? small : cache_of(sizes[which - 1]),
                       {"--cache-max-mb", kNoEviction, "--prewarm", "none"});
        const double ms = StartAndTime(&p);
        if (r > 0)
          fig.At(which == 0 ? "50 entries" : label(sizes[which - 1])).samples.push_back(ms);
        p.Stop(SIGTERM);
      }
    }
    std::printf("\nA. start to ready, median of %d interleaved starts\n", rounds);
    const double a = Pct(fig.At("50 entries").samples, 0.5);
    for (uint64_t n : sizes) {
      const double b = Pct(fig.At(label(n)).samples, 0.5);
      std::printf("   50 entries: %.0f ms   %llu entries: %.0f ms   ratio %.2fx (goal <= 1.5x)\n",
                  a, static_cast<unsigned long long>(n), b, b / a);
    }
  }

  // ---- B. disk hit vs memory hit -----------------------------------------------------------
  if (wanted('B')) {
    auto& fig = figure("scaling_hits",
                       "Hits of one real artifact by cache size (client round trip, ms; ratio "
                       "vs a memory hit on a 50-entry cache)",
                       "memory hit, 50 entries",
                       "Per cache, one daemon with the memory tier and one without it; their "
                       "hits alternate.");
    std::vector<uint64_t> all = {50};
    all.insert(all.end(), sizes.begin(), sizes.end());
    for (uint64_t n : all) {
      const std::string cache = n == 50 ? small : cache_of(n);
      CoopdProcess mem(dir + "/m.sock", cache,
                       {"--cache-max-mb", kNoEviction, "--prewarm", "none"});
      CoopdProcess disk(
          dir + "/d.sock", cache,
          {"--memory-cache-mb", "0", "--cache-max-mb", kNoEviction, "--prewarm", "none"});
      std::string error;
      if (!mem.Start(&error) || !mem.WaitReady(120s, &error)) Die(error);
      if (!disk.Start(&error) || !disk.WaitReady(120s, &error)) Die(error);
      auto mc = ClientFor(mem.socket_path()), dc = ClientFor(disk.socket_path());
      if (!mc.Specialize(RealSpec()) || !dc.Specialize(RealSpec())) Die("warm-up request failed");
      const std::string name = n == 50 ? "50 entries" : label(n);
      std::vector<double>& tm = fig.At("memory hit, " + name).samples;
      std::vector<double>& td = fig.At("disk hit, " + name).samples;
      for (int i = 0; i < hits; ++i) {
        auto t0 = Clock::now();
        auto a = mc.Specialize(RealSpec());
        auto t1 = Clock::now();
        auto b = dc.Specialize(RealSpec());
        auto t2 = Clock::now();
        if (!a || a->origin != coop::Origin::kMemory) Die("expected a memory hit");
        if (!b || b->origin != coop::Origin::kDisk) Die("expected a disk hit");
        tm.push_back(Ms(t1 - t0));
        td.push_back(Ms(t2 - t1));
      }
      std::printf(
          "\nB. Specialize hit of one 135 KB artifact on the %llu-entry cache, %d interleaved\n",
          static_cast<unsigned long long>(n), hits);
      std::printf(
          "   memory: p50 %.3f ms p99 %.3f ms   disk: p50 %.3f ms p99 %.3f ms   "
          "disk/memory p50 %.2fx (goal <= 2x)\n",
          Pct(tm, 0.5), Pct(tm, 0.99), Pct(td, 0.5), Pct(td, 0.99), Pct(td, 0.5) / Pct(tm, 0.5));
      mem.Stop(SIGTERM);
      disk.Stop(SIGTERM);
    }
  }
  if (!json_path.empty() && !report.Write(json_path, coopd_bench::JoinArgs(argc, argv))) return 1;
  if (!wanted('C')) return 0;

  // ---- C. eviction under load, then SIGTERM during eviction ----------------------------------
  {
    // A copy, so the big cache survives for the next run; checkpointed first, so the copy of
    // the main file holds everything (the daemons above may leave a WAL behind).
    {
      std::string out, err;
      RunCommand({"/usr/bin/sqlite3", large + "/cache.db", "PRAGMA wal_checkpoint(TRUNCATE)"}, &out,
                 &err);
    }
    const std::string evict_dir = dir + "/cache-evict";
    fs::remove_all(evict_dir);
    fs::create_directories(evict_dir);
    fs::copy_file(large + "/cache.db", evict_dir + "/cache.db");
    const uint64_t stored = [&] {
      std::string out, err;
      RunCommand({"/usr/bin/sqlite3", evict_dir + "/cache.db",
                  "SELECT entry_bytes + blob_bytes FROM totals"},
                 &out, &err);
      return std::stoull(out);
    }();
    // Evicting to 90% of a budget of 80% of the store: about 28% of the entries.
    const uint64_t budget_mb = std::max<uint64_t>(1, stored * 8 / 10 >> 20);
    CoopdProcess p(dir + "/e.sock", evict_dir,
                   {"--cache-max-mb", std::to_string(budget_mb), "--prewarm", "none"});
    std::string error;
    const auto start = Clock::now();
    if (!p.Start(&error) || !p.WaitReady(120s, &error)) Die(error);
    auto c = ClientFor(p.socket_path(), 60s);
    std::vector<double> hit_during, hit_after, stats_during, stats_after;
    bool evicting = true;
    uint64_t evictions = 0, remaining = 0;
    double evicted_at = 0;
    int failures = 0;
    while (true) {
      auto t0 = Clock::now();
      auto a = c.Specialize(RealSpec());
      auto t1 = Clock::now();
      auto s = c.GetStats();
      auto t2 = Clock::now();
      if (!a || !s) {
        ++failures;
        continue;
      }
      const coop::TierStats* d = Disk(*s);
      const bool now_evicting = d->evicting || d->bytes > (budget_mb << 20);
      if (evicting && !now_evicting) {
        evicted_at = Ms(Clock::now() - start);
        evictions = d->evictions;
        remaining = d->entries;
      }
      evicting = now_evicting;
      if (a->origin == coop::Origin::kMemory) {
        (evicting ? hit_during : hit_after).push_back(Ms(t1 - t0));
      }
      (evicting ? stats_during : stats_after).push_back(Ms(t2 - t1));
      if (!evicting && hit_after.size() >= 200) break;
      if (Clock::now() - start > 600s) Die("eviction did not finish in 10 minutes");
    }
    std::printf("\nC. eviction: %llu entries, budget %llu MiB (store %.0f MiB)\n",
                static_cast<unsigned long long>(entries),
                static_cast<unsigned long long>(budget_mb),
                static_cast<double>(stored) / (1 << 20));
    std::printf("   evicted %llu entries (%llu left) within %.0f ms of start; %d failed requests\n",
                static_cast<unsigned long long>(evictions),
                static_cast<unsigned long long>(remaining), evicted_at, failures);
    std::printf(
        "   memory hit while evicting: p50 %.3f ms max %.3f ms (%zu)   after: p50 %.3f ms "
        "max %.3f ms   ratio p50 %.2fx\n",
        Pct(hit_during, 0.5), Pct(hit_during, 1), hit_during.size(), Pct(hit_after, 0.5),
        Pct(hit_after, 1), hit_during.empty() ? 0 : Pct(hit_during, 0.5) / Pct(hit_after, 0.5));
    std::printf(
        "   GetStats while evicting: p50 %.3f ms max %.3f ms (%zu)   after: p50 %.3f ms "
        "max %.3f ms\n",
        Pct(stats_during, 0.5), Pct(stats_during, 1), stats_during.size(), Pct(stats_after, 0.5),
        Pct(stats_after, 1));
    p.Stop(SIGTERM);

    // SIGTERM while a 1 MiB budget forces out nearly everything.
    fs::remove_all(evict_dir);
    fs::create_directories(evict_dir);
    fs::copy_file(large + "/cache.db", evict_dir + "/cache.db");
    CoopdProcess q(dir + "/t.sock", evict_dir, {"--cache-max-mb", "1", "--prewarm", "none"});
    if (!q.Start(&error) || !q.WaitReady(120s, &error)) Die(error);
    std::this_thread::sleep_for(1000ms);
    auto s = ClientFor(q.socket_path()).GetStats();
    const auto sent = Clock::now();
    q.Signal(SIGTERM);
    const int rc = q.WaitExit(120s);
    std::printf(
        "   SIGTERM 1 s into evicting %llu entries (%llu gone by then): exit %d after "
        "%.0f ms\n",
        static_cast<unsigned long long>(entries),
        static_cast<unsigned long long>(s ? Disk(*s)->evictions : 0), rc, Ms(Clock::now() - sent));
    fs::remove_all(evict_dir);
  }
  return 0;
}
