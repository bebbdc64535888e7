#include "server/engine/worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "server/engine/bitcode.h"
#include "server/engine/framing.h"
#include "server/engine/worker.h"
#include "server/util/strings.h"

extern char** environ;

namespace coopd {

namespace {

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    return StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  if (WIFEXITED(status)) return StrCat("exited with status ", WEXITSTATUS(status));
  return "stopped";
}

// Left by workers of daemons before private directories (issue 27): NVRTC's automatic PCH
// (__nvrtc_auto_pch_<pid>_<n>, ~200 MB each) and the workers' $TMPDIR/coopd-worker-<pid>. Only
// this user's real directories whose pid no longer runs (private_dir.h); kept for one release.
size_t RemoveLegacyTempDirs() {
  size_t removed = 0;
  for (const std::string& dir : {TempBase(), std::string("/tmp")}) {
    removed += RemoveStalePidDirs(dir, {"__nvrtc_auto_pch_", kWorkerTempPrefix});
    if (dir == "/tmp") break;
  }
  return removed;
}

}  // namespace

WorkerPool::WorkerPool(WorkerPoolOptions options) : options_(std::move(options)) {
  if (options_.workers <= 0) {
    options_.workers = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  }
  if (options_.executable.empty()) options_.executable = "/proc/self/exe";
  slots_.resize(static_cast<size_t>(options_.workers));
}

WorkerPool::~WorkerPool() {
  Shutdown();
}

absl::Status WorkerPool::Start() {
  // Precompiled headers left by workers of earlier daemons that were killed.
  if (size_t stale = RemoveLegacyTempDirs(); stale > 0) {
    spdlog::info("removed {} precompiled-header directories left by killed compile workers", stale);
  }
  if (options_.temp_parent.empty()) {
    auto own = DaemonTempDir::Create();
    if (!own.ok()) return own.status();
    own_temp_ = std::move(*own);
    options_.temp_parent = own_temp_->path();
  }
  int started = 0;
  absl::Status last;
  for (int i = 0; i < options_.workers; ++i) {
    absl::Status s = Spawn(i);
    if (s.ok())
      ++started;
    else
      last = s;
  }
  if (started == 0) {
    return absl::FailedPreconditionError(StrCat("cannot start compile workers: ", last.message()));
  }
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this, i] { SlotLoop(i); });
  return absl::OkStatus();
}

absl::Status WorkerPool::Spawn(int index) {
  // Its own temporary directory, fresh (mkdtemp) in the daemon's private parent.
  auto temp = MakePrivateTempDir(options_.temp_parent, "worker-");
  if (!temp.ok()) return temp.status();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    RemoveOwnedTree(*temp);
    return absl::ResourceExhaustedError(StrCat("socketpair: ", std::strerror(errno)));
  }
  // posix_spawn: no code of ours runs between fork and exec in this multithreaded process.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 3);  // dup2 clears FD_CLOEXEC on fd 3
  std::vector<std::string> args = {options_.executable, "--worker-fd", "3", "--worker-parent",
                                   std::to_string(getpid())};
  if (options_.memory_limit_bytes > 0) {
    args.push_back("--worker-memory-bytes");
    args.push_back(std::to_string(options_.memory_limit_bytes));
  }
  args.push_back("--worker-sandbox");
  args.push_back(SandboxModeName(options_.sandbox.mode));
  args.push_back("--worker-temp");
  args.push_back(*temp);
  for (const auto& [flag, paths] : {std::pair<const char*, const std::vector<std::string>*>{
                                        "--worker-read", &options_.sandbox.read},
                                    {"--worker-write", &options_.sandbox.write},
                                    {"--worker-exec", &options_.sandbox.exec}}) {
    for (const auto& p : *paths) {
      args.push_back(flag);
      args.push_back(p);
    }
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, options_.executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    RemoveOwnedTree(*temp);
    return absl::FailedPreconditionError(
        StrCat("cannot start ", options_.executable, ": ", std::strerror(rc)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = slots_[static_cast<size_t>(index)];
  if (slot.started_once) ++restarts_;
  slot.started_once = true;
  slot.pid = pid;
  slot.fd = fds[0];
  slot.temp = std::move(*temp);
  slot.affinity.clear();
  spdlog::debug("worker {} started (pid {})", index, pid);
  return absl::OkStatus();
}

void WorkerPool::Reap(int index, bool kill_first, std::string* cause) {
  pid_t pid;
  int fd;
  std::string temp;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[static_cast<size_t>(index)];
    pid = slot.pid;
    fd = slot.fd;
    temp = std::move(slot.temp);
    slot.pid = 0;
    slot.fd = -1;
    slot.temp.clear();
    slot.affinity.clear();
  }
  if (fd >= 0) close(fd);
  if (pid <= 0) return;
  // Its temporary directory (NVRTC's PCH, ~200 MB, and clang's scratch) goes once it is dead.
  struct RemoveTemp {
    std::string dir;
    ~RemoveTemp() {
      if (!dir.empty()) RemoveOwnedTree(dir);
    }
  } remove_temp{std::move(temp)};
  if (kill_first) kill(pid, SIGKILL);
  int status = 0;
  // The worker closed its end or was killed; if it is somehow still running, make sure.
  for (int i = 0; i < 200; ++i) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (cause) *cause = DescribeExit(status);
      return;
    }
    if (r < 0) break;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (cause) *cause = DescribeExit(status);
}

