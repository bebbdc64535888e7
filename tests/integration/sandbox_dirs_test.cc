// Integration tests of the compile sandbox's directories (issue 27, findings 2, 3, 4 and 9): a
// real coopd whose $TMPDIR another user (uid 65534) has planted with the names coopd used to
// predict, symlinks to / and world-writable directories; units that must not outlive their
// compile; and the existence oracle (a file outside the roots must fail like a missing one).
// The planting needs root (to act as uid 65534); those tests skip without it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "coop/client.h"
#include "test_util.h"
#include "tests/as_user.h"

namespace coopd_test {
namespace {

constexpr uid_t kNobody = coopd_testing::kNobody;
// How many pids ahead the planting reaches: the daemon and its workers start after it, while
// other processes on the machine (builds, other tests) take pids too.
constexpr int kPlantedPids = 6000;

bool AsNobody(const std::function<bool()>& body) {
  return coopd_testing::AsUser(coopd_testing::kNobody, body);
}

int LastPid() {
  std::ifstream in("/proc/sys/kernel/ns_last_pid");
  int pid = 0;
  in >> pid;
  return pid;
}

// Every regular file beneath `dir` (not following links) whose contents hold `needle`, and every
// file named `name`.
void Find(const std::string& dir, const std::string& needle, const std::string& name,
          std::vector<std::string>* found) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    const std::string p = dir + "/" + n;
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      Find(p, needle, name, found);
    } else if (S_ISREG(st.st_mode)) {
      std::ifstream in(p, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      if (n == name || ss.str().find(needle) != std::string::npos) found->push_back(p);
    }
  }
  closedir(d);
}

// A directory like /tmp (sticky, world-writable) that the daemon gets as its $TMPDIR.
struct SharedTmp {
  std::string path;
  SharedTmp() {
    char templ[] = "/tmp/coopd-shared-tmp-XXXXXX";
    path = mkdtemp(templ);
    chmod(path.c_str(), 01777);
  }
  ~SharedTmp() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// A TestDaemon started with $TMPDIR set to `tmp` (the test's own environment is restored).
std::unique_ptr<TestDaemon> DaemonWithTmp(const std::string& tmp, std::vector<std::string> args) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", tmp.c_str(), 1);
  auto d = std::make_unique<TestDaemon>(std::move(args));
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  return d;
}

coop::Spec OperatorSpec(const std::string& prelude) {
  coop::Spec s = BlockReduceF32();
  s.method = "reduce";
  s.block = {128};
  s.user_op.name = "op";
  s.user_op.source = prelude + "\n__device__ float op(float a, float b) { return a + b; }\n";
  return s;
}

bool HaveClang(TestDaemon& d) {
  auto catalog = d.Client().GetCatalog();
  return catalog.ok() && !catalog->bitcode_archs.empty();
}

// Plants, as another user, the names coopd used to take as its own for pids [from, from + n):
// $TMPDIR/<prefix><pid>, a symlink to / (even pids) or a world-writable directory (odd).
bool Plant(const std::string& tmp, const char* prefix, int from, int n) {
  return AsNobody([&] {
    for (int pid = from; pid < from + n; ++pid) {
      const std::string p = tmp + prefix + std::to_string(pid);
      if (pid % 2 == 0 ? symlink("/", p.c_str()) != 0 : mkdir(p.c_str(), 0777) != 0) return false;
    }
    return true;
  });
}

// What Plant made is all still there, still the planter's, and coopd wrote nothing into it.
void ExpectPlantedUntouched(const std::string& tmp, const char* prefix, int from, int n) {
  for (int pid = from; pid < from + n; ++pid) {
    const std::string p = tmp + prefix + std::to_string(pid);
    struct stat st {};
    ASSERT_EQ(lstat(p.c_str(), &st), 0) << p << " was removed";
    EXPECT_EQ(st.st_uid, kNobody) << p;
    if (pid % 2 == 0) {
      EXPECT_TRUE(S_ISLNK(st.st_mode)) << p;
      continue;
    }
    std::vector<std::string> inside;
    Find(p, "\x01never\x02", "", &inside);
    EXPECT_TRUE(inside.empty()) << p << " holds " << inside.front();
  }
}

