// self_probe.h: coopd calling its own listeners, to notice one that no longer accepts.
//
// gRPC 1.51 stops accepting on a listener for good once accept4 fails with EMFILE (the process
// ran out of descriptors), and the process stays up, so a supervisor's restart-on-failure never
// fires (issue 27, finding 11). A SelfProbe calls each listener every `interval` on a new
// connection: grpc.health.v1 Health/Check, which gRPC's own health service answers. On a TCP port
// any answer that comes from the server counts, UNAUTHENTICATED included (the probe holds no
// token); only UNAVAILABLE and DEADLINE_EXCEEDED (no connection, no answer within `deadline`)
// fail. While every listener answers it notifies systemd's watchdog (WATCHDOG=1, a no-op outside
// systemd); after `max_failures` rounds in a row in which one failed, it calls `on_dead` once,
// with what failed (coopd logs it and exits, so that its supervisor restarts it).
//
// The caller leaves out what coopd cannot call itself (a TLS port that requires client
// certificates: coopd's own certificate need not be one the client CA signed).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace coopd {

struct ProbeTarget {
  std::string name;    // for logs: "unix:/run/coopd.sock", "tcp 127.0.0.1:7070"
  std::string target;  // gRPC target: "unix:/path", "127.0.0.1:7070"
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  bool any_answer = false;  // TCP: any status from the server counts (see above)
};

// A client of coopd's own TLS port (without client certificates): the server's certificate is
// not verified (it is coopd's own), nor its name.
std::shared_ptr<grpc::ChannelCredentials> SelfProbeTlsCredentials();

class SelfProbe {
 public:
  SelfProbe(std::vector<ProbeTarget> targets, std::chrono::milliseconds interval,
            std::chrono::milliseconds deadline, int max_failures,
            std::function<void(const std::string& why)> on_dead);
  ~SelfProbe();  // Stop()
  // Starts the thread (the first round after `interval`).
  void Start();
  // Stops the thread. Idempotent.
  void Stop();

  // One call to `t` on a new connection: empty when it answered, else why not.
  static std::string ProbeOnce(const ProbeTarget& t, std::chrono::milliseconds deadline);

 private:
  void Run();

  std::vector<ProbeTarget> targets_;
  const std::chrono::milliseconds interval_, deadline_;
  const int max_failures_;
  const std::function<void(const std::string&)> on_dead_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace coopd
