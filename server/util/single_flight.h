// single_flight.h: joins concurrent requests for the same key into one piece of work.
//
// The first caller for a key becomes the leader and must start the work and call Complete();
// later callers register a callback and return at once. Complete() hands the one result (value
// or error) to every waiter. A waiter that stops caring (client cancelled, deadline passed)
// simply ignores its callback: the work goes on for the others. Errors are delivered, never
// remembered: the next request after a failure starts fresh work.
//
// Thread-safe. Callbacks run on the thread that calls Complete() (or Join(), for a re-check
// hit), never under the internal lock.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace coopd {

template <class T>
class SingleFlight {
 public:
  using Done = std::function<void(const absl::StatusOr<T>&)>;
  enum class Joined { kLeader, kWaiter, kServed };

  // `recheck` runs under the lock when no work is in flight for `key`: a result that finished
  // (and was published, e.g. stored in a cache) between the caller's own lookup and this call
  // is served from it instead of starting the work twice.
  Joined Join(const std::string& key, Done done,
              const std::function<std::optional<T>()>& recheck = nullptr) {
    std::optional<T> ready;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it != flights_.end()) {
        it->second.push_back(std::move(done));
        ++joined_;
        return Joined::kWaiter;
      }
      if (recheck) ready = recheck();
      if (!ready) {
        flights_[key].push_back(std::move(done));
        return Joined::kLeader;
      }
    }
    done(*ready);
    return Joined::kServed;
  }

  void Complete(const std::string& key, const absl::StatusOr<T>& result) {
    std::vector<Done> waiters;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it == flights_.end()) return;
      waiters.swap(it->second);
      flights_.erase(it);
    }
    for (auto& w : waiters) w(result);
  }

  void ZeroStats() {
    std::lock_guard<std::mutex> lock(mu_);
    joined_ = 0;
  }

  uint64_t joined() {
    std::lock_guard<std::mutex> lock(mu_);
    return joined_;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<Done>> flights_ ABSL_GUARDED_BY(mu_);
  uint64_t joined_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coopd
