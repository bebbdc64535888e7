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
#include <string>

#include "server/engine/sandbox.h"

namespace coopd {

// Serves requests on `fd` until it closes. Exits at once if the process's parent is no longer
// `parent` (the daemon died while this worker started). A non-zero `memory_limit_bytes` caps
// the address space (RLIMIT_AS). `temp` is the worker's own temporary directory, which the
// daemon made for it (mkdtemp in its private parent: private_dir.h); it is used only if it is a
// real 0700 directory of the worker's uid (VerifyPrivateDir), and when `temp` is empty the worker
// makes one itself (mkdtemp, $TMPDIR/coopd-worker-XXXXXX). NVRTC's automatic PCH and clang's
// scratch files go there: it becomes the worker's TMPDIR, and its one write root. The worker
// then confines itself with `sandbox` plus that directory as a write root (sandbox.h). A worker
// that cannot confine itself under SandboxMode::kRequire exits with status 4. Returns the
// process exit status.
int RunWorker(int fd, pid_t parent, uint64_t memory_limit_bytes, SandboxPolicy sandbox,
              std::string temp);

// The prefix of a worker's temporary directory: "<prefix>XXXXXX" (mkdtemp) for one a worker
// made itself; "<prefix><pid>" was the name before (start-up clean-up still removes those).
inline constexpr char kWorkerTempPrefix[] = "coopd-worker-";

}  // namespace coopd
