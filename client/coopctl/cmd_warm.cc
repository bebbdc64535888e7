// cmd_warm.cc: `coopctl warm`: every spec of a manifest requested, N at a time, with a progress
// bar on a terminal or a line per spec when piped, and a summary (--json: an object).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coopctl/commands.h"
#include "coopctl/output.h"

namespace coopctl {
namespace {

// What became of one manifest item.
struct WarmResult {
  bool done = false, ok = false, compiled = false;
  std::string origin, key, code, message;
  int exit_status = 0;
  double ms = 0;
};

std::string Clock(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// The progress bar: "[#####-----] 17/50  hits 3  compiled 14  failed 0  ETA 0:23".
std::string Bar(size_t done, size_t total, size_t hits, size_t compiled, size_t failed,
                double elapsed_s) {
  constexpr size_t kWidth = 30;
  const size_t filled = total == 0 ? kWidth : done * kWidth / total;
  std::string eta = "--:--";
  if (done > 0 && done < total) eta = Clock(elapsed_s / done * (total - done));
  if (done == total) eta = Clock(0);
  return "[" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "] " +
         std::to_string(done) + "/" + std::to_string(total) + "  hits " + std::to_string(hits) +
         "  compiled " + std::to_string(compiled) + "  failed " + std::to_string(failed) +
         "  ETA " + eta;
}

std::string ItemText(const coopctl::ManifestItem& item) {
  std::string out;
  for (const auto& s : item.specs) out += (out.empty() ? "" : " + ") + coopctl::Describe(s);
  return out;
}

}  // namespace

void WarmArgs::Add(CLI::App* app) {
  app->add_option("MANIFEST", manifest, "manifest of specs, JSON or YAML (- reads stdin)")
      ->required();
  app->add_option("--jobs", jobs, "requests in flight at once (default 4)")->type_name("N");
  app->add_flag("--dry-run", dry_run, "check the manifest and list its specs; send nothing");
  app->add_flag("--json", g_json, "machine-readable summary");
}

int WarmDryRun(const std::vector<coopctl::ManifestItem>& items) {
  const char* kFormats[] = {"ltoir", "bitcode", "both"};
  Json list = Json::array();
  for (const auto& item : items) {
    const char* format = kFormats[static_cast<int>(item.formats)];
    if (g_json) {
      list.push_back({{"item", item.where}, {"spec", ItemText(item)}, {"format", format}});
    } else {
      std::cout << item.where << " " << ItemText(item) << " (" << format << ")\n";
    }
  }
  if (g_json) {
    Print({{"total", items.size()}, {"items", list}});
  } else {
    std::cout << items.size() << " specs\n";
  }
  return 0;
}

int Warm(coop::Client& client, const WarmArgs& args, std::vector<coopctl::ManifestItem> items) {
  const uint32_t jobs = coopctl::ParseUint("--jobs", args.jobs);
  if (jobs == 0 || jobs > 256) UsageFail("warm: --jobs must be 1..256, got " + args.jobs);
  // The sort flags into each family's options message, as for specialize (one catalogue call).
  std::vector<coop::Spec> all;
  for (const auto& item : items) all.insert(all.end(), item.specs.begin(), item.specs.end());
  coopctl::RouteSortFlags(client, &all);
  for (size_t i = 0, k = 0; i < items.size(); ++i) {
    for (auto& s : items[i].specs) s = all[k++];
  }

  const bool bar = isatty(STDERR_FILENO) != 0;
  const bool lines = !g_json && isatty(STDOUT_FILENO) == 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<WarmResult> results(items.size());
  std::mutex mu;
  std::condition_variable changed;
  size_t done = 0, hits = 0, compiled = 0, failed = 0;
  std::atomic<size_t> next{0};

  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < items.size();) {
      const auto& item = items[i];
      const auto t0 = std::chrono::steady_clock::now();
      auto a = item.specs.size() == 1 ? client.Specialize(item.specs[0], item.formats)
                                      : client.SpecializeBundle(item.specs, item.formats);
      WarmResult r;
      r.done = true;
      r.ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (a) {
        r.ok = true;
        r.key = a->key;
        const bool lto = item.formats != coop::Formats::kBitcode;
        const coop::Origin origin = lto ? a->origin : a->bitcode.origin;
        r.compiled =
            origin == coop::Origin::kCompiled ||
            (item.formats == coop::Formats::kBoth && a->bitcode.origin == coop::Origin::kCompiled);
        r.origin = r.compiled ? "compiled" : coop::OriginName(origin);
      } else {
        r.code = coop::ErrorCodeName(a.error().code);
        r.message = OneLine(a.error().message);
        r.exit_status = coopctl::ExitStatusFor(a.error());
      }
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (!r.ok) {
        ++failed;
      } else if (r.compiled) {
        ++compiled;
      } else {
        ++hits;
      }
      if (lines) {
        std::string line = "[" + std::to_string(done) + "/" + std::to_string(items.size()) + "] ";
        if (r.ok) {
          char ms[32];
          std::snprintf(ms, sizeof ms, "%.0f", r.ms);
          line += "ok " + r.origin + " " + r.key.substr(0, 16) + " " + ItemText(item) + " (" + ms +
                  " ms)";
        } else {
          line += "FAILED " + item.where + " " + ItemText(item) + ": " + r.code + ": " + r.message;
        }
        std::cout << line << std::endl;
      }
      results[i] = std::move(r);
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < std::min<size_t>(jobs, items.size()); ++t) threads.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      if (bar) {
        std::cerr << "\r\033[K" << Bar(done, items.size(), hits, compiled, failed, elapsed())
                  << std::flush;
      }
      if (done == items.size()) break;
      // Redrawn at every completion, and twice a second for the ETA.
      changed.wait_for(lock, std::chrono::milliseconds(500));
    }
  }
  for (auto& t : threads) t.join();
  if (bar) std::cerr << "\n";
  const double seconds = elapsed();
  size_t unreachable = 0;
  for (const auto& r : results) unreachable += r.exit_status == coopctl::kExitUnreachable;

  if (g_json) {
    Json list = Json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& r = results[i];
      Json j = {{"item", items[i].where},
                {"spec", ItemText(items[i])},
                {"status", r.ok ? r.origin : "failed"},
                {"ms", r.ms}};
      if (r.ok) {
        j["key"] = r.key;
      } else {
        j["code"] = r.code;
        j["message"] = r.message;
      }
      list.push_back(std::move(j));
    }
    Print({{"total", items.size()},
           {"hits", hits},
           {"compiled", compiled},
           {"failed", failed},
           {"seconds", seconds},
           {"results", list}});
  } else {
    if (bar && !lines) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (results[i].ok) continue;
        std::cerr << "coopctl: warm: " << items[i].where << " " << ItemText(items[i]) << ": "
                  << results[i].code << ": " << results[i].message << "\n";
      }
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", seconds);
    std::cout << "warm: " << items.size() << " specs: " << hits << " hits, " << compiled
              << " compiled, " << failed << " failed (" << secs << " s)\n";
  }
  if (failed == 0) return coopctl::kExitOk;
  if (unreachable == items.size()) {
    const auto& first =
        *std::find_if(results.begin(), results.end(), [](const WarmResult& r) { return !r.ok; });
    std::cerr << "coopctl: warm: every spec failed: " << first.code << ": " << first.message
              << "\n";
    return coopctl::kExitUnreachable;
  }
  std::cerr << "coopctl: warm: " << failed << " of " << items.size() << " specs failed\n";
  return coopctl::kExitPartial;
}

}  // namespace coopctl
