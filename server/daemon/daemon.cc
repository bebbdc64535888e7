#include "server/daemon/daemon.h"

#include <fcntl.h>
#include <grp.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "coop/paths.h"
#include "server/cache/memory_cache.h"
#include "server/cache/remote_cache.h"
#include "server/cache/sqlite_cache.h"
#include "server/catalog/render.h"
#include "server/daemon/log_format.h"
#include "server/daemon/settings.h"
#include "server/engine/bitcode.h"
#include "server/engine/worker_pool.h"
#include "server/metrics/metrics.h"
#include "server/rpc/access.h"
#include "server/rpc/grpc_service.h"
#include "server/rpc/inherited_listener.h"
#include "server/rpc/self_probe.h"
#include "server/rpc/stop_service.h"
#include "server/util/escape.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// The name of coopd's gRPC service, for health checks (proto/coop/v1/coop.proto).
constexpr char kCoopServiceName[] = "coop.v1.Coop";

// Self-probe rounds that must fail in a row before coopd exits (server.self_probe_s).
constexpr int kSelfProbeFailures = 3;

// An fd holding an exclusive flock on "<socket>.lock" for the daemon's lifetime. The file is
// opened O_NOFOLLOW and must be a regular file of coopd's user (coop::OpenOwnFile) before it is
// truncated: a link planted there is refused, never followed.
class SocketLock {
 public:
  ~SocketLock() {
    if (fd_ >= 0) close(fd_);
  }
  absl::Status Acquire(const std::string& socket_path) {
    const std::string path = socket_path + ".lock";
    std::string error;
    fd_ = coop::OpenOwnFile(path, O_RDWR, &error);
    if (fd_ < 0) return absl::FailedPreconditionError(StrCat("lock file ", error));
    if (fchmod(fd_, 0600) != 0) {
      spdlog::warn("cannot make {} private (0600): {}", path, std::strerror(errno));
    }
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {0};
      ssize_t n = pread(fd_, buf, sizeof(buf) - 1, 0);
      std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      return absl::FailedPreconditionError(StrCat("another coopd (pid ", pid, ") already owns ",
                                                  socket_path,
                                                  "; stop it first or choose another --socket"));
    }
    std::string pid = StrCat(getpid(), "\n");
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
      spdlog::warn("could not record pid in {}: {}", path, std::strerror(errno));
    }
    return absl::OkStatus();
  }

 private:
  int fd_ = -1;
};

absl::Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cannot create directory ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SandboxPolicy> WorkerSandbox(SandboxMode mode, const Toolchain& tc,
                                            const ClangWorkspace* clang_workspace) {
  namespace fs = std::filesystem;
  SandboxPolicy policy;
  policy.mode = mode;
  if (mode == SandboxMode::kOff) {
    spdlog::warn(
        "compile sandbox OFF (--sandbox off): compiles can read every file coopd can, and a "
        "user operator's #include quotes it back (docs/security.md)");
    return policy;
  }
  auto real = [](const std::string& p) {
    std::error_code ec;
    fs::path r = fs::canonical(p, ec);
    return ec ? p : r.string();
  };
  // Each root by its real path, resolved here: a Landlock rule never follows a root that is a
  // symlink (engine/sandbox.h). Where the compiles name it through links (/lib, /usr/local/cuda,
  // /usr/bin/clang++-22), that name comes too, for the private root to recreate the links.
  auto add = [&](std::vector<std::string>* list, const std::string& p) {
    const std::string r = real(p);
    list->push_back(r);
    if (r != p) list->push_back(p);
  };
  // The headers a compile may include.
  add(&policy.read, tc.cccl_include);
  add(&policy.read, tc.cuda_include);
  // The CUDA toolkit (NVRTC's builtins library, clang's --cuda-path), and where libnvrtc lives.
  add(&policy.read, fs::path(tc.cuda_include).parent_path().string());
  if (!tc.nvrtc_library.empty()) {
    add(&policy.read, fs::path(tc.nvrtc_library).parent_path().string());
  }
  // Shared libraries (and the loader's cache), the host's C/C++ headers that clang's CUDA
  // wrappers include, /dev/null for clang's stdin.
  for (const char* p : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/include",
                        "/etc/ld.so.cache", "/dev/null"}) {
    add(&policy.read, p);
  }
  if (tc.clang.available()) {
    // clang, its program interpreter, and its installation (the resource dir's headers).
    const std::string clang = real(tc.clang.path);
    add(&policy.exec, tc.clang.path);
    if (std::string interp = ProgramInterpreter(clang); !interp.empty()) {
      add(&policy.exec, interp);
    }
    policy.read.push_back(fs::path(clang).parent_path().parent_path().string());
  }
  // Read only: the device headers and the published precompiled headers (engine/bitcode.h).
  if (clang_workspace != nullptr) policy.read.push_back(clang_workspace->path());
  std::string why;
  const int abi = LandlockAbi(&why);
  if (abi == 0) {
    if (mode == SandboxMode::kRequire) {
      return absl::FailedPreconditionError(
          StrCat("compile sandbox: --sandbox require, but Landlock is unavailable: ", why));
    }
    spdlog::warn(
        "compile sandbox DEGRADED: Landlock is unavailable ({}); compiles can read every file "
        "coopd can, and a user operator's #include quotes it back. Workers still create no "
        "sockets (seccomp). Run on a kernel with Landlock, or give --sandbox require to refuse "
        "to start without it (docs/security.md)",
        why);
    return policy;
  }
  spdlog::info(
      "compile sandbox: Landlock ABI {} + seccomp; reads {}; writes {}each "
      "worker's own temporary directory; executes {}",
      abi, StrJoin(policy.read, ", "),
      policy.write.empty() ? std::string() : StrCat(StrJoin(policy.write, ", "), " and "),
      policy.exec.empty() ? std::string("nothing") : StrJoin(policy.exec, ", "));
  return policy;
}

