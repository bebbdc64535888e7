// inherited_listener.h: serving gRPC on a listening Unix socket that coopd inherited from
// systemd (socket activation: the sd_listen_fds protocol, LISTEN_PID/LISTEN_FDS, fd 3).
//
// gRPC 1.51 cannot adopt a listening socket, only connected ones
// (grpc::AddInsecureChannelFromFd), so a thread accepts on the inherited socket and hands each
// connection to the server. The socket belongs to systemd: coopd neither unlinks it nor takes
// the socket's lock file (systemd starts one coopd per socket unit).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace coopd {

struct InheritedSocket {
  int fd = -1;       // -1: nothing was inherited (start normally)
  std::string path;  // the socket's filesystem path, for logs ("" for an abstract socket)
};

// Takes the socket systemd passed, if any, and clears LISTEN_* from the environment (so the
// compile workers do not see it) and marks it close-on-exec. FAILED_PRECONDITION when systemd
// passed more than one socket or one that is not a listening Unix stream socket.
absl::StatusOr<InheritedSocket> TakeInheritedSocket();

class InheritedListener {
 public:
  // Accepts on `socket.fd` and adds each connection to `server` until Stop().
  static absl::StatusOr<std::unique_ptr<InheritedListener>> Start(const InheritedSocket& socket,
                                                                  grpc::Server* server);
  ~InheritedListener();
  // Stops accepting (connections already handed over stay served). Idempotent.
  void Stop();

 private:
  InheritedListener(int listen_fd, int wake_fd_read, int wake_fd_write, grpc::Server* server);
  void Run();

  const int listen_fd_;
  const int wake_read_, wake_write_;
  grpc::Server* const server_;
  std::thread thread_;
};

// Tells systemd (sd_notify) that coopd is ready, or stopping; a no-op outside systemd.
void NotifyReady(const std::string& status);
void NotifyStopping();

}  // namespace coopd