void WorkerPool::Submit(coop::worker::v1::Request request, std::string affinity,
                        std::string description, Done done, std::shared_ptr<CancelToken> cancel) {
  uint64_t id = 0;
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      if (cancel) id = ++next_job_id_;
      queue_.push_back(Job{std::move(request), std::move(affinity), std::move(description),
                           std::move(done), -1, id});
      cv_.notify_all();
      queued = true;
    }
  }
  if (!queued) return done(absl::UnavailableError("coopd is shutting down; retry"));
  // Outside the lock: a token cancelled already cancels the job at once.
  if (cancel) cancel->OnCancel([this, id](const absl::Status& why) { CancelJob(id, why); });
}

void WorkerPool::CancelJob(uint64_t id, const absl::Status& why) {
  Job dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->id == id) {
        dropped = std::move(*it);
        queue_.erase(it);
        ++cancelled_;
        break;
      }
    }
    if (!dropped.done) {
      // Taken by a worker: stop it. Run() sees `cancelled`, fails the job and restarts it.
      for (Slot& slot : slots_) {
        if (slot.busy && slot.job == id && slot.cancelled.ok()) {
          slot.cancelled = why;
          if (slot.pid > 0) kill(slot.pid, SIGKILL);
        }
      }
      return;
    }
  }
  spdlog::info("{}: dropped from the compile queue, never started ({})", dropped.description,
               std::string(why.message()));
  dropped.done(absl::Status(why.code(), StrCat(dropped.description, ": ", why.message())));
}

void WorkerPool::SubmitBackground(int worker, coop::worker::v1::Request request,
                                  std::string affinity, Done done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || worker < 0 || worker >= static_cast<int>(slots_.size())) return;
  queue_.push_back(
      Job{std::move(request), std::move(affinity), "pre-warm", std::move(done), worker});
  cv_.notify_all();
}

bool WorkerPool::PickJob(int index, Job* job) {
  const std::string& mine = slots_[static_cast<size_t>(index)].affinity;
  auto take = [&](std::deque<Job>::iterator it) {
    *job = std::move(*it);
    queue_.erase(it);
    return true;
  };
  bool requests_waiting = false;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->pinned >= 0) continue;
    requests_waiting = true;
    if (!mine.empty() && it->affinity == mine) return take(it);
  }
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->pinned >= 0) continue;
    // Leave it to the idle worker that holds its PCH: that worker is woken too.
    if (!it->affinity.empty() && it->affinity != mine && IdleWorkerHolds(index, it->affinity)) {
      continue;
    }
    return take(it);
  }
  if (!requests_waiting) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->pinned == index) return take(it);
    }
  }
  return false;
}

bool WorkerPool::IdleWorkerHolds(int index, const std::string& affinity) const {
  for (int j = 0; j < static_cast<int>(slots_.size()); ++j) {
    const Slot& slot = slots_[static_cast<size_t>(j)];
    if (j != index && !slot.busy && slot.pid > 0 && slot.affinity == affinity) return true;
  }
  return false;
}

