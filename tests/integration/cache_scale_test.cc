// Integration tests of the disk cache at the scale users reach (thousands of real-sized
// entries written by bench/coopd_fill), and of maintenance that reports what really happened:
// eviction that keeps the daemon serving, SIGTERM during eviction, filtered purges, a database
// locked by another process, and a full disk. Real coopd, real SQLite files, the real sqlite3
// CLI, a real tmpfs. Bounds on waiting are liveness deadlines (generous), never speed checks.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "coop/client.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Runs bench/coopd_fill; fails the test unless it succeeds.
void Fill(const std::string& cache_dir, int entries, int seed = 1) {
  std::string out, err;
  int rc = RunCommand({COOPD_FILL_BINARY, "--cache-dir", cache_dir, "--entries",
                       std::to_string(entries), "--seed", std::to_string(seed)},
                      &out, &err);
  ASSERT_EQ(rc, 0) << out << err;
}

// The totals row agrees with the tables it summarizes.
void ExpectTotalsMatchTables(const std::string& db) {
  EXPECT_EQ(Sqlite3(db, "SELECT entries, entry_bytes, raw_bytes, blobs, blob_bytes FROM totals"),
            Sqlite3(db,
                    "SELECT (SELECT COUNT(*) FROM entries), (SELECT SUM(stored_bytes) FROM "
                    "entries), (SELECT SUM(raw_bytes) FROM entries), (SELECT COUNT(*) FROM "
                    "blobs), (SELECT SUM(stored_bytes) FROM blobs)"));
}

struct CtlResult {
  int rc = 0;
  std::string out, err;
};

CtlResult Coopctl(const TestDaemon& d, std::vector<std::string> args) {
  std::vector<std::string> argv = {COOPCTL_BINARY, "--socket", d.process.socket_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  CtlResult r;
  r.rc = RunCommand(argv, &r.out, &r.err);
  return r;
}

// Fill 3,000 entries into the cache of a running daemon whose budget they exceed: the daemon
// notices the new totals and evicts more than 1,000 entries while memory hits, GetStats and
// Catalog keep being answered, none failing, each within a (generous) deadline.
TEST(CacheScale, EvictingThousandsOfEntriesKeepsServing) {
  TempDir dir;
  const std::string cache = dir.path() + "/cache";
  // 3,000 fillers store about 400 MB; 250 MiB forces about 1,300 evictions (down to 90%).
  TestDaemon d(dir.path(), {"--cache-max-mb", "250"});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  auto first = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(first) << first.error().message;

  std::atomic<bool> done{false};
  std::atomic<int> answered{0}, answered_while_evicting{0};
  std::vector<std::string> failures;
  std::mutex failures_mu;
  auto note_failure = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(failures_mu);
    if (failures.size() < 10) failures.push_back(what);
  };
  std::thread load([&] {
    coop::ClientOptions options;
    options.socket_path = d.process.socket_path();
    options.timeout = 20s;  // a liveness bound: a wedged daemon misses it by minutes
    coop::Client c(options);
    while (!done) {
      auto hit = c.Specialize(BlockReduceF32());
      if (!hit) {
        note_failure("memory hit: " + hit.error().message);
      } else if (hit->origin != coop::Origin::kMemory) {
        note_failure(std::string("memory hit came from ") + coop::OriginName(hit->origin));
      }
      auto stats = c.GetStats();
      if (!stats) note_failure("GetStats: " + stats.error().message);
      auto catalog = c.GetCatalog();
      if (!catalog) note_failure("Catalog: " + catalog.error().message);
      ++answered;
      if (stats) {
        for (const auto& t : stats->tiers) {
          if (t.name == "disk" && t.evicting) ++answered_while_evicting;
        }
      }
    }
  });

  Fill(cache, 3000);
  // The store reaches its budget (a liveness deadline, not a speed check).
  const uint64_t budget = uint64_t{250} << 20;
  coop::Stats s;
  const auto deadline = Clock::now() + 120s;
  // The daemon re-reads the totals about once a second, so its view of the filler's last
  // writes can lag: wait until it has caught up with the file (same entry count) as well.
  while (Clock::now() < deadline) {
    s = d.Stats();
    const coop::TierStats* disk = d.Disk(s);
    if (disk != nullptr && disk->bytes <= budget && !disk->evicting && disk->evictions >= 1000 &&
        std::to_string(disk->entries) ==
            Sqlite3(cache + "/cache.db", "SELECT COUNT(*) FROM entries")) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  done = true;
  load.join();
  const coop::TierStats* disk = d.Disk(s);
  ASSERT_NE(disk, nullptr);
  EXPECT_LE(disk->bytes, budget);
  EXPECT_GE(disk->evictions, 1000u);
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures[0];
  EXPECT_GT(answered.load(), 0);
  std::cout << "[ info ] " << answered << " rounds (memory hit + stats + catalog) answered, "
            << answered_while_evicting << " of them while the evictor ran; " << disk->evictions
            << " evictions, " << disk->entries << " entries left\n";
  ExpectTotalsMatchTables(cache + "/cache.db");
  EXPECT_EQ(std::to_string(disk->entries),
            Sqlite3(cache + "/cache.db", "SELECT COUNT(*) FROM entries"));
}

// SIGTERM while the evictor deletes thousands of entries: the daemon exits promptly and
// cleanly, and the next start finds a consistent cache that verifies clean.
TEST(CacheScale, SigtermDuringEvictionExitsPromptlyAndLeavesAConsistentCache) {
  TempDir dir;
  const std::string cache = dir.path() + "/cache";
  Fill(cache, 3000);
  {
    // 1 MiB: nearly every entry must go, which takes the evictor a while.
    CoopdProcess p(dir.path() + "/s.sock", cache, {"--cache-max-mb", "1"});
    std::string error;
    ASSERT_TRUE(p.Start(&error)) << error;
    ASSERT_TRUE(p.WaitReady(60s, &error)) << error;
    coop::Client c = p.MakeClient();
    // Wait until eviction is under way (or already over on a very fast machine).
    for (int i = 0; i < 400; ++i) {
      auto st = c.GetStats();
      ASSERT_TRUE(st) << st.error().message;
      bool started = false;
      for (const auto& t : st->tiers) started |= t.name == "disk" && t.evictions > 0;
      if (started) break;
      std::this_thread::sleep_for(10ms);
    }
    const auto sent = Clock::now();
    p.Signal(SIGTERM);
    // Liveness: the old evictor ignored SIGTERM for minutes.
    const int status = p.WaitExit(60s);
    EXPECT_EQ(status, 0) << "coopd did not exit cleanly within 60 s of SIGTERM:\n" << p.Log();
    std::cout << "[ info ] exited " << std::chrono::duration<double>(Clock::now() - sent).count()
              << " s after SIGTERM\n";
  }
  ExpectTotalsMatchTables(cache + "/cache.db");
  EXPECT_EQ(Sqlite3(cache + "/cache.db", "PRAGMA integrity_check"), "ok");
  // The next start (a budget that keeps everything) verifies clean.
  TestDaemon d(dir.path(), {});
  ASSERT_TRUE(d.started);
  auto report = d.Client().Verify();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->bad_removed, 0u);
  EXPECT_FALSE(report->totals_corrected);
  const coop::TierStats* disk = d.Disk(d.Stats());
  ASSERT_NE(disk, nullptr);
  EXPECT_EQ(report->entries_checked, disk->entries);
}

