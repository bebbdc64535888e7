// Fault tests (issue 14, item 7): SIGKILL of coopd and of its compile workers under load, a
// second process holding SQLite's locks on the cache, and a slow or partitioned farm tier.
// Real coopd processes on temporary sockets, real SQLite files and the real sqlite3 CLI, real
// NVRTC, real redis-server. Clients compare every artifact they receive with a reference
// computed before the faults, byte for byte.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"
#include "redis_harness.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

// What a frontend links and trusts: everything in an artifact except where it came from and
// what it cost (origin, compile and layout times, PCH status, compile log).
std::string Fingerprint(const coop::Artifact& a) {
  std::string out;
  auto add = [&](const std::string& field, const std::string& value) {
    out += field + "=" + std::to_string(value.size()) + ":" + value + "\n";
  };
  add("key", a.key);
  add("ltoir", a.ltoir);
  add("temp_storage",
      std::to_string(a.temp_storage_bytes) + "/" + std::to_string(a.temp_storage_align));
  add("arch", a.arch);
  add("toolchain", a.toolchain.nvrtc_version + "|" + a.toolchain.nvjitlink_version + "|" +
                       a.toolchain.cccl_version + "|" + a.toolchain.header_digest);
  add("source", a.source);
  add("type_definitions", a.type_definitions);
  for (const auto& e : a.entries)
    add("entry", e.symbol + "|" + e.declaration + "|" + e.description);
  for (const auto& p : a.parts) {
    add("part", std::to_string(p.temp_storage_bytes) + "/" + std::to_string(p.temp_storage_align));
  }
  for (const auto& l : a.link_inputs)
    add("link_input", l.symbol + "|" + l.key + "|" + l.ltoir.str());
  return out;
}

// Distinct block_reduce specs: `i` picks the dtype and the block size.
coop::Spec ReduceSpec(int i) {
  const char* dtypes[] = {"float32", "float64", "int32", "int64", "uint32", "uint64"};
  return BlockSpec("block_reduce", "sum", dtypes[i % 6],
                   {static_cast<uint32_t>(32 * (1 + i / 6)), 1, 1},
                   1 + static_cast<uint32_t>(i % 4));
}

