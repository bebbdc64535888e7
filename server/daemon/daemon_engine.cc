// daemon_engine.cc: RunDaemon's engine side: the tuning tables, the toolchain, the private
// temporary directory and the clang workspace, the cache tiers (memory, disk, remote), the
// compile workers and their sandbox (WorkerSandbox), and the service's options.
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "server/cache/memory_cache.h"
#include "server/catalog/render.h"
#include "server/catalog/tuning.h"
#include "server/daemon/daemon_internal.h"
#include "server/engine/sandbox.h"
#include "server/util/strings.h"

namespace coopd {

absl::StatusOr<SandboxPolicy> WorkerSandbox(SandboxMode mode,
                                            const std::vector<Toolchain>& toolchains,
                                            const ClangWorkspace* clang_workspace) {
  namespace fs = std::filesystem;
  const Toolchain& tc = toolchains.front();
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
  for (const Toolchain& t : toolchains) add(&policy.read, t.cccl_include);
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

void ActivateTuningTables(const DaemonConfig& config) {
  if (config.tuning_tables != nullptr) tuning::SetActiveTables(config.tuning_tables);
  for (const auto& t : tuning::ActiveTables()->tables) {
    spdlog::info("tuning table {}: version {} sha256 {} ({}, {} cells{})", t.arch, t.version,
                 t.digest.substr(0, 16), t.source, t.cells.size(),
                 t.placeholder() ? ", placeholder: not measured" : "");
  }
}

absl::StatusOr<std::vector<Toolchain>> ProbeDaemonToolchains(const DaemonConfig& config) {
  ToolchainOptions tc_options;
  tc_options.cccl_include = config.cccl_include;
  tc_options.extra_cccls = config.cccls;
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
  std::string note;
  auto toolchains = ProbeToolchains(tc_options, &note);
  if (!toolchains.ok()) return toolchains.status();
  if (!note.empty()) spdlog::warn("{}", note);
  const Toolchain& first = toolchains->front();
  size_t hashed = 0, total = 0;
  for (const Toolchain& t : *toolchains) {
    hashed += t.headers_hashed;
    total += t.headers_total;
  }
  spdlog::info(
      "toolchain: NVRTC {}, nvJitLink {} ({} of {} header files hashed, {:.0f} ms)",
      first.NvrtcVersion(), first.NvJitLinkVersion(), hashed, total,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - probe_start)
          .count());
  for (const Toolchain& t : *toolchains) {
    spdlog::info("CCCL {} \"{}\" at {} ({}{}), header digest {}", t.cccl_version, t.cccl_name,
                 t.cccl_include, t.cccl_origin, &t == &first ? "; the default" : "",
                 t.header_digest.substr(0, 16));
  }
  return toolchains;
}

absl::Status MakeCompileDirs(const Toolchain& toolchain, CompileDirs* dirs) {
  auto temp_dir = DaemonTempDir::Create();
  if (!temp_dir.ok()) return temp_dir.status();
  dirs->temp_dir = std::move(*temp_dir);
  // The bitcode backend is optional: without clang, bitcode requests get FAILED_PRECONDITION.
  if (toolchain.clang.available()) {
    auto ws = ClangWorkspace::Create(toolchain.device_headers, dirs->temp_dir->path());
    if (ws.ok()) {
      dirs->clang_workspace = std::move(*ws);
      spdlog::info("bitcode: {} (workspace {})", toolchain.clang.Identity(),
                   dirs->clang_workspace->path());
    } else {
      spdlog::error("bitcode unavailable: {}", std::string(ws.status().message()));
    }
  } else {
    spdlog::info("bitcode unavailable (LTO-IR only): {}", toolchain.clang.UnavailableMessage());
  }
  return absl::OkStatus();
}

absl::Status OpenCacheTiers(const DaemonConfig& config, CacheTiers* tiers) {
  SqliteCacheOptions disk_options;
  disk_options.dir = config.cache_dir;
  disk_options.budget_bytes = config.disk_cache_bytes;
  auto disk = SqliteCache::Open(disk_options);
  tiers->cache = std::make_unique<TieredCache>();
  tiers->cache->AddTier(std::make_unique<MemoryCache>(config.memory_cache_bytes),
                        CacheOrigin::kMemory);
  if (disk.ok()) {
    tiers->disk_tier = disk->get();
    tiers->cache_path = (*disk)->path();
    tiers->cache->AddTier(std::move(*disk), CacheOrigin::kDisk);
  } else {
    // A newer schema is a decision for the user; anything else (unwritable directory, full
    // disk) must not stop coopd from serving: run on the memory tier alone.
    if (std::string(disk.status().message()).find("newer than this coopd") != std::string::npos) {
      return disk.status();
    }
    spdlog::error("{}; serving WITHOUT a disk cache (memory tier only)",
                  std::string(disk.status().message()));
    tiers->cache_path = StrCat("(none: ", disk.status().message(), ")");
  }
  if (config.remote) {
    auto remote = std::make_unique<RemoteCache>(config.remote_cache);
    tiers->remote_tier = remote.get();
    // Fail open from the start: a Redis that is down now is a tier that is down, not an error.
    absl::Status ping = remote->Ping();
    spdlog::info("remote cache: {}{} (ttl {} s, pool {}, write {}, lease ttl {} ms, wait {} ms){}",
                 config.remote_cache.Redacted(), config.remote_cache.read_only ? " read-only" : "",
                 config.remote_cache.ttl.count(), config.remote_cache.pool_size,
                 config.remote_cache.write == RemoteWritePolicy::kSync ? "sync" : "async",
                 config.remote_cache.lease_ttl.count(), config.remote_cache.lease_wait.count(),
                 ping.ok() ? "" : StrCat("; not reachable yet: ", ping.message()));
    tiers->cache->AddTier(std::move(remote), CacheOrigin::kRemote);
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkerPoolOptions> WorkerPoolSettings(const DaemonConfig& config,
                                                     const std::vector<Toolchain>& toolchains,
                                                     const CompileDirs& dirs) {
  auto sandbox = WorkerSandbox(config.sandbox, toolchains, dirs.clang_workspace.get());
  if (!sandbox.ok()) return sandbox.status();
  WorkerPoolOptions pool_options;
  pool_options.sandbox = std::move(*sandbox);
  pool_options.workers = config.workers;
  pool_options.timeout = config.compile_timeout;
  pool_options.memory_limit_bytes = config.worker_memory_bytes;
  pool_options.temp_parent = dirs.temp_dir->path();
  if (config.pch) pool_options.warm_source = kPreludeUnit;  // automatic pre-warm
  return pool_options;
}

absl::Status StartWorkers(const DaemonConfig& config, WorkerPool* pool) {
  if (absl::Status s = pool->Start(); !s.ok()) return s;
  spdlog::info("compile workers: {} (timeout {:.3g} s{})", pool->size(),
               config.compile_timeout.count() / 1000.0,
               config.worker_memory_bytes
                   ? StrCat(", memory limit ", config.worker_memory_bytes >> 20, " MiB")
                   : std::string());
  return absl::OkStatus();
}

ServiceOptions ServiceSettings(const DaemonConfig& config, const CacheTiers& tiers,
                               const CompileDirs& dirs, std::vector<std::string>* history) {
  ServiceOptions options;
  options.compile.pch = config.pch;
  options.cache_path = tiers.cache_path;
  if (dirs.clang_workspace) options.clang_workspace = dirs.clang_workspace->path();
  options.remote = tiers.remote_tier;
  options.limits = config.request_limits;
  options.quotas = config.quotas;
  // The archs this cache last compiled for, read once: the service keeps the list up to date in
  // the file, and the pre-warm starts from it.
  if (config.pch) {
    options.prewarm_history = StrCat(config.cache_dir, "/prewarm-archs");
    *history = ReadPrewarmHistory(options.prewarm_history);
    options.prewarm_history_archs = *history;
  }
  return options;
}

}  // namespace coopd
