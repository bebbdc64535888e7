// metrics.h: the opt-in Prometheus endpoint (coopd --metrics HOST:PORT).
//
// RenderMetrics() turns the counters GetStats reports (the service's, and the gRPC edge's
// refusals) and the service's latency histograms into Prometheus text exposition format, with
// prometheus-cpp's serializer.
// MetricsServer serves it at GET /metrics over HTTP with civetweb; it never parses HTTP itself.
// A scrape reads counters and tables only, like GetStats: it takes no lock the disk tier holds.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/service/service.h"

struct mg_context;

namespace coopd {

// OK when `address` is HOST:PORT with a port in 0..65535; else INVALID_ARGUMENT naming
// `source` (the flag or variable it came from) and the form expected.
absl::Status CheckMetricsAddress(const std::string& address, const std::string& source);

// Where a scrape's counters come from: what GetStats answers (the gRPC edge's
// CoopService::Stats, the service's counters with the edge's refusals added).
using StatsSource = std::function<coop::v1::Stats()>;

// The metrics, in text exposition format (version 0.0.4): the counters of `stats` and the
// service's histograms. Documented in docs/operators.md.
std::string RenderMetrics(Service& service, const coop::v1::Stats& stats);

class MetricsServer {
 public:
  // Listens on `address` ("HOST:PORT"; PORT 0 picks a free port). INVALID_ARGUMENT naming
  // --metrics for a malformed address; UNAVAILABLE when it cannot listen. Each scrape reads
  // `stats` (null: the service's own GetStats, without the edge's counters); it and `service`
  // must outlive the server.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              Service* service,
                                                              StatsSource stats = nullptr);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }  // the port it listens on
  Service* service() const { return service_; }
  const StatsSource& stats() const { return stats_; }

 private:
  MetricsServer() = default;
  mg_context* ctx_ = nullptr;
  Service* service_ = nullptr;
  StatsSource stats_;
  int port_ = 0;
};

}  // namespace coopd
