#include "server/engine/private_root.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "server/util/strings.h"

namespace coopd {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(StrCat("private root: ", what, ": ", std::strerror(errno)));
}

bool WriteProcFile(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// The flags a read-only remount of a bind of `path` must keep: in a user namespace the kernel
// refuses to clear nosuid, nodev, noexec or the atime flags the original mount has (locked).
unsigned long KeptFlags(const std::string& path) {
  struct statvfs sv {};
  if (statvfs(path.c_str(), &sv) != 0) return 0;
  unsigned long flags = 0;
  if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

// Builds the new root under `root` (a tmpfs, still reached through the host's paths).
class Builder {
 public:
  explicit Builder(std::string root) : root_(std::move(root)) {}

  // Makes `path` resolve inside the root as on the host: each directory on the way is created,
  // each symlink recreated with the same target (and followed, on the host, to go on), and the
  // last component bind-mounted from the host (read-only unless `writable`). A path that does
  // not exist on the host is skipped.
  absl::Status Add(const std::string& path, bool writable) {
    std::string done;  // the host path resolved so far ("" is /)
    std::vector<std::string> rest = Split(path);
    for (int hops = 0; !rest.empty();) {
      const std::string comp = rest.front();
      rest.erase(rest.begin());
      if (comp == "." || comp.empty()) continue;
      if (comp == "..") {
        done = done.substr(0, done.rfind('/'));
        continue;
      }
      const std::string host = done + "/" + comp;
      const std::string inside = root_ + host;
      struct stat st {};
      if (lstat(host.c_str(), &st) != 0) return absl::OkStatus();  // not on the host: skip
      if (S_ISLNK(st.st_mode)) {
        if (++hops > 40) return absl::OkStatus();
        char target[4096];
        const ssize_t n = readlink(host.c_str(), target, sizeof(target) - 1);
        if (n <= 0) return absl::OkStatus();
        target[n] = '\0';
        struct stat have {};
        if (lstat(inside.c_str(), &have) != 0 && symlink(target, inside.c_str()) != 0) {
          return Errno(StrCat("symlink ", inside));
        }
        std::vector<std::string> next = Split(target);
        next.insert(next.end(), rest.begin(), rest.end());
        rest = std::move(next);
        if (target[0] == '/') done.clear();
        continue;
      }
      const bool last = rest.empty();
      if (!last && !S_ISDIR(st.st_mode)) return absl::OkStatus();
      struct stat have {};
      if (lstat(inside.c_str(), &have) != 0) {
        if (S_ISDIR(st.st_mode) ? mkdir(inside.c_str(), 0755) != 0
                                : mknod(inside.c_str(), S_IFREG | 0644, 0) != 0) {
          return Errno(StrCat("create ", inside));
        }
      }
      done = host;
      if (last) return Bind(host, inside, writable);
    }
    return absl::OkStatus();
  }

 private:
  static std::vector<std::string> Split(const std::string& path) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= path.size()) {
      const size_t slash = path.find('/', at);
      const size_t end = slash == std::string::npos ? path.size() : slash;
      if (end > at) out.push_back(path.substr(at, end - at));
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
    return out;
  }

  // A write root (the worker's own directory, which holds the staging tmpfs) is bound alone, so
  // that the new root does not show up again inside it; a read root with what is mounted below.
  absl::Status Bind(const std::string& host, const std::string& inside, bool writable) {
    if (mount(host.c_str(), inside.c_str(), nullptr, MS_BIND | (writable ? 0 : MS_REC), nullptr) !=
        0) {
      return Errno(StrCat("bind ", host));
    }
    if (!writable && mount(nullptr, inside.c_str(), nullptr,
                           MS_REMOUNT | MS_BIND | MS_RDONLY | KeptFlags(host), nullptr) != 0) {
      return Errno(StrCat("read-only ", host));
    }
    return absl::OkStatus();
  }

  std::string root_;
};

}  // namespace

absl::Status EnterPrivateRoot(const SandboxPolicy& policy) {
  if (policy.write.empty()) {
    return absl::UnavailableError("private root: no write root to stage it in");
  }
  const std::string stage = policy.write.front() + "/.private-root";
  if (mkdir(stage.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::UnavailableError(
        StrCat("private root: cannot create ", stage, ": ", std::strerror(errno)));
  }
  // A mount namespace of our own; as root (with CAP_SYS_ADMIN) that is all it takes, otherwise
  // a user namespace too, with our uid and gid mapped to themselves (files stay ours).
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWNS) != 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      return absl::UnavailableError(
          StrCat("private root: no mount namespace (unshare: ", std::strerror(errno),
                 "; unprivileged user namespaces are off or refused here)"));
    }
    // From here on a failure leaves us in the new namespaces: INTERNAL.
    if (!WriteProcFile("/proc/self/setgroups", "deny") ||
        !WriteProcFile("/proc/self/uid_map", StrCat(uid, " ", uid, " 1")) ||
        !WriteProcFile("/proc/self/gid_map", StrCat(gid, " ", gid, " 1"))) {
      return Errno("user namespace id maps");
    }
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make mounts private");
  }
  if (mount("tmpfs", stage.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) {
    return Errno(StrCat("tmpfs on ", stage));
  }
  // Shorter paths first: a root inside another is bound over it, not hidden by it.
  std::vector<std::pair<std::string, bool>> roots;
  for (const auto& p : policy.read) roots.push_back({p, false});
  for (const auto& p : policy.exec) roots.push_back({p, false});
  for (const auto& p : policy.write) roots.push_back({p, true});
  std::stable_sort(roots.begin(), roots.end(),
                   [](const auto& a, const auto& b) { return a.first.size() < b.first.size(); });
  Builder builder(stage);
  for (const auto& [path, writable] : roots) {
    if (path.empty() || path[0] != '/') continue;
    if (absl::Status s = builder.Add(path, writable); !s.ok()) return s;
  }
  // pivot_root(".", "."): the old root ends up on top of the new one, and is detached.
  if (chdir(stage.c_str()) != 0) return Errno(StrCat("chdir ", stage));
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach the old root");
  if (chdir("/") != 0) return Errno("chdir /");
  // The skeleton itself (the directories and links on the way to the roots) is read-only.
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
            nullptr) != 0) {
    return Errno("read-only root");
  }
  return absl::OkStatus();
}

}  // namespace coopd
