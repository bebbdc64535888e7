// daemon_internal.h: the steps RunDaemon takes, for the files that define them; private to
// server/daemon/ (the interface is daemon.h). RunDaemon (daemon.cc) calls them in the order
// below, which is the order of coopd's start-up log lines:
//
//   daemon_setup.cc   the process (logging, descriptors, signals), then the socket: its
//                     directory, its lock, or the socket systemd passed
//   daemon_edge.cc    who may call (tokens, TLS credentials); later the gRPC server and its
//                     listeners, the metrics endpoint and the limits' log line
//   daemon_engine.cc  the tuning tables, the toolchain, the private temporary directory and the
//                     clang workspace, the cache tiers, the compile workers and their sandbox
//                     (WorkerSandbox, daemon.h), the service's options
//   daemon_serve.cc   while serving and after: the self-probe, the pre-warm, --idle-exit, the
//                     wait for SIGINT/SIGTERM and the drain that follows
//   daemon_args.cc    ParseDaemonArgs (daemon.h), which runs before all of them
//
// Where a step leaves objects that live until coopd stops, it fills a struct that RunDaemon
// declares: those objects are destroyed in the reverse of the order they were made.
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/cache/cache.h"
#include "server/cache/remote_cache.h"
#include "server/cache/sqlite_cache.h"
#include "server/daemon/daemon.h"
#include "server/engine/bitcode.h"
#include "server/engine/private_dir.h"
#include "server/engine/worker_pool.h"
#include "server/metrics/metrics.h"
#include "server/rpc/access.h"
#include "server/rpc/grpc_service.h"
#include "server/rpc/inherited_listener.h"
#include "server/rpc/self_probe.h"
#include "server/rpc/stop_service.h"
#include "server/service/service.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// ---- daemon_setup.cc: the process and the socket ----------------------------------------------

// The log level and format (every message escaped and bounded), COOPD_LOG_FORMAT for the compile
// workers, and the config file's log line. Before any thread starts.
void SetUpLogging(const DaemonConfig& config);

// Raises the soft limit on open descriptors to the hard one, and logs it.
void RaiseDescriptorLimit();

// Blocks SIGINT and SIGTERM in the calling thread, before any other starts, so that every thread
// inherits the mask and only ServeUntilStopped's sigwait receives them. Returns the two.
sigset_t BlockStopSignals();

// An fd holding an exclusive flock on "<socket>.lock" for the daemon's lifetime. The file is
// opened O_NOFOLLOW and must be a regular file of coopd's user (coop::OpenOwnFile) before it is
// truncated: a link planted there is refused, never followed.
class SocketLock {
 public:
  SocketLock() = default;
  SocketLock(const SocketLock&) = delete;
  SocketLock& operator=(const SocketLock&) = delete;
  ~SocketLock();
  // FAILED_PRECONDITION naming the owner's pid when another coopd holds the lock.
  absl::Status Acquire(const std::string& socket_path);

 private:
  int fd_ = -1;
};

// Where coopd serves its Unix socket.
struct DaemonSocket {
  InheritedSocket inherited;  // what systemd passed (fd -1: nothing)
  bool activated = false;     // socket activation: systemd owns the socket
  std::string listen_name;    // for log lines and errors: "unix:PATH", or the inherited fd's
  SocketLock lock;            // held unless `activated`
};

// Takes the socket systemd passed; otherwise makes the socket's directory (refusing an unsafe
// one, sharing it with --socket-group) and takes the socket's lock.
absl::Status PrepareSocket(const DaemonConfig& config, DaemonSocket* socket);

// ---- daemon_edge.cc: who may call ---------------------------------------------------------------

// Whether the TCP listeners (--listen) serve TLS.
inline bool UsesTcpTls(const DaemonConfig& config) {
  return !config.listen.empty() && !config.tls_cert.empty();
}

// --tokens-file's tokens (none without it), read now so that a bad file stops coopd before it
// serves; logs how many of each role.
absl::StatusOr<std::vector<TokenEntry>> LoadTokens(const DaemonConfig& config);

// The TCP listeners' credentials: TLS with `access`'s token check on the headers, or plaintext.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TcpCredentials(
    const DaemonConfig& config, const AccessControl& access);

// ---- daemon_engine.cc: what compiles and what caches --------------------------------------------

// Makes --tuning-table's tables the active ones and logs every active table.
void ActivateTuningTables(const DaemonConfig& config);

// Makes the cache directory (private when coopd creates it), then probes and logs the toolchain
// (its header manifest lives in the cache directory).
absl::StatusOr<std::vector<Toolchain>> ProbeDaemonToolchains(const DaemonConfig& config);

// Everything coopd writes to temporary storage goes into one private directory of its own
// (engine/private_dir.h): the clang workspace and each worker's directory.
struct CompileDirs {
  std::unique_ptr<DaemonTempDir> temp_dir;
  std::unique_ptr<ClangWorkspace> clang_workspace;  // null: no bitcode backend
};