// References for `specs`, compiled by a daemon of their own on a cache of their own.
std::vector<std::string> References(const std::vector<coop::Spec>& specs) {
  TempDir dir;
  TestDaemon ref(dir.path(), {"--workers", "2"});
  EXPECT_TRUE(ref.started);
  std::vector<std::string> out(specs.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      coop::Client client = ref.Client();
      for (size_t i = static_cast<size_t>(t); i < specs.size(); i += 2) {
        auto a = client.Specialize(specs[i]);
        EXPECT_TRUE(a) << a.error().message;
        if (a) out[i] = Fingerprint(*a);
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Clients that keep requesting specs and check every artifact against its reference. An error
// must be UNAVAILABLE (coopd down, or a worker killed under the request): they retry it.
class CheckingClients {
 public:
  CheckingClients(std::string socket, const std::vector<coop::Spec>& specs,
                  const std::vector<std::string>& references)
      : socket_(std::move(socket)), specs_(specs), references_(references) {}
  ~CheckingClients() { Stop(); }

  // `threads` clients loop over the first `hits` specs (random order).
  void StartHitters(int threads, size_t hits) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t, hits] {
        std::mt19937 rng(static_cast<uint32_t>(1000 + t));
        coop::Client client = MakeClient();
        while (!stop_) {
          const size_t i = std::uniform_int_distribution<size_t>(0, hits - 1)(rng);
          RequestUntilServed(client, i);
          // Steady load, not a spin: the compiles in flight need the machine's cores too.
          std::this_thread::sleep_for(2ms);
        }
      });
    }
  }

  // Requests spec `i` until it is served (retrying UNAVAILABLE); false if stopped first.
  bool RequestUntilServed(coop::Client& client, size_t i) {
    while (!stop_) {
      auto a = client.Specialize(specs_[i]);
      if (a) {
        ++served_;
        if (Fingerprint(*a) != references_[i]) {
          ++wrong_;
          std::lock_guard<std::mutex> lock(mu_);
          failures_.push_back("spec " + std::to_string(i) + " served an artifact that differs " +
                              "from its reference (key " + a->key + ")");
        }
        return true;
      }
      if (a.error().code != coop::ErrorCode::kUnavailable) {
        std::lock_guard<std::mutex> lock(mu_);
        failures_.push_back("spec " + std::to_string(i) + ": unexpected error " +
                            coop::ErrorCodeName(a.error().code) + ": " + a.error().message);
        ++other_errors_;
      } else {
        ++retries_;
        if (a.error().from_server) ++server_unavailable_;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  coop::Client MakeClient() const {
    coop::ClientOptions options;
    options.socket_path = socket_;
    options.autostart = false;
    options.timeout = 120s;
    return coop::Client(options);
  }

  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  uint64_t served() const { return served_; }
  uint64_t retries() const { return retries_; }
  uint64_t server_unavailable() const { return server_unavailable_; }
  uint64_t wrong() const { return wrong_; }
  uint64_t other_errors() const { return other_errors_; }
  std::vector<std::string> failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  const std::string socket_;
  const std::vector<coop::Spec>& specs_;
  const std::vector<std::string>& references_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> served_{0}, retries_{0}, server_unavailable_{0}, wrong_{0},
      other_errors_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

// Waits (a liveness deadline) until `done` holds.
template <class F>
bool WaitFor(F done, std::chrono::seconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// 100 SIGKILLs under load: 80 of the daemon (at random moments while four clients get hits;
// every eighth also with a compile in flight) and 20 of a compile worker (mid-compile where the
// compile is still running, else idle). After each daemon kill a new daemon starts on the same
// socket and cache and the cache verifies clean; no client ever receives an artifact that
// differs from the reference, and every error a client sees is UNAVAILABLE, which it retries.
TEST(Faults, SigkillOfTheDaemonOrItsWorkersUnderLoadNeverServesAWrongArtifact) {
  const size_t kHits = 6;
  const int kDaemonKills = 80, kWorkerKills = 20;
  auto kills_worker = [](int iter) { return iter % 5 == 4; };
  auto compiles = [&](int iter) { return kills_worker(iter) || iter % 8 == 0; };
  // The hit set, then one new spec for each iteration with a compile in flight.
  std::vector<coop::Spec> specs;
  for (int i = 0; i < static_cast<int>(kHits); ++i) specs.push_back(ReduceSpec(i));
  for (int iter = 0; iter < kDaemonKills + kWorkerKills; ++iter) {
    if (compiles(iter)) specs.push_back(ReduceSpec(static_cast<int>(specs.size())));
  }
  const std::vector<std::string> references = References(specs);
  for (size_t i = 0; i < references.size(); ++i) ASSERT_FALSE(references[i].empty()) << i;
  // The check can fail: an artifact served for the wrong spec differs from the reference.
  ASSERT_EQ(std::set<std::string>(references.begin(), references.end()).size(), specs.size());

  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock", cache = dir.path() + "/cache";
  // Without NVRTC's automatic PCH: every compile a worker restarted by a kill runs would
  // otherwise first rebuild it (several seconds). The references were compiled with it; the
  // bytes must not differ (PCH options are not in the key because they do not change them).
  const std::vector<std::string> args = {"--workers", "1", "--no-pch"};
  auto daemon = std::make_unique<CoopdProcess>(socket, cache, args);
  std::string error;
  ASSERT_TRUE(daemon->Start(&error) && daemon->WaitReady(120s, &error)) << error;
  CheckingClients clients(socket, specs, references);
  clients.StartHitters(4, kHits);
  coop::Client compiler = clients.MakeClient();
  coop::Client admin = clients.MakeClient();

  std::mt19937 rng(20261201);
  size_t next_miss = kHits;
  int daemon_kills = 0, worker_kills = 0, mid_compile = 0, verified = 0;
  for (int iter = 0; iter < kDaemonKills + kWorkerKills; ++iter) {
    const bool kill_worker = kills_worker(iter);
    std::thread compile;
    std::atomic<bool> compiled{false};
    if (compiles(iter)) {
      ASSERT_LT(next_miss, specs.size());
      const size_t miss = next_miss++;
      compile = std::thread([&, miss] {
        clients.RequestUntilServed(compiler, miss);
        compiled = true;
      });
    }
    // Let the clients be served by this daemon first, then kill at a random moment.
    const uint64_t served = clients.served();
    ASSERT_TRUE(WaitFor([&] { return clients.served() > served; }, 120s)) << daemon->Log();
    if (kill_worker) {
      // Wait for the compile to reach the worker (or to finish), then kill the worker after a
      // random part of it.
      WaitFor(
          [&] {
            auto s = admin.GetStats();
            return compiled || (s && s->workers_busy > 0);
          },
          120s);
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 800)(rng)));
      auto s = admin.GetStats();
      ASSERT_TRUE(s) << s.error().message;
      ASSERT_EQ(s->worker_status.size(), 1u);
      const int pid = s->worker_status[0].pid;
      if (s->worker_status[0].busy) ++mid_compile;
      ASSERT_GT(pid, 0);
      ASSERT_EQ(kill(pid, SIGKILL), 0);
      ++worker_kills;
    } else {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 400)(rng)));
      EXPECT_EQ(daemon->Stop(SIGKILL), 128 + SIGKILL);
      ++daemon_kills;
      daemon = std::make_unique<CoopdProcess>(socket, cache, args);
      ASSERT_TRUE(daemon->Start(&error) && daemon->WaitReady(120s, &error))
          << "after kill " << iter << ": " << error;
      // The restarted daemon's cache verifies clean.
      auto report = admin.Verify();
      ASSERT_TRUE(report) << report.error().message;
      EXPECT_EQ(report->bad_removed, 0u) << "after kill " << iter;
      EXPECT_FALSE(report->totals_corrected) << "after kill " << iter;
      ++verified;
    }
    if (compile.joinable()) {
      ASSERT_TRUE(WaitFor([&] { return compiled.load(); }, 300s)) << daemon->Log();
      compile.join();
    }
    ASSERT_EQ(clients.wrong(), 0u) << clients.failures().front();
    ASSERT_EQ(clients.other_errors(), 0u) << clients.failures().front();
    if (iter % 10 == 9) {
      std::cout << "faults: " << iter + 1 << " kills, " << clients.served() << " artifacts checked"
                << std::endl;
    }
  }
  clients.Stop();

  // Everything any client was served matched its reference; the final cache verifies and holds
  // every spec, and serves each one as its reference.
  auto report = admin.Verify();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->bad_removed, 0u);
  EXPECT_GE(report->entries_checked, kHits);
  for (size_t i = 0; i < next_miss; ++i) {
    auto a = admin.Specialize(specs[i]);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(Fingerprint(*a), references[i]) << "spec " << i;
  }
  for (const auto& f : clients.failures()) ADD_FAILURE() << f;
  auto s = admin.GetStats();
  ASSERT_TRUE(s);
  EXPECT_EQ(daemon_kills + worker_kills, 100);
  EXPECT_GT(clients.retries(), 0u) << "the kills were seen by clients";
  EXPECT_GT(mid_compile, 0) << "at least one worker was killed mid-compile";
  std::cout << "faults: " << daemon_kills << " daemon SIGKILLs (" << verified
            << " restarts verified), " << worker_kills << " worker SIGKILLs (" << mid_compile
            << " mid-compile), " << clients.served() << " artifacts checked, " << clients.retries()
            << " UNAVAILABLE retried (" << clients.server_unavailable() << " from coopd), "
            << report->entries_checked << " entries verified at the end\n";
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->Log();
}

