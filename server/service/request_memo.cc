#include "server/service/request_memo.h"

namespace coopd {

std::shared_ptr<const RequestMemo::Entry> RequestMemo::Find(const std::string& request,
                                                            bool count_miss) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<const Entry>* entry = lru_.Find(request);
  if (entry == nullptr) {
    if (count_miss) ++counters_.misses;
    return nullptr;
  }
  ++counters_.hits;
  return *entry;
}

void RequestMemo::CountMiss() {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.misses;
}

void RequestMemo::Remember(const std::string& request, Entry entry) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  counters_.evictions +=
      lru_.Put(request, std::make_shared<const Entry>(std::move(entry)), /*bytes=*/0);
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
