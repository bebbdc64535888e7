// Unauthenticated and abusive network peers (issue 27, findings 10 and 11; docs/security.md,
// "Network peers") against a real coopd on a TLS port: large request bodies without a token are
// refused before they are received, bodies to the services that stay open (gRPC's health
// service) are bounded by the memory quota, the soft descriptor limit is raised to the hard one,
// a connection that never finishes its handshake is closed, and a listener wedged by running out
// of descriptors makes coopd exit so that a supervisor (here the test, as systemd's
// Restart=on-failure) restarts it. The certificate and token are made at test time with the
// openssl CLI.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kMiB = size_t{1} << 20;

// A self-signed certificate for localhost and 127.0.0.1 and its key (0600), and a tokens file
// with one admin token (its value in `token`, a client's token file in `token_file`).
struct TlsAndToken {
  TempDir dir;
  std::string cert, key, tokens_file, token, token_file;

  void Make() {
    const std::string d = dir.path();
    cert = d + "/server.pem";
    key = d + "/server.key";
    std::string out, err;
    ASSERT_EQ(RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                          "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                          "-days", "2", "-subj", "/CN=localhost", "-addext",
                          "subjectAltName=DNS:localhost,IP:127.0.0.1"},
                         &out, &err),
              0)
        << err;
    ASSERT_EQ(chmod(key.c_str(), 0600), 0);
    ASSERT_EQ(RunCommand({"/usr/bin/openssl", "rand", "-hex", "24"}, &out, &err), 0) << err;
    token = out.substr(0, 48);
    tokens_file = d + "/tokens";
    std::ofstream(tokens_file) << "admin ops " << token << "\n";
    ASSERT_EQ(chmod(tokens_file.c_str(), 0600), 0);
    token_file = d + "/ops.token";
    std::ofstream(token_file) << token << "\n";
    ASSERT_EQ(chmod(token_file.c_str(), 0600), 0);
  }
};

// A loopback port that was free a moment ago (a restarted coopd listens on the same one).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// A field of /proc/PID/status in KiB ("VmHWM", "VmRSS"), or -1.
long StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// Resets the process's peak resident size (VmHWM) to its current one; false if the kernel
// refuses (then VmHWM is the peak since start).
bool ResetPeak(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// The soft and hard RLIMIT_NOFILE of `pid` ("Max open files" in /proc/PID/limits).
std::pair<long, long> OpenFilesLimit(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) == 0) {
      std::istringstream f(line.substr(14));
      long soft = -1, hard = -1;
      f >> soft >> hard;
      return {soft, hard};
    }
  }
  return {-1, -1};
}

std::shared_ptr<grpc::Channel> TlsChannel(const TlsAndToken& pki, int port) {
  std::ifstream in(pki.cert);
  std::stringstream pem;
  pem << in.rdbuf();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pem.str();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
  return grpc::CreateCustomChannel("localhost:" + std::to_string(port),
                                   grpc::SslCredentials(options), args);
}

coop::Client TcpClient(const TlsAndToken& pki, int port) {
  coop::ClientOptions o;
  o.target = "localhost:" + std::to_string(port);
  o.tls_ca_file = pki.cert;
  o.token_file = pki.token_file;
  o.timeout = 10s;
  o.autostart = false;
  return coop::Client(o);
}

std::vector<std::string> TlsArgs(const TlsAndToken& pki, int port) {
  return {"--listen",      "127.0.0.1:" + std::to_string(port),
          "--tls-cert",    pki.cert,
          "--tls-key",     pki.key,
          "--tokens-file", pki.tokens_file,
          "--workers",     "1",
          "--no-pch"};
}

void StartDaemon(CoopdProcess* d) {
  std::string error;
  ASSERT_TRUE(d->Start(&error) && d->WaitReady(120s, &error)) << error;
}

// Sends two `mib` MiB bodies to `method` at once without a token; their statuses.
std::vector<grpc::Status> TwoLargeBodies(const TlsAndToken& pki, int port,
                                         const std::string& method, size_t mib) {
  const std::string body(mib * kMiB, '\x01');
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 2; ++i) {
    calls.push_back(std::async(std::launch::async,
                               [&] { return RawCall(TlsChannel(pki, port), method, body); }));
  }
  std::vector<grpc::Status> out;
  for (auto& c : calls) out.push_back(c.get());
  return out;
}

