// Unit tests of engine/private_root.h: a confined process sees only its sandbox roots, so a file
// outside them looks exactly like one that exists nowhere. Each case runs in a forked child (the
// namespaces are for life), as root (CLONE_NEWNS) and as uid 65534 through an unprivileged user
// namespace; a host that offers neither skips, saying so.
#include "server/engine/private_root.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <string>

#include "server/engine/sandbox.h"

namespace coopd {
namespace {

constexpr uid_t kNobody = 65534;
constexpr int kUnavailable = 90;

// Runs `body` in a child (as uid/gid 65534 when `nobody`) after `enter`; returns its exit
// status: 0 when every check held, kUnavailable when `enter` said UNAVAILABLE, 100+ when it
// failed otherwise, 200 when the child died.
int InChild(bool nobody, const std::function<absl::Status()>& enter,
            const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (nobody &&
        (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0)) {
      _exit(101);
    }
    // A process that changed its uid is not dumpable, so /proc/self/uid_map stays root's; one
    // that exec'd (a worker, setpriv) is.
    prctl(PR_SET_DUMPABLE, 1);
    absl::Status s = enter();
    if (absl::IsUnavailable(s)) _exit(kUnavailable);
    if (!s.ok()) {
      fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      _exit(100);
    }
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

struct Dir {
  std::string path;
  explicit Dir(uid_t owner) {
    char templ[] = "/tmp/coopd-private-root-test-XXXXXX";
    path = mkdtemp(templ);
    if (chown(path.c_str(), owner, owner) != 0) path.clear();
  }
  ~Dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

SandboxPolicy Policy(const std::string& write) {
  SandboxPolicy policy;
  policy.mode = SandboxMode::kRequire;
  policy.read = {"/usr/lib", "/lib", "/lib64", "/usr/lib64", "/etc/ld.so.cache", "/dev/null"};
  policy.write = {write};
  return policy;
}

// errno of open(path, O_RDONLY), 0 when it opened.
int OpenErrno(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return errno;
}

int StatErrno(const char* path) {
  struct stat st {};
  return stat(path, &st) == 0 ? 0 : errno;
}

// What must hold inside the private root of Policy(write).
int Checks(const std::string& write) {
  if (OpenErrno("/usr/lib/os-release") != 0) return 1;  // a read root
  if (OpenErrno("/lib/x86_64-linux-gnu/libc.so.6") != 0 &&
      OpenErrno("/lib/aarch64-linux-gnu/libc.so.6") != 0) {
    return 2;  // through the /lib symlink, recreated
  }
  if (OpenErrno("/dev/null") != 0) return 3;
  if (StatErrno("/etc/shadow") != ENOENT || StatErrno("/etc/passwd") != ENOENT) return 4;
  if (StatErrno("/home") != ENOENT || StatErrno("/proc/self") != ENOENT) return 5;
  const std::string file = write + "/f";
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);  // the write root
  if (fd < 0) return 6;
  close(fd);
  if (open("/usr/lib/coopd-must-not-exist", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0 ||
      errno != EROFS) {
    return 7;  // a read root is read-only
  }
  if (mkdir("/new", 0700) == 0 || errno != EROFS) return 8;  // so is the skeleton
  return 0;
}

void ExpectOnlyTheRootsExist(bool nobody) {
  Dir dir(nobody ? kNobody : geteuid());
  ASSERT_FALSE(dir.path.empty());
  const SandboxPolicy policy = Policy(dir.path);
  const int status = InChild(
      nobody, [&] { return EnterPrivateRoot(policy); }, [&] { return Checks(dir.path); });
  if (status == kUnavailable) GTEST_SKIP() << "no mount namespace for this user on this host";
  EXPECT_EQ(status, 0) << "check " << status << " failed";
}

TEST(PrivateRoot, OnlyThePolicysRootsExistAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "not root";
  ExpectOnlyTheRootsExist(false);
}

TEST(PrivateRoot, OnlyThePolicysRootsExistForAnUnprivilegedUser) {
  if (geteuid() != 0) {
    ExpectOnlyTheRootsExist(false);  // we are that user
  } else {
    ExpectOnlyTheRootsExist(true);
  }
}

// The existence oracle, through the whole confinement (private root, Landlock, seccomp): a file
// that exists outside the roots fails exactly as one that exists nowhere.
TEST(PrivateRoot, AnExistingFileOutsideTheRootsLooksLikeAMissingOne) {
  if (LandlockAbi(nullptr) == 0) GTEST_SKIP() << "no Landlock on this kernel";
  for (bool nobody : {false, true}) {
    if (nobody && geteuid() != 0) continue;
    Dir dir(nobody ? kNobody : geteuid());
    const SandboxPolicy policy = Policy(dir.path);
    if (InChild(
            nobody, [&] { return EnterPrivateRoot(policy); }, [] { return 0; }) == kUnavailable) {
      GTEST_SKIP() << "no mount namespace for " << (nobody ? "uid 65534" : "this user")
                   << " on this host: existence leaks there (docs/security.md)";
    }
    const int status = InChild(
        nobody, [&] { return ConfineSelf(policy); },
        [] {
          const int missing = OpenErrno("/nonexistent/x");
          if (missing != ENOENT) return 1;
          if (OpenErrno("/etc/shadow") != missing || OpenErrno("/etc/passwd") != missing) return 2;
          if (StatErrno("/etc/shadow") != StatErrno("/nonexistent/x")) return 3;
          if (access("/etc/shadow", F_OK) == 0 || access("/root", F_OK) == 0) return 4;
          return 0;
        });
    EXPECT_EQ(status, 0) << (nobody ? "as uid 65534: " : "as root: ") << "check " << status
                         << " failed";
  }
}

}  // namespace
}  // namespace coopd
