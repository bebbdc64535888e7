// private_root.h: a compile worker's view of the filesystem, cut down to its sandbox roots.
//
// Landlock refuses to open what a policy does not allow, but it does not hide it: stat, access
// and the difference between "Permission denied" and "No such file or directory" still tell a
// compile whether any path exists (clang's __has_include and __has_embed are true for
// /etc/shadow). So before Landlock, a worker moves into a root of its own:
//   1. a new mount namespace: unshare(CLONE_NEWNS) as root, or unshare(CLONE_NEWUSER |
//      CLONE_NEWNS) with its own uid and gid mapped to themselves otherwise (unprivileged user
//      namespaces), and all mounts made private (nothing propagates back to the host);
//   2. a small tmpfs holding, at their own paths, bind mounts of exactly the policy's read,
//      write and exec roots (read-only except the write roots), and the symlinks on the way to
//      them (/lib -> usr/lib, /usr/local/cuda -> cuda-13.0), recreated as symlinks;
//   3. pivot_root into it, the old root detached, the tmpfs remounted read-only.
// Everything else (/etc/shadow, /home, /proc, /sys, other users' /tmp) does not exist there:
// it is "not found", like a path that exists nowhere. No /proc is mounted (NVRTC, clang and the
// loader work without it; Landlock denied /proc already).
//
// The staging directory (the tmpfs's mount point before the pivot) is <first write root>/
// .private-root, so the process needs a write root of its own (the worker's temporary
// directory). The calling process must be single-threaded (unshare(CLONE_NEWUSER) refuses a
// threaded one).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "server/engine/sandbox.h"

namespace coopd {

// Moves the calling process into a private root as above. OK when it did; UNAVAILABLE with the
// reason when this host cannot (no user namespaces for an unprivileged process: the
// kernel.unprivileged_userns_clone or user.max_user_namespaces sysctl, a container's seccomp
// profile, a threaded caller, no write root) and nothing was changed that matters: the caller
// goes on with Landlock alone, and existence then leaks (docs/security.md "Existence"). INTERNAL
// when it failed half way (the namespace exists but the root could not be built): the process
// still sees the host's files, or the new root, and Landlock's rules (by path, added after this)
// confine it in either.
absl::Status EnterPrivateRoot(const SandboxPolicy& policy);

}  // namespace coopd
