// hit_bench: what a cache hit costs against the transport floor, measured side by side in one
// run (issue 17 item 1; docs/benchmarks.md).
//
//   floor   echo_server (bench/echo_server.cc): the same gRPC callback API on a Unix socket,
//           answering with a real coopd reply's bytes (captured here), read through the raw
//           generated stub (protobuf parse included);
//   raw     coopd through the raw generated stub (the server's cost, no client library);
//   rawmeta the same with the "coopd-client" metadata coop::Client sends (coopd's per-client
//           limits then account for the call); only with --only;
//   client  coopd through coop::Client with its artifact cache off: every hit carries the
//           whole artifact, the same bytes as the floor;
//   digest  coopd through coop::Client with its artifact cache on (the default): hits are
//           digest-only replies and the client fills the bytes back in.
//
// Latency: p50, p99 and p99.9 with 1, 8 and 64 concurrent client threads, the targets
// interleaved round by round (the order rotating), with the client's page faults, the client's
// CPU (getrusage, the whole process) and the server's (/proc/PID/stat, 10 ms ticks summed over
// the rounds) per request. Throughput at
// saturation (64 threads, fixed time): requests per second with full and with digest-only replies
// against the floor, with the client's CPU (getrusage) and the server's (/proc/PID/stat) per
// request, separately. Every coopd reply is checked against the reference artifact; a wrong one
// fails the run.
//
// usage: hit_bench [--quick] [--json FILE] [--requests N] [--rounds N] [--seconds S] [--coopd PATH]
//   --coopd: measure that coopd binary instead of the build tree's (an older build, for a
//   before/after comparison; without digest-only replies the digest target is left out).
//   --quick: a few hundred requests and 0.2 s per cell (checks the harness in seconds; CI runs
//   it and does not judge the numbers).
//   --only LIST: measure these targets alone (comma-separated; the floor is always measured, for
//   the ratios); --threads LIST: these latency concurrencies (default 1,8,64); --no-throughput:
//   skip the saturation cells. For profiling one path (perf record -p the coopd it prints).
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "coop/v1/coop.grpc.pb.h"
#include "integration/coopd_process.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace v1 = coop::v1;

// The servers this run started (coopd, echo_server): Die stops them, since exit() runs no
// destructor of main's locals and they would outlive the run.
std::vector<pid_t> children;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "hit_bench: %s\n", what.c_str());
  for (pid_t pid : children) {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
  std::exit(1);
}

