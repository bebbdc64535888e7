// private_dir.h: directories that only coopd's own user can reach, made with mkdtemp and
// verified, and removed without ever following a link another user could plant.
//
// /tmp is shared with every local user: any name coopd could predict there (a pid, a uid) may
// already be taken, by a directory another user owns or by a symlink to `/`. So coopd never
// trusts a name it did not just create: a directory comes from mkdtemp (mode 0700, a fresh name)
// and is checked with lstat (a real directory, owned by the effective uid, no group or other
// access) before it is used; clean-up removes only real directories its own user owns, and
// walks them with openat/unlinkat and O_NOFOLLOW, so a symlink inside is removed, never
// followed.
//
// Layout (docs/security.md):
//   $TMPDIR/coopd-<euid>-XXXXXX/        the daemon's private parent (DaemonTempDir), 0700
//     .lock                             flocked while the daemon runs
//     clang-XXXXXX/                     the clang workspace (bitcode.h): read-only to workers
//     worker-XXXXXX/                    one per worker process: its TMPDIR and only write root
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coopd {

// $TMPDIR, or /tmp when it is unset or empty.
std::string TempBase();

// mkdtemp("<base>/<prefix>XXXXXX") (mode 0700), verified by VerifyPrivateDir. Returns its path.
// FAILED_PRECONDITION naming the directory and the reason when it cannot be made.
absl::StatusOr<std::string> MakePrivateTempDir(const std::string& base, const std::string& prefix);

// OK when `path` itself (lstat: a symlink is refused, not followed) is a directory owned by the
// effective uid with no group or other permission bits; FAILED_PRECONDITION saying what it is
// otherwise.
absl::Status VerifyPrivateDir(const std::string& path);

// Removes `path` and everything beneath it when `path` itself is a real directory (not a
// symlink) owned by the effective uid; anything else is left alone (false). Beneath it, symlinks
// are removed and never followed (openat/unlinkat with O_NOFOLLOW all the way down).
bool RemoveOwnedTree(const std::string& path);

// Removes the contents of the directory `path` (which stays), as RemoveOwnedTree would.
bool EmptyOwnedDir(const std::string& path);

// Start-up clean-up of what killed coopd processes left in `dir` under older names
// (`<prefix><pid>...`: NVRTC's __nvrtc_auto_pch_<pid>_<n>, coopd-worker-<pid>,
// coopd-clang-<pid>) whose pid no longer runs: only real directories the effective uid owns,
// removed by RemoveOwnedTree; another user's entries, and symlinks, are never touched, also as
// root. Returns how many it removed.
size_t RemoveStalePidDirs(const std::string& dir, const std::vector<std::string>& prefixes);

// The daemon's private parent directory, $TMPDIR/coopd-<euid>-XXXXXX, which holds everything
// coopd writes to temporary storage. It holds an flock on `.lock` inside for its lifetime, so
// that a later daemon's Create() can tell a parent whose daemon was killed (the lock is free:
// removed) from one in use (left alone). Removed (RemoveOwnedTree) on destruction.
// sandbox-exec and tests make their own with Create() as well.
class DaemonTempDir {
 public:
  // Removes the stale parents of this user first, then makes a new one.
  static absl::StatusOr<std::unique_ptr<DaemonTempDir>> Create(const std::string& base = "");
  ~DaemonTempDir();
  DaemonTempDir(const DaemonTempDir&) = delete;
  DaemonTempDir& operator=(const DaemonTempDir&) = delete;
  const std::string& path() const { return path_; }

  // "coopd-<euid>-", the prefix of parents in TempBase().
  static std::string Prefix();

 private:
  DaemonTempDir(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}
  std::string path_;
  int lock_fd_;
};

}  // namespace coopd
