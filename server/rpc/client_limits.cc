#include "server/rpc/client_limits.h"

#include <algorithm>

#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

ClientLimiter::Admission& ClientLimiter::Admission::operator=(Admission&& o) noexcept {
  if (this != &o) {
    Release();
    limiter_ = o.limiter_;
    client_ = std::move(o.client_);
    o.limiter_ = nullptr;
  }
  return *this;
}

void ClientLimiter::Admission::Release() {
  if (limiter_ != nullptr) limiter_->Done(client_);
  limiter_ = nullptr;
}

absl::StatusOr<ClientLimiter::Admission> ClientLimiter::Admit(std::string_view client,
                                                              Clock::time_point now) {
  if (!enabled()) return Admission();
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = clients_.try_emplace(std::string(client));
  Entry& e = it->second;
  if (inserted) {
    e.tokens = options_.burst;
    e.refilled = now;
  }
  if (options_.max_in_flight > 0 && e.in_flight >= options_.max_in_flight) {
    ++refused_in_flight_;
    return absl::ResourceExhaustedError(StrCat(
        "client ", QuoteValue(client), " has ", e.in_flight,
        " requests in flight, the most one client may have (--client-max-in-flight ",
        options_.max_in_flight, ", COOPD_CLIENT_MAX_IN_FLIGHT); retry when one has finished"));
  }
  if (options_.rate > 0) {
    const double elapsed = std::chrono::duration<double>(now - e.refilled).count();
    if (elapsed > 0) {
      e.tokens = std::min<double>(options_.burst, e.tokens + elapsed * options_.rate);
      e.refilled = now;
    }
    if (e.tokens < 1) {
      const double wait = (1 - e.tokens) / options_.rate;
      ++refused_rate_;
      return absl::ResourceExhaustedError(StrCat(
          "client ", QuoteValue(client), " is over its rate limit of ", options_.rate,
          " requests per second with bursts of ", options_.burst,
          " (--client-rate, COOPD_CLIENT_RATE; --client-burst, COOPD_CLIENT_BURST); retry in ",
          static_cast<int64_t>(wait * 1000) + 1, " ms"));
    }
    e.tokens -= 1;
  }
  ++e.in_flight;
  std::string name = it->first;
  if (clients_.size() > kMaxTrackedClients) Sweep(now);
  return Admission(this, std::move(name));
}

void ClientLimiter::Done(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  if (it != clients_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

void ClientLimiter::Sweep(Clock::time_point now) {
  for (auto it = clients_.begin(); it != clients_.end();) {
    const Entry& e = it->second;
    const bool full =
        options_.rate <= 0 ||
        e.tokens + std::chrono::duration<double>(now - e.refilled).count() * options_.rate >=
            options_.burst;
    if (e.in_flight == 0 && full) {
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t ClientLimiter::tracked_clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return clients_.size();
}

}  // namespace coopd
