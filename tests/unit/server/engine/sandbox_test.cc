// Unit tests of engine/sandbox.h: what a confined process can no longer do. Each runs in a
// forked child (confinement is for life), which reports through its exit status.
#include "server/engine/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace coopd {
namespace {

// Runs `body` in a confined child; returns its exit status (0: every check held).
template <class Body>
int InConfinedChild(const SandboxPolicy& policy, Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!ConfineSelf(policy).ok()) _exit(100);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

TEST(Sandbox, ConfinedProcessReadsOnlyItsRootsCreatesNoSocketsAndExecutesNothingElse) {
  if (LandlockAbi(nullptr) == 0) GTEST_SKIP() << "no Landlock on this kernel";
  char dir[] = "/tmp/coopd-sandbox-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  SandboxPolicy policy;
  policy.mode = SandboxMode::kRequire;
  policy.read = {"/usr/lib", "/lib", "/lib64", "/etc/ld.so.cache"};
  policy.write = {dir};
  const std::string file = std::string(dir) + "/f";
  const int status = InConfinedChild(policy, [&] {
    if (open("/usr/lib/os-release", O_RDONLY) < 0) return 1;  // a read root
    // Not one: absent from the private root (private_root.h), or refused by Landlock where no
    // mount namespace can be made.
    if (open("/etc/passwd", O_RDONLY) >= 0 || (errno != ENOENT && errno != EACCES)) return 2;
    if (open("/proc/self/environ", O_RDONLY) >= 0) return 3;
    if (open(file.c_str(), O_WRONLY | O_CREAT, 0600) < 0) return 4;  // a write root
    if (open("/usr/lib/coopd-must-not-exist", O_WRONLY | O_CREAT, 0600) >= 0) return 5;
    if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EACCES) return 6;
    if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0) return 7;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);  // not in policy.exec
    return errno == EACCES || errno == ENOENT ? 0 : 8;
  });
  EXPECT_EQ(status, 0) << "check " << status << " failed";
  unlink(file.c_str());
  rmdir(dir);
}

TEST(Sandbox, OffConfinesNothing) {
  SandboxPolicy policy;
  policy.mode = SandboxMode::kOff;
  EXPECT_EQ(InConfinedChild(policy, [] { return open("/etc/passwd", O_RDONLY) >= 0 ? 0 : 1; }), 0);
}

TEST(Sandbox, ProgramInterpreterReadsPtInterp) {
  EXPECT_NE(ProgramInterpreter("/bin/true").find("ld-linux"), std::string::npos);
  EXPECT_EQ(ProgramInterpreter("/etc/passwd"), "");
}

}  // namespace
}  // namespace coopd
