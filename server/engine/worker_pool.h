// worker_pool.h: supervises coopd's compile-worker processes.
//
// NVRTC serializes compiles within a process and keeps its automatic PCH inside the process
// that built it, so parallel, warm compiles need long-lived processes. Each worker runs
// `coopd --worker-fd 3 ...` (worker.h) on one end of a socketpair; one thread per worker slot
// feeds it jobs and waits for replies.
//
// Routing: a job carries an affinity key (its header set: arch and option list). An idle worker
// takes the oldest job whose key matches the PCH it holds; failing that, the oldest job that no
// other idle worker holds the PCH for (so a request never goes to a cold worker while a warm one
// is free). clang jobs have no affinity (clang's precompiled header is a file all workers share)
// and leave a worker's NVRTC affinity as it was; so do NVRTC jobs without PCH (user operators).
// Background jobs (pre-warm) are pinned to one worker and taken only when no request is waiting,
// so they never delay requests or readiness.
//
// Automatic pre-warm (with `warm_source`): when a request's compile leaves its worker holding a
// header set's PCH, each idle worker that holds no PCH, or one that more workers hold than this
// set (by two or more), gets a background job compiling `warm_source` with that request's
// options. So once a header set has been seen, the next requests for it find warm workers.
//
// Supervision: a worker that dies mid-job fails that job with UNAVAILABLE naming the cause
// (signal or exit status) and is restarted at once; one found dead between jobs (its socket
// hung up) is restarted before the job is sent, which then runs normally; a job that exceeds the
// timeout kills its worker (SIGKILL), fails with DEADLINE_EXCEEDED, and the worker is restarted. An
// optional address-space limit (RLIMIT_AS) bounds each worker's memory.
//
// Cancellation: a job submitted with a CancelToken (util/cancel_token.h) that is cancelled is
// dropped from the queue if no worker has taken it, or, if one is running it, that worker is
// killed (SIGKILL) and restarted, as at the timeout; either way the job fails with the token's
// status (CANCELLED or DEADLINE_EXCEEDED) and counts in PoolStats::cancelled.
//
// Thread-safe. Completion callbacks run on the slot's thread, never under the pool's lock.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "coop/v1/worker.pb.h"
#include "server/engine/private_dir.h"
#include "server/engine/sandbox.h"
#include "server/util/cancel_token.h"

namespace coopd {

struct WorkerPoolOptions {
  int workers = 0;         // 0: one per core
  std::string executable;  // coopd itself; default /proc/self/exe
  std::chrono::milliseconds timeout{120000};
  uint64_t memory_limit_bytes = 0;  // RLIMIT_AS per worker (and its clang); 0: unlimited
  SandboxPolicy sandbox;            // what each worker confines itself to (sandbox.h)
  // The translation unit of an automatic pre-warm (the shared prelude include); empty: off.
  std::string warm_source;
  // The daemon's private parent directory (private_dir.h DaemonTempDir): each worker gets its
  // own mkdtemp'd worker-XXXXXX inside, its TMPDIR and only write root, removed when the worker
  // is reaped. Empty: Start() makes a parent of the pool's own (tests).
  std::string temp_parent;
};

struct WorkerInfo {
  pid_t pid = 0;  // 0 when not running
  bool busy = false;
  uint64_t jobs = 0;
  std::string affinity;  // header set of the PCH it holds ("" before its first compile)
};

struct PoolStats {
  int workers = 0;
  int busy = 0;
  uint64_t queue_depth = 0;
  uint64_t restarts = 0;
  uint64_t crashes = 0;
  uint64_t timeouts = 0;
  uint64_t cancelled = 0;  // jobs dropped from the queue or stopped because they were cancelled
  std::vector<WorkerInfo> info;
};

class WorkerPool {
 public:
  using Reply = coop::worker::v1::Reply;
  using Done = std::function<void(absl::StatusOr<Reply>)>;

  explicit WorkerPool(WorkerPoolOptions options);
  ~WorkerPool();

  // Spawns the workers. FAILED_PRECONDITION when none can be started.
  absl::Status Start();

  // Queues a job. `description` names it in errors ("block_reduce sum float32 sm_90").
  // `done` is called exactly once: with the reply, or with the error (a job the worker answered
  // with an error status carries that status). `cancel`: see Cancellation above (null: none).
  void Submit(coop::worker::v1::Request request, std::string affinity, std::string description,
              Done done, std::shared_ptr<CancelToken> cancel = nullptr);
  // A low-priority job for one worker (pre-warm). Dropped silently if the pool stops first.
  void SubmitBackground(int worker, coop::worker::v1::Request request, std::string affinity,
                        Done done);

  // Fails queued jobs with UNAVAILABLE, stops the background jobs (pre-warms) that are running
  // (no request waits for them, and a PCH build under load would hold the exit for as long as it
  // takes), waits for the other running ones, stops the workers.
  void Shutdown();
  // Shutdown's impatient first step: fails queued jobs with UNAVAILABLE and kills the workers
  // running jobs, whose jobs then fail with UNAVAILABLE ("shutting down; retry"); nothing is
  // restarted. Shutdown() must still be called.
  void CancelAll();

  PoolStats Stats();
  void ZeroStats();  // restarts, crashes, timeouts, cancellations, per-worker job counts
  int size() const { return static_cast<int>(slots_.size()); }

 private:
  // Refuses new jobs and fails the queued ones with UNAVAILABLE; kills the workers running
  // `which` jobs, background ones or all (their jobs then fail with UNAVAILABLE too).
  enum class Kill { kBackground, kAll };
  void StopAndFailQueued(Kill which);
  struct Job {
    coop::worker::v1::Request request;
    std::string affinity;
    std::string description;
    Done done;
    int pinned = -1;  // background job for this slot only
    uint64_t id = 0;  // for CancelJob; 0: not cancellable
  };
  struct Slot {
    pid_t pid = 0;
    int fd = -1;
    bool busy = false;
    bool background = false;  // the job it runs is one (busy)
    uint64_t jobs = 0;
    bool started_once = false;
    std::string affinity;
    std::string temp;        // its temporary directory (in options_.temp_parent)
    uint64_t job = 0;        // the id of the cancellable job it runs (busy), else 0
    absl::Status cancelled;  // not OK: that job was cancelled and the worker killed
  };

  void SlotLoop(int index);
  bool PickJob(int index, Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether an idle worker other than `index` holds the PCH of `affinity`.
  bool IdleWorkerHolds(int index, const std::string& affinity) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Automatic pre-warm after `job` left worker `index` holding its header set's PCH.
  void SpreadWarmth(int index, const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Spawn(int index);  // requires slot not running; takes mu_ itself
  void Reap(int index, bool kill_first, std::string* cause);
  absl::StatusOr<Reply> Run(int index, const Job& job);
  // Publishes the clang precompiled header a worker reported building (bitcode.h PublishPch).
  void PublishBuiltPch(int index, const Job& job, const Reply& reply);
  // The cancellation of job `id`: drops it from the queue (failing it with `why`), or kills the
  // worker running it (Run then fails it with `why` and restarts the worker).
  void CancelJob(uint64_t id, const absl::Status& why);

  WorkerPoolOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t crashes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t timeouts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_job_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
  std::unique_ptr<DaemonTempDir> own_temp_;  // when options_.temp_parent was empty
};

}  // namespace coopd
