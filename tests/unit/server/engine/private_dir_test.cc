// Unit tests of engine/private_dir.h: directories made fresh and verified, and clean-up that
// removes only its own user's real directories and never follows a link. The cases with another
// user's entries make them as uid 65534 (nobody), which needs root; they skip without it.
#include "server/engine/private_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "tests/as_user.h"

namespace coopd {
namespace {

constexpr uid_t kNobody = coopd_testing::kNobody;

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

bool AsNobody(const std::function<bool()>& body) {
  return coopd_testing::AsUser(coopd_testing::kNobody, body);
}

// A pid that no process has: the clean-up's test for "its daemon was killed".
pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// A scratch base directory like /tmp (sticky, world-writable), removed at the end.
struct Base {
  std::string path;
  Base() {
    char templ[] = "/tmp/coopd-private-dir-test-XXXXXX";
    path = mkdtemp(templ);
    chmod(path.c_str(), 01777);
  }
  ~Base() { std::system(("rm -rf '" + path + "'").c_str()); }
};

TEST(PrivateDir, MakePrivateTempDirMakesAFresh0700DirectoryOfOurs) {
  Base base;
  auto a = MakePrivateTempDir(base.path, "x-");
  auto b = MakePrivateTempDir(base.path, "x-");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->rfind(base.path + "/x-", 0), 0u) << *a;
  struct stat st {};
  ASSERT_EQ(lstat(a->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_TRUE(VerifyPrivateDir(*a).ok());
}

TEST(PrivateDir, VerifyRefusesALinkAnOpenModeAndAnotherUsersDirectory) {
  Base base;
  const std::string link = base.path + "/link", open = base.path + "/open";
  ASSERT_EQ(symlink("/", link.c_str()), 0);
  ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  EXPECT_NE(std::string(VerifyPrivateDir(link).message()).find("(a symlink)"), std::string::npos)
      << VerifyPrivateDir(link);
  EXPECT_NE(std::string(VerifyPrivateDir(open).message()).find("mode 0777"), std::string::npos)
      << VerifyPrivateDir(open);
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make another user's directory";
  const std::string theirs = base.path + "/theirs";
  ASSERT_TRUE(AsNobody([&] { return mkdir(theirs.c_str(), 0700) == 0; }));
  EXPECT_NE(std::string(VerifyPrivateDir(theirs).message()).find("owned by uid 65534"),
            std::string::npos)
      << VerifyPrivateDir(theirs);
}

TEST(PrivateDir, RemoveOwnedTreeRemovesLinksInsideWithoutFollowingThem) {
  Base base;
  const std::string outside = base.path + "/outside";
  ASSERT_EQ(mkdir(outside.c_str(), 0700), 0);
  std::ofstream(outside + "/keep") << "keep";
  const std::string tree = base.path + "/tree";
  ASSERT_EQ(mkdir(tree.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((tree + "/sub").c_str(), 0700), 0);
  std::ofstream(tree + "/sub/f") << "f";
  ASSERT_EQ(symlink(outside.c_str(), (tree + "/sub/to-outside").c_str()), 0);
  ASSERT_EQ(symlink((outside + "/keep").c_str(), (tree + "/to-file").c_str()), 0);
  EXPECT_TRUE(RemoveOwnedTree(tree));
  EXPECT_FALSE(Exists(tree));
  EXPECT_TRUE(Exists(outside + "/keep"));
  // A link at the top is not a tree of ours: left alone, and its target too.
  const std::string top = base.path + "/top";
  ASSERT_EQ(symlink(outside.c_str(), top.c_str()), 0);
  EXPECT_FALSE(RemoveOwnedTree(top));
  EXPECT_TRUE(Exists(top));
  EXPECT_TRUE(Exists(outside + "/keep"));
}

TEST(PrivateDir, StaleCleanupLeavesLinksAndOtherUsersEntriesAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make another user's entries";
  Base base;
  const pid_t dead = DeadPid();
  const std::string p = std::to_string(dead);
  const std::string victim = base.path + "/victim";
  ASSERT_EQ(mkdir(victim.c_str(), 0755), 0);
  std::ofstream(victim + "/precious") << "precious";
  // Another user's directories under each old name, one holding a file of theirs.
  ASSERT_TRUE(AsNobody([&] {
    for (const char* prefix : {"coopd-worker-", "coopd-clang-", "__nvrtc_auto_pch_"}) {
      const std::string d = base.path + "/" + prefix + p;
      if (mkdir(d.c_str(), 0777) != 0) return false;
      std::ofstream(d + "/theirs") << "theirs";
    }
    // A link to a directory of someone else's, named like a stale entry.
    return symlink(victim.c_str(), (base.path + "/coopd-worker-" + p + "0").c_str()) == 0;
  }));
  // Ours, under a name of a dead pid: removed.
  const std::string ours = base.path + "/coopd-clang-" + std::to_string(DeadPid());
  ASSERT_EQ(mkdir(ours.c_str(), 0700), 0);
  EXPECT_EQ(RemoveStalePidDirs(base.path, {"coopd-worker-", "coopd-clang-", "__nvrtc_auto_pch_"}),
            1u);
  EXPECT_FALSE(Exists(ours));
  for (const char* prefix : {"coopd-worker-", "coopd-clang-", "__nvrtc_auto_pch_"}) {
    EXPECT_TRUE(Exists(base.path + "/" + prefix + p + "/theirs")) << prefix;
  }
  EXPECT_TRUE(Exists(base.path + "/coopd-worker-" + p + "0"));
  EXPECT_TRUE(Exists(victim + "/precious"));
}

TEST(PrivateDir, DaemonTempDirRemovesOnlyParentsWhoseDaemonIsGone) {
  Base base;
  auto live = DaemonTempDir::Create(base.path);
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ((*live)->path().rfind(base.path + "/" + DaemonTempDir::Prefix(), 0), 0u);
  EXPECT_TRUE(VerifyPrivateDir((*live)->path()).ok());
  // One whose daemon was killed: its lock is free.
  auto killed = MakePrivateTempDir(base.path, DaemonTempDir::Prefix());
  ASSERT_TRUE(killed.ok());
  std::ofstream(*killed + "/.lock") << "";
  auto next = DaemonTempDir::Create(base.path);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(Exists(*killed));
  EXPECT_TRUE(Exists((*live)->path())) << "a running daemon's parent was removed";
  const std::string path = (*next)->path();
  next->reset();
  EXPECT_FALSE(Exists(path)) << "removed on destruction";
}

}  // namespace
}  // namespace coopd