const coop::TierStats* Tier(const coop::Stats& s, const std::string& name) {
  for (const auto& t : s.tiers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// A second process (the sqlite3 CLI) holds SQLite's locks on the live cache database: a RESERVED
// lock (BEGIN IMMEDIATE) and an EXCLUSIVE transaction. coopd keeps serving (memory hits, disk
// reads, which WAL lets through, compiles), says in stats and log that the disk tier is not storing
// and why, never loses an entry it stored, and stores again by itself once the lock is released.
TEST(Faults, SqliteLockedByASecondProcessKeepsServingAndRecoversByItself) {
  TempDir dir;
  const std::string db = dir.path() + "/cache/cache.db";
  std::vector<coop::Spec> specs;
  for (int i = 0; i < 8; ++i) specs.push_back(ReduceSpec(i));
  const std::vector<std::string> references = References(specs);
  TestDaemon d(dir.path(), {"--workers", "1"});
  ASSERT_TRUE(d.started);
  auto client = d.Client();
  auto stored = client.Specialize(specs[0]);
  ASSERT_TRUE(stored) << stored.error().message;
  ASSERT_EQ(Fingerprint(*stored), references[0]);

  struct Case {
    const char* name;
    const char* sql;
  };
  // (An exclusive locking mode, which would lock readers out too, cannot be taken while coopd
  // has the database open in WAL mode: its connections hold the shared-memory lock.)
  const Case cases[] = {
      {"RESERVED lock (BEGIN IMMEDIATE)", "BEGIN IMMEDIATE;"},
      {"EXCLUSIVE transaction", "BEGIN EXCLUSIVE;"},
  };
  size_t next = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const uint64_t failures_before = Tier(d.Stats(), "disk")->write_failures;
    SqliteLockHolder lock(db, c.sql);
    ASSERT_TRUE(lock.held()) << lock.output();
    // A new spec compiles and is served although the disk tier cannot store it.
    const size_t fresh = next++;
    auto compiled = client.Specialize(specs[fresh]);
    ASSERT_TRUE(compiled) << compiled.error().message;
    EXPECT_EQ(compiled->origin, coop::Origin::kCompiled);
    EXPECT_EQ(Fingerprint(*compiled), references[fresh]);
    coop::Stats s = d.Stats();
    const coop::TierStats* disk = Tier(s, "disk");
    ASSERT_NE(disk, nullptr);
    EXPECT_TRUE(disk->degraded);
    EXPECT_TRUE(s.cache_degraded);
    EXPECT_GT(disk->write_failures, failures_before);
    EXPECT_NE(d.process.Log().find("another process holds the cache database"), std::string::npos)
        << d.process.Log();
    // Entries stored before are still served (memory tier), intact.
    for (size_t i = 0; i < fresh; ++i) {
      auto hit = client.Specialize(specs[i]);
      ASSERT_TRUE(hit) << hit.error().message;
      EXPECT_EQ(Fingerprint(*hit), references[i]);
    }
    // Other readers are not locked out either (WAL): the entries stored before are there.
    std::string out, err;
    EXPECT_EQ(RunCommand({"/usr/bin/sqlite3", "-cmd", ".timeout 2000", db,
                          "SELECT count(*) FROM entries;"},
                         &out, &err),
              0)
        << err;
    EXPECT_EQ(out, std::to_string(fresh / 2 + 1) + "\n") << "entries stored before the lock";
    lock.Release();
    // Released: the next new entry is stored again, by itself (no restart, no command).
    const size_t after = next++;
    auto resumed = client.Specialize(specs[after]);
    ASSERT_TRUE(resumed) << resumed.error().message;
    EXPECT_EQ(Fingerprint(*resumed), references[after]);
    s = d.Stats();
    EXPECT_FALSE(Tier(s, "disk")->degraded);
    EXPECT_FALSE(s.cache_degraded);
  }
  EXPECT_NE(d.process.Log().find("caching resumed"), std::string::npos);
  // Nothing it stored was lost: every entry it acknowledged storing verifies and reads back
  // from disk in a fresh daemon; what it could not store is compiled again, never corrupt.
  auto report = client.Verify();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->bad_removed, 0u);
  EXPECT_EQ(d.process.Stop(SIGTERM), 0) << d.process.Log();
  TestDaemon again(dir.path(), {"--workers", "1", "--memory-cache-mb", "0"});
  ASSERT_TRUE(again.started);
  auto c2 = again.Client();
  for (size_t i : {size_t{0}, size_t{2}, size_t{4}}) {
    auto a = c2.Specialize(specs[i]);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->origin, coop::Origin::kDisk) << "spec " << i << " was stored";
    EXPECT_EQ(Fingerprint(*a), references[i]);
  }
}

