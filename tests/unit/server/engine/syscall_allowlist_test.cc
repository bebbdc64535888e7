// Unit tests of engine/syscall_allowlist.h and the seccomp layer of engine/sandbox.h: the rule
// "no dangerous call on the allowlist" kept as a test, every name a real system call, and the
// filter itself (loaded in a child by ProbeSeccomp) refusing every socket route and foreign ABI.
#include "server/engine/syscall_allowlist.h"

#include <gtest/gtest.h>
#include <seccomp.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <set>
#include <string>

#include "server/engine/sandbox.h"

namespace coopd {
namespace {

// Issue 27's list: what no compile may ever call.
constexpr const char* kForbidden[] = {
    "socket",
    "socketpair",
    "connect",
    "bind",
    "socketcall",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "unshare",
    "setns",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "pivot_root",
    "chroot",
    "open_by_handle_at",
    "name_to_handle_at",
    "clone3",
};

std::set<std::string> Names(const std::vector<SyscallEntry>& entries) {
  std::set<std::string> names;
  for (const SyscallEntry& e : entries) names.insert(e.name);
  return names;
}

TEST(SyscallAllowlist, HoldsNoneOfTheForbiddenCallsAndRefusesEachExplicitly) {
  const std::set<std::string> allowed = Names(AllowedSyscalls());
  const std::set<std::string> refused = Names(RefusedSyscalls());
  for (const char* name : kForbidden) {
    EXPECT_EQ(allowed.count(name), 0u) << name << " is on the allowlist";
    EXPECT_EQ(refused.count(name), 1u) << name << " is not refused explicitly";
  }
  for (const std::string& name : refused) {
    EXPECT_EQ(allowed.count(name), 0u) << name << " is both allowed and refused";
  }
  EXPECT_EQ(allowed.size(), AllowedSyscalls().size()) << "a name is listed twice";
  EXPECT_EQ(refused.size(), RefusedSyscalls().size()) << "a name is listed twice";
}

TEST(SyscallAllowlist, EveryNameIsASystemCallLibseccompKnows) {
  // A misspelt name would be skipped silently: refused calls would then be let through by a
  // filter in log mode, and allowed ones refused.
  for (const auto* list : {&AllowedSyscalls(), &RefusedSyscalls()}) {
    for (const SyscallEntry& e : *list) {
      EXPECT_NE(seccomp_syscall_resolve_name(e.name), __NR_SCMP_ERROR) << e.name;
      EXPECT_STRNE(e.why, "") << e.name;
    }
  }
}

TEST(SyscallAllowlist, AllowsNoIoctlThatPushesInputIntoATerminal) {
  for (const IoctlEntry& io : AllowedIoctls()) {
    EXPECT_NE(io.request, static_cast<unsigned long>(TIOCSTI)) << io.name;
    EXPECT_NE(io.request, static_cast<unsigned long>(TIOCLINUX)) << io.name;
    EXPECT_LE(io.request, 0xffffffffUL) << io.name;
  }
}

TEST(SyscallAllowlist, SocketRoutesGetEaccesClone3EnosysTheRestEperm) {
  EXPECT_EQ(RefusedErrno("socket"), EACCES);
  EXPECT_EQ(RefusedErrno("socketpair"), EACCES);
  EXPECT_EQ(RefusedErrno("connect"), EACCES);
  EXPECT_EQ(RefusedErrno("clone3"), ENOSYS);
  EXPECT_EQ(RefusedErrno("ptrace"), EPERM);
}

TEST(SeccompFilter, RefusesSocketsByEveryAbiIoUringAndUserNamespaces) {
  const SeccompProbe probe = ProbeSeccomp();
  ASSERT_EQ(probe.error, "");
  EXPECT_EQ(probe.native_socket_errno, EACCES);
#if defined(__x86_64__)
  // EPERM is the filter's bad-arch answer: the kernel itself would create the i386 socket, and
  // answer an x32 call with a socket or (x32 disabled) ENOSYS.
  EXPECT_EQ(probe.i386_socket_errno, EPERM);
  EXPECT_EQ(probe.x32_socket_errno, EPERM);
#endif
  EXPECT_EQ(probe.io_uring_errno, EPERM);
  EXPECT_EQ(probe.unshare_errno, EPERM);
}

}  // namespace
}  // namespace coopd
