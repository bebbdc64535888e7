// Integration tests of the cache: corruption on a live database, explain, eviction under a
// budget, maintenance commands, crash safety under SIGKILL, and a degraded (full or read-only)
// disk. Real coopd, real SQLite files, the real sqlite3 CLI, real NVRTC.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "coop/client.h"
#include "coopd_process.h"
#include "server/engine/compiler.h"
#include "server/util/sha256.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using Daemon = TestDaemon;

coop::Spec Variant(int i) {
  coop::Spec s = BlockReduceF32();
  const char* dtypes[] = {"float32", "float64", "int32", "int64", "uint32", "uint64"};
  s.dtype = dtypes[i % 6];
  s.block = {static_cast<uint32_t>(32 * (1 + i / 6)), 1, 1};
  return s;
}

TEST(Cache, FlippedBytesOnTheLiveDatabaseAreRecompiledNeverServed) {
  TempDir dir;
  // No memory tier: every lookup goes to disk.
  Daemon d(dir.path(), {"--memory-cache-mb", "0"});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  auto first = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(first) << first.error().message;
  auto hit = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(hit);
  ASSERT_EQ(hit->origin, coop::Origin::kDisk);

  // Stored compressed: the stats and ls report both sizes.
  coop::Stats s = d.Stats();
  const coop::TierStats* disk = d.Disk(s);
  ASSERT_NE(disk, nullptr);
  EXPECT_GT(disk->raw_bytes, first->ltoir.size());
  EXPECT_LT(disk->bytes, disk->raw_bytes);

  // The sqlite3 CLI flips bytes inside the stored blob while coopd runs.
  Sqlite3(dir.path() + "/cache/cache.db",
          "UPDATE blobs SET record = substr(record, 1, 1000) || X'DEADBEEF' || "
          "substr(record, 1005);");
  auto after = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->origin, coop::Origin::kCompiled) << "a damaged record is recompiled";
  EXPECT_EQ(after->ltoir, first->ltoir) << "never a corrupt artifact";
  s = d.Stats();
  EXPECT_EQ(s.corruptions, 1u);
  EXPECT_EQ(d.Disk(s)->corruptions, 1u);
  EXPECT_EQ(s.compiles, 2u);
  // The recompiled entry was stored again, intact.
  auto again = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->origin, coop::Origin::kDisk);
  EXPECT_EQ(again->ltoir, first->ltoir);
}

// Copies the CCCL tree to `dir`/cccl-copy.
std::string CcclCopy(const std::string& dir) {
  const std::string root = dir + "/cccl-copy";
  fs::copy("/usr/local/cuda/include/cccl", root, fs::copy_options::recursive);
  return root;
}

std::vector<std::string> Differing(const coop::Explanation& e, const std::string& key) {
  for (const auto& o : e.others) {
    if (o.key == key) return o.differing;
  }
  ADD_FAILURE() << "key " << key << " not among the others";
  return {};
}

