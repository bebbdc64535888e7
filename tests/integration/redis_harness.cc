#include "redis_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "coopd_process.h"

namespace coopd_test {
namespace {

bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int FreeLoopbackPort(bool with_bus_port) {
  static std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 1000; ++i) {
    const int port = 20000 + static_cast<int>(rng() % 30000);
    if (PortFree(port) && (!with_bus_port || PortFree(port + 10000))) return port;
  }
  return 0;
}

RedisServer::RedisServer(std::string dir, bool cluster, int port,
                         std::vector<std::string> extra_args)
    : dir_(std::move(dir)),
      cluster_(cluster),
      port_(port != 0 ? port : FreeLoopbackPort(cluster)),
      extra_args_(std::move(extra_args)) {}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string RedisServer::Address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::string RedisServer::Log() const {
  return ReadFile(dir_ + "/redis-" + std::to_string(port_) + ".log");
}

bool RedisServer::Start(std::string* error) {
  std::vector<std::string> argv = {"/usr/bin/redis-server",
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   "redis-" + std::to_string(port_) + ".log"};
  if (cluster_) {
    argv.insert(argv.end(),
                {"--cluster-enabled", "yes", "--cluster-config-file",
                 "nodes-" + std::to_string(port_) + ".conf", "--cluster-node-timeout", "5000"});
  }
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    if (Cli({"PING"}) == "PONG") return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "redis-server exited at start: " + Log();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  *error = "redis-server did not answer PING within 20 s: " + Log();
  return false;
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void RedisServer::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

std::string RedisServer::Cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "-h", "127.0.0.1", "-p",
                                   std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out, err;
  if (RunCommand(argv, &out, &err) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

uint64_t RedisServer::DbSize() const {
  const std::string n = Cli({"DBSIZE"});
  return n.empty() ? 0 : std::stoull(n);
}

RedisCluster::RedisCluster(const std::string& dir) : dir_(dir) {
  for (int i = 0; i < 3; ++i) nodes_.push_back(std::make_unique<RedisServer>(dir, true));
}

bool RedisCluster::Start(std::string* error) {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "--cluster", "create"};
  for (auto& n : nodes_) {
    if (!n->Start(error)) return false;
    argv.push_back(n->Address());
  }
  argv.insert(argv.end(), {"--cluster-replicas", "0", "--cluster-yes"});
  std::string out, err;
  if (RunCommand(argv, &out, &err) != 0) {
    *error = "redis-cli --cluster create failed: " + out + err;
    return false;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < end) {
    bool ok = true;
    for (auto& n : nodes_) {
      ok = ok && n->Cli({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
    }
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *error = "the cluster did not reach cluster_state:ok within 30 s";
  return false;
}

std::string RedisCluster::Url(const std::string& prefix, const std::string& options) const {
  return "redis-cluster://" + nodes_[0]->Address() + "," + nodes_[1]->Address() +
         "?prefix=" + prefix + "&" + TestUrlOptions(options).substr(1);
}

std::string RedisCluster::NodeId(size_t i) const {
  return nodes_[i]->Cli({"CLUSTER", "MYID"});
}

RedisMonitor::RedisMonitor(int port) {
  char tmpl[] = "/tmp/coopd-monitor-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return;
  path_ = tmpl;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    const std::string p = std::to_string(port);
    execl("/usr/bin/redis-cli", "redis-cli", "-h", "127.0.0.1", "-p", p.c_str(), "monitor",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fd);
  // MONITOR answers OK once it is attached.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end && !started_) {
    started_ = ReadFile(path_).find("OK") != std::string::npos;
    if (!started_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

RedisMonitor::~RedisMonitor() {
  Stop();
  if (!path_.empty()) unlink(path_.c_str());
}

std::string RedisMonitor::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  return path_.empty() ? "" : ReadFile(path_);
}

TcpProxy::TcpProxy(int target) : target_(target) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(listen_fd_, 64) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Loop(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void TcpProxy::Loop() {
  std::map<int, int> peer;  // each side of a forwarded connection -> the other side
  auto drop = [&](int fd) {
    const int other = peer[fd];
    close(fd);
    close(other);
    peer.erase(fd);
    peer.erase(other);
  };
  while (!stop_) {
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
    for (const auto& [fd, other] : peer) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 50) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(target_));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (client >= 0 && upstream >= 0 &&
          connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
        peer[client] = upstream;
        peer[upstream] = client;
      } else {
        if (client >= 0) close(client);
        if (upstream >= 0) close(upstream);
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0 || peer.count(fds[i].fd) == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        drop(fds[i].fd);
        continue;
      }
      if (partitioned_) continue;  // read and dropped: nothing crosses
      const int to = peer[fds[i].fd];
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
        if (w <= 0) break;
        done += w;
      }
    }
  }
  while (!peer.empty()) drop(peer.begin()->first);
}

}  // namespace coopd_test
