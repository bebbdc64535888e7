#include "server/service/daemon.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <nvrtc.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/numbers.h"
#include "coop/paths.h"
#include "server/cache/memory_cache.h"
#include "server/cache/remote_cache.h"
#include "server/cache/sqlite_cache.h"
#include "server/catalog/render.h"
#include "server/engine/bitcode.h"
#include "server/engine/worker_pool.h"
#include "server/metrics/metrics.h"
#include "server/rpc/access.h"
#include "server/rpc/grpc_service.h"
#include "server/rpc/inherited_listener.h"
#include "server/service/log_format.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

// The name of coopd's gRPC service, for health checks (proto/coop/v1/coop.proto).
constexpr char kCoopServiceName[] = "coop.v1.Coop";

constexpr char kUsage[] =
    "usage: coopd [--socket PATH] [--cache-dir DIR] [--cccl-include DIR] [--clang PATH]\n"
    "             [--workers N] [--compile-timeout SECONDS] [--worker-memory-mb N]\n"
    "             [--prewarm ARCHS] [--memory-cache-mb N] [--cache-max-mb N] [--no-pch]\n"
    "             [--shutdown-grace SECONDS] [--sandbox auto|require|off] [--log-level LEVEL]\n"
    "             [--remote-cache URL] [--remote-cache-password-file FILE]\n"
    "             [--listen HOST:PORT] [--metrics HOST:PORT] [--max-message-mb N]\n"
    "             [--max-op-source-kb N] [--max-bundle N] [--max-plan-specs N]\n"
    "             [--max-user-ops N] [--client-max-in-flight N] [--client-rate R]\n"
    "             [--client-burst N]\n"
    "             [--socket-group GROUP] [--tls-cert FILE --tls-key FILE] [--tls-client-ca FILE]\n"
    "             [--tokens-file FILE] [--tokens-unix] [--insecure] [--version]\n"
    "\n"
    "Serves CUB block/warp primitive specializations over gRPC on a Unix socket.\n"
    "  --socket PATH        Unix socket to listen on (env COOPD_SOCKET;\n"
    "                       default $XDG_RUNTIME_DIR/coopd/coopd.sock or "
    "/tmp/coopd-$UID/coopd.sock)\n"
    "  --cache-dir DIR      SQLite cache directory (env COOPD_CACHE_DIR;\n"
    "                       default $XDG_CACHE_HOME/coopd or ~/.cache/coopd)\n"
    "  --cccl-include DIR   CCCL headers root (env COOPD_CCCL_INCLUDE;\n"
    "                       default $CUDA_HOME/include/cccl or /usr/local/cuda/include/cccl)\n"
    "  --clang PATH         clang for LLVM bitcode artifacts, a path or a name on PATH (env\n"
    "                       COOPD_CLANG; default clang++-22, Debian's clang-22 package). Without\n"
    "                       it coopd serves LTO-IR only\n"
    "  --memory-cache-mb N  in-memory cache budget in MiB (env COOPD_MEMORY_CACHE_MB; default "
    "256)\n"
    "  --cache-max-mb N     disk cache budget in MiB; least recently used entries are evicted\n"
    "                       beyond it (env COOPD_CACHE_MAX_MB; default 5120)\n"
    "  --worker-memory-mb N address-space limit per compile worker and its clang, in MiB\n"
    "                       (env COOPD_WORKER_MEMORY_MB; default 2048; 0: unlimited)\n"
    "  --no-pch             disable NVRTC automatic precompiled headers\n"
    "  --prewarm ARCHS      build every worker's PCH for these archs (sm_90,sm_80) in the\n"
    "                       background at start (env COOPD_PREWARM; none: off); default: the\n"
    "                       archs this cache last compiled for (CACHE_DIR/prewarm-archs)\n"
    "  --shutdown-grace S   on SIGTERM/SIGINT, seconds the requests in flight may take before\n"
    "                       their compiles are cancelled (env COOPD_SHUTDOWN_GRACE; default 5)\n"
    "  --sandbox MODE       compile workers' confinement (env COOPD_SANDBOX; default auto):\n"
    "                       auto: Landlock + seccomp, or with a warning seccomp alone on a\n"
    "                       kernel without Landlock; require: refuse to start without Landlock;\n"
    "                       off: none (docs/security.md)\n"
    "  --log-level LEVEL    trace, debug, info, warn, error (env COOPD_LOG_LEVEL; default info)\n"
    "  --remote-cache URL   the farm tier shared by replicas (env COOPD_REMOTE_CACHE):\n"
    "                       redis://[USER:PASSWORD@]HOST:PORT[/PREFIX][?OPTIONS] or\n"
    "                       redis-cluster://HOST:PORT,HOST:PORT[/PREFIX][?OPTIONS]; options ttl,\n"
    "                       pool, write (sync|async), read_only, timeout_ms, connect_timeout_ms,\n"
    "                       lease_ttl_ms, lease_wait_ms, password_file (docs/farm.md)\n"
    "  --remote-cache-password-file FILE\n"
    "                       the Redis password, first line of FILE (env\n"
    "                       COOPD_REMOTE_CACHE_PASSWORD_FILE), so it is never on a command line\n"
    "  --listen HOST:PORT   also serve gRPC on TCP (env COOPD_LISTEN, comma-separated; may be\n"
    "                       repeated). Needs TLS (--tls-cert, --tls-key) and client\n"
    "                       authentication (--tokens-file or --tls-client-ca), or --insecure\n"
    "  --metrics HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics (env\n"
    "                       COOPD_METRICS; default off). Plain HTTP, no authentication\n"
    "Access control (docs/security.md):\n"
    "  --socket-group GROUP the Unix socket is 0660 and owned by GROUP, whose members may use\n"
    "                       it (env COOPD_SOCKET_GROUP; default: 0600, coopd's user alone)\n"
    "  --tls-cert FILE      PEM certificate chain for the --listen ports (env COOPD_TLS_CERT)\n"
    "  --tls-key FILE       its PEM private key; others may not read it (env COOPD_TLS_KEY)\n"
    "  --tls-client-ca FILE TCP clients must present a certificate this CA signed (mTLS; env\n"
    "                       COOPD_TLS_CLIENT_CA)\n"
    "  --tokens-file FILE   bearer tokens, one \"ROLE NAME TOKEN\" per line, ROLE read, compile\n"
    "                       or admin; TCP calls need one (env COOPD_TOKENS_FILE; mode 0600/0640)\n"
    "  --tokens-unix        calls on the Unix socket need a token too (env COOPD_TOKENS_UNIX=1)\n"
    "  --insecure           allow --listen without TLS or without client authentication, with\n"
    "                       warnings at start and in stats (env COOPD_INSECURE=1)\n"
    "Limits (docs/security.md); over one, a request gets the error named, the daemon serves on:\n"
    "  --max-message-mb N   largest request message in MiB, 1..4095 (env COOPD_MAX_MESSAGE_MB;\n"
    "                       default 64): RESOURCE_EXHAUSTED\n"
    "  --max-op-source-kb N largest user operator source in KiB, 1..16384 (env\n"
    "                       COOPD_MAX_OP_SOURCE_KB; default 1024): INVALID_ARGUMENT\n"
    "  --max-bundle N       specs per SpecializeBundle, 1..1024 (env COOPD_MAX_BUNDLE; default\n"
    "                       64): INVALID_ARGUMENT\n"
    "  --max-plan-specs N   Plan uses given by spec, 0..1024 (env COOPD_MAX_PLAN_SPECS; default\n"
    "                       1024): INVALID_ARGUMENT\n"
    "  --max-user-ops N     distinct user operators per request, 0..1024 (env\n"
    "                       COOPD_MAX_USER_OPS; default 16): INVALID_ARGUMENT\n"
    "  --client-max-in-flight N\n"
    "                       requests one client may have in flight, 0..65536, 0: no limit (env\n"
    "                       COOPD_CLIENT_MAX_IN_FLIGHT; default 256): RESOURCE_EXHAUSTED\n"
    "  --client-rate R      requests per second one client may send on average, 0: no limit\n"
    "                       (env COOPD_CLIENT_RATE; default 0) in bursts of up to\n"
    "  --client-burst N     requests, 1..1000000 (env COOPD_CLIENT_BURST; default 100):\n"
    "                       RESOURCE_EXHAUSTED. A client is its token's name when it presents\n"
    "                       one; otherwise the peer's address on TCP, and the coopd-client\n"
    "                       metadata it sends itself on the Unix socket (GetStats and Catalog\n"
    "                       are not limited)\n"
    "\n"
    "Started by systemd socket activation (LISTEN_FDS), coopd serves on the inherited socket\n"
    "and ignores --socket. Health: grpc.health.v1.Health (service \"\" or coop.v1.Coop);\n"
    "server reflection is on.\n";