TEST(Cache, ExplainNamesTheComponentsThatChanged) {
  TempDir dir;
  std::string original_key;
  {
    Daemon d(dir.path(), {});
    ASSERT_TRUE(d.started);
    auto a = d.Client().Specialize(BlockReduceF32());
    ASSERT_TRUE(a) << a.error().message;
    original_key = a->key;
    auto e = d.Client().Explain(BlockReduceF32());
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_TRUE(e->cached);
    EXPECT_EQ(e->key, original_key);
    std::set<std::string> names;
    for (const auto& c : e->components) {
      names.insert(c.name);
      EXPECT_EQ(c.digest.size(), 64u) << c.name;
    }
    EXPECT_EQ(names, (std::set<std::string>{"schema", "canonical_request", "source", "options",
                                            "nvrtc", "nvjitlink", "cccl_headers", "cuda_headers",
                                            "device_headers"}));
  }
  TempDir headers;
  std::string copy_key;
  {
    // The same headers at another path: only the option list (-I...) differs.
    Daemon d(dir.path(), {"--cccl-include", CcclCopy(headers.path())});
    ASSERT_TRUE(d.started);
    auto e = d.Client().Explain(BlockReduceF32());
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_FALSE(e->cached);
    EXPECT_NE(e->key, original_key);
    EXPECT_EQ(Differing(*e, original_key), std::vector<std::string>{"options"});
    auto a = d.Client().Specialize(BlockReduceF32());
    ASSERT_TRUE(a);
    copy_key = a->key;
  }
  {
    // The copy, modified in place: a different key; explain names the headers alone against
    // the copy's entry, and the headers and the path against the original's.
    const std::string copy = headers.path() + "/cccl-copy";
    std::ofstream(copy + "/cub/block/block_scan.cuh", std::ios::app) << "\n// patched\n";
    Daemon d(dir.path(), {"--cccl-include", copy});
    ASSERT_TRUE(d.started);
    auto e = d.Client().Explain(BlockReduceF32());
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_FALSE(e->cached);
    EXPECT_NE(e->key, original_key);
    EXPECT_NE(e->key, copy_key);
    EXPECT_EQ(Differing(*e, original_key), (std::vector<std::string>{"options", "cccl_headers"}));
    EXPECT_EQ(Differing(*e, copy_key), std::vector<std::string>{"cccl_headers"});

    std::string out, err;
    int rc =
        RunCommand({COOPCTL_BINARY, "--socket", d.process.socket_path(), "explain", "block_reduce",
                    "--dtype", "float32", "--threads", "256", "--arch", "sm_90"},
                   &out, &err);
    ASSERT_EQ(rc, 0) << err;
    EXPECT_NE(out.find("(not cached)"), std::string::npos) << out;
    EXPECT_NE(out.find("differs in: cccl_headers"), std::string::npos) << out;
    EXPECT_NE(out.find("differs in: options, cccl_headers"), std::string::npos) << out;
  }
}

TEST(Cache, RestartReusesTheHeaderManifest) {
  TempDir dir;
  { Daemon d(dir.path(), {}); }
  Daemon d(dir.path(), {});
  ASSERT_TRUE(d.started);
  const std::string log = d.process.Log();
  // The second start found every header unchanged in the manifest.
  auto second = log.rfind("toolchain: ");
  ASSERT_NE(second, std::string::npos) << log;
  EXPECT_NE(log.find("(0 of ", second), std::string::npos) << log;
}

TEST(Cache, DiskBudgetKeepsStoredBytesUnderItEvictingLeastRecentlyUsedFirst) {
  TempDir dir;
  Daemon d(dir.path(), {"--cache-max-mb", "1", "--memory-cache-mb", "0", "--workers", "2"});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  const int n = 36;
  for (int i = 0; i < n; ++i) {
    auto a = client.Specialize(Variant(i));
    ASSERT_TRUE(a) << a.error().message;
    if (i >= 2) {
      // Keep entry 0 recently used; entry 1 is never read again.
      auto touch = client.Specialize(Variant(0));
      ASSERT_TRUE(touch);
    }
  }
  coop::Stats s;
  for (int i = 0; i < 500; ++i) {  // the evictor runs in the background
    s = d.Stats();
    if (d.Disk(s)->bytes <= (1u << 20)) break;
    std::this_thread::sleep_for(20ms);
  }
  const coop::TierStats* disk = d.Disk(s);
  EXPECT_LE(disk->bytes, 1u << 20);
  EXPECT_GT(disk->evictions, 0u);
  EXPECT_LT(disk->entries, static_cast<uint64_t>(n));
  auto entries = client.ListEntries({}, 0);
  ASSERT_TRUE(entries);
  std::set<std::string> present;
  for (const auto& e : *entries) present.insert(e.key);
  auto key_of = [&](int i) {
    auto e = client.Explain(Variant(i));
    EXPECT_TRUE(e);
    return e ? e->key : "";
  };
  EXPECT_TRUE(present.count(key_of(0))) << "the entry kept in use survives";
  EXPECT_FALSE(present.count(key_of(1))) << "the least recently used entry went first";
  EXPECT_TRUE(present.count(key_of(n - 1))) << "the newest entry survives";
}