namespace {

// Raises the soft limit on open descriptors to the hard one: every connection costs one, and
// gRPC 1.51 stops accepting on a listener for good when accept4 fails with EMFILE (issue 27). A
// cap on connections that gRPC 1.51 lacks (no grpc.max_allowed_incoming_connections) is the
// descriptor limit; the self-probe notices a listener that stopped anyway.
void RaiseDescriptorLimit() {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t soft = rl.rlim_cur;
  if (rl.rlim_cur != rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      spdlog::warn("descriptors: cannot raise the soft limit {} to the hard limit {}: {}", soft,
                   rl.rlim_max, std::strerror(errno));
      return;
    }
  }
  spdlog::info(
      "descriptors: limit {} (soft {} raised to the hard limit){}", rl.rlim_cur, soft,
      rl.rlim_cur < 4096 ? "; each connection holds one: raise LimitNOFILE (ulimit -Hn)" : "");
}

// A setting's value and where it came from (a flag or a COOPD_* variable), for errors.
struct Setting {
  std::string value, source;
};

absl::Status BoolSetting(const Setting& s, bool* out) {
  if (s.value.empty() || s.value == "0" || s.value == "false" || s.value == "no") {
    *out = false;
  } else if (s.value == "1" || s.value == "true" || s.value == "yes") {
    *out = true;
  } else {
    return absl::InvalidArgumentError(
        StrCat(s.source, ": must be 1 or 0 (true/false, yes/no), got ", QuoteValue(s.value)));
  }
  return absl::OkStatus();
}