// An fd holding an exclusive flock on "<socket>.lock" for the daemon's lifetime.
class SocketLock {
 public:
  ~SocketLock() {
    if (fd_ >= 0) close(fd_);
  }
  absl::Status Acquire(const std::string& socket_path) {
    const std::string path = socket_path + ".lock";
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      return absl::FailedPreconditionError(
          StrCat("cannot open lock file ", path, ": ", std::strerror(errno)));
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

// What compile workers may reach (engine/sandbox.h, docs/security.md): read the header roots
// and the toolchain's own files, write the clang workspace (and each worker its own temporary
// directory), execute clang. Logs what it decided; FAILED_PRECONDITION for `require` on a
// kernel without Landlock.
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
  // The headers a compile may include.
  policy.read.push_back(real(tc.cccl_include));
  policy.read.push_back(real(tc.cuda_include));
  // The CUDA toolkit (NVRTC's builtins library, clang's --cuda-path), and where libnvrtc lives.
  policy.read.push_back(fs::path(real(tc.cuda_include)).parent_path().string());
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
    policy.read.push_back(fs::path(real(info.dli_fname)).parent_path().string());
  }
  // Shared libraries (and the loader's cache), the host's C/C++ headers that clang's CUDA
  // wrappers include, /dev/null for clang's stdin.
  for (const char* p : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/include",
                        "/etc/ld.so.cache", "/dev/null"}) {
    policy.read.push_back(p);
  }
  if (tc.clang.available()) {
    // clang, its program interpreter, and its installation (the resource dir's headers).
    const std::string clang = real(tc.clang.path);
    policy.exec.push_back(clang);
    if (std::string interp = ProgramInterpreter(clang); !interp.empty()) {
      policy.exec.push_back(real(interp));
    }
    policy.read.push_back(fs::path(clang).parent_path().parent_path().string());
  }
  if (clang_workspace != nullptr) policy.write.push_back(clang_workspace->path());
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
      "compile sandbox: Landlock ABI {} + seccomp; reads {}; writes {} and each "
      "worker's temporary directory; executes {}",
      abi, StrJoin(policy.read, ", "),
      policy.write.empty() ? std::string("nothing else") : StrJoin(policy.write, ", "),
      policy.exec.empty() ? std::string("nothing") : StrJoin(policy.exec, ", "));
  return policy;
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

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* v = std::getenv("COOPD_CACHE_DIR"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return std::string(v) + "/coopd";
  if (const char* v = std::getenv("HOME"); v && *v) return std::string(v) + "/.cache/coopd";
  return "/tmp/coopd-" + std::to_string(getuid()) + "/cache";
}