void WorkerPool::SpreadWarmth(int index, const Job& job) {
  if (options_.warm_source.empty() || stopping_) return;
  const std::string& set = job.affinity;
  std::map<std::string, int> holders;
  for (const Slot& slot : slots_) ++holders[slot.affinity];
  for (const Job& queued : queue_) {
    if (queued.pinned >= 0) ++holders[queued.affinity];  // warm-ups already on their way
  }
  for (int j = 0; j < static_cast<int>(slots_.size()); ++j) {
    const Slot& slot = slots_[static_cast<size_t>(j)];
    if (j == index || slot.busy || slot.pid <= 0 || slot.affinity == set) continue;
    const bool pinned_queued =
        std::any_of(queue_.begin(), queue_.end(), [j](const Job& q) { return q.pinned == j; });
    if (pinned_queued) continue;
    if (!slot.affinity.empty() && holders[slot.affinity] < holders[set] + 2) continue;
    Job warm;
    warm.request = job.request;
    auto* compile = warm.request.mutable_compile();
    compile->set_source(options_.warm_source);
    compile->clear_layouts();
    compile->clear_layout_inputs();
    compile->clear_required_symbols();
    compile->clear_probe_source();
    warm.affinity = set;
    warm.description = "automatic pre-warm";
    warm.pinned = j;
    warm.done = [j](absl::StatusOr<Reply> r) {
      if (r.ok()) {
        spdlog::debug("worker {} pre-warmed automatically in {:.0f} ms (PCH {})", j,
                      r->compile_ms(), r->pch_status());
      } else {
        spdlog::warn("worker {} automatic pre-warm failed: {}", j,
                     std::string(r.status().message()));
      }
    };
    --holders[slot.affinity];
    ++holders[set];
    queue_.push_back(std::move(warm));
  }
}

absl::StatusOr<WorkerPool::Reply> WorkerPool::Run(int index, const Job& job) {
  int fd;
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd = slots_[static_cast<size_t>(index)].fd;
    pid = slots_[static_cast<size_t>(index)].pid;
  }
  if (fd < 0) {
    if (absl::Status s = Spawn(index); !s.ok()) return absl::UnavailableError(s.message());
    std::lock_guard<std::mutex> lock(mu_);
    fd = slots_[static_cast<size_t>(index)].fd;
    pid = slots_[static_cast<size_t>(index)].pid;
  }
  // A job cancelled between PickJob and here: CancelJob has killed the worker already; it is
  // restarted below, as for a job cancelled while it runs (not as a worker that died idle).
  bool cancelled_early;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_early = !slots_[static_cast<size_t>(index)].cancelled.ok();
  }
  // An idle worker never writes, so a readable or hung-up socket means it died between jobs
  // (killed from outside, or by the OOM killer). Restart it before handing it this job, which it
  // never saw and must not fail for it.
  if (pollfd p{fd, POLLIN, 0}; !cancelled_early && poll(&p, 1, 0) > 0) {
    std::string cause;
    Reap(index, /*kill_first=*/true, &cause);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++crashes_;
    }
    spdlog::error("worker {} (pid {}) died while idle ({}); restarting it for {}", index, pid,
                  cause, job.description);
    if (absl::Status s = Spawn(index); !s.ok()) return absl::UnavailableError(s.message());
    std::lock_guard<std::mutex> lock(mu_);
    fd = slots_[static_cast<size_t>(index)].fd;
    pid = slots_[static_cast<size_t>(index)].pid;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  Reply reply;
  absl::Status s =
      cancelled_early ? absl::CancelledError("not started") : WriteFrame(fd, job.request);
  if (s.ok()) s = ReadFrame(fd, &reply, deadline);
  std::string cause;
  absl::Status cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[static_cast<size_t>(index)];
    cancelled.Update(slot.cancelled);
    slot.cancelled = absl::OkStatus();
    slot.job = 0;  // from here on, CancelJob leaves this worker alone
  }
  if (!cancelled.ok()) {
    // CancelJob killed the worker (SIGKILL): reap it and start another, as at the timeout. A
    // reply that came in first is still good (the caller's flight is gone; the cache takes it).
    Reap(index, /*kill_first=*/true, &cause);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++cancelled_;
    }
    spdlog::info("worker {} (pid {}) stopped: {} was cancelled ({}); restarting it", index, pid,
                 job.description, std::string(cancelled.message()));
    if (absl::Status spawn = Spawn(index); !spawn.ok()) {
      spdlog::error("worker {} could not be restarted: {}", index, std::string(spawn.message()));
    }
    if (s.ok() && reply.code() == 0) return reply;
    return absl::Status(cancelled.code(), StrCat(job.description, ": ", cancelled.message(),
                                                 "; its worker was stopped and restarted"));
  }
  if (s.ok()) {
    if (reply.code() != 0) {
      return absl::Status(static_cast<absl::StatusCode>(reply.code()), reply.message());
    }
    if (!reply.pch_built().empty() && job.request.has_compile() &&
        job.request.compile().backend() == coop::worker::v1::CompileJob::CLANG) {
      PublishBuiltPch(index, job, reply);
    }
    return reply;
  }
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
  }
  if (stopping) {
    // CancelAll() killed it: no restart, and the caller may retry against the next daemon.
    Reap(index, /*kill_first=*/true, &cause);
    return absl::UnavailableError(StrCat(job.description, ": coopd is shutting down; retry"));
  }
  if (absl::IsDeadlineExceeded(s)) {
    Reap(index, /*kill_first=*/true, &cause);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++timeouts_;
    }
    spdlog::warn("worker {} (pid {}) exceeded the {:.3g} s timeout on {}; killed", index, pid,
                 options_.timeout.count() / 1000.0, job.description);
    s = absl::DeadlineExceededError(
        StrCat(job.description, ": compile exceeded the ", options_.timeout.count() / 1000.0,
               " s timeout (--compile-timeout); its worker was stopped and restarted"));
  } else {
    Reap(index, /*kill_first=*/false, &cause);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++crashes_;
    }
    spdlog::error("worker {} (pid {}) died during {}: {}", index, pid, job.description, cause);
    s = absl::UnavailableError(
        StrCat(job.description, ": compile worker (pid ", pid, ") died while working on it (",
               cause, "); it was restarted, retry",
               options_.memory_limit_bytes > 0
                   ? StrCat(" (its address space is limited to ", options_.memory_limit_bytes >> 20,
                            " MiB by --worker-memory-mb; the death may be that limit)")
                   : std::string()));
  }
  // Restart now, so the next request finds a live worker.
  if (absl::Status spawn = Spawn(index); !spawn.ok()) {
    spdlog::error("worker {} could not be restarted: {}", index, std::string(spawn.message()));
  }
  return s;
}