struct Options {
  bool quick = false;
  std::string json;
  // Per target, concurrency and round: 9,000 samples per cell, in six interleaved rounds (the
  // machine's load drifts; more, shorter rounds spread the drift over every target alike).
  int requests = 1500;
  int rounds = 6;
  double seconds = 2.0;           // per throughput cell
  std::string coopd;              // another coopd binary to measure (a before/after comparison)
  std::vector<std::string> only;  // targets to measure (empty: all)
  std::vector<int> threads = {1, 8, 64};  // latency concurrencies
  bool throughput = true;
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") {
      o.quick = true;
      o.requests = 128;
      o.rounds = 1;
      o.seconds = 0.2;
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--requests") {
      o.requests = std::stoi(value());
    } else if (a == "--rounds") {
      o.rounds = std::stoi(value());
    } else if (a == "--seconds") {
      o.seconds = std::stod(value());
    } else if (a == "--coopd") {
      o.coopd = value();
    } else if (a == "--only") {
      o.only = SplitList(value());
      for (const auto& t : o.only) {
        if (t != "floor" && t != "raw" && t != "rawmeta" && t != "client" && t != "digest") {
          Die("--only: unknown target \"" + t +
              "\" (allowed: floor, raw, rawmeta, client, digest)");
        }
      }
    } else if (a == "--threads") {
      o.threads.clear();
      for (const auto& t : SplitList(value())) {
        const int n = std::atoi(t.c_str());
        if (n < 1 || n > 1024) Die("--threads: \"" + t + "\" is not a count from 1 to 1024");
        o.threads.push_back(n);
      }
      if (o.threads.empty()) Die("--threads needs at least one count");
    } else if (a == "--no-throughput") {
      o.throughput = false;
    } else {
      Die("unknown option \"" + a +
          "\" (allowed: --quick, --json FILE, --requests N, --rounds N, --seconds S, --coopd "
          "PATH, --only LIST, --threads LIST, --no-throughput)");
    }
  }
  if (o.requests < 64 || o.rounds < 1 || o.seconds <= 0) {
    Die("--requests must be at least 64, --rounds at least 1, --seconds above 0");
  }
  return o;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) Die("cannot read /proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

// A Unix-socket relay that counts the bytes each way: what a call moves on the socket, HTTP/2
// framing, headers and trailers included (the serialized message alone understates it).
class CountingRelay {
 public:
  CountingRelay(std::string listen_path, std::string target_path)
      : path_(std::move(listen_path)), target_(std::move(target_path)) {
    listener_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listener_, 16) != 0) {
      Die("relay: cannot listen on " + path_);
    }
    acceptor_ = std::thread([this] {
      for (;;) {
        const int client = accept(listener_, nullptr, nullptr);
        if (client < 0) return;  // closed
        const int server = socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un to{};
        to.sun_family = AF_UNIX;
        std::snprintf(to.sun_path, sizeof(to.sun_path), "%s", target_.c_str());
        if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
          close(client);
          continue;
        }
        std::lock_guard<std::mutex> lock(mu_);
        fds_.push_back(client);
        fds_.push_back(server);
        pumps_.emplace_back([this, client, server] { Pump(client, server, &up_); });
        pumps_.emplace_back([this, client, server] { Pump(server, client, &down_); });
      }
    });
  }
  ~CountingRelay() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    acceptor_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : pumps_) t.join();
    for (int fd : fds_) close(fd);
    unlink(path_.c_str());
  }
  uint64_t up() const { return up_; }      // client to server
  uint64_t down() const { return down_; }  // server to client

 private:
  static void Pump(int from, int to, std::atomic<uint64_t>* count) {
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = read(from, buf, sizeof(buf));
      if (n <= 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
        if (w <= 0) return;
        done += w;
      }
      *count += static_cast<uint64_t>(n);
    }
    shutdown(to, SHUT_WR);
  }
  const std::string path_, target_;
  int listener_ = -1;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;            // guarded by mu_
  std::vector<std::thread> pumps_;  // guarded by mu_
  std::atomic<uint64_t> up_{0}, down_{0};
};

long MinorFaults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Whether `got` is the reference LTO-IR: its size on every call, every byte on one call in 64
// (a full comparison per call would add the same few microseconds to every target).
// `got` is a view: a coop::Bytes compared as a std::string would be copied first, charging the
// client target a copy the others do not pay.
bool Same(std::string_view got, std::string_view reference) {
  thread_local unsigned calls = 0;
  if (got.size() != reference.size()) return false;
  return ++calls % 64 != 1 || got == reference;
}

// One way of asking for the hit; returns false when the reply is wrong. Thread-safe.
using Target = std::function<bool()>;

struct EchoServer {
  pid_t pid = -1;
  ~EchoServer() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

// One spec, one reference reply.
v1::SpecializeRequest HitRequest() {
  v1::SpecializeRequest req;
  auto* spec = req.mutable_spec();
  spec->set_family("block_reduce");
  spec->set_dtype("float32");
  spec->mutable_block()->set_x(256);
  spec->set_arch("sm_90");
  return req;
}

coop::Spec HitSpec() {
  coop::Spec s;
  s.family = "block_reduce";
  s.dtype = "float32";
  s.block = {256, 1, 1};
  s.arch = "sm_90";
  return s;
}

grpc::Status RawSpecialize(v1::Coop::Stub& stub, const v1::SpecializeRequest& req,
                           v1::SpecializeResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  return stub.Specialize(&ctx, req, resp);
}

std::shared_ptr<grpc::Channel> Channel(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = Parse(argc, argv);
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size());
  if (n <= 0) Die("cannot read /proc/self/exe");
  self.resize(static_cast<size_t>(n));
  const std::string echo_binary = self.substr(0, self.rfind('/')) + "/echo_server";