// A command line that runs coopd in a user and mount namespace of its own after `setup` (shell
// commands run as the namespace's root). Unprivileged user namespaces make this work for any
// user, and root (CI) may create them too; the mounts vanish with the daemon.
std::vector<std::string> InNamespace(const std::string& setup) {
  return {"/usr/bin/unshare", "-rm", "--", "/bin/sh", "-c", setup + " && exec \"$@\"", "sh"};
}

// Why a namespace with a tmpfs cannot be had here, or "" when it can.
std::string NamespaceUnavailable() {
  std::string out, err;
  if (RunCommand({"/usr/bin/unshare", "-rm", "--", "/bin/sh", "-c",
                  "mount -t tmpfs -o size=1m tmpfs /mnt"},
                 &out, &err) == 0) {
    return "";
  }
  return "cannot create a user and mount namespace with a tmpfs here (unshare -rm: " + err +
         "); this test needs unprivileged user namespaces or root";
}

// The cache directory on a 4 MiB tmpfs, in the daemon's own mount namespace, filled up while it
// runs: requests are served (compiled, or read from disk), the disk tier reports degraded in
// stats and the log with the cause, entries stored before stay intact, and once space returns
// (the filler deleted through /proc/PID/root) it stores again by itself.
TEST(Faults, AFullDiskKeepsServingAndCachesAgainByItselfOnceSpaceReturns) {
  if (std::string why = NamespaceUnavailable(); !why.empty()) GTEST_SKIP() << why;
  std::vector<coop::Spec> specs;
  for (int i = 0; i < 3; ++i) specs.push_back(ReduceSpec(i));
  const std::vector<std::string> references = References(specs);
  TempDir dir;
  const std::string mnt = dir.path() + "/mnt";
  ASSERT_TRUE(std::filesystem::create_directories(mnt));
  CoopdProcess d(dir.path() + "/coopd.sock", mnt + "/cache",
                 {"--workers", "1", "--memory-cache-mb", "0"});
  d.wrapper = InNamespace("mount -t tmpfs -o size=4m tmpfs '" + mnt + "'");
  std::string error;
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  // The daemon's view of its tmpfs (the test's own /mnt path is the empty directory under it).
  const std::string inside = "/proc/" + std::to_string(d.pid()) + "/root" + mnt;
  ASSERT_TRUE(std::filesystem::exists(inside + "/cache/cache.db")) << inside;
  auto client = d.MakeClient();
  auto stored = client.Specialize(specs[0]);
  ASSERT_TRUE(stored) << stored.error().message;

  {
    std::ofstream filler(inside + "/filler", std::ios::binary);
    const std::string chunk(64 * 1024, 'x');
    while (filler.write(chunk.data(), static_cast<std::streamsize>(chunk.size()))) {
    }
  }
  auto full = client.Specialize(specs[1]);
  ASSERT_TRUE(full) << "served although the disk is full: " << full.error().message;
  EXPECT_EQ(full->origin, coop::Origin::kCompiled);
  EXPECT_EQ(Fingerprint(*full), references[1]);
  coop::Stats s = *client.GetStats();
  ASSERT_NE(Tier(s, "disk"), nullptr);
  EXPECT_TRUE(Tier(s, "disk")->degraded);
  EXPECT_GE(Tier(s, "disk")->write_failures, 1u);
  EXPECT_NE(d.Log().find("has no space left"), std::string::npos) << d.Log();
  auto old = client.Specialize(specs[0]);
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->origin, coop::Origin::kDisk);
  EXPECT_EQ(Fingerprint(*old), references[0]);

  std::filesystem::remove(inside + "/filler");
  auto resumed = client.Specialize(specs[2]);
  ASSERT_TRUE(resumed) << resumed.error().message;
  s = *client.GetStats();
  EXPECT_FALSE(Tier(s, "disk")->degraded);
  EXPECT_NE(d.Log().find("caching resumed"), std::string::npos);
  for (size_t i : {size_t{0}, size_t{2}}) {
    auto a = client.Specialize(specs[i]);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->origin, coop::Origin::kDisk) << "spec " << i;
    EXPECT_EQ(Fingerprint(*a), references[i]);
  }
  auto report = client.Verify();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->bad_removed, 0u);
  EXPECT_EQ(report->entries_checked, 2u);
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.Log();
}

