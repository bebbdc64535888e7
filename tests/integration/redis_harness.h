// redis_harness.h: real redis-server processes on loopback for the farm-tier tests.
//
// RedisServer runs /usr/bin/redis-server (no persistence) on a free 127.0.0.1 port, in a
// directory of the caller's; RedisCluster makes three of them a 3-master Cluster with
// `redis-cli --cluster create`. Start-up waits are liveness deadlines (a failing test, never a
// timing assertion). Processes are killed on destruction.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace coopd_test {

// A free TCP port on 127.0.0.1 (and, for a cluster node, its bus port + 10000 free too).
int FreeLoopbackPort(bool with_bus_port = false);

class RedisServer {
 public:
  // `port` 0: a free one. `cluster`: cluster-enabled (nodes file in `dir`).
  RedisServer(std::string dir, bool cluster = false, int port = 0,
              std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts it (again, on the same port, after Stop) and waits for PONG; false with a reason.
  bool Start(std::string* error);
  void Stop();    // SIGTERM, then wait
  void Pause();   // SIGSTOP: connections hang (a slow Redis)
  void Resume();  // SIGCONT
  int port() const { return port_; }
  std::string Address() const;  // "127.0.0.1:PORT"
  // redis-cli -p PORT ARGS...: stdout without trailing newlines ("" when it fails).
  std::string Cli(const std::vector<std::string>& args) const;
  uint64_t DbSize() const;
  std::string Log() const;

 private:
  std::string dir_;
  bool cluster_;
  int port_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
};

// The options a test's URL gets: the ones it names, plus generous command and connect
// timeouts (3 s, or a third of a lease_ttl_ms it names, as the tier requires) unless it names
// its own. The tier's 200 ms defaults are for a farm; on a loaded 2-core CI machine a
// resharding Redis can take longer, and a test that is not about timeouts must not count those
// as errors.
inline std::string TestUrlOptions(const std::string& options) {
  auto value_of = [&](const std::string& key) -> std::string {
    size_t at = options.rfind(key + "=", 0) == 0 ? 0 : options.find("&" + key + "=");
    if (at == std::string::npos) return "";
    at = options.find('=', at) + 1;
    return options.substr(at, options.find('&', at) - at);
  };
  long timeout_ms = 3000;
  if (std::string lease = value_of("lease_ttl_ms"); !lease.empty()) {
    timeout_ms = std::min(timeout_ms, std::stol(lease) / 3);
  }
  std::string out = options;
  for (const char* key : {"timeout_ms", "connect_timeout_ms"}) {
    if (value_of(key).empty()) {
      out += (out.empty() ? "" : "&") + std::string(key) + "=" + std::to_string(timeout_ms);
    }
  }
  return "?" + out;
}

class RedisCluster {
 public:
  explicit RedisCluster(const std::string& dir);
  // Starts three nodes, creates the cluster, waits for cluster_state:ok on each.
  bool Start(std::string* error);
  std::vector<std::unique_ptr<RedisServer>>& nodes() { return nodes_; }
  // "redis-cluster://127.0.0.1:P1,127.0.0.1:P2?prefix=PREFIX&OPTIONS"
  std::string Url(const std::string& prefix, const std::string& options = "") const;
  std::string NodeId(size_t i) const;  // CLUSTER MYID

 private:
  std::string dir_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// `redis-cli -p PORT monitor` while alive; Stop() returns what it printed.
class RedisMonitor {
 public:
  explicit RedisMonitor(int port);
  ~RedisMonitor();
  bool started() const { return started_; }
  std::string Stop();

 private:
  pid_t pid_ = -1;
  std::string path_;
  bool started_ = false;
};

// A TCP proxy on a free 127.0.0.1 port that forwards every connection to 127.0.0.1:`target`,
// until Partition(): from then on it accepts connections and reads what both sides send, but
// forwards nothing (as a network partition drops packets), so commands time out instead of
// failing fast. Heal() forwards again on the same connections. One thread; stopped on
// destruction. port() is 0 when it could not listen.
class TcpProxy {
 public:
  explicit TcpProxy(int target);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;
  int port() const { return port_; }
  void Partition() { partitioned_ = true; }
  void Heal() { partitioned_ = false; }

 private:
  void Loop();
  int target_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> partitioned_{false}, stop_{false};
  std::thread thread_;
};

}  // namespace coopd_test