TEST(Cache, CoopctlMaintenanceCommands) {
  TempDir dir;
  Daemon d(dir.path(), {});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  coop::Spec scan;
  scan.family = "block_scan";
  scan.dtype = "int32";
  scan.block = {128};
  scan.arch = "sm_80";
  ASSERT_TRUE(client.Specialize(BlockReduceF32()));
  ASSERT_TRUE(client.Specialize(scan));
  auto ctl = [&](std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {COOPCTL_BINARY, "--socket", d.process.socket_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string err;
    int rc = RunCommand(argv, out, &err);
    EXPECT_EQ(rc, 0) << err;
    return rc;
  };
  std::string out;
  ctl({"ls", "--json"}, &out);
  EXPECT_NE(out.find("\"family\":\"block_reduce\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"family\":\"block_scan\""), std::string::npos) << out;
  ctl({"ls", "--arch", "sm_80", "--json"}, &out);
  EXPECT_EQ(out.find("block_reduce"), std::string::npos) << out;
  EXPECT_NE(out.find("\"stored_bytes\":"), std::string::npos) << out;

  ctl({"verify", "--json"}, &out);
  EXPECT_NE(out.find("\"entries_checked\":2,\"blobs_checked\":2,\"bad_removed\":0"),
            std::string::npos)
      << out;

  ctl({"stats", "--zero", "--json"}, &out);
  EXPECT_NE(out.find("\"requests\":2"), std::string::npos) << "prints the stats before zeroing";
  ctl({"stats", "--json"}, &out);
  EXPECT_NE(out.find("\"requests\":0"), std::string::npos) << out;
  EXPECT_NE(out.find("\"disk_entries\":2"), std::string::npos) << "entries stay: " << out;

  ctl({"purge", "--family", "block_scan", "--json"}, &out);
  EXPECT_EQ(out, "{\"entries_removed\":1}\n");
  auto scan_again = client.Specialize(scan);
  ASSERT_TRUE(scan_again);
  EXPECT_EQ(scan_again->origin, coop::Origin::kCompiled) << "purged from every tier";
  auto reduce_again = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(reduce_again);
  EXPECT_NE(reduce_again->origin, coop::Origin::kCompiled) << "the filter kept the others";

  ctl({"vacuum", "--json"}, &out);
  EXPECT_NE(out.find("\"file_bytes_after\":"), std::string::npos) << out;
  ctl({"purge", "--all"}, &out);
  EXPECT_EQ(out, "removed 2 entries\n");

  // purge without a filter or --all is refused (locally and by the daemon).
  std::string err;
  EXPECT_NE(RunCommand({COOPCTL_BINARY, "--socket", d.process.socket_path(), "purge"}, &out, &err),
            0);
  EXPECT_EQ(err, "coopctl: purge: give --all, or a filter (--family, --dtype, --arch)\n");
  auto refused = client.Purge({}, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, coop::ErrorCode::kInvalidArgument);
}

// SIGKILL at random moments while clients store many distinct entries. After each restart the
// database opens, every record verifies, and every artifact any client ever received is
// intact: its LTO-IR links, and the same key always came with the same bytes.
TEST(CrashSafety, SigkillWhileWritingNeverCorruptsTheCache) {
  TempDir dir;
  std::mt19937 rng(20261130);
  std::map<std::string, std::string> digest_by_key;
  int received = 0, killed_mid_request = 0;
  const int kIterations = 50;
  for (int iter = 0; iter < kIterations; ++iter) {
    CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache", {"--workers", "2"});
    std::string error;
    ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error))
        << "iteration " << iter << ": " << error;
    coop::ClientOptions options;
    options.socket_path = d.socket_path();
    // After every restart the database verifies clean.
    auto report = coop::Client(options).Verify();
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->bad_removed, 0u) << "iteration " << iter;

    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    std::mutex mu;
    for (int w = 0; w < 3; ++w) {
      writers.emplace_back([&, w] {
        coop::Client client(options);
        for (int k = 0; !stop; ++k) {
          coop::Spec s = Variant((iter * 7 + w * 3 + k) % 60);
          s.items_per_thread = 1 + static_cast<uint32_t>((iter + k) % 3);
          auto a = client.Specialize(s);
          if (!a) {
            std::lock_guard<std::mutex> lock(mu);
            ++killed_mid_request;
            return;  // the daemon is gone
          }
          // Every artifact received must be intact.
          auto layout =
              coopd::LinkCubin({{coopd::LinkInput::kLtoIr, "artifact", a->ltoir}}, "sm_90", {});
          EXPECT_TRUE(layout.ok()) << layout.status();
          const std::string digest = coopd::Sha256::Hex(a->ltoir);
          std::lock_guard<std::mutex> lock(mu);
          ++received;
          auto [it, inserted] = digest_by_key.emplace(a->key, digest);
          EXPECT_EQ(it->second, digest) << "key " << a->key << " served different bytes";
        }
      });
    }
    // Once this daemon's workers are warm (the first artifact arrived), kill at a random
    // moment: mid-compile, mid-write or idle.
    const int before = [&] {
      std::lock_guard<std::mutex> lock(mu);
      return received;
    }();
    for (int waited = 0; waited < 6000; ++waited) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (received > before) break;
      }
      std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 1500)(rng)));
    stop = true;
    EXPECT_EQ(d.Stop(SIGKILL), 128 + SIGKILL);
    for (auto& t : writers) t.join();
  }
  // Final check with a fresh daemon: every entry verifies and reads back.
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache");
  std::string error;
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  auto client = d.MakeClient();
  auto report = client.Verify();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->bad_removed, 0u);
  EXPECT_GT(report->entries_checked, 0u);
  EXPECT_GT(received, kIterations) << "clients did receive artifacts between the kills";
  std::cout << "crash test: " << kIterations << " SIGKILLs, " << received
            << " artifacts received and checked, " << killed_mid_request
            << " requests cut off by a kill, " << report->entries_checked
            << " entries verified at the end\n";
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// The cache directory on a small tmpfs that fills up, then goes read-only: coopd keeps serving,
// says so in stats and logs, and caches again once space returns.
TEST(DegradedDisk, FullOrReadOnlyCacheKeepsServing) {
  TempDir dir;
  const std::string mnt = dir.path() + "/mnt";
  ScopedTmpfs tmpfs(mnt, "4m");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.error();
  CoopdProcess d(dir.path() + "/coopd.sock", mnt + "/cache", {"--memory-cache-mb", "0"});
  std::string error;
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  auto client = d.MakeClient();
  ASSERT_TRUE(client.Specialize(Variant(0)));
  // Fill the filesystem.
  {
    std::ofstream filler(mnt + "/filler", std::ios::binary);
    std::string chunk(64 * 1024, 'x');
    while (filler.write(chunk.data(), chunk.size())) {
    }
  }
  auto full = client.Specialize(Variant(1));
  ASSERT_TRUE(full) << "served although the disk is full: " << full.error().message;
  EXPECT_EQ(full->origin, coop::Origin::kCompiled);
  auto s = client.GetStats();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->cache_degraded);
  EXPECT_GE(s->disk_write_failures, 1u);
  EXPECT_NE(d.Log().find("serving without caching"), std::string::npos) << d.Log();
  // Reads still work.
  auto old = client.Specialize(Variant(0));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->origin, coop::Origin::kDisk);

  // Space returns: the next new entry is cached again.
  fs::remove(mnt + "/filler");
  auto resumed = client.Specialize(Variant(2));
  ASSERT_TRUE(resumed);
  s = client.GetStats();
  EXPECT_FALSE(s->cache_degraded);
  EXPECT_NE(d.Log().find("caching resumed"), std::string::npos);
  auto cached = client.Specialize(Variant(2));
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->origin, coop::Origin::kDisk);

  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.Log();

  // Read-only (a filesystem cannot go read-only under open files, so remount between runs):
  // coopd starts, serves, and says it is not caching.
  ASSERT_EQ(mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  CoopdProcess ro(dir.path() + "/coopd.sock", mnt + "/cache", {"--memory-cache-mb", "0"});
  ASSERT_TRUE(ro.Start(&error) && ro.WaitReady(120s, &error)) << error;
  auto ro_client = ro.MakeClient();
  auto fresh = ro_client.Specialize(Variant(5));
  ASSERT_TRUE(fresh) << "served although the cache is read-only: " << fresh.error().message;
  EXPECT_EQ(fresh->origin, coop::Origin::kCompiled);
  s = ro_client.GetStats();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->cache_degraded) << ro.Log();
  EXPECT_EQ(ro.Stop(SIGTERM), 0) << ro.Log();
}

}  // namespace
}  // namespace coopd_test