TEST(NetworkAbuse, UnauthenticatedLargeBodiesAreRefusedBeforeCoopdReceivesThem) {
  TlsAndToken pki;
  ASSERT_NO_FATAL_FAILURE(pki.Make());
  TempDir dir;
  const int port = FreePort();
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache", TlsArgs(pki, port));
  ASSERT_NO_FATAL_FAILURE(StartDaemon(&d));
  const bool reset = ResetPeak(d.pid());
  const long before = StatusKb(d.pid(), reset ? "VmRSS" : "VmHWM");
  const auto statuses = TwoLargeBodies(pki, port, "/coop.v1.Coop/Specialize", 256);
  const long peak = StatusKb(d.pid(), "VmHWM");
  for (const auto& s : statuses) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
    EXPECT_NE(s.error_message().find("Specialize: this coopd requires a bearer token on TCP"),
              std::string::npos)
        << s.error_message();
  }
  // Two 256 MiB bodies: coopd before this change buffered both (RSS 33 MB -> 1.1 GB).
  EXPECT_LE(peak - before, long{128} * 1024)
      << "peak resident KiB " << peak << ", before " << before << (reset ? " (reset)" : "");
  // An authenticated caller is served.
  auto stats = TcpClient(pki, port).GetStats();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_GE(stats->unauthenticated_calls, 2u);
}

TEST(NetworkAbuse, BodiesToTheOpenHealthServiceAreBoundedByTheMemoryQuota) {
  // gRPC's health service answers without a token (docs/security.md), so its request is
  // received: what bounds a stranger's body there is --grpc-memory-mb.
  TlsAndToken pki;
  ASSERT_NO_FATAL_FAILURE(pki.Make());
  TempDir dir;
  const int port = FreePort();
  auto args = TlsArgs(pki, port);
  args.insert(args.end(), {"--grpc-memory-mb", "64"});
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache", args);
  ASSERT_NO_FATAL_FAILURE(StartDaemon(&d));
  const bool reset = ResetPeak(d.pid());
  const long before = StatusKb(d.pid(), reset ? "VmRSS" : "VmHWM");
  const auto statuses = TwoLargeBodies(pki, port, "/grpc.health.v1.Health/Check", 256);
  const long peak = StatusKb(d.pid(), "VmHWM");
  for (const auto& s : statuses) EXPECT_FALSE(s.ok());
  // Without a quota, coopd held both bodies (measured: +830 MB).
  EXPECT_LE(peak - before, long{128} * 1024)
      << "peak resident KiB " << peak << ", before " << before << (reset ? " (reset)" : "");
  auto health = TcpClient(pki, port).Health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ(*health, coop::HealthStatus::kServing);
}

// Opens `n` TCP connections to `port`, each sending 3 bytes of a TLS record header and nothing
// more, as an idle attacker does; closes them when destroyed.
class IdleConnections {
 public:
  IdleConnections(int port, int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(fd);
        break;
      }
      (void)!write(fd, "\x16\x03\x01", 3);
      fds_.push_back(fd);
    }
  }
  ~IdleConnections() {
    for (int fd : fds_) close(fd);
  }
  size_t size() const { return fds_.size(); }
  int fd(size_t i) const { return fds_[i]; }

 private:
  std::vector<int> fds_;
};

// The test opens 1100 connections itself: it needs a soft limit above that, and to give coopd
// a hard limit of 4096 (root may raise it).
bool RaiseOwnDescriptorLimit() {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
  if (rl.rlim_max < 4096 && geteuid() != 0) return false;
  if (rl.rlim_cur < 4096 && rl.rlim_max > rl.rlim_cur) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 4096);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_cur >= 2048;
}

