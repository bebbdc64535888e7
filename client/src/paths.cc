#include "coop/paths.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace coop {
namespace {

std::string Mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Owners(const DirRule& rule) {
  std::string s = std::to_string(rule.owner);
  if (rule.other_owner >= 0 && rule.other_owner != rule.owner) {
    s += ", " + std::to_string(rule.other_owner);
  }
  if (rule.root_ok && rule.owner != 0 && rule.other_owner != 0) s += ", 0";
  return s;
}

}  // namespace

std::string DefaultSocketPath() {
  if (const char* env = std::getenv("COOPD_SOCKET"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/coopd/coopd.sock";
  }
  return "/tmp/coopd-" + std::to_string(getuid()) + "/coopd.sock";
}

std::string SocketDir(const std::string& socket_path) {
  const size_t slash = socket_path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return socket_path.substr(0, slash);
}

std::string UnsafeDirReason(const std::string& dir, const DirRule& rule, bool* missing) {
  if (missing != nullptr) *missing = false;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && missing != nullptr) {
      *missing = true;
      return "";
    }
    return rule.what + " " + dir + ": cannot stat: " + std::strerror(errno) + "; " + rule.fix;
  }
  if (S_ISLNK(st.st_mode)) {
    return rule.what + " " + dir + ": is a symbolic link, not a directory; " + rule.fix;
  }
  if (!S_ISDIR(st.st_mode)) return rule.what + " " + dir + ": not a directory; " + rule.fix;
  const long uid = static_cast<long>(st.st_uid);
  if (uid != rule.owner && uid != rule.other_owner && !(rule.root_ok && uid == 0)) {
    return rule.what + " " + dir + ": owned by uid " + std::to_string(uid) + ", not " + rule.who +
           " (" + Owners(rule) + "); " + rule.fix;
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    return rule.what + " " + dir + ": mode " + Mode(st.st_mode) +
           " lets every user write it (it must be writable by its owner alone); " + rule.fix;
  }
  if ((st.st_mode & S_IWGRP) != 0 &&
      !(rule.writable_group >= 0 && static_cast<long>(st.st_gid) == rule.writable_group)) {
    return rule.what + " " + dir + ": mode " + Mode(st.st_mode) + " lets its group (gid " +
           std::to_string(st.st_gid) + ") write it (it must be writable by its owner alone); " +
           rule.fix;
  }
  return "";
}

std::string UnsafeSocketReason(const std::string& path, long uid, long other_owner) {
  const std::string fix =
      other_owner >= 0
          ? "refusing to send your token to it"
          : "refusing to send your token to it; if a shared coopd runs as that user on purpose, "
            "name it in COOPD_SOCKET_OWNER (ClientOptions::socket_owner, socket_owner=)";
  // Root owns /run and the like; a directory root owns is as safe as one's own.
  DirRule rule;
  rule.owner = uid;
  rule.other_owner = other_owner;
  rule.root_ok = true;
  rule.what = "socket " + path + ": its directory";
  rule.who = other_owner >= 0 ? "you, COOPD_SOCKET_OWNER or root" : "you or root";
  rule.fix = fix;
  bool missing = false;
  std::string why = UnsafeDirReason(SocketDir(path), rule, &missing);
  if (!why.empty() || missing) return why;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "";
    return "socket " + path + ": cannot stat: " + std::strerror(errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return "socket " + path + ": not a socket" + (S_ISLNK(st.st_mode) ? " (a symbolic link)" : "") +
           ": " + fix;
  }
  // Root's socket (systemd's socket unit makes one) is as trusted as root is.
  const long owner = static_cast<long>(st.st_uid);
  if (owner != uid && owner != other_owner && owner != 0) {
    return "socket " + path + " is owned by uid " + std::to_string(owner) + ", not you (" +
           std::to_string(uid) + ")" + (uid != 0 ? ", root" : "") +
           (other_owner >= 0 ? " or COOPD_SOCKET_OWNER (" + std::to_string(other_owner) + ")"
                             : std::string()) +
           ": " + fix;
  }
  return "";
}

long ParseOwner(const std::string& owner, std::string* error) {
  if (owner.empty()) return -1;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(owner.c_str(), &end, 10);
  if (errno == 0 && end != owner.c_str() && *end == '\0' && n >= 0) return n;
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (getpwnam_r(owner.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return static_cast<long>(found->pw_uid);
  }
  *error = "socket owner \"" + owner +
           "\" (COOPD_SOCKET_OWNER, ClientOptions::socket_owner) is neither a user name from the "
           "password database nor a numeric uid";
  return -1;
}

int OpenOwnFile(const std::string& path, int flags, std::string* error) {
  const int fd = open(path.c_str(), flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno) +
             (errno == ELOOP ? " (a symbolic link: refused, never followed)" : "");
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file; remove it";
  } else if (st.st_uid != geteuid()) {
    *error = path + ": owned by uid " + std::to_string(st.st_uid) + ", not " +
             std::to_string(geteuid()) + "; remove it";
  } else {
    return fd;
  }
  close(fd);
  return -1;
}

std::string UnsafeSecretReason(unsigned mode, long uid, const std::string& holds) {
  const std::string m = Mode(static_cast<mode_t>(mode));
  if ((mode & 0007) != 0) {
    return "others may access it (mode " + m + "), and it holds " + holds +
           ": chmod 600 (or 640 for a group)";
  }
  if ((mode & 0020) != 0) return "mode " + m + " lets its group write it; chmod 640 (or 600)";
  const long euid = static_cast<long>(geteuid());
  if (uid != euid && uid != 0) {
    return "owned by uid " + std::to_string(uid) + ", who may rewrite it; it must be owned by " +
           "this user (" + std::to_string(euid) + ") or root: chown it";
  }
  return "";
}

std::optional<std::string> ReadSmallFile(const std::string& path, const char* secret_holds,
                                         std::string* error, bool* unsafe) {
  if (unsafe != nullptr) *unsafe = false;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::string text;
  error->clear();
  if (fstat(fd, &st) != 0) {
    *error = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
  } else if (std::string why = secret_holds != nullptr
                                   ? UnsafeSecretReason(st.st_mode, st.st_uid, secret_holds)
                                   : std::string();
             !why.empty()) {
    *error = why;
    if (unsafe != nullptr) *unsafe = true;
  } else if (st.st_size > (1 << 20)) {
    *error = "larger than 1 MiB";
  } else {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    if (n < 0) *error = std::string("cannot read: ") + std::strerror(errno);
  }
  close(fd);
  if (!error->empty()) return std::nullopt;
  return text;
}

}  // namespace coop