// Finding 2, as the attack went: another user plants the names a daemon's processes would take
// (coopd-clang-<pid> before it starts, coopd-worker-<pid> for the pids its restarted workers
// will get), then the workers are restarted (killed here; a compile that times out does it
// too). coopd must use none of the planted names, delete none of them, keep serving both
// formats, and never let a compile read /etc/shadow.
TEST(SandboxDirs, PlantedWorkerAndClangDirectoriesAreNeitherUsedNorRemoved) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to plant as another user (uid 65534)";
  SharedTmp tmp;
  const int clang_from = LastPid() + 1;
  ASSERT_TRUE(Plant(tmp.path, "/coopd-clang-", clang_from, kPlantedPids));
  auto d = DaemonWithTmp(tmp.path, {"--workers", "2"});
  ASSERT_TRUE(d->started);
  ASSERT_LT(d->process.pid(), clang_from + kPlantedPids) << "plant further ahead";
  const int worker_from = LastPid() + 1;
  ASSERT_TRUE(Plant(tmp.path, "/coopd-worker-", worker_from, kPlantedPids));
  for (const auto& w : d->Stats().worker_status) kill(w.pid, SIGKILL);
  const bool clang = HaveClang(*d);
  const coop::Formats formats = clang ? coop::Formats::kBoth : coop::Formats::kLtoIr;
  // The restarted workers compile (their PCH goes to their TMPDIR).
  for (int block : {64, 96, 160, 192}) {
    coop::Spec s = BlockReduceF32();
    s.block = {static_cast<uint32_t>(block)};
    auto r = d->Client().Specialize(s, formats);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  for (const auto& w : d->Stats().worker_status) {
    ASSERT_GE(w.pid, worker_from) << "a worker was not restarted";
    ASSERT_LT(w.pid, worker_from + kPlantedPids) << "a worker's pid was not planted";
  }
  for (const char* include : {"/etc/shadow", "../../../../../../../../etc/shadow"}) {
    for (const coop::Formats f :
         clang ? std::vector<coop::Formats>{coop::Formats::kLtoIr, coop::Formats::kBitcode}
               : std::vector<coop::Formats>{coop::Formats::kLtoIr}) {
      auto r = d->Client().Specialize(OperatorSpec(std::string("#include \"") + include + "\""), f);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().message.find("root:"), std::string::npos) << r.error().message;
    }
  }
  ExpectPlantedUntouched(tmp.path, "/coopd-clang-", clang_from, kPlantedPids);
  ExpectPlantedUntouched(tmp.path, "/coopd-worker-", worker_from, kPlantedPids);
}

// Start-up clean-up of what killed daemons left: another user's entries under the old names,
// for pids that no longer run, are left alone, directories and symlinks alike.
TEST(SandboxDirs, StartUpCleanUpLeavesAnotherUsersEntriesAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to plant as another user (uid 65534)";
  SharedTmp tmp;
  const std::string victim = tmp.path + "/victim";
  std::vector<std::string> planted;
  ASSERT_TRUE(AsNobody([&] {
    if (mkdir(victim.c_str(), 0755) != 0) return false;
    std::ofstream(victim + "/precious") << "precious";
    // pid 4194304 is past any pid_max: no process runs under it.
    for (const char* name :
         {"/__nvrtc_auto_pch_4194304_0", "/coopd-worker-4194304", "/coopd-clang-4194304"}) {
      const std::string p = tmp.path + name;
      if (mkdir(p.c_str(), 0777) != 0) return false;
      std::ofstream(p + "/theirs") << "theirs";
    }
    return symlink(victim.c_str(), (tmp.path + "/coopd-worker-4194305").c_str()) == 0 &&
           symlink(victim.c_str(), (tmp.path + "/coopd-clang-4194305").c_str()) == 0;
  }));
  auto d = DaemonWithTmp(tmp.path, {"--workers", "1"});
  ASSERT_TRUE(d->started);
  for (const char* name : {"/__nvrtc_auto_pch_4194304_0/theirs", "/coopd-worker-4194304/theirs",
                           "/coopd-clang-4194304/theirs", "/coopd-worker-4194305",
                           "/coopd-clang-4194305", "/victim/precious"}) {
    struct stat st {};
    EXPECT_EQ(lstat((tmp.path + name).c_str(), &st), 0) << name << " was removed";
  }
}