  coopd_test::TempDir dir;
  coopd_test::CoopdProcess coopd(dir.path() + "/coopd.sock", dir.path() + "/cache",
                                 {"--workers", "1"});
  if (!opt.coopd.empty()) {
    // CoopdProcess runs the build tree's coopd under `wrapper`: swap the binary there.
    coopd.wrapper = {"/bin/sh", "-c", "shift; exec \"$0\" \"$@\"", opt.coopd};
  }
  std::string error;
  const bool started = coopd.Start(&error);
  if (started) children.push_back(coopd.pid());
  if (!started || !coopd.WaitReady(120s, &error)) Die("coopd: " + error);

  // The reference: compiled once, then a hit's reply as it travels, and its digest-only form.
  auto raw_coopd = v1::Coop::NewStub(Channel(coopd.socket_path()));
  v1::SpecializeResponse reference;
  if (auto s = RawSpecialize(*raw_coopd, HitRequest(), &reference); !s.ok()) {
    Die("coopd Specialize: " + s.error_message());
  }
  if (auto s = RawSpecialize(*raw_coopd, HitRequest(), &reference); !s.ok()) {
    Die("coopd Specialize: " + s.error_message());
  }
  if (reference.artifact().origin() != v1::ORIGIN_MEMORY) Die("the reference is not a memory hit");
  const std::string ltoir = reference.artifact().ltoir();
  const std::string payload = reference.SerializeAsString();
  v1::SpecializeRequest held = HitRequest();
  auto* have = held.add_have();
  have->set_format(v1::FORMAT_LTOIR);
  have->set_key(reference.artifact().key());
  have->set_digest(reference.artifact().digest());
  have->set_holds_metadata(true);  // as coop::Client sends it
  v1::SpecializeResponse slim;
  if (auto s = RawSpecialize(*raw_coopd, held, &slim); !s.ok()) {
    Die("coopd Specialize with have: " + s.error_message());
  }
  const bool digest_only = slim.artifact().bytes_omitted();
  if (!digest_only && opt.coopd.empty()) Die("coopd did not answer a digest-only reply");
  const size_t full_bytes = payload.size(), digest_bytes = slim.ByteSizeLong();
  {
    std::ofstream out(dir.path() + "/payload.bin", std::ios::binary);
    out << payload;
  }

  EchoServer echo;
  const std::string echo_socket = dir.path() + "/echo.sock";
  {
    std::vector<std::string> args = {echo_binary, "--socket", echo_socket, "--payload",
                                     dir.path() + "/payload.bin"};
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    if (posix_spawn(&echo.pid, echo_binary.c_str(), nullptr, nullptr, cargs.data(), environ) != 0) {
      Die("cannot start " + echo_binary);
    }
    children.push_back(echo.pid);
  }
  auto echo_channel = Channel(echo_socket);
  auto raw_echo = v1::Coop::NewStub(echo_channel);
  {
    const auto deadline = Clock::now() + 30s;
    v1::SpecializeResponse r;
    while (!RawSpecialize(*raw_echo, HitRequest(), &r).ok()) {
      if (Clock::now() > deadline) Die("echo_server did not answer on " + echo_socket);
      std::this_thread::sleep_for(20ms);
    }
  }

  coop::ClientOptions full_options;
  full_options.socket_path = coopd.socket_path();
  full_options.autostart = false;
  full_options.artifact_cache_entries = 0;
  coop::Client full_client(full_options);
  coop::ClientOptions digest_options = full_options;
  digest_options.artifact_cache_entries = 256;
  coop::Client digest_client(digest_options);
  const coop::Spec spec = HitSpec();
  const v1::SpecializeRequest request = HitRequest();

