// cancel_token.h: says that the caller of a piece of work stopped waiting for it.
//
// The gRPC edge makes one per call and cancels it when the client cancels or its deadline
// passes (grpc_service.cc); the service carries it into the single-flight group (a waiter that
// cancels leaves its flight, single_flight.h), a flight carries its own to the worker pool (the
// last waiter to leave cancels it: the job is dropped from the queue, or its worker is killed,
// worker_pool.h).
//
// Cancel() is idempotent: the first call sets the status and runs every callback registered so
// far, once, on the calling thread, outside the token's lock; a callback registered after it
// runs at once, on the registering thread. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace coopd {

class CancelToken {
 public:
  using Callback = std::function<void(const absl::Status& why)>;

  // `why` must not be OK (CANCELLED, DEADLINE_EXCEEDED). True for the call that cancelled it.
  bool Cancel(absl::Status why) {
    if (why.ok()) why = absl::CancelledError("cancelled");
    std::vector<std::pair<uint64_t, Callback>> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status_.ok()) return false;
      status_ = why;
      run.swap(callbacks_);
    }
    for (auto& [id, fn] : run) fn(why);
    return true;
  }

  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !status_.ok();
  }
  // OK while not cancelled; else why it was.
  absl::Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

  // Runs `fn` when the token is cancelled (at once, here, when it already is). Returns an id
  // for Remove(); 0 when `fn` already ran.
  uint64_t OnCancel(Callback fn) {
    absl::Status why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status_.ok()) {
        callbacks_.emplace_back(++next_id_, std::move(fn));
        return next_id_;
      }
      why = status_;
    }
    fn(why);
    return 0;
  }
  // Forgets a callback that has not run (no effect once it has, or for id 0).
  void Remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
      if (it->first == id) {
        callbacks_.erase(it);
        return;
      }
    }
  }

 private:
  mutable std::mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, Callback>> callbacks_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coopd