// A cache directory that is read-only (a read-only bind mount in the daemon's own mount
// namespace, which binds root too): coopd starts and serves, reads what the directory holds,
// compiles what it does not without storing it, says so in stats and log with SQLite's cause,
// and the entries in it are intact for the next daemon.
TEST(Faults, AReadOnlyCacheDirectoryServesWithoutCachingAndLosesNothing) {
  if (std::string why = NamespaceUnavailable(); !why.empty()) GTEST_SKIP() << why;
  std::vector<coop::Spec> specs;
  for (int i = 0; i < 2; ++i) specs.push_back(ReduceSpec(i));
  const std::vector<std::string> references = References(specs);
  TempDir dir;
  const std::string cache = dir.path() + "/cache";
  {
    TestDaemon writer(dir.path(), {"--workers", "1"});
    ASSERT_TRUE(writer.started);
    ASSERT_TRUE(writer.Client().Specialize(specs[0]));
  }
  {
    CoopdProcess ro(dir.path() + "/coopd.sock", cache, {"--workers", "1"});
    ro.wrapper = InNamespace("mount --bind '" + cache + "' '" + cache +
                             "' && mount -o remount,bind,ro '" + cache + "' '" + cache + "'");
    std::string error;
    ASSERT_TRUE(ro.Start(&error) && ro.WaitReady(120s, &error)) << error;
    auto client = ro.MakeClient();
    for (size_t i = 0; i < specs.size(); ++i) {
      auto a = client.Specialize(specs[i]);
      ASSERT_TRUE(a) << "served although the cache is read-only: " << a.error().message;
      EXPECT_EQ(Fingerprint(*a), references[i]);
      // What the directory holds is still read; a new entry is compiled and not stored.
      EXPECT_EQ(a->origin, i == 0 ? coop::Origin::kDisk : coop::Origin::kCompiled) << i;
    }
    auto s = client.GetStats();
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->cache_degraded) << ro.Log();
    EXPECT_NE(ro.Log().find("attempt to write a readonly database); serving without caching"),
              std::string::npos)
        << ro.Log();
    EXPECT_EQ(ro.Stop(SIGTERM), 0) << ro.Log();
  }
  // The fault gone (the mount went with the namespace): what was stored is intact.
  TestDaemon after(dir.path(), {"--workers", "1", "--memory-cache-mb", "0"});
  ASSERT_TRUE(after.started);
  auto again = after.Client().Specialize(specs[0]);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->origin, coop::Origin::kDisk);
  EXPECT_EQ(Fingerprint(*again), references[0]);
  auto report = after.Client().Verify();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->bad_removed, 0u);
}

