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

namespace coopd {

// Serves requests on `fd` until it closes. Exits at once if the process's parent is no longer
// `parent` (the daemon died while this worker started). A non-zero `memory_limit_bytes` caps
// the address space (RLIMIT_AS). Returns the process exit status.
int RunWorker(int fd, pid_t parent, uint64_t memory_limit_bytes);

}  // namespace coopd