// Access control's settings (docs/security.md), checked together: TCP listeners need TLS and
// client authentication unless --insecure.
absl::Status AccessSettings(const Setting& socket_group, const Setting& tls_cert,
                            const Setting& tls_key, const Setting& tls_client_ca,
                            const Setting& tokens_file, const Setting& insecure,
                            const Setting& tokens_unix, DaemonConfig* config) {
  if (absl::Status s = BoolSetting(insecure, &config->insecure); !s.ok()) return s;
  if (absl::Status s = BoolSetting(tokens_unix, &config->tokens_unix); !s.ok()) return s;
  config->socket_group = socket_group.value;
  config->socket_gid = -1;
  if (!socket_group.value.empty()) {
    std::vector<char> buf(16384);
    struct group gr {};
    struct group* found = nullptr;
    const int err = getgrnam_r(socket_group.value.c_str(), &gr, buf.data(), buf.size(), &found);
    uint64_t gid = 0;
    if (found != nullptr) {
      config->socket_gid = found->gr_gid;
    } else if (absl::SimpleAtoi(socket_group.value, &gid) && gid < (uint64_t{1} << 31)) {
      config->socket_gid = static_cast<int64_t>(gid);
    } else {
      return absl::InvalidArgumentError(
          StrCat(socket_group.source, ": no such group ", QuoteValue(socket_group.value),
                 err != 0 ? StrCat(" (", std::strerror(err), ")") : std::string(),
                 "; give a group name from /etc/group (getent group) or a numeric gid"));
    }
  }
  config->tokens_file = tokens_file.value;
  if (config->tokens_unix && config->tokens_file.empty()) {
    return absl::InvalidArgumentError(StrCat(
        tokens_unix.source, ": needs --tokens-file (COOPD_TOKENS_FILE): the tokens to require"));
  }
  config->tls_cert = tls_cert.value;
  config->tls_key = tls_key.value;
  config->tls_client_ca = tls_client_ca.value;
  // TLS settings matter only for TCP listeners: a daemon that a client started with its own
  // COOPD_TLS_* in the environment (auto-start) must not fail on them.
  if (config->listen.empty()) return absl::OkStatus();
  if (tls_cert.value.empty() != tls_key.value.empty()) {
    const Setting& given = tls_cert.value.empty() ? tls_key : tls_cert;
    return absl::InvalidArgumentError(
        StrCat(given.source,
               ": --tls-cert and --tls-key (COOPD_TLS_CERT, COOPD_TLS_KEY) go "
               "together; the other one is missing"));
  }
  if (!tls_client_ca.value.empty() && tls_cert.value.empty()) {
    return absl::InvalidArgumentError(StrCat(
        tls_client_ca.source, ": client certificates need TLS: give --tls-cert and --tls-key"));
  }
  if (config->insecure) return absl::OkStatus();
  if (tls_cert.value.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--listen ", config->listen[0],
               ": TCP needs TLS: give --tls-cert FILE and --tls-key FILE (COOPD_TLS_CERT, "
               "COOPD_TLS_KEY), or --insecure (COOPD_INSECURE=1) to serve plaintext to anyone "
               "who can reach the port (docs/security.md)"));
  }
  if (tokens_file.value.empty() && tls_client_ca.value.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--listen ", config->listen[0],
               ": TCP clients must authenticate: give --tokens-file FILE (bearer tokens with "
               "roles) or --tls-client-ca FILE (client certificates), or --insecure "
               "(COOPD_INSECURE=1) to serve anyone who can reach the port (docs/security.md)"));
  }
  return absl::OkStatus();
}

// A socket directory coopd created is its user's alone (0700). With --socket-group, members of
// the group must be able to reach the socket: a directory coopd created is given to the group
// (0750); an existing one is left as it is, with a warning when the group cannot search it.
absl::Status ShareSocketDir(const std::string& dir, bool created, const DaemonConfig& config) {
  if (config.socket_gid < 0) {
    if (created && chmod(dir.c_str(), 0700) != 0) {
      spdlog::warn("cannot make {} private (0700): {}", dir, std::strerror(errno));
    }
    return absl::OkStatus();
  }
  const auto gid = static_cast<gid_t>(config.socket_gid);
  if (created) {
    if (chown(dir.c_str(), static_cast<uid_t>(-1), gid) != 0 || chmod(dir.c_str(), 0750) != 0) {
      return absl::FailedPreconditionError(
          StrCat("--socket-group ", config.socket_group, ": cannot give ", dir, " to the group: ",
                 std::strerror(errno), " (coopd's user must be root or a member of the group)"));
    }
    return absl::OkStatus();
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0 &&
      !(st.st_gid == gid && (st.st_mode & S_IXGRP) != 0)) {
    spdlog::warn(
        "--socket-group {}: members of the group cannot reach the socket: its directory {} "
        "(mode {:04o}) does not let them search it",
        config.socket_group, dir, st.st_mode & 07777);
  }
  return absl::OkStatus();
}

// "2 read, 1 admin": how many tokens of each role (never a token).
std::string TokenSummary(const std::vector<TokenEntry>& tokens) {
  std::string out;
  for (Role r : {Role::kRead, Role::kCompile, Role::kAdmin}) {
    const auto n = std::count_if(tokens.begin(), tokens.end(),
                                 [r](const TokenEntry& e) { return e.role == r; });
    if (n > 0) out += StrCat(out.empty() ? "" : ", ", n, " ", RoleName(r));
  }
  return out;
}

}  // namespace

