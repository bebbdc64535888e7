#include "server/rpc/inherited_listener.h"

#include <fcntl.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/util/strings.h"

namespace coopd {

absl::StatusOr<InheritedSocket> TakeInheritedSocket() {
  // unset_environment=1: the compile workers (and anything they start) must not believe the
  // socket is theirs.
  const int n = sd_listen_fds(1);
  if (n < 0) {
    return absl::FailedPreconditionError(
        StrCat("socket activation: LISTEN_FDS is invalid: ", std::strerror(-n)));
  }
  if (n == 0) return InheritedSocket{};
  if (n > 1) {
    return absl::FailedPreconditionError(
        StrCat("socket activation: systemd passed ", n,
               " sockets; coopd takes exactly one (a single ListenStream= of a Unix socket path)"));
  }
  const int fd = SD_LISTEN_FDS_START;
  if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0) {
    return absl::FailedPreconditionError(
        StrCat("socket activation: fd ", fd,
               " is not a listening Unix stream socket (coopd's socket unit needs "
               "ListenStream=/path/to/coopd.sock)"));
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  InheritedSocket out;
  out.fd = fd;
  sockaddr_un addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
      len > offsetof(sockaddr_un, sun_path) && addr.sun_path[0] != '\0') {
    out.path.assign(addr.sun_path, strnlen(addr.sun_path, sizeof(addr.sun_path)));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<InheritedListener>> InheritedListener::Start(
    const InheritedSocket& socket, grpc::Server* server) {
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    return absl::InternalError(StrCat("socket activation: pipe: ", std::strerror(errno)));
  }
  auto listener = std::unique_ptr<InheritedListener>(
      new InheritedListener(socket.fd, wake[0], wake[1], server));
  listener->thread_ = std::thread([l = listener.get()] { l->Run(); });
  return listener;
}

InheritedListener::InheritedListener(int listen_fd, int wake_read, int wake_write,
                                     grpc::Server* server)
    : listen_fd_(listen_fd), wake_read_(wake_read), wake_write_(wake_write), server_(server) {}

InheritedListener::~InheritedListener() {
  Stop();
  close(wake_read_);
  close(wake_write_);
}

void InheritedListener::Stop() {
  if (!thread_.joinable()) return;
  const char byte = 0;
  while (write(wake_write_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void InheritedListener::Run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("socket activation: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    const int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      spdlog::error("socket activation: accept: {}", std::strerror(errno));
      // EMFILE and friends: do not spin; a connection stays queued until one is closed.
      poll(fds + 1, 1, 100);
      continue;
    }
    grpc::AddInsecureChannelFromFd(server_, conn);  // the server owns (and closes) conn
  }
}

void NotifyReady(const std::string& status) {
  sd_notify(0, StrCat("READY=1\nSTATUS=", status).c_str());
}

void NotifyStopping() {
  sd_notify(0, "STOPPING=1");
}

}  // namespace coopd
