// service_stats.cc: the service and the gRPC edge as the /metrics endpoint's StatsReader.
#include "server/daemon/service_stats.h"

namespace coopd {

coop::v1::Stats ServiceStats::Counters() {
  return edge_.Stats();
}

prometheus::ClientMetric ServiceStats::CompileSeconds() {
  return service_.compile_seconds().Collect();
}

std::vector<std::pair<std::string, prometheus::ClientMetric>> ServiceStats::HitSeconds() {
  std::vector<std::pair<std::string, prometheus::ClientMetric>> out;
  for (auto [tier, name] :
       {std::pair{CacheOrigin::kMemory, "memory"}, std::pair{CacheOrigin::kDisk, "disk"},
        std::pair{CacheOrigin::kRemote, "remote"}}) {
    out.emplace_back(name, service_.hit_seconds(tier).Collect());
  }
  return out;
}

}  // namespace coopd