absl::Status ParseDaemonArgs(int argc, char** argv, DaemonConfig* config, bool* exit_now) {
  *exit_now = false;
  auto loaded = LoadSettings(argc, argv, config);
  if (!loaded.ok()) return loaded.status();
  {
    // Access control's settings are checked together (AccessSettings), each named by where it
    // came from.
    const auto& table = Settings();
    auto setting = [&](const char* key, std::string value) {
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i].key == key) {
          const std::string& origin = loaded->origins[i];
          const bool file =
              origin != "default" && origin.rfind("--", 0) != 0 && origin.rfind("COOPD_", 0) != 0;
          return Setting{std::move(value), file ? StrCat(origin, ": ", key) : origin};
        }
      }
      return Setting{std::move(value), key};
    };
    if (absl::Status s =
            AccessSettings(setting("server.socket_group", config->socket_group),
                           setting("listen.tls_cert", config->tls_cert),
                           setting("listen.tls_key", config->tls_key),
                           setting("listen.tls_client_ca", config->tls_client_ca),
                           setting("auth.tokens_file", config->tokens_file),
                           setting("listen.insecure", config->insecure ? "1" : "0"),
                           setting("auth.tokens_unix", config->tokens_unix ? "1" : "0"), config);
        !s.ok()) {
      return s;
    }
  }
  {
    // The tuning tables are read now: a bad --tuning-table stops coopd before it serves.
    auto tables = tuning::LoadTables(config->tuning_table);
    if (!tables.ok()) return tables.status();
    config->tuning_tables = std::move(*tables);
  }
  if (loaded->help) {
    std::cout << SettingsHelp();
  } else if (loaded->version) {
    std::cout << "coopd 0.1.0\n";
  } else if (loaded->print_config) {
    std::cout << PrintConfig(*config, *loaded);
  } else {
    return absl::OkStatus();
  }
  *exit_now = true;
  return absl::OkStatus();
}