absl::Status ParseDaemonArgs(int argc, char** argv, DaemonConfig* config, bool* exit_now) {
  *exit_now = false;
  config->socket_path = coop::DefaultSocketPath();
  config->cache_dir = DefaultCacheDir();
  config->cccl_include = EnvOr("COOPD_CCCL_INCLUDE", "");
  config->clang = EnvOr("COOPD_CLANG", config->clang);
  config->log_level = EnvOr("COOPD_LOG_LEVEL", "info");
  config->metrics_address = EnvOr("COOPD_METRICS", "");
  std::string metrics_source = "COOPD_METRICS";
  // Numeric settings: value and where it came from, for error messages (Setting, above).
  auto env_setting = [](const char* name) { return Setting{EnvOr(name, ""), name}; };
  Setting mem = env_setting("COOPD_MEMORY_CACHE_MB");
  Setting disk_mem = env_setting("COOPD_CACHE_MAX_MB");
  Setting workers = env_setting("COOPD_WORKERS");
  Setting timeout = env_setting("COOPD_COMPILE_TIMEOUT");
  Setting worker_mem = env_setting("COOPD_WORKER_MEMORY_MB");
  Setting prewarm = env_setting("COOPD_PREWARM");
  Setting grace = env_setting("COOPD_SHUTDOWN_GRACE");
  Setting remote = env_setting("COOPD_REMOTE_CACHE");
  Setting remote_password_file = env_setting("COOPD_REMOTE_CACHE_PASSWORD_FILE");
  Setting listen = env_setting("COOPD_LISTEN");
  std::vector<std::string> listen_flags;
  Setting sandbox = env_setting("COOPD_SANDBOX");
  Setting socket_group = env_setting("COOPD_SOCKET_GROUP");
  Setting tls_cert = env_setting("COOPD_TLS_CERT");
  Setting tls_key = env_setting("COOPD_TLS_KEY");
  Setting tls_client_ca = env_setting("COOPD_TLS_CLIENT_CA");
  Setting tokens_file = env_setting("COOPD_TOKENS_FILE");
  Setting insecure = env_setting("COOPD_INSECURE");
  Setting tokens_unix = env_setting("COOPD_TOKENS_UNIX");
  // Limits (docs/security.md): flag, environment variable, setting.
  struct LimitSetting {
    const char* flag;
    Setting setting;
  };
  LimitSetting limits[] = {
      {"--max-message-mb", env_setting("COOPD_MAX_MESSAGE_MB")},
      {"--max-op-source-kb", env_setting("COOPD_MAX_OP_SOURCE_KB")},
      {"--max-bundle", env_setting("COOPD_MAX_BUNDLE")},
      {"--max-plan-specs", env_setting("COOPD_MAX_PLAN_SPECS")},
      {"--max-user-ops", env_setting("COOPD_MAX_USER_OPS")},
      {"--client-max-in-flight", env_setting("COOPD_CLIENT_MAX_IN_FLIGHT")},
      {"--client-rate", env_setting("COOPD_CLIENT_RATE")},
      {"--client-burst", env_setting("COOPD_CLIENT_BURST")},
  };

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(StrCat(flag, ": missing value"));
      }
      return std::string(argv[++i]);
    };
    absl::StatusOr<std::string> v;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      *exit_now = true;
      return absl::OkStatus();
    } else if (arg == "--version") {
      std::cout << "coopd 0.1.0\n";
      *exit_now = true;
      return absl::OkStatus();
    } else if (arg == "--socket") {
      if (!(v = value("--socket")).ok()) return v.status();
      config->socket_path = *v;
    } else if (arg == "--cache-dir") {
      if (!(v = value("--cache-dir")).ok()) return v.status();
      config->cache_dir = *v;
    } else if (arg == "--cccl-include") {
      if (!(v = value("--cccl-include")).ok()) return v.status();
      config->cccl_include = *v;
    } else if (arg == "--clang") {
      if (!(v = value("--clang")).ok()) return v.status();
      config->clang = *v;
    } else if (arg == "--memory-cache-mb" || arg == "--workers" || arg == "--compile-timeout" ||
               arg == "--worker-memory-mb" || arg == "--prewarm" || arg == "--cache-max-mb" ||
               arg == "--shutdown-grace") {
      if (!(v = value(arg.c_str())).ok()) return v.status();
      Setting& target = arg == "--cache-max-mb"       ? disk_mem
                        : arg == "--memory-cache-mb"  ? mem
                        : arg == "--workers"          ? workers
                        : arg == "--compile-timeout"  ? timeout
                        : arg == "--worker-memory-mb" ? worker_mem
                        : arg == "--shutdown-grace"   ? grace
                                                      : prewarm;
      target = Setting{*v, arg};
    } else if (arg == "--sandbox") {
      if (!(v = value("--sandbox")).ok()) return v.status();
      sandbox = Setting{*v, "--sandbox"};
    } else if (arg == "--log-level") {
      if (!(v = value("--log-level")).ok()) return v.status();
      config->log_level = *v;
    } else if (arg == "--remote-cache") {
      if (!(v = value("--remote-cache")).ok()) return v.status();
      remote = Setting{*v, "--remote-cache"};
    } else if (arg == "--remote-cache-password-file") {
      if (!(v = value("--remote-cache-password-file")).ok()) return v.status();
      remote_password_file = Setting{*v, "--remote-cache-password-file"};
    } else if (arg == "--listen") {
      if (!(v = value("--listen")).ok()) return v.status();
      listen_flags.push_back(*v);
    } else if (arg == "--metrics") {
      if (!(v = value("--metrics")).ok()) return v.status();
      config->metrics_address = *v;
      metrics_source = "--metrics";
    } else if (arg == "--socket-group" || arg == "--tls-cert" || arg == "--tls-key" ||
               arg == "--tls-client-ca" || arg == "--tokens-file") {
      if (!(v = value(arg.c_str())).ok()) return v.status();
      Setting& target = arg == "--socket-group"    ? socket_group
                        : arg == "--tls-cert"      ? tls_cert
                        : arg == "--tls-key"       ? tls_key
                        : arg == "--tls-client-ca" ? tls_client_ca
                                                   : tokens_file;
      target = Setting{*v, arg};
    } else if (arg == "--insecure" || arg == "--tokens-unix") {
      (arg == "--insecure" ? insecure : tokens_unix) = Setting{"1", arg};
    } else if (arg == "--no-pch") {
      config->pch = false;
    } else if (auto limit = std::find_if(std::begin(limits), std::end(limits),
                                         [&](const LimitSetting& l) { return arg == l.flag; });
               limit != std::end(limits)) {
      if (!(v = value(limit->flag)).ok()) return v.status();
      limit->setting = Setting{*v, limit->flag};
    } else {
      return absl::InvalidArgumentError(
          StrCat("unknown argument \"", arg, "\" (see coopd --help)"));
    }
  }
  auto whole = [](const Setting& s, uint64_t max, const char* what, uint64_t* out) -> absl::Status {
    if (!absl::SimpleAtoi(s.value, out) || *out > max) {
      return absl::InvalidArgumentError(
          StrCat(s.source, ": must be ", what, " 0..", max, ", got \"", s.value, "\""));
    }
    return absl::OkStatus();
  };
  uint64_t n = 0;
  if (!mem.value.empty()) {
    if (absl::Status s = whole(mem, uint64_t{1} << 20, "a whole number of MiB", &n); !s.ok()) {
      return s;
    }
    config->memory_cache_bytes = n << 20;
  }
  if (!disk_mem.value.empty()) {
    if (absl::Status s = whole(disk_mem, uint64_t{1} << 30, "a whole number of MiB", &n); !s.ok()) {
      return s;
    }
    if (n == 0) {
      return absl::InvalidArgumentError(
          StrCat(disk_mem.source, ": must be at least 1 MiB, got \"", disk_mem.value, "\""));
    }
    config->disk_cache_bytes = n << 20;
  }
  if (!workers.value.empty()) {
    if (absl::Status s = whole(workers, 256, "a number of workers", &n); !s.ok()) return s;
    config->workers = static_cast<int>(n);
  }
  if (!worker_mem.value.empty()) {
    if (absl::Status s = whole(worker_mem, uint64_t{1} << 24, "a whole number of MiB", &n);
        !s.ok()) {
      return s;
    }
    config->worker_memory_bytes = n << 20;
  }
  {
    // Limits: whole numbers in a range (each times its unit), and the rate, a number.
    struct Range {
      uint64_t min, max, unit;
    };
    const Range ranges[] = {{1, 4095, 1 << 20}, {1, 16384, 1 << 10}, {1, 1024, 1},
                            {0, 1024, 1},       {0, 1024, 1},        {0, 65536, 1}};
    uint64_t values[6] = {
        config->rpc_limits.max_message_bytes, config->request_limits.op_source_bytes,
        config->request_limits.bundle_specs,  config->request_limits.plan_specs,
        config->request_limits.user_ops,      config->rpc_limits.clients.max_in_flight};
    for (size_t i = 0; i < 6; ++i) {
      const Setting& s = limits[i].setting;
      if (s.value.empty()) continue;
      if (!absl::SimpleAtoi(s.value, &n) || n < ranges[i].min || n > ranges[i].max) {
        return absl::InvalidArgumentError(StrCat(s.source, ": must be a whole number ",
                                                 ranges[i].min, "..", ranges[i].max, ", got ",
                                                 QuoteValue(s.value)));
      }
      values[i] = n * ranges[i].unit;
    }
    config->rpc_limits.max_message_bytes = values[0];
    config->request_limits.op_source_bytes = values[1];
    config->request_limits.bundle_specs = values[2];
    config->request_limits.plan_specs = values[3];
    config->request_limits.user_ops = values[4];
    config->rpc_limits.clients.max_in_flight = static_cast<uint32_t>(values[5]);
    const Setting& rate = limits[6].setting;
    if (!rate.value.empty()) {
      double r = 0;
      if (!absl::SimpleAtod(rate.value, &r) || !(r >= 0) || r > 1e6) {
        return absl::InvalidArgumentError(
            StrCat(rate.source,
                   ": must be a number of requests per second 0..1000000 (0: no "
                   "limit), got ",
                   QuoteValue(rate.value)));
      }
      config->rpc_limits.clients.rate = r;
    }
    const Setting& burst = limits[7].setting;
    if (!burst.value.empty()) {
      if (!absl::SimpleAtoi(burst.value, &n) || n < 1 || n > 1000000) {
        return absl::InvalidArgumentError(StrCat(
            burst.source, ": must be a whole number 1..1000000, got ", QuoteValue(burst.value)));
      }
      config->rpc_limits.clients.burst = static_cast<uint32_t>(n);
    }
  }
  auto seconds_setting = [](const Setting& s, bool zero_ok,
                            std::chrono::milliseconds* out) -> absl::Status {
    double seconds = 0;
    if (!absl::SimpleAtod(s.value, &seconds) || !(zero_ok ? seconds >= 0 : seconds > 0) ||
        seconds > 86400) {
      return absl::InvalidArgumentError(StrCat(s.source, ": must be a number of seconds ",
                                               zero_ok ? ">= 0" : "> 0", " and <= 86400, got \"",
                                               s.value, "\""));
    }
    *out = std::chrono::milliseconds(
        std::max<int64_t>(zero_ok ? 0 : 1, static_cast<int64_t>(seconds * 1000)));
    return absl::OkStatus();
  };
  if (!timeout.value.empty()) {
    if (absl::Status s = seconds_setting(timeout, false, &config->compile_timeout); !s.ok()) {
      return s;
    }
  }
  if (!grace.value.empty()) {
    if (absl::Status s = seconds_setting(grace, true, &config->shutdown_grace); !s.ok()) return s;
  }
  if (!sandbox.value.empty()) {
    if (sandbox.value == "auto") {
      config->sandbox = SandboxMode::kAuto;
    } else if (sandbox.value == "require") {
      config->sandbox = SandboxMode::kRequire;
    } else if (sandbox.value == "off") {
      config->sandbox = SandboxMode::kOff;
    } else {
      return absl::InvalidArgumentError(StrCat(
          sandbox.source, ": must be one of auto, require, off; got ", QuoteValue(sandbox.value)));
    }
  }
  config->prewarm_archs.clear();
  config->prewarm_from_history = prewarm.value.empty();
  if (prewarm.value == "none") prewarm.value.clear();
  for (size_t start = 0; start < prewarm.value.size();) {
    size_t comma = prewarm.value.find(',', start);
    if (comma == std::string::npos) comma = prewarm.value.size();
    std::string arch = prewarm.value.substr(start, comma - start);
    if (!arch.empty()) config->prewarm_archs.push_back(arch);
    start = comma + 1;
  }
  config->remote = !remote.value.empty();
  if (config->remote) {
    auto parsed = ParseRemoteCacheUrl(remote.value, remote.source, remote_password_file.value);
    if (!parsed.ok()) return parsed.status();
    config->remote_cache = std::move(*parsed);
  }
  config->listen.clear();
  std::vector<std::pair<std::string, std::string>> addresses;  // address, source
  for (size_t start = 0; start < listen.value.size();) {
    size_t comma = listen.value.find(',', start);
    if (comma == std::string::npos) comma = listen.value.size();
    if (comma > start)
      addresses.push_back({listen.value.substr(start, comma - start), listen.source});
    start = comma + 1;
  }
  if (!listen_flags.empty()) addresses.clear();  // flags override the environment
  for (const auto& f : listen_flags) addresses.push_back({f, "--listen"});
  for (const auto& [address, source] : addresses) {
    const size_t colon = address.rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
      return absl::InvalidArgumentError(
          StrCat(source, ": must be HOST:PORT (e.g. 0.0.0.0:7070, [::]:7070, 127.0.0.1:0), got \"",
                 address, "\""));
    }
    config->listen.push_back(address);
  }
  if (absl::Status s = AccessSettings(socket_group, tls_cert, tls_key, tls_client_ca, tokens_file,
                                      insecure, tokens_unix, config);
      !s.ok()) {
    return s;
  }
  if (!config->metrics_address.empty()) {
    if (absl::Status s = CheckMetricsAddress(config->metrics_address, metrics_source); !s.ok()) {
      return s;
    }
  }
  auto level = spdlog::level::from_str(config->log_level);
  if (level == spdlog::level::off && config->log_level != "off") {
    return absl::InvalidArgumentError(
        StrCat("log level must be one of trace, debug, info, warn, error, off; got \"",
               config->log_level, "\""));
  }
  if (config->socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError(StrCat("socket path is too long (",
                                             config->socket_path.size(), " bytes, max ",
                                             sizeof(sockaddr_un{}.sun_path) - 1, ")"));
  }
  return absl::OkStatus();
}