// Entries promoted from disk into memory keep their attributes: a filtered purge removes and
// counts only what matches, in every tier.
TEST(MaintenanceTruth, FilteredPurgeCountsOnlyMatchingEntries) {
  TempDir dir;
  {
    TestDaemon first(dir.path(), {});
    ASSERT_TRUE(first.started);
    ASSERT_TRUE(first.Client().Specialize(BlockReduceF32()));
  }
  TestDaemon d(dir.path(), {});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  auto from_disk = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(from_disk);
  ASSERT_EQ(from_disk->origin, coop::Origin::kDisk);  // now promoted into memory

  auto none = Coopctl(d, {"purge", "--family", "block_histogram"});
  EXPECT_EQ(none.rc, 0) << none.err;
  EXPECT_EQ(none.out, "removed 0 entries\n");
  auto still = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(still);
  EXPECT_EQ(still->origin, coop::Origin::kMemory) << "a non-matching filter keeps the entry";

  auto other_dtype = client.Purge({"block_reduce", "int64", ""}, false);
  ASSERT_TRUE(other_dtype) << other_dtype.error().message;
  EXPECT_EQ(*other_dtype, 0u);

  auto one = Coopctl(d, {"purge", "--family", "block_reduce"});
  EXPECT_EQ(one.rc, 0) << one.err;
  EXPECT_EQ(one.out, "removed 1 entries\n");
  auto again = client.Specialize(BlockReduceF32());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->origin, coop::Origin::kCompiled) << "purged from memory too";
}