// Makes the private directory, and the clang workspace in it when `toolchain` has clang (a
// workspace that cannot be made leaves bitcode unavailable, with an error logged).
absl::Status MakeCompileDirs(const Toolchain& toolchain, CompileDirs* dirs);

// The tiers, fastest first: memory, disk (unless it cannot be opened), remote (--remote-url).
struct CacheTiers {
  std::unique_ptr<TieredCache> cache;
  SqliteCache* disk_tier = nullptr;  // null: serving without a disk tier
  std::string cache_path;            // the disk tier's database, or "(none: WHY)"
  RemoteCache* remote_tier = nullptr;
};

// Fails only on a disk cache of a newer schema; any other disk failure is logged and leaves the
// memory tier alone (and the remote tier).
absl::Status OpenCacheTiers(const DaemonConfig& config, CacheTiers* tiers);

// The compile workers' options, their sandbox included (WorkerSandbox, which logs it).
absl::StatusOr<WorkerPoolOptions> WorkerPoolSettings(const DaemonConfig& config,
                                                     const std::vector<Toolchain>& toolchains,
                                                     const CompileDirs& dirs);

// Starts the workers and logs how many.
absl::Status StartWorkers(const DaemonConfig& config, WorkerPool* pool);

// The service's options. With compile.pch, reads the archs this cache last compiled for into
// `history` (the pre-warm's default).
ServiceOptions ServiceSettings(const DaemonConfig& config, const CacheTiers& tiers,
                               const CompileDirs& dirs, std::vector<std::string>* history);

// ---- daemon_edge.cc: the gRPC server, its listeners, the metrics endpoint
// ------------------------

// The gRPC server and what it holds, in the order they are made.
struct RpcEdge {
  std::unique_ptr<grpc::ServerBuilder> builder;
  std::vector<int> tcp_ports;  // per --listen address, the port bound (0: none)
  std::unique_ptr<StopService> stop_service;
  std::unique_ptr<grpc::ResourceQuota> quota;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<InheritedListener> inherited_listener;  // when socket-activated
};

// Removes a stale socket, builds and starts the gRPC server on the Unix socket and the TCP
// listeners, gives the socket its mode and group, logs each TCP listener (with a warning for
// each insecure one), tells `grpc_service` the listeners and marks it serving.
absl::Status StartRpcEdge(const DaemonConfig& config, const DaemonSocket& socket,
                          const AccessControl& access,
                          const std::shared_ptr<grpc::ServerCredentials>& tcp_credentials,
                          CoopService* grpc_service, RpcEdge* edge);

// The Prometheus endpoint (--metrics), reading `stats_reader`; null without --metrics.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetrics(const DaemonConfig& config,
                                                            StatsReader& stats_reader);

// Logs the request limits and the per-client limits and quotas.
void LogLimits(const DaemonConfig& config);

// ---- daemon_serve.cc: serving, and stopping -----------------------------------------------------

// Why the self-probe stopped coopd (nothing: it did not); set from the probe's thread.
class ProbeFailure {
 public:
  void Set(const std::string& why);
  // What RunDaemon returns: OK, or UNAVAILABLE naming the listener that stopped answering.
  absl::Status ExitStatus();

 private:
  std::mutex mu_;
  std::string why_;  // guarded by mu_
};

// The self-probe (server/rpc/self_probe.h), started (null when server.self_probe_s is 0): a
// listener that stopped accepting records `failure` and sends coopd SIGTERM.
std::unique_ptr<SelfProbe> StartSelfProbe(const DaemonConfig& config, const DaemonSocket& socket,
                                          const RpcEdge& edge, ProbeFailure* failure);

// Pre-warms --prewarm's archs, or those of `history` by default; skips (with a warning) an arch
// the toolchain cannot target.
void StartPrewarm(const DaemonConfig& config, std::vector<std::string> history, Service* service);

// --idle-exit: once no call has arrived or been in flight, and no worker has compiled (a
// pre-warm included), for that long, stop the way SIGTERM does. A daemon a client started on
// demand (coop::Client's auto-start asks for 30 min) so goes away when nobody uses it.
class IdleWatch {
 public:
  // Nothing without server.idle_exit_s. `pool` and `grpc_service` must outlive Stop().
  void Start(const DaemonConfig& config, WorkerPool* pool, const CoopService* grpc_service);
  // Ends the watch; must be called after Start() before this is destroyed.
  void Stop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// Waits for SIGINT or SIGTERM (blocked by BlockStopSignals), then stops `idle_watch`. Returns the
// signal.
int ServeUntilStopped(const sigset_t& signals, IdleWatch* idle_watch);

// Logs `sig`, then stops taking work and drains: the requests in flight get the shutdown grace,
// then their compiles are cancelled; returns once the gRPC server has shut down.
void StopServing(const DaemonConfig& config, int sig, SelfProbe* self_probe, RpcEdge* edge,
                 CoopService* grpc_service, Service* service, WorkerPool* pool);

}  // namespace coopd