  std::map<std::string, Target> targets = {
      {"floor",
       [&] {
         v1::SpecializeResponse r;
         return RawSpecialize(*raw_echo, request, &r).ok() && Same(r.artifact().ltoir(), ltoir);
       }},
      {"raw",
       [&] {
         v1::SpecializeResponse r;
         return RawSpecialize(*raw_coopd, request, &r).ok() && Same(r.artifact().ltoir(), ltoir);
       }},
      {"rawmeta",
       [&] {
         v1::SpecializeResponse r;
         grpc::ClientContext ctx;
         ctx.set_deadline(std::chrono::system_clock::now() + 60s);
         ctx.AddMetadata("coopd-client", "/1234");
         return raw_coopd->Specialize(&ctx, request, &r).ok() && Same(r.artifact().ltoir(), ltoir);
       }},
      {"client",
       [&] {
         auto a = full_client.Specialize(spec);
         return a.ok() && a->origin == coop::Origin::kMemory && Same(a->ltoir, ltoir);
       }},
      {"digest",
       [&] {
         auto a = digest_client.Specialize(spec);
         return a.ok() && a->origin == coop::Origin::kMemory && Same(a->ltoir, ltoir);
       }},
  };
  std::vector<std::string> order = {"floor", "raw", "client", "digest"};
  if (!opt.only.empty()) order.insert(order.begin() + 2, "rawmeta");  // a diagnostic: on request
  std::vector<std::string> saturation = {"floor", "client", "digest"};
  if (!digest_only) {  // an older coopd: no digest-only replies to measure
    order.pop_back();
    saturation.pop_back();
  }
  if (!opt.only.empty()) {
    auto keep = [&](std::vector<std::string>* names) {
      names->erase(std::remove_if(names->begin(), names->end(),
                                  [&](const std::string& n) {
                                    return n != "floor" &&
                                           std::find(opt.only.begin(), opt.only.end(), n) ==
                                               opt.only.end();
                                  }),
                   names->end());
    };
    keep(&order);
    keep(&saturation);
  }
  std::printf("coopd pid %d, echo_server pid %d\n", static_cast<int>(coopd.pid()),
              static_cast<int>(echo.pid));
  std::fflush(stdout);
  std::atomic<uint64_t> wrong{0};
  for (const auto& name : order) {  // warm every path (connections, the client's cache)
    for (int i = 0; i < 20; ++i) wrong += targets[name]() ? 0 : 1;
  }

