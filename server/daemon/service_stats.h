// service_stats.h: what the /metrics endpoint reads, wired by the daemon: the gRPC edge's
// GetStats answer (the service's counters with the edge's refusals added) and the service's
// latency histograms. It lets metrics/ read the service without depending on it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "server/metrics/metrics.h"
#include "server/rpc/grpc_service.h"
#include "server/service/service.h"

namespace coopd {

class ServiceStats : public StatsReader {
 public:
  // Both must outlive this reader.
  ServiceStats(Service& service, CoopService& edge) : service_(service), edge_(edge) {}

  coop::v1::Stats Counters() override;
  prometheus::ClientMetric CompileSeconds() override;
  std::vector<std::pair<std::string, prometheus::ClientMetric>> HitSeconds() override;

 private:
  Service& service_;
  CoopService& edge_;
};

}  // namespace coopd