// With another process holding the database's write lock, purge and vacuum fail with
// UNAVAILABLE naming the lock (the daemon answered: never "not reachable"), remove nothing,
// and succeed once the lock is gone.
TEST(MaintenanceTruth, ALockedDatabaseFailsPurgeAndVacuumWithoutLosingAnything) {
  TempDir dir;
  const std::string cache = dir.path() + "/cache";
  const std::string db = cache + "/cache.db";
  Fill(cache, 300);
  TestDaemon d(dir.path(), {});
  ASSERT_TRUE(d.started);
  SqliteLockHolder lock(db);
  ASSERT_TRUE(lock.held()) << lock.output();

  auto purge = Coopctl(d, {"purge", "--dtype", "int64"});
  EXPECT_EQ(purge.rc, 6);  // coopctl: busy or out of resources
  EXPECT_NE(purge.err.find("UNAVAILABLE"), std::string::npos) << purge.err;
  EXPECT_NE(purge.err.find("locked"), std::string::npos) << purge.err;
  EXPECT_NE(purge.err.find("removed 0 of 60 matching entries"), std::string::npos) << purge.err;
  EXPECT_EQ(purge.err.find("not reachable"), std::string::npos) << purge.err;
  EXPECT_EQ(purge.out, "");
  auto vacuum = Coopctl(d, {"vacuum"});
  EXPECT_EQ(vacuum.rc, 6);
  EXPECT_NE(vacuum.err.find("UNAVAILABLE"), std::string::npos) << vacuum.err;
  EXPECT_EQ(vacuum.err.find("not reachable"), std::string::npos) << vacuum.err;
  auto listed = d.Client().ListEntries({"", "int64", ""}, 0);
  ASSERT_TRUE(listed) << "readers are not blocked by the lock: " << listed.error().message;
  EXPECT_EQ(listed->size(), 60u) << "nothing was removed";

  lock.Release();
  purge = Coopctl(d, {"purge", "--dtype", "int64"});
  EXPECT_EQ(purge.rc, 0) << purge.err;
  EXPECT_EQ(purge.out, "removed 60 entries\n");
  listed = d.Client().ListEntries({"", "int64", ""}, 0);
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 0u);
  EXPECT_EQ(d.Disk(d.Stats())->entries, 240u);
  ExpectTotalsMatchTables(db);
}

// On a full disk (a small tmpfs filled to the last byte), purge and vacuum fail with
// RESOURCE_EXHAUSTED naming the full disk, remove nothing, and coopctl does not call the
// daemon unreachable; with space again, purge removes exactly what matched.
TEST(MaintenanceTruth, AFullDiskFailsPurgeAndVacuumWithResourceExhausted) {
  TempDir dir;
  const std::string mnt = dir.path() + "/mnt";
  ScopedTmpfs tmpfs(mnt, "24m");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.error();
  const std::string cache = mnt + "/cache";
  Fill(cache, 100);  // about 13 MiB; no WAL left behind
  TestDaemon d(dir.path(), {"--cache-dir", cache});
  ASSERT_TRUE(d.started);
  ASSERT_EQ(d.Disk(d.Stats())->entries, 100u);
  // Fill what is left of the tmpfs.
  const std::string filler = mnt + "/filler";
  {
    std::ofstream f(filler, std::ios::binary);
    std::string block(1 << 16, 'x');
    while (f.write(block.data(), static_cast<std::streamsize>(block.size()))) {
    }
  }
  {
    std::ofstream f(filler, std::ios::binary | std::ios::app);
    while (f.put('x')) {
    }
  }

  auto purge = Coopctl(d, {"purge", "--dtype", "int64"});
  EXPECT_EQ(purge.rc, 6);  // coopctl: busy or out of resources
  EXPECT_NE(purge.err.find("RESOURCE_EXHAUSTED"), std::string::npos) << purge.err;
  EXPECT_NE(purge.err.find("full"), std::string::npos) << purge.err;
  EXPECT_EQ(purge.err.find("not reachable"), std::string::npos) << purge.err;
  auto vacuum = Coopctl(d, {"vacuum"});
  EXPECT_EQ(vacuum.rc, 6);
  EXPECT_NE(vacuum.err.find("RESOURCE_EXHAUSTED"), std::string::npos) << vacuum.err;
  EXPECT_EQ(vacuum.err.find("not reachable"), std::string::npos) << vacuum.err;
  auto listed = d.Client().ListEntries({"", "int64", ""}, 0);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(listed->size(), 20u) << "nothing was removed";
  // The daemon kept serving throughout.
  ASSERT_TRUE(d.Client().GetStats());

  fs::remove(filler);
  purge = Coopctl(d, {"purge", "--dtype", "int64"});
  EXPECT_EQ(purge.rc, 0) << purge.err;
  EXPECT_EQ(purge.out, "removed 20 entries\n");
  listed = d.Client().ListEntries({"", "int64", ""}, 0);
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 0u);
  ExpectTotalsMatchTables(cache + "/cache.db");
}

}  // namespace
}  // namespace coopd_test
