// syscall_allowlist.h: the system calls a confined compile worker, and every program it runs
// (clang), may make: the one table the seccomp layer of engine/sandbox.h is built from.
//
// How the list was derived (and how to derive it again after a toolchain upgrade):
// deploy/derive-syscall-allowlist.sh runs the integration tests that compile (NVRTC to LTO-IR,
// the layout query through nvJitLink, Link to a cubin, clang to bitcode, user operators, the
// sandbox tests) under `strace -f`, keeps the calls that confined workers and their children
// made after the filter was loaded, and prints those missing from kAllowedSyscalls. A second
// check runs on the filter itself: with COOPD_SECCOMP_LOG=1 in coopd's environment the workers'
// filter logs (kernel audit log, `dmesg | grep type=1326`) instead of refusing a call that is
// not on the list; the dangerous calls stay refused even then.
//
// Calls on neither list fail with ENOSYS ("not implemented": glibc then falls back to an older
// call, as for clone3 and faccessat2). The calls of kRefusedSyscalls fail with EPERM, the
// socket family (socket, socketpair, connect, bind, ...) with EACCES. Another architecture's
// ABI (i386 through int $0x80, x32 through nr | 0x40000000) fails with EPERM whatever the call.
#pragma once

#include <string_view>
#include <vector>

namespace coopd {

struct SyscallEntry {
  const char* name;  // libseccomp's name (seccomp_syscall_resolve_name); absent on some archs
  const char* why;   // who needs it (allowed) or what it would open (refused)
};

// Allowed without conditions, except clone (allowed without namespace flags) and ioctl
// (allowed for the requests of AllowedIoctls alone), which InstallSeccomp restricts by argument.
const std::vector<SyscallEntry>& AllowedSyscalls();

struct IoctlEntry {
  unsigned long request;
  const char* name;
};

// The ioctl requests a compile may make: terminal queries (isatty, the window size clang's
// diagnostics read) and descriptor flags. The filter compares all 64 bits, so a request with
// high bits set (which the kernel truncates to 32) is refused too; the others fail with ENOSYS.
// Never TIOCSTI nor TIOCLINUX (pushing input into the daemon's terminal).
const std::vector<IoctlEntry>& AllowedIoctls();

// Refused explicitly, with a stable errno, even in log mode (COOPD_SECCOMP_LOG=1). None of them
// is on the allowed list (tests/unit/server/engine/syscall_allowlist_test.cc keeps it so).
const std::vector<SyscallEntry>& RefusedSyscalls();

// The errno a refused call gets: EACCES for the socket family, ENOSYS for clone3 (so glibc
// falls back to clone, whose flags the filter can see), EPERM for the others.
int RefusedErrno(std::string_view name);

}  // namespace coopd
