// metrics.cc: the Prometheus endpoint: metric families from a StatsReader, served by
// prometheus-cpp's Exposer.
#include "server/metrics/metrics.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "server/util/escape.h"
#include "server/util/host_port.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Builds one family at a time: Add() appends a sample with its labels.
class Families {
 public:
  Families& Begin(const std::string& name, MetricType type, const std::string& help) {
    families_.push_back(MetricFamily{"coopd_" + name, help, type, {}});
    return *this;
  }
  Families& Add(double value, std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric m;
    m.label = std::move(labels);
    switch (families_.back().type) {
      case MetricType::Counter:
        m.counter.value = value;
        break;
      case MetricType::Gauge:
        m.gauge.value = value;
        break;
      default:
        m.untyped.value = value;
        break;
    }
    families_.back().metric.push_back(std::move(m));
    return *this;
  }
  Families& AddHistogram(ClientMetric m, std::vector<ClientMetric::Label> labels = {}) {
    m.label = std::move(labels);
    families_.back().metric.push_back(std::move(m));
    return *this;
  }
  const std::vector<MetricFamily>& families() const { return families_; }

 private:
  std::vector<MetricFamily> families_;
};

}  // namespace

std::vector<MetricFamily> CollectMetrics(StatsReader& reader) {
  const coop::v1::Stats s = reader.Counters();
  Families f;
  const auto counter = MetricType::Counter;
  const auto gauge = MetricType::Gauge;
  // One sample without labels.
  auto one = [&f](const char* name, MetricType type, const char* help, double value) {
    f.Begin(name, type, help).Add(value);
  };
  // One sample per cache tier, labelled tier="memory" etc.
  auto per_tier = [&f, &s](const char* name, MetricType type, const char* help,
                           double (*value)(const coop::v1::TierStats&)) {
    f.Begin(name, type, help);
    for (const auto& t : s.tiers()) f.Add(value(t), {{"tier", t.name()}});
  };
  using Tier = coop::v1::TierStats;
  auto d = [](uint64_t v) { return static_cast<double>(v); };

  one("requests_total", counter, "Specialize requests received (coopctl stats --zero resets)",
      d(s.requests()));
  one("invalid_requests_total", counter,
      "Requests the service answered INVALID_ARGUMENT (a bad spec, format or operator; "
      "undecodable ones are refused_calls_total{reason=\"undecodable\"})",
      d(s.invalid_requests()));
  f.Begin("refused_calls_total", counter,
          "Calls refused before the service saw them, by reason: unauthenticated (no valid bearer "
          "token), permission_denied (the token's role lacks the RPC's), client_in_flight and "
          "client_rate (the per-client limits), undecodable (not the RPC's message), oversized "
          "(over --max-message-mb); and compiles the per-client quotas refused: quota_compiles, "
          "quota_cache_bytes")
      .Add(d(s.unauthenticated_calls()), {{"reason", "unauthenticated"}})
      .Add(d(s.denied_calls()), {{"reason", "permission_denied"}})
      .Add(d(s.client_in_flight_refusals()), {{"reason", "client_in_flight"}})
      .Add(d(s.client_rate_refusals()), {{"reason", "client_rate"}})
      .Add(d(s.undecodable_requests()), {{"reason", "undecodable"}})
      .Add(d(s.oversized_requests()), {{"reason", "oversized"}})
      .Add(d(s.quota_compile_refusals()), {{"reason", "quota_compiles"}})
      .Add(d(s.quota_bytes_refusals()), {{"reason", "quota_cache_bytes"}});
  one("bundles_total", counter, "Bundle requests received", d(s.bundles()));
  per_tier("cache_hits_total", counter, "Cache lookups answered by each tier",
           [](const Tier& t) { return static_cast<double>(t.hits()); });
  one("cache_misses_total", counter, "Requests found in no cache tier", d(s.misses()));
  one("joined_requests_total", counter, "Requests that joined an identical compile in flight",
      d(s.joined_requests()));
  one("compiles_total", counter, "Successful compiles (NVRTC and clang)", d(s.compiles()));
  one("bitcode_compiles_total", counter, "Successful clang compiles (also in compiles_total)",
      d(s.bitcode_compiles()));
  one("compile_failures_total", counter, "Compiles that failed", d(s.compile_failures()));
  one("compile_timeouts_total", counter, "Compiles killed at the compile timeout",
      d(s.compile_timeouts()));
  one("requests_cancelled_total", counter,
      "Requests whose caller cancelled (or whose deadline passed) while they waited for a compile",
      d(s.requests_cancelled()));
  one("compiles_cancelled_total", counter,
      "Compiles and links dropped from the queue or stopped because no caller waited any more",
      d(s.compiles_cancelled()));
  one("pch_warm_compiles_total", counter, "Compiles served by a worker's warm PCH",
      d(s.pch_warm_compiles()));
  one("links_total", counter, "Link requests that ran nvJitLink", d(s.links()));
  one("link_failures_total", counter, "Links that failed", d(s.link_failures()));
  one("link_hits_total", counter, "Link requests served from the cache", d(s.link_hits()));
  f.Begin("compile_duration_seconds", MetricType::Histogram,
          "Compile time of each successful compile, as the worker measured it")
      .AddHistogram(reader.CompileSeconds());
  f.Begin("cache_hit_duration_seconds", MetricType::Histogram,
          "Time to serve a cache hit: lookup in the tiers, decode and check");
  for (auto& [tier, histogram] : reader.HitSeconds()) {
    f.AddHistogram(std::move(histogram), {{"tier", tier}});
  }
  one("queue_depth", gauge, "Compile jobs waiting for a worker", d(s.queue_depth()));
  uint64_t busy = 0, idle = 0, down = 0;
  for (const auto& w : s.worker_status()) ++(w.pid() == 0 ? down : w.busy() ? busy : idle);
  f.Begin("workers", gauge, "Compile worker processes by state (down: not running right now)")
      .Add(d(busy), {{"state", "busy"}})
      .Add(d(idle), {{"state", "idle"}})
      .Add(d(down), {{"state", "down"}});
  one("worker_restarts_total", counter, "Compile workers restarted", d(s.worker_restarts()));
  one("worker_crashes_total", counter, "Compile workers that died during a job",
      d(s.worker_crashes()));
  per_tier("cache_bytes", gauge, "Bytes stored in each cache tier (compressed, deduplicated)",
           [](const Tier& t) { return static_cast<double>(t.bytes()); });
  per_tier("cache_raw_bytes", gauge, "Uncompressed bytes of the entries of each cache tier",
           [](const Tier& t) { return static_cast<double>(t.raw_bytes()); });
  per_tier("cache_budget_bytes", gauge, "Byte budget of each cache tier",
           [](const Tier& t) { return static_cast<double>(t.budget_bytes()); });
  per_tier("cache_entries", gauge, "Entries in each cache tier",
           [](const Tier& t) { return static_cast<double>(t.entries()); });
  per_tier("cache_evictions_total", counter, "Entries evicted from each cache tier",
           [](const Tier& t) { return static_cast<double>(t.evictions()); });
  per_tier("cache_corruptions_total", counter, "Damaged records found (and dropped) in each tier",
           [](const Tier& t) { return static_cast<double>(t.corruptions()); });
  per_tier("cache_write_failures_total", counter, "Artifacts served but not stored, by tier",
           [](const Tier& t) { return static_cast<double>(t.write_failures()); });
  per_tier("cache_tier_degraded", gauge, "1 while a tier's last write failed (serving uncached)",
           [](const Tier& t) { return t.degraded() ? 1.0 : 0.0; });
  one("degraded", gauge,
      "1 while coopd serves without a working disk cache (compiling without caching)",
      s.cache_degraded() ? 1 : 0);
  one("uptime_seconds", gauge, "Seconds since coopd started", s.uptime_s());
  f.Begin("build_info", gauge, "The toolchain coopd compiles with (value 1)")
      .Add(1, {{"nvrtc", s.toolchain().nvrtc_version()},
               {"cccl", s.toolchain().cccl_version()},
               {"header_digest", s.toolchain().header_digest().substr(0, 16)}});
  return f.families();
}