// Finding 3: a unit that fails to compile was left in the shared clang workspace, where every
// other worker could read it (another client's operator source). Now no unit outlives its job,
// whether it compiled or not.
TEST(SandboxDirs, NoUnitOutlivesItsCompile) {
  SharedTmp tmp;
  auto d = DaemonWithTmp(tmp.path, {"--workers", "2"});
  ASSERT_TRUE(d->started);
  if (!HaveClang(*d)) GTEST_SKIP() << "no clang-22 on this machine";
  const std::string secret = "COOPD-TENANT-SECRET-5d1e";
  // NVRTC (which checks every operator first) accepts it; clang does not.
  auto bad = d->Client().Specialize(
      OperatorSpec("// " + secret + "\n#if defined(__clang__)\nthis does not compile;\n#endif"),
      coop::Formats::kBitcode);
  ASSERT_FALSE(bad.ok());
  ASSERT_NE(bad.error().message.find("clang"), std::string::npos) << bad.error().message;
  std::vector<std::string> found;
  Find(tmp.path, secret, "coop_unit.cu", &found);
  EXPECT_TRUE(found.empty()) << "left behind: " << found.front();
  auto good = d->Client().Specialize(OperatorSpec("// " + secret + "-ok"), coop::Formats::kBitcode);
  ASSERT_TRUE(good.ok()) << good.error().message;
  Find(tmp.path, secret, "coop_unit.cu", &found);
  EXPECT_TRUE(found.empty()) << "left behind: " << found.front();
}

// Finding 4: "Permission denied" against "not found" told whether any path exists, and
// __has_include / __has_embed were true for /etc/shadow. Now a file outside the roots fails
// exactly as a missing one, and the feature tests say it is not there.
TEST(SandboxDirs, AFileOutsideTheRootsFailsExactlyAsAMissingOne) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  const bool clang = HaveClang(d);
  // The compilers point at the path's end in their messages: the paths compared have one length.
  auto missing_like = [](const std::string& path) {
    return "/" + std::string(path.size() - 1, 'z');
  };
  auto message = [&](const std::string& path, coop::Formats f) {
    auto r = d.Client().Specialize(OperatorSpec("#include \"" + path + "\""), f);
    EXPECT_FALSE(r.ok()) << path;
    std::string m = r.ok() ? "" : r.error().message;
    for (size_t at = m.find(path); at != std::string::npos; at = m.find(path)) {
      m.replace(at, path.size(), "<path>");
    }
    return m;
  };
  std::vector<coop::Formats> formats = {coop::Formats::kLtoIr};
  if (clang) formats.push_back(coop::Formats::kBitcode);
  for (const coop::Formats f : formats) {
    for (const char* path : {"/etc/shadow", "/etc/passwd", "/root/.bashrc", "/proc/self/environ"}) {
      const std::string missing = message(missing_like(path), f);
      EXPECT_NE(missing, "");
      EXPECT_EQ(message(path, f), missing);
    }
    // The feature tests: /etc/shadow exists on the host, but not for a compile.
    auto r = d.Client().Specialize(
        OperatorSpec("#if __has_include(\"/etc/shadow\") || __has_include(\"/etc/passwd\")\n"
                     "#error \"a file outside the roots exists\"\n#endif"),
        f);
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
  if (clang) {
    auto r = d.Client().Specialize(
        OperatorSpec("#if defined(__clang__)\n"
                     "#if __has_embed(\"/etc/shadow\") != __STDC_EMBED_NOT_FOUND__\n"
                     "#error \"/etc/shadow exists\"\n#endif\n#endif"),
        coop::Formats::kBitcode);
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
}

}  // namespace
}  // namespace coopd_test
