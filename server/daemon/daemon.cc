// daemon.cc: RunDaemon, coopd's life from start-up to exit, as a sequence of steps
// (daemon_internal.h says which file holds each). The steps run in this order, which is the
// order of the start-up log lines; the objects they leave are destroyed in the reverse order.
#include "server/daemon/daemon.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/daemon/daemon_internal.h"
#include "server/daemon/service_stats.h"
#include "server/util/strings.h"

namespace coopd {

absl::Status RunDaemon(const DaemonConfig& config) {
  // The process, then the socket (or systemd's), before any thread starts.
  SetUpLogging(config);
  RaiseDescriptorLimit();
  const sigset_t signals = BlockStopSignals();
  DaemonSocket socket;
  if (absl::Status s = PrepareSocket(config, &socket); !s.ok()) return s;

  // Access control: tokens and TLS are read now, so a bad file stops coopd before it serves.
  auto tokens = LoadTokens(config);
  if (!tokens.ok()) return tokens.status();
  const AccessControl access(std::move(*tokens), config.tokens_unix);
  auto tcp_credentials = TcpCredentials(config, access);
  if (!tcp_credentials.ok()) return tcp_credentials.status();

  // The engine: the toolchain, the private directories, the cache tiers and the workers.
  ActivateTuningTables(config);
  auto toolchains = ProbeDaemonToolchains(config);
  if (!toolchains.ok()) return toolchains.status();
  CompileDirs dirs;
  if (absl::Status s = MakeCompileDirs(toolchains->front(), &dirs); !s.ok()) return s;
  CacheTiers tiers;
  if (absl::Status s = OpenCacheTiers(config, &tiers); !s.ok()) return s;
  auto pool_options = WorkerPoolSettings(config, *toolchains, dirs);
  if (!pool_options.ok()) return pool_options.status();
  WorkerPool pool(*pool_options);
  if (absl::Status s = StartWorkers(config, &pool); !s.ok()) return s;

  // The service, and the gRPC service in front of it.
  std::vector<std::string> history;
  const ServiceOptions options = ServiceSettings(config, tiers, dirs, &history);
  Service service(std::move(*toolchains), std::move(tiers.cache), tiers.disk_tier, &pool, options);
  Executor executor(config.executor_threads);
  Executor maintenance(2);  // purge, verify, vacuum: never on the request threads
  CoopService grpc_service(&service, &executor, &maintenance, config.rpc_limits, &access);

  // The rpc edge and the metrics endpoint.
  RpcEdge edge;
  if (absl::Status s = StartRpcEdge(config, socket, access, *tcp_credentials, &grpc_service, &edge);
      !s.ok()) {
    return s;
  }
  ServiceStats stats_reader(service, grpc_service);  // what /metrics reads
  auto metrics = StartMetrics(config, stats_reader);
  if (!metrics.ok()) return metrics.status();
  LogLimits(config);
  ProbeFailure probe_failure;
  std::unique_ptr<SelfProbe> self_probe = StartSelfProbe(config, socket, edge, &probe_failure);
  spdlog::info("ready: listening on {} (cache {})", socket.listen_name, tiers.cache_path);
  NotifyReady(StrCat("serving on ", socket.listen_name));
  StartPrewarm(config, std::move(history), &service);

  // Serve until SIGINT or SIGTERM (sent by `coopctl stop`, the self-probe and --idle-exit too).
  IdleWatch idle_watch;
  idle_watch.Start(config, &pool, &grpc_service);
  const int sig = ServeUntilStopped(signals, &idle_watch);

  // Shut down: drain, then stop what serves, then what compiles.
  StopServing(config, sig, self_probe.get(), &edge, &grpc_service, &service, &pool);
  metrics->reset();
  executor.Drain();
  maintenance.Drain();
  pool.Shutdown();
  if (!socket.activated) unlink(config.socket_path.c_str());
  spdlog::info("stopped");
  return probe_failure.ExitStatus();
}

}  // namespace coopd