// The Exposer's view of the reader: each scrape collects one reading.
class ReaderCollectable : public prometheus::Collectable {
 public:
  explicit ReaderCollectable(StatsReader* reader) : reader_(reader) {}
  std::vector<MetricFamily> Collect() const override { return CollectMetrics(*reader_); }

 private:
  StatsReader* reader_;
};

namespace {

int LogMessage(const mg_connection*, const char* message) {
  spdlog::warn("metrics: {}", message);
  return 1;
}

}  // namespace

absl::Status CheckMetricsAddress(const std::string& address, const std::string& source) {
  // Port 0: any free port (the log names the one taken).
  if (!ParseHostPort(address)) {
    return absl::InvalidArgumentError(
        StrCat(source, ": must be HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464), got ",
               QuoteValue(address)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address,
                                                                    StatsReader* reader) {
  if (absl::Status s = CheckMetricsAddress(address, "--metrics"); !s.ok()) return s;
  // civetweb names an IPv4 host as "HOST:PORT" and IPv6 as "[HOST]:PORT"; "+" would mean both.
  // Paths other than /metrics get civetweb's 404.
  static const CivetCallbacks* callbacks = [] {
    auto* c = new CivetCallbacks();
    c->log_message = LogMessage;
    return c;
  }();
  auto server = std::unique_ptr<MetricsServer>(new MetricsServer());
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", address, "num_threads", "2",
                                 "request_timeout_ms", "10000"},
        callbacks);
  } catch (const std::exception&) {
    return absl::UnavailableError(StrCat("--metrics: cannot listen on ", address,
                                         " (in use, or not an address of this machine)"));
  }
  server->collectable_ = std::make_shared<ReaderCollectable>(reader);
  server->exposer_->RegisterCollectable(server->collectable_);
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? 0 : ports[0];
  return server;
}

MetricsServer::~MetricsServer() = default;

}  // namespace coopd
