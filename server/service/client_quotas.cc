#include "server/service/client_quotas.h"

#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

namespace {

// Whole seconds until `opened + window`, at least 1.
int64_t SecondsLeft(ClientQuotas::Clock::time_point opened, std::chrono::seconds window,
                    ClientQuotas::Clock::time_point now) {
  const auto left = std::chrono::ceil<std::chrono::seconds>(opened + window - now).count();
  return left < 1 ? 1 : left;
}

}  // namespace

void ClientQuotas::Roll(Entry& e, Clock::time_point now) {
  if (e.compiles > 0 && now - e.compile_window >= kCompileWindow) e.compiles = 0;
  if (e.bytes > 0 && now - e.bytes_window >= kBytesWindow) e.bytes = 0;
}

absl::Status ClientQuotas::TakeCompile(std::string_view client, Clock::time_point now) {
  if (!enabled()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = clients_.try_emplace(std::string(client));
  Entry& e = it->second;
  Roll(e, now);
  if (options_.cache_bytes_per_hour > 0 && e.bytes >= options_.cache_bytes_per_hour) {
    ++refused_bytes_;
    return absl::ResourceExhaustedError(StrCat(
        "client ", QuoteValue(client), " has inserted ", e.bytes,
        " bytes into the cache this hour, its quota (--quota-cache-mb-per-hour ",
        options_.cache_bytes_per_hour >> 20,
        ", COOPD_QUOTA_CACHE_MB_PER_HOUR); cached artifacts are still served; the quota resets in ",
        SecondsLeft(e.bytes_window, kBytesWindow, now), " s"));
  }
  if (options_.compiles_per_minute > 0 && e.compiles >= options_.compiles_per_minute) {
    ++refused_compiles_;
    return absl::ResourceExhaustedError(StrCat(
        "client ", QuoteValue(client), " has started ", e.compiles,
        " compiles this minute, its quota (--quota-compiles-per-minute ",
        options_.compiles_per_minute,
        ", COOPD_QUOTA_COMPILES_PER_MINUTE); cached artifacts are still served; the quota resets "
        "in ",
        SecondsLeft(e.compile_window, kCompileWindow, now), " s"));
  }
  if (e.compiles == 0) e.compile_window = now;
  ++e.compiles;
  if (clients_.size() > kMaxTrackedClients) Sweep(now);
  return absl::OkStatus();
}

void ClientQuotas::ReturnCompile(std::string_view client) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(std::string(client));
  if (it != clients_.end() && it->second.compiles > 0) --it->second.compiles;
}

void ClientQuotas::ChargeBytes(std::string_view client, uint64_t bytes, Clock::time_point now) {
  if (options_.cache_bytes_per_hour == 0 || bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = clients_[std::string(client)];
  Roll(e, now);
  if (e.bytes == 0) e.bytes_window = now;
  e.bytes += bytes;
}

void ClientQuotas::Sweep(Clock::time_point now) {
  for (auto it = clients_.begin(); it != clients_.end();) {
    Roll(it->second, now);
    if (it->second.compiles == 0 && it->second.bytes == 0) {
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t ClientQuotas::tracked_clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return clients_.size();
}

}  // namespace coopd
