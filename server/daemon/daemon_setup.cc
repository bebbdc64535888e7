// daemon_setup.cc: RunDaemon's first steps: the process (logging, the descriptor limit, the
// signal mask) and the Unix socket (its directory and lock, or the socket systemd passed).
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "coop/paths.h"
#include "server/daemon/daemon_internal.h"
#include "server/daemon/log_format.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

absl::Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cannot create directory ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// A socket directory coopd created is its user's alone (0700). With --socket-group, members of
// the group must be able to reach the socket: a directory coopd created is given to the group
// (0750); an existing one is left as it is, with a warning when the group cannot search it.
absl::Status ShareSocketDir(const std::string& dir, bool created, const DaemonConfig& config) {
  if (config.socket_gid < 0) {
    if (created && chmod(dir.c_str(), 0700) != 0) {
      spdlog::warn("cannot make {} private (0700): {}", dir, std::strerror(errno));
    }
    return absl::OkStatus();
  }
  const auto gid = static_cast<gid_t>(config.socket_gid);
  if (created) {
    if (chown(dir.c_str(), static_cast<uid_t>(-1), gid) != 0 || chmod(dir.c_str(), 0750) != 0) {
      return absl::FailedPreconditionError(
          StrCat("--socket-group ", config.socket_group, ": cannot give ", dir, " to the group: ",
                 std::strerror(errno), " (coopd's user must be root or a member of the group)"));
    }
    return absl::OkStatus();
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0 &&
      !(st.st_gid == gid && (st.st_mode & S_IXGRP) != 0)) {
    spdlog::warn(
        "--socket-group {}: members of the group cannot reach the socket: its directory {} "
        "(mode {:04o}) does not let them search it",
        config.socket_group, dir, st.st_mode & 07777);
  }
  return absl::OkStatus();
}

}  // namespace

void SetUpLogging(const DaemonConfig& config) {
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  // Every message escaped and bounded: requests' values cannot forge or flood log lines.
  if (config.log_format == "json") {
    InstallJsonLogFormat();
  } else {
    InstallSafeLogFormat(kTextLogPattern);
  }
  // Compile workers inherit it and log in the same format (server/daemon/main.cc). Set before any
  // thread starts.
  setenv("COOPD_LOG_FORMAT", config.log_format.c_str(), 1);
  if (!config.config_file.empty()) spdlog::info("config file: {}", config.config_file);
}

// Every connection costs a descriptor, and gRPC 1.51 stops accepting on a listener for good when
// accept4 fails with EMFILE (issue 27). A cap on connections that gRPC 1.51 lacks (no
// grpc.max_allowed_incoming_connections) is the descriptor limit; the self-probe notices a
// listener that stopped anyway.
void RaiseDescriptorLimit() {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t soft = rl.rlim_cur;
  if (rl.rlim_cur != rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      spdlog::warn("descriptors: cannot raise the soft limit {} to the hard limit {}: {}", soft,
                   rl.rlim_max, std::strerror(errno));
      return;
    }
  }
  spdlog::info(
      "descriptors: limit {} (soft {} raised to the hard limit){}", rl.rlim_cur, soft,
      rl.rlim_cur < 4096 ? "; each connection holds one: raise LimitNOFILE (ulimit -Hn)" : "");
}

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

SocketLock::~SocketLock() {
  if (fd_ >= 0) close(fd_);
}

absl::Status SocketLock::Acquire(const std::string& socket_path) {
  const std::string path = socket_path + ".lock";
  std::string error;
  fd_ = coop::OpenOwnFile(path, O_RDWR, &error);
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat("lock file ", error));
  if (fchmod(fd_, 0600) != 0) {
    spdlog::warn("cannot make {} private (0600): {}", path, std::strerror(errno));
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = pread(fd_, buf, sizeof(buf) - 1, 0);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return absl::FailedPreconditionError(StrCat("another coopd (pid ", pid, ") already owns ",
                                                socket_path,
                                                "; stop it first or choose another --socket"));
  }
  std::string pid = StrCat(getpid(), "\n");
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    spdlog::warn("could not record pid in {}: {}", path, std::strerror(errno));
  }
  return absl::OkStatus();
}

absl::Status PrepareSocket(const DaemonConfig& config, DaemonSocket* socket) {
  // Socket activation: systemd owns the socket (and starts one coopd per socket unit), so
  // there is no lock to take and no file to create or remove.
  auto inherited = TakeInheritedSocket();
  if (!inherited.ok()) return inherited.status();
  socket->inherited = std::move(*inherited);
  socket->activated = socket->inherited.fd >= 0;
  socket->listen_name = socket->activated ? StrCat("inherited fd ", socket->inherited.fd,
                                                   " (unix:", socket->inherited.path, ")")
                                          : StrCat("unix:", config.socket_path);
  if (!socket->activated) {
    const std::string socket_dir = std::filesystem::path(config.socket_path).parent_path().string();
    if (!socket_dir.empty()) {
      const bool existed = std::filesystem::exists(socket_dir);
      if (absl::Status s = MakePrivateDir(socket_dir); !s.ok()) return s;
      // Another user's directory, or one others may write, could swap the socket, or plant
      // links as its lock and log: refused (lstat: a link is refused too) before anything in it
      // is touched (docs/security.md, "Other local users").
      coop::DirRule rule;
      rule.owner = static_cast<long>(geteuid());
      rule.writable_group = config.socket_gid;
      if (std::string why = coop::UnsafeDirReason(socket_dir, rule); !why.empty()) {
        return absl::FailedPreconditionError(why);
      }
      if (absl::Status s = ShareSocketDir(socket_dir, !existed, config); !s.ok()) return s;
    }
    if (absl::Status s = socket->lock.Acquire(config.socket_path); !s.ok()) return s;
  } else if (!config.socket_group.empty()) {
    spdlog::warn(
        "--socket-group {} ignored: systemd owns the socket (set SocketGroup= and "
        "SocketMode=0660 in the socket unit)",
        config.socket_group);
  }
  return absl::OkStatus();
}

}  // namespace coopd
