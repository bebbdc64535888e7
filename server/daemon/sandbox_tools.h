// sandbox_tools.h: `coopd sandbox-exec` and `coopd check-sandbox` (docs/security.md), the two
// ways to see the compile sandbox from outside a compile.
#pragma once

#include <ostream>

namespace coopd {

// `coopd sandbox-exec [SETTINGS...] [--read PATH]... -- PROG [ARGS...]`: runs PROG under a
// compile worker's confinement: the policy RunDaemon gives its workers (WorkerSandbox: the
// header roots, the toolchain, the shared libraries, clang as the one program it may execute;
// read-only), a private temporary directory of its own as TMPDIR and only write root (as each
// worker has), the worker memory limit, the seccomp allowlist (engine/syscall_allowlist.h).
// The differences from a worker: PROG (and its program interpreter) may be executed and read,
// as clang may; each --read PATH may be read; no clang workspace is made. SETTINGS are
// coopd's own (--sandbox, --cccl-include, --clang, --worker-memory-mb, --config, ...).
//
// Returns the exit status: PROG's own, 128 + N when a signal N ended it, 125 when the
// arguments or the confinement failed (the reason on stderr), 126 when PROG could not be
// executed in the sandbox, 127 when PROG was not found.
int RunSandboxExec(int argc, char** argv);

// `coopd check-sandbox [SETTINGS...]`: prints to `out` what this kernel lets the sandbox
// confine: the Landlock ABI and the rights it brings, the seccomp filter (libseccomp's version,
// the filter loaded in a child and tried: native, i386 and x32 sockets, io_uring, user
// namespaces), whether unprivileged user namespaces are available, and one line per threat
// (file reads, file writes, execution, network sockets, signals), "confined" or "NOT confined".
// Returns 0 when every threat is confined, 1 when some are not (a kernel without Landlock or
// with an ABI older than 6, or the filter failed), 2 for bad arguments.
int RunCheckSandbox(int argc, char** argv, std::ostream& out);

}  // namespace coopd
