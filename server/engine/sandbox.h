// sandbox.h: the confinement a compile worker puts itself under before it takes a job.
//
// User operator source is other people's code, and a compile reads whatever its #include lines
// name. A worker therefore confines itself, for the rest of its life and that of its children
// (clang), with:
//   * Landlock (raw syscalls; ABI 1 and later): it may read only SandboxPolicy::read (the
//     header roots, the toolchain's own files, the shared libraries), write only
//     SandboxPolicy::write (its PCH and scratch directories), and execute only
//     SandboxPolicy::exec (the clang binary and its program interpreter). With ABI 4 and later
//     it may neither bind nor connect TCP sockets; with ABI 6 it may not signal processes
//     outside its domain (the daemon) nor reach abstract Unix sockets.
//   * seccomp (libseccomp), an allowlist for the native architecture on every thread: the calls
//     of engine/syscall_allowlist.h, derived from what NVRTC, nvJitLink, clang and the worker
//     make. Every socket route (socket, socketpair, connect, bind, ...) fails with EACCES, so
//     no network of any family and no new Unix sockets (the worker keeps the socket to the
//     daemon it was given); io_uring, ptrace, bpf, userfaultfd, keyrings, namespaces and
//     mounts with EPERM; clone3 with ENOSYS (glibc then uses clone, allowed without namespace
//     flags); another ABI (i386 through int $0x80, x32) with EPERM, whatever the call; any
//     call on neither list with ENOSYS. COOPD_SECCOMP_LOG=1 in the environment logs (kernel
//     audit log) instead of refusing a call on neither list: the derivation and diagnosis mode.
// docs/security.md says what a compile can and cannot reach.
//
// Without Landlock (an old kernel, or one built without it) the mode decides: kAuto goes on
// with seccomp alone (the daemon has logged a warning at start), kRequire refuses (the daemon
// does not start), kOff confines nothing.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace coopd {

enum class SandboxMode { kOff, kAuto, kRequire };

// "off", "auto", "require".
const char* SandboxModeName(SandboxMode mode);

struct SandboxPolicy {
  SandboxMode mode = SandboxMode::kAuto;
  std::vector<std::string> read;   // directories or files: read (and list) beneath
  std::vector<std::string> write;  // directories: read, create, write, remove beneath
  std::vector<std::string> exec;   // files that may be executed (and read)
};

// The highest Landlock ABI the running kernel offers, or 0 without Landlock (with *why set to
// the reason: "the kernel has no Landlock (ENOSYS)", "Landlock is disabled at boot ...").
int LandlockAbi(std::string* why);

// Confines the calling process (and its future children) as described above, after moving it
// into a private root that holds only the policy's paths (private_root.h; where that cannot be
// done it logs a warning and goes on). Paths that do not exist are skipped; a root whose last
// component is a symlink gets no Landlock rule (callers resolve roots first: realpath), and a
// write root must be a directory of the caller's euid that group and others cannot write
// (FAILED_PRECONDITION otherwise). With kAuto, a kernel without Landlock leaves only the seccomp
// layer (OK); with kRequire it is FAILED_PRECONDITION. Any other failure is INTERNAL.
absl::Status ConfineSelf(const SandboxPolicy& policy);

// libseccomp's version, "2.5.4".
std::string SeccompVersion();

// What the seccomp layer refuses on this kernel, found by loading the filter in a forked child
// (never in the caller) and trying the calls. Each *_errno is 0 when the call succeeded, else
// its errno; -1 when the architecture has no such route (i386 and x32 exist on x86_64 alone).
struct SeccompProbe {
  std::string error;  // why the filter could not be loaded; empty when it was
  int native_socket_errno = 0;
  int i386_socket_errno = -1;  // socket through int $0x80
  int x32_socket_errno = -1;   // socket as nr | 0x40000000
  int io_uring_errno = 0;
  int unshare_errno = 0;  // unshare(CLONE_NEWUSER)
};
SeccompProbe ProbeSeccomp();

// The program interpreter (PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2) an ELF executable
// names, or "" when it names none or cannot be read. Executing a dynamic program executes it
// too, so the policy's exec list needs it.
std::string ProgramInterpreter(const std::string& path);

}  // namespace coopd