absl::Status RunDaemon(const DaemonConfig& config) {
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  // Every message escaped and bounded: requests' values cannot forge or flood log lines.
  InstallSafeLogFormat("%Y-%m-%dT%H:%M:%S.%e %^%l%$ coopd: %v");

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
  }

  ToolchainOptions tc_options;
  tc_options.cccl_include = config.cccl_include;
  tc_options.clang = config.clang;
  {
    std::error_code ec;
    std::filesystem::create_directories(config.cache_dir, ec);
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
  // The bitcode backend is optional: without clang, bitcode requests get FAILED_PRECONDITION.
  std::unique_ptr<ClangWorkspace> clang_workspace;
  if (toolchain->clang.available()) {
    auto ws = ClangWorkspace::Create(toolchain->device_headers);
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
  if (config.pch) options.prewarm_history = StrCat(config.cache_dir, "/prewarm-archs");
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
  // gRPC receives a whole message before any limit applies (its own limit only refuses it
  // then, with a message that names no flag): CoopService checks --max-message-mb itself, so
  // gRPC's limit is the protocol's, 4 GiB (docs/security.md).
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(256 << 20);
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
    const std::string host = config.listen[i].substr(0, config.listen[i].rfind(':'));
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
    auto m = MetricsServer::Start(config.metrics_address, &service);
    if (!m.ok()) return m.status();
    metrics = std::move(*m);
    spdlog::info("metrics: http://{}:{}/metrics",
                 config.metrics_address.substr(0, config.metrics_address.rfind(':')),
                 metrics->port());
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
  spdlog::info("ready: listening on {} (cache {})", listen_name, cache_path);
  NotifyReady(StrCat("serving on ", listen_name));
  std::vector<std::string> prewarm = config.prewarm_archs;
  if (config.prewarm_from_history && config.pch) {
    prewarm = ReadPrewarmHistory(StrCat(config.cache_dir, "/prewarm-archs"));
    if (!prewarm.empty()) {
      spdlog::info("pre-warming {} (the archs this cache compiled for last; --prewarm none: off)",
                   StrJoin(prewarm, ", "));
    }
  }
  if (!prewarm.empty()) {
    for (const auto& arch : prewarm) {
      TargetInfo target = service.toolchain().Target();
      coop::v1::PrimitiveSpec probe;
      probe.set_family("block_reduce");
      probe.set_dtype("float32");
      probe.mutable_block()->set_x(32);
      probe.set_arch(arch);
      if (auto ok = Canonicalize(probe, target); !ok.ok()) {
        spdlog::warn("--prewarm: skipping {}: {}", arch, std::string(ok.status().message()));
        continue;
      }
      service.Prewarm({arch});
    }
  }

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("received {}; finishing {} request(s) in flight", strsignal(sig),
               grpc_service.in_flight());
  // Refuse new work (UNAVAILABLE: clients retry against the next daemon), stop eviction and
  // interrupt maintenance (each works in transactions: rolled back, or resumed at the next
  // start), give the requests already accepted the shutdown grace (5 s by default), then fail what
  // is left with UNAVAILABLE by killing its compile workers. SIGTERM thus stops coopd within
  // seconds whatever it was doing. gRPC's Shutdown(deadline) alone would also wait for idle
  // connections to go away, which a connected but quiet client never does.
  NotifyStopping();
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
  return absl::OkStatus();
}

}  // namespace coopd
