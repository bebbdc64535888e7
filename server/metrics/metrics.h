// metrics.h: the opt-in Prometheus endpoint (coopd --metrics HOST:PORT).
//
// The endpoint reads a StatsReader it is handed: the counters GetStats answers and the latency
// histograms. It knows nothing of the service; the daemon (server/daemon/service_stats.h) adapts
// the service and the gRPC edge to it. CollectMetrics() turns one reading into Prometheus metric
// families; MetricsServer serves them at GET /metrics with prometheus-cpp's Exposer, which writes
// the text format and runs the HTTP server. A scrape reads counters and tables only, like
// GetStats: it takes no lock the disk tier holds.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"

namespace prometheus {
class Exposer;
}

namespace coopd {

class ReaderCollectable;  // metrics.cc: the reader as the Exposer's Collectable

// OK when `address` is HOST:PORT with a port in 0..65535; else INVALID_ARGUMENT naming
// `source` (the flag or variable it came from) and the form expected.
absl::Status CheckMetricsAddress(const std::string& address, const std::string& source);

// What a scrape reads. Called from the endpoint's threads, concurrently with requests.
class StatsReader {
 public:
  virtual ~StatsReader() = default;
  // The counters, as GetStats answers them.
  virtual coop::v1::Stats Counters() = 0;
  // The time of each successful compile (a histogram).
  virtual prometheus::ClientMetric CompileSeconds() = 0;
  // The time to serve a hit, one histogram per tier, with the tier's label value
  // ("memory", "disk", "remote").
  virtual std::vector<std::pair<std::string, prometheus::ClientMetric>> HitSeconds() = 0;
};

// The metrics of one reading, every name prefixed coopd_. Documented in docs/operators.md.
std::vector<prometheus::MetricFamily> CollectMetrics(StatsReader& reader);

class MetricsServer {
 public:
  // Listens on `address` ("HOST:PORT"; PORT 0 picks a free port). INVALID_ARGUMENT naming
  // --metrics for a malformed address; UNAVAILABLE when it cannot listen. `reader` must outlive
  // the server.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              StatsReader* reader);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }  // the port it listens on

 private:
  MetricsServer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<ReaderCollectable> collectable_;
  int port_ = 0;
};

}  // namespace coopd