absl::Status RunDaemon(const DaemonConfig& config) {
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  // Every message escaped and bounded: requests' values cannot forge or flood log lines.
  if (config.log_format == "json") {
    InstallJsonLogFormat();
  } else {
    InstallSafeLogFormat(kTextLogPattern);
  }
  // Compile workers inherit it and log in the same format (server/daemon/main.cc). Set before any
  // thread starts.
  setenv("COOPD_LOG_FORMAT", config.log_format.c_str(), 1);
  if (!config.config_file.empty()) spdlog::info("config file: {}", config.config_file);
  RaiseDescriptorLimit();

  // Block SIGINT/SIGTERM before any thread starts, so every thread inherits the mask and only
  // the sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Socket activation: systemd owns the socket (and starts one coopd per socket unit), so
  // there is no lock to take and no file to create or remove.
  auto inherited = TakeInheritedSocket();
  if (!inherited.ok()) return inherited.status();
  const bool activated = inherited->fd >= 0;
  const std::string listen_name =
      activated ? StrCat("inherited fd ", inherited->fd, " (unix:", inherited->path, ")")
                : StrCat("unix:", config.socket_path);
  SocketLock lock;
  if (!activated) {
    const std::string socket_dir = std::filesystem::path(config.socket_path).parent_path().string();
    if (!socket_dir.empty()) {
      const bool existed = std::filesystem::exists(socket_dir);
      if (absl::Status s = MakePrivateDir(socket_dir); !s.ok()) return s;
      // Another user's directory, or one others may write, could swap the socket, or plant
      // links as its lock and log: refused (lstat: a link is refused too) before anything in it
      // is touched (docs/security.md, "Other local users").
      coop::DirRule rule;
      rule.owner = static_cast<long>(geteuid());
      rule.writable_group = config.socket_gid;
      if (std::string why = coop::UnsafeDirReason(socket_dir, rule); !why.empty()) {
        return absl::FailedPreconditionError(why);
      }
      if (absl::Status s = ShareSocketDir(socket_dir, !existed, config); !s.ok()) return s;
    }
    if (absl::Status s = lock.Acquire(config.socket_path); !s.ok()) return s;
  } else if (!config.socket_group.empty()) {
    spdlog::warn(
        "--socket-group {} ignored: systemd owns the socket (set SocketGroup= and "
        "SocketMode=0660 in the socket unit)",
        config.socket_group);
  }
  // Access control: tokens and TLS are read now, so a bad file stops coopd before it serves.
  std::vector<TokenEntry> tokens;
  if (!config.tokens_file.empty()) {
    auto loaded = LoadTokensFile(config.tokens_file, "--tokens-file");
    if (!loaded.ok()) return loaded.status();
    tokens = std::move(*loaded);
    spdlog::info("access: {} bearer token(s) from {} ({}), required on TCP{}", tokens.size(),
                 config.tokens_file, TokenSummary(tokens),
                 config.tokens_unix ? " and on the Unix socket" : "");
  }
  const AccessControl access(std::move(tokens), config.tokens_unix);
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials = grpc::InsecureServerCredentials();
  const bool tls = !config.listen.empty() && !config.tls_cert.empty();
  if (tls) {
    auto creds = TlsServerCredentials(config.tls_cert, config.tls_key, config.tls_client_ca);
    if (!creds.ok()) return creds.status();
    tcp_credentials = std::move(*creds);
    // Tokens are checked on the headers, before gRPC reads a request (AccessControl::HeaderCheck;
    // gRPC 1.51 runs processors on TLS credentials only).
    if (access.enforced()) tcp_credentials->SetAuthMetadataProcessor(access.HeaderCheck());
  }

  if (config.tuning_tables != nullptr) tuning::SetActiveTables(config.tuning_tables);
  for (const auto& t : tuning::ActiveTables()->tables) {
    spdlog::info("tuning table {}: version {} sha256 {} ({}, {} cells{})", t.arch, t.version,
                 t.digest.substr(0, 16), t.source, t.cells.size(),
                 t.placeholder() ? ", placeholder: not measured" : "");
  }

  ToolchainOptions tc_options;
  tc_options.cccl_include = config.cccl_include;
  tc_options.clang = config.clang;
  {
    std::error_code ec;
    const bool existed = std::filesystem::exists(config.cache_dir, ec);
    std::filesystem::create_directories(config.cache_dir, ec);
    // The cache directory is coopd's user's alone (SqliteCache::Open tightens an old one).
    if (!ec && !existed) chmod(config.cache_dir.c_str(), 0700);
    if (!ec) tc_options.manifest_path = config.cache_dir + "/headers.manifest";
  }
  const auto probe_start = std::chrono::steady_clock::now();
  auto toolchain = ProbeToolchain(tc_options);
  if (!toolchain.ok()) return toolchain.status();
  spdlog::info(
      "toolchain: NVRTC {}, nvJitLink {}, CCCL {} at {}, header digest {} ({} of {} header files "
      "hashed, {:.0f} ms)",
      toolchain->NvrtcVersion(), toolchain->NvJitLinkVersion(), toolchain->cccl_version,
      toolchain->cccl_include, toolchain->header_digest.substr(0, 16), toolchain->headers_hashed,
      toolchain->headers_total,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - probe_start)
          .count());
  // Everything coopd writes to temporary storage goes into one private directory of its own
  // (engine/private_dir.h): the clang workspace and each worker's directory.
  auto temp_dir = DaemonTempDir::Create();
  if (!temp_dir.ok()) return temp_dir.status();
  // The bitcode backend is optional: without clang, bitcode requests get FAILED_PRECONDITION.
  std::unique_ptr<ClangWorkspace> clang_workspace;
  if (toolchain->clang.available()) {
    auto ws = ClangWorkspace::Create(toolchain->device_headers, (*temp_dir)->path());
    if (ws.ok()) {
      clang_workspace = std::move(*ws);
      spdlog::info("bitcode: {} (workspace {})", toolchain->clang.Identity(),
                   clang_workspace->path());
    } else {
      spdlog::error("bitcode unavailable: {}", std::string(ws.status().message()));
    }
  } else {
    spdlog::info("bitcode unavailable (LTO-IR only): {}", toolchain->clang.UnavailableMessage());
  }

  SqliteCacheOptions disk_options;
  disk_options.dir = config.cache_dir;
  disk_options.budget_bytes = config.disk_cache_bytes;
  auto disk = SqliteCache::Open(disk_options);
  auto cache = std::make_unique<TieredCache>();
  cache->AddTier(std::make_unique<MemoryCache>(config.memory_cache_bytes), CacheOrigin::kMemory);
  SqliteCache* disk_tier = nullptr;
  std::string cache_path;
  if (disk.ok()) {
    disk_tier = disk->get();
    cache_path = (*disk)->path();
    cache->AddTier(std::move(*disk), CacheOrigin::kDisk);
  } else {
    // A newer schema is a decision for the user; anything else (unwritable directory, full
    // disk) must not stop coopd from serving: run on the memory tier alone.
    if (std::string(disk.status().message()).find("newer than this coopd") != std::string::npos) {
      return disk.status();
    }
    spdlog::error("{}; serving WITHOUT a disk cache (memory tier only)",
                  std::string(disk.status().message()));
    cache_path = StrCat("(none: ", disk.status().message(), ")");
  }
  RemoteCache* remote_tier = nullptr;
  if (config.remote) {
    auto remote = std::make_unique<RemoteCache>(config.remote_cache);
    remote_tier = remote.get();
    // Fail open from the start: a Redis that is down now is a tier that is down, not an error.
    absl::Status ping = remote->Ping();
    spdlog::info("remote cache: {}{} (ttl {} s, pool {}, write {}, lease ttl {} ms, wait {} ms){}",
                 config.remote_cache.Redacted(), config.remote_cache.read_only ? " read-only" : "",
                 config.remote_cache.ttl.count(), config.remote_cache.pool_size,
                 config.remote_cache.write == RemoteWritePolicy::kSync ? "sync" : "async",
                 config.remote_cache.lease_ttl.count(), config.remote_cache.lease_wait.count(),
                 ping.ok() ? "" : StrCat("; not reachable yet: ", ping.message()));
    cache->AddTier(std::move(remote), CacheOrigin::kRemote);
  }

  auto sandbox = WorkerSandbox(config.sandbox, *toolchain, clang_workspace.get());
  if (!sandbox.ok()) return sandbox.status();
  WorkerPoolOptions pool_options;
  pool_options.sandbox = std::move(*sandbox);
  pool_options.workers = config.workers;
  pool_options.timeout = config.compile_timeout;
  pool_options.memory_limit_bytes = config.worker_memory_bytes;
  pool_options.temp_parent = (*temp_dir)->path();
  if (config.pch) pool_options.warm_source = kPreludeUnit;  // automatic pre-warm
  WorkerPool pool(pool_options);
  if (absl::Status s = pool.Start(); !s.ok()) return s;
  spdlog::info("compile workers: {} (timeout {:.3g} s{})", pool.size(),
               config.compile_timeout.count() / 1000.0,
               config.worker_memory_bytes
                   ? StrCat(", memory limit ", config.worker_memory_bytes >> 20, " MiB")
                   : std::string());

  ServiceOptions options;
  options.compile.pch = config.pch;
  options.cache_path = cache_path;
  if (clang_workspace) options.clang_workspace = clang_workspace->path();
  options.remote = remote_tier;
  options.limits = config.request_limits;
  options.quotas = config.quotas;
  // The archs this cache last compiled for, read once: the service keeps the list up to date in
  // the file, and the pre-warm below starts from it.
  std::vector<std::string> history;
  if (config.pch) {
    options.prewarm_history = StrCat(config.cache_dir, "/prewarm-archs");
    history = ReadPrewarmHistory(options.prewarm_history);
    options.prewarm_history_archs = history;
  }
  Service service(std::move(*toolchain), std::move(cache), disk_tier, &pool, options);
  Executor executor(config.executor_threads);
  Executor maintenance(2);  // purge, verify, vacuum: never on the request threads
  CoopService grpc_service(&service, &executor, &maintenance, config.rpc_limits, &access);

  // We hold the lock, so a socket file left here belongs to a coopd that is gone.
  if (!activated) unlink(config.socket_path.c_str());
  // grpc.health.v1 and server reflection, for grpcurl, grpc_health_probe and other generic
  // clients; both must be switched on before the builder exists.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!activated) {
    builder.AddListeningPort("unix:" + config.socket_path, grpc::InsecureServerCredentials());
  }
  std::vector<int> tcp_ports(config.listen.size(), 0);
  for (size_t i = 0; i < config.listen.size(); ++i) {
    builder.AddListeningPort(config.listen[i], tcp_credentials, &tcp_ports[i]);
  }
  builder.RegisterService(&grpc_service);
  // `coopctl stop`: an admin's call stops coopd as SIGTERM does, once its reply has gone out.
  StopService stop_service(&access, [](const Caller& caller) {
    spdlog::info("stop requested{}{}; stopping", caller.name.empty() ? "" : " by ", caller.name);
    kill(getpid(), SIGTERM);
  });
  builder.RegisterCallbackGenericService(&stop_service);
  // gRPC receives a whole message before any limit applies (its own limit only refuses it
  // then, with a message that names no flag): CoopService checks --max-message-mb itself, so
  // gRPC's limit is the protocol's, 4 GiB (docs/security.md).
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(256 << 20);
  // What one peer may hold (docs/security.md, "Network peers"). gRPC 1.51 takes these per
  // server, so they apply to the Unix socket too: calls in flight per connection (a client
  // queues the rest), the time a connection may take to finish its handshake, and a memory quota
  // for connections' buffers.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(config.max_streams));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config.handshake_timeout.count()));
  grpc::ResourceQuota quota("coopd");
  if (config.grpc_memory_bytes > 0) {
    quota.Resize(config.grpc_memory_bytes);
    builder.SetResourceQuota(quota);
  }
  const mode_t old_umask = umask(0177);  // the socket is created 0600
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_umask);
  if (!server) return absl::UnavailableError(StrCat("cannot listen on ", listen_name));
  std::vector<coop::v1::Listener> listeners;
  if (!activated) {
    chmod(config.socket_path.c_str(), 0600);
    coop::v1::Listener unix_listener;
    unix_listener.set_address("unix:" + config.socket_path);
    unix_listener.set_tokens(access.enforced() && config.tokens_unix);
    unix_listener.set_mode("0600");
    if (config.socket_gid >= 0) {
      if (chown(config.socket_path.c_str(), static_cast<uid_t>(-1),
                static_cast<gid_t>(config.socket_gid)) != 0) {
        return absl::FailedPreconditionError(
            StrCat("--socket-group ", config.socket_group, ": cannot give ", config.socket_path,
                   " to the group: ", std::strerror(errno),
                   " (coopd's user must be root or a member of the group)"));
      }
      chmod(config.socket_path.c_str(), 0660);
      unix_listener.set_mode(StrCat("0660 group ", config.socket_group));
    }
    listeners.push_back(std::move(unix_listener));
  }
  std::unique_ptr<InheritedListener> inherited_listener;
  if (activated) {
    auto l = InheritedListener::Start(*inherited, server.get());
    if (!l.ok()) return l.status();
    inherited_listener = std::move(*l);
  }
  for (size_t i = 0; i < config.listen.size(); ++i) {
    if (tcp_ports[i] == 0) {
      return absl::UnavailableError(StrCat("--listen: cannot listen on ", config.listen[i]));
    }
    const std::string host = ParseHostPort(config.listen[i]).value_or(HostPort{}).host;
    coop::v1::Listener l;
    l.set_address(StrCat("tcp ", host, ":", tcp_ports[i]));
    l.set_tls(tls);
    l.set_client_certificates(tls && !config.tls_client_ca.empty());
    l.set_tokens(access.enforced());
    l.set_insecure(!tls || (!l.client_certificates() && !l.tokens()));
    if (!tls) {
      spdlog::warn(
          "INSECURE (--insecure): listening on tcp {}:{} WITHOUT TLS{}: anyone on the network "
          "path can read and change requests and artifacts{}; use --tls-cert and --tls-key "
          "(docs/security.md)",
          host, tcp_ports[i], l.tokens() ? "" : " OR AUTHENTICATION",
          l.tokens() ? ", and read the bearer tokens" : ", and anyone who can reach it can use it");
    } else if (l.insecure()) {
      spdlog::warn(
          "INSECURE (--insecure): listening on tcp {}:{} with TLS but WITHOUT CLIENT "
          "AUTHENTICATION: anyone who can reach it can compile, purge and vacuum; use "
          "--tokens-file or --tls-client-ca (docs/security.md)",
          host, tcp_ports[i]);
    } else {
      spdlog::info("listening on tcp {}:{} (TLS{}{})", host, tcp_ports[i],
                   l.client_certificates() ? ", client certificates of " + config.tls_client_ca
                                           : std::string(),
                   l.tokens() ? ", bearer tokens" : "");
    }
    listeners.push_back(std::move(l));
  }
  grpc_service.SetListeners(std::move(listeners));
  server->GetHealthCheckService()->SetServingStatus(kCoopServiceName, true);
  std::unique_ptr<MetricsServer> metrics;
  if (!config.metrics_address.empty()) {
    auto m = MetricsServer::Start(config.metrics_address, &service,
                                  [&grpc_service] { return grpc_service.Stats(); });
    if (!m.ok()) return m.status();
    metrics = std::move(*m);
    spdlog::info("metrics: http://{}:{}/metrics",
                 ParseHostPort(config.metrics_address).value_or(HostPort{}).host, metrics->port());
  }
  const ClientLimitOptions& cl = config.rpc_limits.clients;
  spdlog::info(
      "limits: messages {} MiB, operator source {} KiB, bundle {} specs, plan {} specs, {} user "
      "operators; per client {} in flight, {}",
      config.rpc_limits.max_message_bytes >> 20, config.request_limits.op_source_bytes >> 10,
      config.request_limits.bundle_specs, config.request_limits.plan_specs,
      config.request_limits.user_ops,
      cl.max_in_flight == 0 ? std::string("unlimited") : std::to_string(cl.max_in_flight),
      cl.rate > 0 ? StrCat(cl.rate, " requests/s (burst ", cl.burst, ")")
                  : std::string("no rate limit"));
  if (config.quotas.compiles_per_minute > 0 || config.quotas.cache_bytes_per_hour > 0) {
    spdlog::info("quotas per client: {} compiles per minute, {} MiB into the cache per hour",
                 config.quotas.compiles_per_minute == 0
                     ? std::string("unlimited")
                     : std::to_string(config.quotas.compiles_per_minute),
                 config.quotas.cache_bytes_per_hour == 0
                     ? std::string("unlimited")
                     : std::to_string(config.quotas.cache_bytes_per_hour >> 20));
  }
  // The self-probe (server/rpc/self_probe.h): a listener that stopped accepting makes coopd
  // exit (status 1, "self-probe: ...") so that its supervisor restarts it.
  std::mutex probe_mu;
  std::string probe_failure;  // guarded by probe_mu
  std::unique_ptr<SelfProbe> self_probe;
  if (config.self_probe.count() > 0) {
    std::vector<ProbeTarget> targets;
    const std::string unix_path = activated ? inherited->path : config.socket_path;
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
        [&probe_mu, &probe_failure](const std::string& why) {
          {
            std::lock_guard<std::mutex> lock(probe_mu);
            probe_failure = why;
          }
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
  spdlog::info("ready: listening on {} (cache {})", listen_name, cache_path);
  NotifyReady(StrCat("serving on ", listen_name));
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
      if (absl::Status ok = CheckArch("--prewarm", arch, service.toolchain().Target()); !ok.ok()) {
        spdlog::warn("{}; skipping it", std::string(ok.message()));
        continue;
      }
      service.Prewarm({arch});
    }
  }

  // --idle-exit: once no call has arrived or been in flight, and no worker has compiled (a
  // pre-warm included), for that long, stop the way SIGTERM does. A daemon a client started on
  // demand (coop::Client's auto-start asks for 30 min) so goes away when nobody uses it.
  std::mutex idle_mu;
  std::condition_variable idle_cv;
  bool idle_stop = false;  // guarded by idle_mu
  std::thread idle_watch;
  if (config.idle_exit.count() > 0) {
    spdlog::info("idle exit: after {:.3g} s without calls or compiles (server.idle_exit_s)",
                 config.idle_exit.count() / 1000.0);
    idle_watch = std::thread([&] {
      const auto tick = std::clamp<std::chrono::milliseconds>(
          config.idle_exit / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
      auto last_busy = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(idle_mu);
      while (!idle_cv.wait_for(lock, tick, [&] { return idle_stop; })) {
        const auto now = std::chrono::steady_clock::now();
        const PoolStats workers = pool.Stats();
        if (grpc_service.in_flight() > 0 || workers.busy > 0 || workers.queue_depth > 0) {
          last_busy = now;
          continue;
        }
        if (now - std::max(last_busy, grpc_service.last_activity()) < config.idle_exit) continue;
        spdlog::info("idle for {:.3g} s (server.idle_exit_s): stopping",
                     config.idle_exit.count() / 1000.0);
        kill(getpid(), SIGTERM);
        return;
      }
    });
  }

  int sig = 0;
  sigwait(&signals, &sig);
  if (idle_watch.joinable()) {
    {
      std::lock_guard<std::mutex> lock(idle_mu);
      idle_stop = true;
    }
    idle_cv.notify_all();
    idle_watch.join();
  }
  spdlog::info("received {}; finishing {} request(s) in flight", strsignal(sig),
               grpc_service.in_flight());
  // Refuse new work (UNAVAILABLE: clients retry against the next daemon), stop eviction and
  // interrupt maintenance (each works in transactions: rolled back, or resumed at the next
  // start), give the requests already accepted the shutdown grace (5 s by default), then fail what
  // is left with UNAVAILABLE by killing its compile workers. SIGTERM thus stops coopd within
  // seconds whatever it was doing. gRPC's Shutdown(deadline) alone would also wait for idle
  // connections to go away, which a connected but quiet client never does.
  NotifyStopping();
  if (self_probe) self_probe->Stop();
  // Health checks say NOT_SERVING from now on, for load balancers and probes.
  server->GetHealthCheckService()->Shutdown();
  if (inherited_listener) inherited_listener->Stop();
  grpc_service.BeginDrain();
  service.BeginShutdown();
  if (!grpc_service.WaitIdle(std::chrono::steady_clock::now() + config.shutdown_grace)) {
    spdlog::warn("{} request(s) still in flight after {:.1f} s; cancelling their compiles",
                 grpc_service.in_flight(), config.shutdown_grace.count() / 1000.0);
    pool.CancelAll();
    if (!grpc_service.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(3))) {
      spdlog::warn("{} request(s) still in flight; closing anyway", grpc_service.in_flight());
    }
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  metrics.reset();
  executor.Drain();
  maintenance.Drain();
  pool.Shutdown();
  if (!activated) unlink(config.socket_path.c_str());
  spdlog::info("stopped");
  std::lock_guard<std::mutex> probe_lock(probe_mu);
  if (!probe_failure.empty()) {
    return absl::UnavailableError(StrCat("self-probe: a listener stopped answering (",
                                         probe_failure,
                                         "); exited so that the supervisor restarts coopd"));
  }
  return absl::OkStatus();
}

}  // namespace coopd
