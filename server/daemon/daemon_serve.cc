// daemon_serve.cc: RunDaemon while it serves and as it stops: the self-probe, the pre-warm,
// --idle-exit, the wait for SIGINT/SIGTERM, and the drain of the requests in flight.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "server/catalog/spec.h"
#include "server/daemon/daemon_internal.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// Self-probe rounds that must fail in a row before coopd exits (server.self_probe_s).
constexpr int kSelfProbeFailures = 3;

}  // namespace

void ProbeFailure::Set(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  why_ = why;
}

absl::Status ProbeFailure::ExitStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!why_.empty()) {
    return absl::UnavailableError(StrCat("self-probe: a listener stopped answering (", why_,
                                         "); exited so that the supervisor restarts coopd"));
  }
  return absl::OkStatus();
}

// A listener that stopped accepting makes coopd exit (status 1, "self-probe: ...") so that its
// supervisor restarts it.
std::unique_ptr<SelfProbe> StartSelfProbe(const DaemonConfig& config, const DaemonSocket& socket,
                                          const RpcEdge& edge, ProbeFailure* failure) {
  const bool tls = UsesTcpTls(config);
  const std::vector<int>& tcp_ports = edge.tcp_ports;
  std::unique_ptr<SelfProbe> self_probe;
  if (config.self_probe.count() > 0) {
    std::vector<ProbeTarget> targets;
    const std::string unix_path = socket.activated ? socket.inherited.path : config.socket_path;
    if (!unix_path.empty()) {
      targets.push_back({StrCat("unix:", unix_path), StrCat("unix:", unix_path),
                         grpc::InsecureChannelCredentials(), false});
    }
    const auto tcp_probe = tls ? SelfProbeTlsCredentials() : grpc::InsecureChannelCredentials();
    // A port that requires client certificates is not probed: coopd's own certificate need not
    // be one the client CA signed, and a failed handshake looks like a dead listener.
    const bool probe_tcp = !tls || config.tls_client_ca.empty();
    if (!probe_tcp && !config.listen.empty()) {
      spdlog::info("self-probe: TCP listeners not probed (they require client certificates)");
    }
    for (size_t i = 0; probe_tcp && i < config.listen.size(); ++i) {
      // A wildcard address is probed on loopback.
      std::string host = ParseHostPort(config.listen[i]).value_or(HostPort{}).host;
      if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
      if (host == "[::]") host = "[::1]";
      const std::string target = StrCat(host, ":", tcp_ports[i]);
      targets.push_back({StrCat("tcp ", target), target, tcp_probe, true});
    }
    self_probe = std::make_unique<SelfProbe>(
        std::move(targets), config.self_probe, std::chrono::seconds(5), kSelfProbeFailures,
        [failure](const std::string& why) {
          failure->Set(why);
          spdlog::error(
              "self-probe: a listener has not answered {} times in a row ({}); exiting so that "
              "the supervisor restarts coopd",
              kSelfProbeFailures, why);
          kill(getpid(), SIGTERM);
        });
    self_probe->Start();
    spdlog::info("self-probe: every {:.3g} s (server.self_probe_s){}",
                 config.self_probe.count() / 1000.0,
                 std::getenv("WATCHDOG_USEC") != nullptr ? ", notifying systemd's watchdog" : "");
  }
  return self_probe;
}