TEST(NetworkAbuse, TheSoftDescriptorLimitIsRaisedToTheHardLimit) {
  if (!RaiseOwnDescriptorLimit()) GTEST_SKIP() << "this test needs 2048 descriptors of its own";
  TlsAndToken pki;
  ASSERT_NO_FATAL_FAILURE(pki.Make());
  TempDir dir;
  const int port = FreePort();
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache", TlsArgs(pki, port));
  d.wrapper = {"/usr/bin/prlimit", "--nofile=1024:4096", "--"};
  ASSERT_NO_FATAL_FAILURE(StartDaemon(&d));
  EXPECT_EQ(OpenFilesLimit(d.pid()), std::make_pair(4096L, 4096L));
  EXPECT_NE(d.Log().find("descriptors: limit 4096 (soft 1024 raised to the hard limit)"),
            std::string::npos)
      << d.Log();
  {
    // 1100 idle connections held open: with the soft limit of 1024, accept4 failed with EMFILE.
    IdleConnections idle(port, 1100);
    EXPECT_EQ(idle.size(), 1100u);
    auto stats = TcpClient(pki, port).GetStats();
    ASSERT_TRUE(stats) << stats.error().message;
  }
  EXPECT_EQ(d.Log().find("Failed accept4"), std::string::npos) << d.Log();
}

TEST(NetworkAbuse, AConnectionThatNeverFinishesItsHandshakeIsClosed) {
  TlsAndToken pki;
  ASSERT_NO_FATAL_FAILURE(pki.Make());
  TempDir dir;
  const int port = FreePort();
  auto args = TlsArgs(pki, port);
  args.insert(args.end(), {"--handshake-timeout", "1"});
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache", args);
  ASSERT_NO_FATAL_FAILURE(StartDaemon(&d));
  IdleConnections idle(port, 1);
  ASSERT_EQ(idle.size(), 1u);
  // Read until coopd closes it (gRPC's own default is 120 s; the liveness deadline here is 60 s).
  const int fd = idle.fd(0);
  timeval tv{60, 0};
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  char buf[256];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) {
  }
  EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "read: " << std::strerror(errno);
}

TEST(NetworkAbuse, AListenerWedgedByRunningOutOfDescriptorsIsRestartedBySelfProbe) {
  if (!RaiseOwnDescriptorLimit()) GTEST_SKIP() << "this test needs 2048 descriptors of its own";
  TlsAndToken pki;
  ASSERT_NO_FATAL_FAILURE(pki.Make());
  TempDir dir;
  const int port = FreePort();
  auto args = TlsArgs(pki, port);
  args.insert(args.end(), {"--self-probe", "1"});
  // Soft and hard limit 1024, so that raising the soft limit does not help: gRPC 1.51 stops
  // accepting on a listener for good once accept4 fails with EMFILE.
  auto start = [&] {
    auto d =
        std::make_unique<CoopdProcess>(dir.path() + "/coopd.sock", dir.path() + "/cache", args);
    d->wrapper = {"/usr/bin/prlimit", "--nofile=1024:1024", "--"};
    std::string error;
    EXPECT_TRUE(d->Start(&error) && d->WaitReady(120s, &error)) << error;
    // The probe starts just before the "ready" line.
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (d->Log().find("self-probe: every") == std::string::npos &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(50ms);
    }
    return d;
  };
  auto d = start();
  {
    IdleConnections idle(port, 1100);
    EXPECT_EQ(idle.size(), 1100u);
    // Held until gRPC has run out of descriptors accepting them (a liveness deadline).
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (d->Log().find("Failed accept4") == std::string::npos &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_NE(d->Log().find("Failed accept4: Too many open files"), std::string::npos)
        << "the attack did not exhaust coopd's descriptors; " << d->Log();
  }
  // The supervisor: restart coopd whenever it exits, as systemd's Restart=on-failure does, until
  // an authenticated call on the TCP port answers (a liveness deadline of 60 s, not a timing
  // threshold).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool answered = false;
  int restarts = 0;
  std::vector<int> exits;
  while (!answered && std::chrono::steady_clock::now() < deadline) {
    if (const int status = d->WaitExit(1s); status >= 0) {
      exits.push_back(status);
      ++restarts;
      d = start();
    }
    auto stats = TcpClient(pki, port).GetStats();
    answered = static_cast<bool>(stats);
  }
  const std::string logs = d->Log();  // every run's: the log is appended to
  EXPECT_TRUE(answered) << logs;
  for (int status : exits) EXPECT_EQ(status, 1) << "exit status of a coopd the probe stopped";
  // gRPC 1.51's listener never accepts again after EMFILE: the answer came from a restarted
  // coopd, which exited because its self-probe failed.
  EXPECT_GE(restarts, 1) << logs;
  EXPECT_NE(logs.find("self-probe: a listener has not answered 3 times in a row"),
            std::string::npos)
      << logs;
}

}  // namespace
}  // namespace coopd_test
