// worker.h: the compile-worker process (coopd re-executed with --worker-fd N).
//
// A worker reads Requests (worker.proto) from its fd, compiles with NVRTC (or, for bitcode, runs
// clang as a child process: engine/bitcode.h) or links with nvJitLink, and writes one Reply per
// Request. It keeps NVRTC's automatic PCH warm across requests, which is the reason workers are
// long-lived. It exits when the fd closes and dies
// with the daemon (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "server/engine/sandbox.h"

namespace coopd {

// Serves requests on `fd` until it closes. Exits at once if the process's parent is no longer
// `parent` (the daemon died while this worker started). A non-zero `memory_limit_bytes` caps
// the address space (RLIMIT_AS). Before its first job the worker makes its own temporary
// directory, $TMPDIR/coopd-worker-<pid> (NVRTC's automatic PCH and clang's temporary files go
// there: it becomes the worker's TMPDIR), and confines itself with `sandbox` plus that
// directory as a write root (sandbox.h). A worker that cannot confine itself under
// SandboxMode::kRequire exits with status 4. Returns the process exit status.
int RunWorker(int fd, pid_t parent, uint64_t memory_limit_bytes, SandboxPolicy sandbox);

// The prefix of a worker's temporary directory in $TMPDIR (the rest is its pid).
inline constexpr char kWorkerTempPrefix[] = "coopd-worker-";

}  // namespace coopd