void WorkerPool::PublishBuiltPch(int index, const Job& job, const Reply& reply) {
  // The clang precompiled header the worker built in its own directory becomes the workspace's,
  // read only to every worker (engine/bitcode.h).
  std::string temp;
  {
    std::lock_guard<std::mutex> lock(mu_);
    temp = slots_[static_cast<size_t>(index)].temp;
  }
  if (absl::Status s =
          PublishPch(job.request.compile().clang().workspace(), temp, reply.pch_built());
      !s.ok()) {
    spdlog::warn("worker {}: {}", index, std::string(s.message()));
  }
}

void WorkerPool::SlotLoop(int index) {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || PickJob(index, &job); });
      if (!job.done) return;  // stopping and nothing picked
      Slot& slot = slots_[static_cast<size_t>(index)];
      slot.busy = true;
      slot.background = job.pinned >= 0;
      slot.job = job.id;
    }
    absl::StatusOr<Reply> result = Run(index, job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[static_cast<size_t>(index)];
      slot.busy = false;
      slot.background = false;
      slot.job = 0;
      slot.cancelled = absl::OkStatus();
      ++slot.jobs;
      // A clang job leaves the worker's NVRTC PCH as it was (clang's is the daemon's, shared);
      // so does an NVRTC job without PCH.
      if (result.ok() && job.request.has_compile() &&
          job.request.compile().backend() == coop::worker::v1::CompileJob::NVRTC &&
          job.request.compile().pch() && slot.pid != 0) {
        slot.affinity = job.affinity;
        if (job.pinned < 0) SpreadWarmth(index, job);
      }
    }
    cv_.notify_all();
    job.done(std::move(result));
  }
}

void WorkerPool::StopAndFailQueued(Kill which) {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
    for (const Slot& slot : slots_) {
      const bool kill_it = which == Kill::kAll || (which == Kill::kBackground && slot.background);
      if (kill_it && slot.busy && slot.pid > 0) kill(slot.pid, SIGKILL);
    }
  }
  cv_.notify_all();
  for (auto& job : dropped) {
    if (job.pinned < 0) job.done(absl::UnavailableError("coopd is shutting down; retry"));
  }
}

void WorkerPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
  }
  StopAndFailQueued(Kill::kBackground);
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i) Reap(i, /*kill_first=*/false, nullptr);
}

void WorkerPool::CancelAll() {
  StopAndFailQueued(Kill::kAll);
}

void WorkerPool::ZeroStats() {
  std::lock_guard<std::mutex> lock(mu_);
  restarts_ = crashes_ = timeouts_ = cancelled_ = 0;
  for (Slot& slot : slots_) slot.jobs = 0;
}

PoolStats WorkerPool::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  PoolStats s;
  s.workers = static_cast<int>(slots_.size());
  for (const Slot& slot : slots_) {
    if (slot.busy) ++s.busy;
    s.info.push_back(WorkerInfo{slot.pid, slot.busy, slot.jobs, slot.affinity});
  }
  for (const Job& j : queue_) {
    if (j.pinned < 0) ++s.queue_depth;
  }
  s.restarts = restarts_;
  s.crashes = crashes_;
  s.timeouts = timeouts_;
  s.cancelled = cancelled_;
  return s;
}

}  // namespace coopd