void StartPrewarm(const DaemonConfig& config, std::vector<std::string> history, Service* service) {
  std::vector<std::string> prewarm = config.prewarm_archs;
  if (config.prewarm_from_history && config.pch) {
    prewarm = std::move(history);
    if (!prewarm.empty()) {
      spdlog::info("pre-warming {} (the archs this cache compiled for last; --prewarm none: off)",
                   StrJoin(prewarm, ", "));
    }
  }
  if (!prewarm.empty()) {
    for (const auto& arch : prewarm) {
      if (absl::Status ok = CheckArch("--prewarm", arch, service->toolchain().Target()); !ok.ok()) {
        spdlog::warn("{}; skipping it", std::string(ok.message()));
        continue;
      }
      service->Prewarm({arch});
    }
  }
  // The probe of the CCCLs, for the first arch pre-warmed, else sm_90 where NVRTC has it.
  std::vector<size_t> probe;
  const auto& toolchains = service->toolchains();
  for (size_t i = 0; i < toolchains.size() && config.probe_cccl != "off"; ++i) {
    const std::string& origin = toolchains[i].cccl_origin;
    if (config.probe_cccl == "all" || (origin != "CUDA toolkit" && origin != "--cccl-include")) {
      probe.push_back(i);
    }
  }
  if (probe.empty()) return;
  const std::vector<std::string> archs = ArchNames(service->toolchain().supported_archs);
  std::string arch =
      std::find(archs.begin(), archs.end(), "sm_90") != archs.end() ? "sm_90" : archs.back();
  for (const auto& a : prewarm) {
    if (std::find(archs.begin(), archs.end(), a) != archs.end()) {
      arch = a;
      break;
    }
  }
  service->ProbeCccls(probe, arch);
}

void IdleWatch::Start(const DaemonConfig& config, WorkerPool* pool,
                      const CoopService* grpc_service) {
  if (config.idle_exit.count() > 0) {
    spdlog::info("idle exit: after {:.3g} s without calls or compiles (server.idle_exit_s)",
                 config.idle_exit.count() / 1000.0);
    thread_ = std::thread([this, idle_exit = config.idle_exit, pool, grpc_service] {
      const auto tick = std::clamp<std::chrono::milliseconds>(
          idle_exit / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
      auto last_busy = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, tick, [&] { return stop_; })) {
        const auto now = std::chrono::steady_clock::now();
        const PoolStats workers = pool->Stats();
        if (grpc_service->in_flight() > 0 || workers.busy > 0 || workers.queue_depth > 0) {
          last_busy = now;
          continue;
        }
        if (now - std::max(last_busy, grpc_service->last_activity()) < idle_exit) continue;
        spdlog::info("idle for {:.3g} s (server.idle_exit_s): stopping",
                     idle_exit.count() / 1000.0);
        kill(getpid(), SIGTERM);
        return;
      }
    });
  }
}

void IdleWatch::Stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
}

int ServeUntilStopped(const sigset_t& signals, IdleWatch* idle_watch) {
  int sig = 0;
  sigwait(&signals, &sig);
  idle_watch->Stop();
  return sig;
}

void StopServing(const DaemonConfig& config, int sig, SelfProbe* self_probe, RpcEdge* edge,
                 CoopService* grpc_service, Service* service, WorkerPool* pool) {
  spdlog::info("received {}; finishing {} request(s) in flight", strsignal(sig),
               grpc_service->in_flight());
  // Refuse new work (UNAVAILABLE: clients retry against the next daemon), stop eviction and
  // interrupt maintenance (each works in transactions: rolled back, or resumed at the next
  // start), give the requests already accepted the shutdown grace (5 s by default), then fail what
  // is left with UNAVAILABLE by killing its compile workers. SIGTERM thus stops coopd within
  // seconds whatever it was doing. gRPC's Shutdown(deadline) alone would also wait for idle
  // connections to go away, which a connected but quiet client never does.
  NotifyStopping();
  if (self_probe) self_probe->Stop();
  // Health checks say NOT_SERVING from now on, for load balancers and probes.
  edge->server->GetHealthCheckService()->Shutdown();
  if (edge->inherited_listener) edge->inherited_listener->Stop();
  grpc_service->BeginDrain();
  service->BeginShutdown();
  if (!grpc_service->WaitIdle(std::chrono::steady_clock::now() + config.shutdown_grace)) {
    spdlog::warn("{} request(s) still in flight after {:.1f} s; cancelling their compiles",
                 grpc_service->in_flight(), config.shutdown_grace.count() / 1000.0);
    pool->CancelAll();
    if (!grpc_service->WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(3))) {
      spdlog::warn("{} request(s) still in flight; closing anyway", grpc_service->in_flight());
    }
  }
  edge->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  edge->server->Wait();
}

}  // namespace coopd
