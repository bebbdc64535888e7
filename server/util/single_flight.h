// single_flight.h: joins concurrent requests for the same key into one piece of work.
//
// The first caller for a key becomes the leader and must start the work and call Complete();
// later callers register a callback and return at once. Complete() hands the one result (value
// or error) to every waiter. Errors are delivered, never remembered: the next request after a
// failure starts fresh work.
//
// Cancellation: a waiter that joined with a CancelToken (cancel_token.h) leaves its flight when
// that token is cancelled: its callback gets the token's status (CANCELLED, DEADLINE_EXCEEDED)
// at once, and the work goes on for the others. When the last waiter leaves, the flight is
// abandoned: it is forgotten (the next request for the key starts fresh work) and its own token,
// which the leader got from Join() and handed to the work, is cancelled, so that the work stops
// (worker_pool.h drops a queued job, kills a running one). The abandoned work's Complete(), given
// that token, then reaches nobody, even if a new flight for the key has started meanwhile.
//
// Thread-safe. Callbacks run on the thread that calls Complete() (or Join(), for a re-check
// hit, or Cancel(), for a waiter that leaves), never under the internal lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/util/cancel_token.h"

namespace coopd {

template <class T>
class SingleFlight {
 public:
  using Done = std::function<void(const absl::StatusOr<T>&)>;
  // kRefused: no flight to join, and the caller may not lead one (JoinOptions::lead_refusal).
  enum class Joined { kLeader, kWaiter, kServed, kRefused };

  struct JoinOptions {
    // Runs under the lock when no work is in flight for the key: a result that finished (and
    // was published, e.g. stored in a cache) between the caller's own lookup and this call is
    // served from it instead of starting the work twice.
    std::function<std::optional<T>()> recheck;
    // The caller's: when cancelled, the caller leaves the flight (see above). Null: never.
    std::shared_ptr<CancelToken> cancel;
    // Not OK: join a flight in progress, but do not start one (e.g. the caller is over a quota
    // that only starting work spends); the callback gets this status instead.
    absl::Status lead_refusal;
    // For a leader: runs once when its flight ends (completed or abandoned), after the
    // waiters' callbacks (e.g. releasing a lease the work held).
    std::function<void()> on_end;
  };

  // Joins the flight for `key` or, as leader, starts one; `*flight` (when given) receives a
  // leader's flight token, which the work must honour and pass to Complete().
  Joined Join(const std::string& key, Done done, JoinOptions options,
              std::shared_ptr<CancelToken>* flight = nullptr) {
    std::optional<T> ready;
    std::shared_ptr<Flight> joined;
    uint64_t id = 0;
    Joined how = Joined::kWaiter;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it != flights_.end()) {
        joined = it->second;
        ++joined_;
      } else {
        if (options.recheck) ready = options.recheck();
        if (!ready && options.lead_refusal.ok()) {
          joined = std::make_shared<Flight>();
          joined->on_end = std::move(options.on_end);
          flights_[key] = joined;
          how = Joined::kLeader;
          if (flight != nullptr) *flight = joined->token;
        }
      }
      if (joined) {
        id = ++next_waiter_;
        joined->waiters.push_back(Waiter{id, std::move(done), options.cancel, 0});
      }
    }
    if (ready) {
      done(*ready);
      return Joined::kServed;
    }
    if (!joined) {
      done(options.lead_refusal);
      return Joined::kRefused;
    }
    if (options.cancel) {
      // Outside the lock: it runs Leave at once when the token is already cancelled.
      const uint64_t registration = options.cancel->OnCancel(
          [this, key, joined, id](const absl::Status& why) { Leave(key, joined, id, why); });
      std::lock_guard<std::mutex> lock(mu_);
      for (Waiter& w : joined->waiters) {
        if (w.id == id) w.registration = registration;
      }
    }
    return how;
  }

  // As above, without cancellation.
  Joined Join(const std::string& key, Done done,
              const std::function<std::optional<T>()>& recheck = nullptr) {
    JoinOptions options;
    options.recheck = recheck;
    return Join(key, std::move(done), std::move(options));
  }

  // Delivers `result` to the flight's waiters. With `flight` (the leader's token from Join),
  // only to that flight: nothing happens when it was abandoned.
  void Complete(const std::string& key, const absl::StatusOr<T>& result,
                const std::shared_ptr<CancelToken>& flight = nullptr) {
    std::shared_ptr<Flight> ended;
    std::vector<Waiter> waiters;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it == flights_.end()) return;
      if (flight && it->second->token != flight) return;
      ended = std::move(it->second);
      flights_.erase(it);
      waiters.swap(ended->waiters);
    }
    // The flight is out of the map: no waiter can join or leave it any more.
    for (Waiter& w : waiters) {
      if (w.cancel && w.registration != 0) w.cancel->Remove(w.registration);
      w.done(result);
    }
    if (ended->on_end) ended->on_end();
  }

  void ZeroStats() {
    std::lock_guard<std::mutex> lock(mu_);
    joined_ = 0;
    left_ = 0;
    abandoned_ = 0;
  }

  uint64_t joined() {
    std::lock_guard<std::mutex> lock(mu_);
    return joined_;
  }
  // Waiters that left their flight (cancelled), and flights abandoned by all their waiters.
  uint64_t left() {
    std::lock_guard<std::mutex> lock(mu_);
    return left_;
  }
  uint64_t abandoned() {
    std::lock_guard<std::mutex> lock(mu_);
    return abandoned_;
  }
  // Waiters of the flight in progress for `key` (0: none in progress). For tests.
  size_t waiters(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    return it == flights_.end() ? 0 : it->second->waiters.size();
  }

 private:
  struct Waiter {
    uint64_t id;
    Done done;
    std::shared_ptr<CancelToken> cancel;
    uint64_t registration;
  };
  struct Flight {
    std::vector<Waiter> waiters;
    std::shared_ptr<CancelToken> token = std::make_shared<CancelToken>();
    std::function<void()> on_end;
  };

  void Leave(const std::string& key, const std::shared_ptr<Flight>& flight, uint64_t id,
             const absl::Status& why) {
    Done done;
    bool abandon = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it == flights_.end() || it->second != flight) return;  // completed: already answered
      auto& waiters = flight->waiters;
      auto w = waiters.begin();
      while (w != waiters.end() && w->id != id) ++w;
      if (w == waiters.end()) return;
      done = std::move(w->done);
      waiters.erase(w);
      ++left_;
      if (waiters.empty()) {
        flights_.erase(it);
        ++abandoned_;
        abandon = true;
      }
    }
    done(why);
    if (abandon) {
      flight->token->Cancel(why);
      if (flight->on_end) flight->on_end();
    }
  }

  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
  uint64_t next_waiter_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t joined_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t left_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t abandoned_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coopd
