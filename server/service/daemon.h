// daemon.h: coopd's process-level life cycle: configuration, the socket and its lock, the gRPC
// server, signals and orderly shutdown.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/cache/remote_config.h"
#include "server/engine/sandbox.h"
#include "server/rpc/grpc_service.h"
#include "server/service/service.h"

namespace coopd {

struct DaemonConfig {
  std::string socket_path;           // default: coop::DefaultSocketPath()
  std::string cache_dir;             // default: DefaultCacheDir()
  std::string cccl_include;          // default: DefaultCcclInclude()
  std::string clang = "clang++-22";  // the bitcode backend: a path or a name on PATH
  uint64_t memory_cache_bytes = uint64_t{256} << 20;
  uint64_t disk_cache_bytes = uint64_t{5} << 30;  // disk tier budget
  int executor_threads = 8;
  bool pch = true;
  int workers = 0;  // compile worker processes; 0: one per core
  std::chrono::milliseconds compile_timeout{120000};
  // RLIMIT_AS per worker and its clang (0: unlimited). Measured (CUDA 13.0, CCCL 3.0.1): a
  // worker with a warm PCH peaks at ~500 MiB of address space (~290 MiB resident, of it the
  // ~200 MB PCH heap), a clang child at ~330 MiB; 2 GiB leaves room for bundles and large specs.
  uint64_t worker_memory_bytes = uint64_t{2048} << 20;
  // Compile workers' confinement (engine/sandbox.h): auto (Landlock when the kernel has it,
  // else a warning and seccomp alone), require (refuse to start without Landlock), off.
  SandboxMode sandbox = SandboxMode::kAuto;
  // Build PCHs for these archs on every worker, in the background, at start (--prewarm; "none":
  // nothing). Without --prewarm, the archs this cache's requests compiled for most recently
  // (ServiceOptions::prewarm_history), which `prewarm_from_history` says.
  std::vector<std::string> prewarm_archs;
  bool prewarm_from_history = true;
  // On SIGTERM/SIGINT: how long requests in flight may take to finish before their compiles
  // are cancelled (they then fail with UNAVAILABLE).
  std::chrono::milliseconds shutdown_grace{5000};
  std::string log_level = "info";
  // The farm tier (--remote-cache URL, COOPD_REMOTE_CACHE); none when `remote` is false.
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
  // The Prometheus endpoint (--metrics HOST:PORT, COOPD_METRICS); empty: off.
  std::string metrics_address;
  // Limits (docs/security.md): the message size and per-client limits at the gRPC edge
  // (--max-message-mb, --client-max-in-flight, --client-rate, --client-burst), and what one
  // request may hold (--max-op-source-kb, --max-bundle, --max-plan-specs, --max-user-ops).
  RpcLimits rpc_limits;
  RequestLimits request_limits;
};

// $COOPD_CACHE_DIR, else $XDG_CACHE_HOME/coopd, else $HOME/.cache/coopd, else
// /tmp/coopd-$UID/cache.
std::string DefaultCacheDir();

// Fills `config` from built-in defaults < COOPD_* environment < command-line flags.
// INVALID_ARGUMENT naming the flag for bad input. Sets *exit_now for --help/--version after
// printing them.
absl::Status ParseDaemonArgs(int argc, char** argv, DaemonConfig* config, bool* exit_now);

// Runs until SIGINT or SIGTERM, then stops accepting, finishes the requests in flight and
// returns. FAILED_PRECONDITION when another coopd owns the socket or the toolchain is missing.
absl::Status RunDaemon(const DaemonConfig& config);

}  // namespace coopd
