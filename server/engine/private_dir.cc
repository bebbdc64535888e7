#include "server/engine/private_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "server/util/strings.h"

namespace coopd {
namespace {

// Owns an fd.
struct OwnedFd {
  int fd = -1;
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
};

// Removes everything beneath the open directory `dir` (which it closes), never following a
// symlink: each entry is examined with fstatat(AT_SYMLINK_NOFOLLOW) and a subdirectory opened
// with O_NOFOLLOW relative to its parent's fd, so a directory swapped for a link between the
// two steps fails to open instead of being followed. `depth` bounds the recursion.
bool EmptyDirFd(int dir, int depth) {
  DIR* d = fdopendir(dir);
  if (d == nullptr) {
    close(dir);
    return false;
  }
  bool ok = true;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.push_back(e->d_name);
    }
  }
  for (const std::string& name : names) {
    struct stat st {};
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int sub = depth > 0 ? openat(dirfd(d), name.c_str(),
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                : -1;
      if (sub < 0 || !EmptyDirFd(sub, depth - 1)) ok = false;
      if (unlinkat(dirfd(d), name.c_str(), AT_REMOVEDIR) != 0) ok = false;
    } else if (unlinkat(dirfd(d), name.c_str(), 0) != 0) {
      ok = false;
    }
  }
  closedir(d);
  return ok;
}

constexpr int kMaxDepth = 64;

// An open fd of `path` when it is a real directory owned by the effective uid, else -1.
int OpenOwnedDir(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string TempBase() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

absl::Status VerifyPrivateDir(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(StrCat(path, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(StrCat(path, ": not a directory",
                                                S_ISLNK(st.st_mode) ? " (a symlink)" : "",
                                                "; coopd uses only directories it made itself"));
  }
  if (st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        StrCat(path, ": owned by uid ", st.st_uid, ", not by coopd's uid ", geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return absl::FailedPreconditionError(
        StrCat(path, ": mode ", mode, " gives group or others access; it must be 0700"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MakePrivateTempDir(const std::string& base, const std::string& prefix) {
  std::string templ = StrCat(base, "/", prefix, "XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("cannot create a directory ", templ, ": ", std::strerror(errno)));
  }
  if (absl::Status s = VerifyPrivateDir(templ); !s.ok()) {
    rmdir(templ.c_str());
    return absl::FailedPreconditionError(StrCat("temporary directory ", s.message()));
  }
  return templ;
}

bool RemoveOwnedTree(const std::string& path) {
  const int fd = OpenOwnedDir(path);
  if (fd < 0) return false;
  const bool emptied = EmptyDirFd(fd, kMaxDepth);
  return rmdir(path.c_str()) == 0 && emptied;
}

bool EmptyOwnedDir(const std::string& path) {
  const int fd = OpenOwnedDir(path);
  return fd >= 0 && EmptyDirFd(fd, kMaxDepth);
}

size_t RemoveStalePidDirs(const std::string& dir, const std::vector<std::string>& prefixes) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    for (const std::string& prefix : prefixes) {
      if (name.rfind(prefix, 0) != 0) continue;
      const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
      if (owner <= 0 || kill(owner, 0) == 0 || errno != ESRCH) break;
      stale.push_back(name);
      break;
    }
  }
  closedir(d);
  size_t removed = 0;
  // RemoveOwnedTree leaves symlinks and other users' directories alone.
  for (const std::string& name : stale) removed += RemoveOwnedTree(dir + "/" + name) ? 1 : 0;
  return removed;
}

std::string DaemonTempDir::Prefix() {
  return StrCat("coopd-", geteuid(), "-");
}

absl::StatusOr<std::unique_ptr<DaemonTempDir>> DaemonTempDir::Create(const std::string& base_in) {
  const std::string base = base_in.empty() ? TempBase() : base_in;
  const std::string prefix = Prefix();
  // Parents of this user's daemons that were killed: their lock is free. One without a lock
  // file is being made right now (mkdtemp, then the lock): left alone.
  if (DIR* d = opendir(base.c_str())) {
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) names.push_back(base + "/" + e->d_name);
    }
    closedir(d);
    for (const std::string& p : names) {
      OwnedFd dir{OpenOwnedDir(p)};
      if (dir.fd < 0) continue;
      OwnedFd lock{openat(dir.fd, ".lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC)};
      if (lock.fd < 0 || flock(lock.fd, LOCK_EX | LOCK_NB) != 0) continue;
      RemoveOwnedTree(p);
    }
  }
  auto path = MakePrivateTempDir(base, prefix);
  if (!path.ok()) return path.status();
  const std::string lock_path = *path + "/.lock";
  const int lock =
      open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) {
    const std::string why = std::strerror(errno);
    if (lock >= 0) close(lock);
    RemoveOwnedTree(*path);
    return absl::FailedPreconditionError(StrCat("cannot lock ", lock_path, ": ", why));
  }
  return std::unique_ptr<DaemonTempDir>(new DaemonTempDir(*path, lock));
}

DaemonTempDir::~DaemonTempDir() {
  RemoveOwnedTree(path_);
  close(lock_fd_);
}

}  // namespace coopd
