#include "server/service/request_memo.h"

namespace coopd {

std::shared_ptr<const RequestMemo::Entry> RequestMemo::Find(const std::string& request,
                                                            bool count_miss) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(request);
  if (it == index_.end()) {
    if (count_miss) ++counters_.misses;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++counters_.hits;
  return it->second->second;
}

void RequestMemo::CountMiss() {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.misses;
}

void RequestMemo::Remember(const std::string& request, Entry entry) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(request); it != index_.end()) {
    it->second->second = std::make_shared<const Entry>(std::move(entry));
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(request, std::make_shared<const Entry>(std::move(entry)));
  index_[request] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
    ++counters_.evictions;
  }
}

RequestMemo::Counters RequestMemo::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counters c = counters_;
  c.entries = lru_.size();
  return c;
}

void RequestMemo::ZeroStats() {
  std::lock_guard<std::mutex> lock(mu_);
  counters_ = Counters{};
}

}  // namespace coopd