// The farm tier slow (CLIENT PAUSE from a second connection: Redis answers nothing for a
// while) and partitioned (a proxy between coopd and Redis that stops forwarding, as a network
// partition drops packets): clients see no errors, only local hits and compiles, and the tier
// is used again once the fault clears.
TEST(Faults, RedisSlowOrPartitionedCausesNoClientErrorsAndTheTierResumes) {
  TempDir dir;
  RedisServer redis(dir.path());
  std::string error;
  ASSERT_TRUE(redis.Start(&error)) << error;
  TcpProxy proxy(redis.port());
  ASSERT_GT(proxy.port(), 0);
  const std::string url = "redis://127.0.0.1:" + std::to_string(proxy.port()) + "?prefix=f&" +
                          TestUrlOptions("timeout_ms=1000&connect_timeout_ms=1000").substr(1);
  TestDaemon d(dir.path(), {"--workers", "1", "--remote-cache", url});
  ASSERT_TRUE(d.started);
  std::vector<coop::Spec> specs;
  for (int i = 0; i < 6; ++i) specs.push_back(ReduceSpec(i));
  auto client = d.Client();
  ASSERT_TRUE(client.Specialize(specs[0]));
  ASSERT_EQ(redis.DbSize(), 1u);
  auto entries = [&] { return redis.DbSize(); };
  auto wait_healthy = [&] { return WaitFor([&] { return d.Stats().remote.healthy; }, 60s); };

  // Slow: Redis answers no command for 5 s.
  ASSERT_EQ(redis.Cli({"CLIENT", "PAUSE", "5000", "ALL"}), "OK");
  const uint64_t timeouts_before = d.Stats().remote.timeouts;
  auto slow = client.Specialize(specs[1]);
  ASSERT_TRUE(slow) << slow.error().message;
  EXPECT_EQ(slow->origin, coop::Origin::kCompiled);
  auto local = client.Specialize(specs[0]);
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->origin, coop::Origin::kMemory);
  coop::Stats s = d.Stats();
  EXPECT_GT(s.remote.timeouts, timeouts_before);
  ASSERT_EQ(redis.Cli({"CLIENT", "UNPAUSE"}), "OK");
  ASSERT_TRUE(wait_healthy()) << d.process.Log();
  const uint64_t before_slow_fault_cleared = entries();
  auto after_slow = client.Specialize(specs[2]);
  ASSERT_TRUE(after_slow) << after_slow.error().message;
  EXPECT_GT(entries(), before_slow_fault_cleared) << "writes resumed after the pause";

  // Partitioned: nothing crosses the proxy, in either direction, on old or new connections.
  proxy.Partition();
  for (int i = 0; i < 4; ++i) {
    auto r = client.Specialize(specs[static_cast<size_t>(i)]);  // local hits, one compile
    ASSERT_TRUE(r) << "request " << i << ": " << r.error().message;
    EXPECT_NE(r->origin, coop::Origin::kRemote);
  }
  s = d.Stats();
  EXPECT_FALSE(s.remote.healthy);
  EXPECT_EQ(s.compile_failures, 0u);
  const uint64_t during = entries();
  proxy.Heal();
  ASSERT_TRUE(wait_healthy()) << d.process.Log();
  auto healed = client.Specialize(specs[4]);
  ASSERT_TRUE(healed) << healed.error().message;
  EXPECT_GT(entries(), during) << "writes resumed after the partition healed";
  // A second replica on its own cache finds the entries in the farm.
  TempDir other;
  TestDaemon replica(other.path(), {"--workers", "1", "--remote-cache", url});
  ASSERT_TRUE(replica.started);
  auto remote = replica.Client().Specialize(specs[4]);
  ASSERT_TRUE(remote) << remote.error().message;
  EXPECT_EQ(remote->origin, coop::Origin::kRemote);
  EXPECT_EQ(Fingerprint(*remote), Fingerprint(*healed));
}

}  // namespace
}  // namespace coopd_test
