// daemon.h: coopd's process-level life cycle: configuration, the socket and its lock, the gRPC
// server, signals and orderly shutdown.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/cache/remote_config.h"
#include "server/catalog/tuning.h"
#include "server/engine/sandbox.h"
#include "server/rpc/grpc_service.h"
#include "server/service/service.h"
#include "server/toolchain/toolchain.h"

namespace coopd {

// Every field's default, environment variable, flag and config-file key are in the settings
// table (server/daemon/settings.cc); ParseDaemonArgs fills them all.
struct DaemonConfig {
  std::string socket_path;   // server.socket
  std::string cache_dir;     // cache.dir
  std::string cccl_include;  // toolchain.cccl_include: the default CCCL
  // toolchain.cccl (--cccl NAME=DIR, [[cccl]] tables): further CCCLs a spec may name, and where
  // they were configured ("--cccl", "COOPD_CCCL", "FILE:LINE").
  std::vector<CcclSource> cccls;
  // compile.probe_cccl: which CCCLs to probe by compiling every family on them at start-up, in
  // the background: "auto" (those of --cccl and [[cccl]]), "all", or "off".
  std::string probe_cccl;
  std::string clang;  // toolchain.clang: the bitcode backend, a path or a name on PATH
  // catalog.tuning_table: a tuning table (docs/tuning.md) replacing the embedded one of its
  // arch; empty: the embedded tables. `tuning_tables` is what ParseDaemonArgs loaded (so a bad
  // file stops coopd before it serves, and --print-config shows the tables).
  std::string tuning_table;
  std::shared_ptr<const tuning::TableSet> tuning_tables;
  uint64_t memory_cache_bytes = 0;  // cache.memory_mb
  uint64_t disk_cache_bytes = 0;    // cache.max_mb: the disk tier's budget
  int executor_threads = 8;         // request threads (not a setting)
  bool pch = true;                  // compile.pch
  int workers = 0;                  // compile.workers: worker processes; 0: one per core
  std::chrono::milliseconds compile_timeout{0};  // compile.timeout_s
  // RLIMIT_AS per worker and its clang (0: unlimited), compile.worker_memory_mb. Measured (CUDA
  // 13.0, CCCL 3.0.1): a worker with a warm PCH peaks at ~500 MiB of address space (~290 MiB
  // resident, of it the ~200 MB PCH heap), a clang child at ~330 MiB; the 2 GiB default leaves
  // room for bundles and large specs.
  uint64_t worker_memory_bytes = 0;
  // Compile workers' confinement (engine/sandbox.h), compile.sandbox: auto (Landlock when the
  // kernel has it, else a warning and seccomp alone), require (refuse to start without
  // Landlock), off.
  SandboxMode sandbox = SandboxMode::kAuto;
  // compile.prewarm: build PCHs for these archs on every worker, in the background, at start
  // (["none"]: nothing). Empty (the default): the archs this cache's requests compiled for most
  // recently (ServiceOptions::prewarm_history), which `prewarm_from_history` says.
  std::vector<std::string> prewarm_archs;
  bool prewarm_from_history = true;
  // server.shutdown_grace_s: on SIGTERM/SIGINT, how long requests in flight may take to finish
  // before their compiles are cancelled (they then fail with UNAVAILABLE).
  std::chrono::milliseconds shutdown_grace{0};
  // server.idle_exit_s: stop (as on SIGTERM) once no call has been in flight or arrived, and no
  // compile has run, for this long; 0: never. Clients that auto-start coopd ask for 30 min.
  std::chrono::milliseconds idle_exit{0};
  std::string log_level;   // log.level
  std::string log_format;  // log.format: text or json
  // The farm tier: remote.url and remote.password_file as given, and what they parse to; none
  // when `remote` is false (remote.url empty).
  std::string remote_url, remote_password_file;
  bool remote = false;
  RemoteCacheConfig remote_cache;
  // Extra gRPC listening addresses (--listen HOST:PORT, COOPD_LISTEN). TCP needs TLS and client
  // authentication (tokens or client certificates) unless `insecure` (docs/security.md).
  std::vector<std::string> listen;
  // Access control (docs/security.md). --socket-group: the socket is chgrp'd to it and 0660
  // (default: 0600, coopd's user alone); socket_gid is the group resolved at parse time.
  std::string socket_group;
  int64_t socket_gid = -1;
  // --tls-cert/--tls-key (PEM files) for the TCP listeners; --tls-client-ca: clients must
  // present a certificate it signed (mTLS).
  std::string tls_cert, tls_key, tls_client_ca;
  bool insecure = false;  // --insecure: allow plaintext or unauthenticated TCP, with warnings
  // --tokens-file: bearer tokens with roles (rpc/access.h), enforced on TCP, and on the Unix
  // socket too with --tokens-unix.
  std::string tokens_file;
  bool tokens_unix = false;
  // metrics.address: the Prometheus endpoint (HOST:PORT); empty: off.
  std::string metrics_address;
  // Limits (docs/security.md): the message size and per-client limits at the gRPC edge
  // (--max-message-mb, --client-max-in-flight, --client-rate, --client-burst), and what one
  // request may hold (--max-op-source-kb, --max-bundle, --max-plan-specs, --max-user-ops).
  RpcLimits rpc_limits;
  RequestLimits request_limits;
  // Per-client quotas on compiles and cache bytes (--quota-compiles-per-minute,
  // --quota-cache-mb-per-hour; service/client_quotas.h); off by default.
  ClientQuotaOptions quotas;
  // What one network peer may hold (docs/security.md, "Network peers"): calls in flight on one
  // connection (limits.max_streams, every listener), the memory gRPC may give connections'
  // buffers before it shrinks their windows and closes connections (limits.grpc_memory_mb,
  // every listener; 0: no quota), and how long a connection may take to finish its TLS and
  // HTTP/2 handshake (server.handshake_timeout_s).
  uint32_t max_streams = 0;
  uint64_t grpc_memory_bytes = 0;
  std::chrono::milliseconds handshake_timeout{0};
  // server.self_probe_s: how often coopd calls its own listeners (health check on the Unix
  // socket, a gRPC call on each TCP port) and tells systemd's watchdog it is alive; after
  // 3 failures in a row it exits with status 1 so that its supervisor restarts it
  // (0: no probe).
  std::chrono::milliseconds self_probe{0};
  std::string config_file;  // the config file that was read (for the start-up log), or empty
};

// cache.dir's default: $XDG_CACHE_HOME/coopd, else $HOME/.cache/coopd, else
// /tmp/coopd-$UID/cache.
std::string DefaultCacheDir();

// Fills `config` from built-in defaults < config file < COOPD_* environment < command-line
// flags (server/daemon/settings.h). INVALID_ARGUMENT naming the source (flag, variable or
// FILE:LINE) for bad input. Sets *exit_now for --help, --version and --print-config after
// printing them.
absl::Status ParseDaemonArgs(int argc, char** argv, DaemonConfig* config, bool* exit_now);

// Runs until SIGINT or SIGTERM, then stops accepting, finishes the requests in flight and
// returns. FAILED_PRECONDITION when another coopd owns the socket or the toolchain is missing.
absl::Status RunDaemon(const DaemonConfig& config);

class ClangWorkspace;

// The confinement coopd gives its compile workers (engine/sandbox.h): read the header roots
// (every CCCL's of `toolchains`; the rest is the same in each),
// the toolchain and the shared libraries, write `clang_workspace` (when not null), execute
// clang. Each worker adds its own temporary directory. Logs what it decided; with `mode`
// require, FAILED_PRECONDITION on a kernel without Landlock. `coopd sandbox-exec` uses it too.
absl::StatusOr<SandboxPolicy> WorkerSandbox(SandboxMode mode,
                                            const std::vector<Toolchain>& toolchains,
                                            const ClangWorkspace* clang_workspace);

}  // namespace coopd