  // Runs `requests` calls of `target` over `threads` threads; returns each call's latency (µs).
  auto latency_cell = [&](const Target& target, int threads, int requests) {
    std::vector<std::vector<double>> per(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const int mine = requests / threads + (t < requests % threads ? 1 : 0);
        per[t].reserve(mine);
        for (int i = 0; i < mine; ++i) {
          const auto start = Clock::now();
          if (!target()) ++wrong;
          per[t].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        }
      });
    }
    for (auto& th : pool) th.join();
    std::vector<double> all;
    for (auto& v : per) all.insert(all.end(), v.begin(), v.end());
    return all;
  };

  nlohmann::json report;
  report["quick"] = opt.quick;
  report["payload_bytes"] = {{"full", full_bytes}, {"digest_only", digest_bytes}};
  report["artifact"] = {{"spec", "block_reduce float32 256 sm_90"}, {"ltoir_bytes", ltoir.size()}};
  std::printf(
      "hit_bench: block_reduce float32 256 sm_90, LTO-IR %zu bytes; reply %zu bytes full, "
      "%zu bytes digest-only\n",
      ltoir.size(), full_bytes, digest_bytes);
  std::printf("\nlatency (us), %d requests x %d rounds per cell, targets interleaved\n",
              opt.requests, opt.rounds);
  std::printf("%-8s %-7s %9s %9s %9s %10s %11s %11s %11s\n", "threads", "target", "p50", "p99",
              "p99.9", "p50/floor", "faults/req", "client cpu", "server cpu");
  double single_ratio = 0, single_digest_ratio = 0;
  for (int threads : opt.threads) {
    std::map<std::string, std::vector<double>> samples;
    // The client process's page faults per request: the allocator's churn (a buffer trimmed
    // back to the kernel and faulted in again on every call shows here).
    std::map<std::string, double> faults;
    // The server's CPU per request (coopd's, or the echo server's for the floor): what it spends
    // on a hit, beside the latency the client sees.
    std::map<std::string, double> client_cpu, server_cpu;
    for (int round = 0; round < opt.rounds; ++round) {
      for (size_t k = 0; k < order.size(); ++k) {
        const std::string& name = order[(k + round) % order.size()];
        const pid_t server = name == "floor" ? echo.pid : coopd.pid();
        const long before = MinorFaults();
        const double cpu_before = CpuSeconds(server), self_before = SelfCpuSeconds();
        auto v = latency_cell(targets[name], threads, opt.requests);
        faults[name] += static_cast<double>(MinorFaults() - before);
        client_cpu[name] += SelfCpuSeconds() - self_before;
        server_cpu[name] += CpuSeconds(server) - cpu_before;
        samples[name].insert(samples[name].end(), v.begin(), v.end());
      }
    }
    const double floor50 = Percentile(samples["floor"], 0.5);
    for (const auto& name : order) {
      auto& v = samples[name];
      const double p50 = Percentile(v, 0.5), p99 = Percentile(v, 0.99), p999 = Percentile(v, 0.999);
      const double ratio = floor50 > 0 ? p50 / floor50 : 0;
      if (threads == 1 && name == "client") single_ratio = ratio;
      if (threads == 1 && name == "digest") single_digest_ratio = ratio;
      const double faults_per_request = faults[name] / static_cast<double>(v.size());
      const double client_us = 1e6 * client_cpu[name] / static_cast<double>(v.size());
      const double server_us = 1e6 * server_cpu[name] / static_cast<double>(v.size());
      std::printf("%-8d %-7s %9.1f %9.1f %9.1f %9.2fx %11.2f %11.1f %11.1f\n", threads,
                  name.c_str(), p50, p99, p999, ratio, faults_per_request, client_us, server_us);
      report["latency"].push_back({{"threads", threads},
                                   {"target", name},
                                   {"samples", v.size()},
                                   {"p50_us", p50},
                                   {"p99_us", p99},
                                   {"p999_us", p999},
                                   {"p50_vs_floor", ratio},
                                   {"client_faults_per_request", faults_per_request},
                                   {"client_cpu_us_per_request", client_us},
                                   {"server_cpu_us_per_request", server_us}});
    }
  }

  // Bytes on the socket per hit, through a counting relay in front of coopd: full replies and
  // digest-only ones, each a fresh client (its connection set up before counting).
  auto socket_bytes = [&](size_t cache_entries) {
    CountingRelay relay(dir.path() + "/relay.sock", coopd.socket_path());
    coop::ClientOptions o = full_options;
    o.socket_path = dir.path() + "/relay.sock";
    o.artifact_cache_entries = cache_entries;
    coop::Client c(o);
    for (int i = 0; i < 3; ++i) wrong += c.Specialize(spec) ? 0 : 1;  // connect, fill the cache
    const uint64_t up0 = relay.up(), down0 = relay.down();
    const int n = opt.quick ? 20 : 200;
    for (int i = 0; i < n; ++i) {
      auto a = c.Specialize(spec);
      if (!a || !Same(a->ltoir, ltoir)) ++wrong;
    }
    return std::make_pair(static_cast<double>(relay.up() - up0) / n,
                          static_cast<double>(relay.down() - down0) / n);
  };
  const auto [full_up, full_down] = socket_bytes(0);
  const auto [digest_up, digest_down] = socket_bytes(256);
  std::printf(
      "\non the socket, per hit (a counting relay): full reply %.0f bytes (request %.0f), "
      "digest-only reply %.0f bytes (request %.0f)\n",
      full_down, full_up, digest_down, digest_up);
  report["socket_bytes"] = {{"full_reply", full_down},
                            {"full_request", full_up},
                            {"digest_only_reply", digest_down},
                            {"digest_only_request", digest_up}};

  // Throughput at saturation: 64 threads for a fixed time; CPU of each side per request.
  const int kSaturation = 64;
  std::printf("\nthroughput, %d threads, %.1f s x %d rounds per target\n", kSaturation, opt.seconds,
              opt.rounds);
  std::printf("%-7s %10s %8s %16s %16s\n", "target", "req/s", "x floor", "client cpu us/req",
              "server cpu us/req");
  struct Tally {
    double requests = 0, seconds = 0, client_cpu = 0, server_cpu = 0;
  };
  std::map<std::string, Tally> tally;
  for (int round = 0; opt.throughput && round < opt.rounds; ++round) {
    for (size_t k = 0; k < saturation.size(); ++k) {
      const std::string& name = saturation[(k + round) % saturation.size()];
      const pid_t server = name == "floor" ? echo.pid : coopd.pid();
      std::atomic<bool> go{true};
      std::atomic<uint64_t> done{0};
      const double cpu0 = SelfCpuSeconds(), server0 = CpuSeconds(server);
      const auto start = Clock::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < kSaturation; ++t) {
        pool.emplace_back([&] {
          while (go) {
            if (!targets[name]()) ++wrong;
            ++done;
          }
        });
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(opt.seconds));
      go = false;
      for (auto& th : pool) th.join();
      Tally& t = tally[name];
      t.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      t.requests += static_cast<double>(done);
      t.client_cpu += SelfCpuSeconds() - cpu0;
      t.server_cpu += CpuSeconds(server) - server0;
    }
  }
  const double floor_rate = tally["floor"].requests / tally["floor"].seconds;
  for (const auto& name : saturation) {
    if (!opt.throughput) break;
    const Tally& t = tally[name];
    const double rate = t.requests / t.seconds;
    const double client_us = t.client_cpu / t.requests * 1e6;
    const double server_us = t.server_cpu / t.requests * 1e6;
    std::printf("%-7s %10.0f %7.2fx %16.1f %16.1f\n", name.c_str(), rate, rate / floor_rate,
                client_us, server_us);
    report["throughput"].push_back({{"target", name},
                                    {"threads", kSaturation},
                                    {"requests_per_s", rate},
                                    {"vs_floor", rate / floor_rate},
                                    {"client_cpu_us_per_request", client_us},
                                    {"client_cpu_us_per_request", client_us},
                                    {"server_cpu_us_per_request", server_us}});
  }

  std::printf(
      "\nacceptance: 1-thread memory hit through coop::Client (full reply) p50 = %.2fx the "
      "floor (goal <= 1.3x: %s); with digest-only replies %.2fx\n",
      single_ratio, single_ratio <= 1.3 ? "met" : "NOT met", single_digest_ratio);
  std::printf(
      "acceptance: a digest-only hit's reply is %zu bytes as a message, %.0f on the socket "
      "(framing, headers and trailers included; goal < 1024: %s)\n",
      digest_bytes, digest_down, digest_down < 1024 ? "met" : "NOT met");
  report["acceptance"] = {{"single_thread_p50_vs_floor", single_ratio},
                          {"single_thread_digest_p50_vs_floor", single_digest_ratio},
                          {"digest_only_reply_bytes", digest_bytes},
                          {"digest_only_reply_socket_bytes", digest_down}};
  report["wrong_replies"] = wrong.load();
  if (!opt.json.empty()) {
    std::ofstream out(opt.json);
    out << report.dump(2) << "\n";
    if (!out) Die("cannot write --json " + opt.json);
  }
  if (wrong != 0) {
    std::fprintf(stderr, "hit_bench: FAIL: %llu wrong or failed replies\n",
                 static_cast<unsigned long long>(wrong.load()));
    return 1;
  }
  coopd.Stop();
  return 0;
}
