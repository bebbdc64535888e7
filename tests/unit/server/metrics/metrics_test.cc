// The /metrics endpoint on its own: it reads only the StatsReader it is handed (no service), and
// serves what CollectMetrics makes of one reading over real HTTP on a loopback port.
#include "server/metrics/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>

#include "prometheus/histogram.h"

namespace coopd {
namespace {

// A reader with fixed figures: what a scrape must report, sample by sample.
class FixedReader : public StatsReader {
 public:
  coop::v1::Stats Counters() override {
    ++reads;
    coop::v1::Stats s;
    s.set_requests(42);
    s.set_unauthenticated_calls(3);
    s.set_queue_depth(5);
    auto* t = s.add_tiers();
    t->set_name("memory");
    t->set_hits(7);
    t->set_bytes(1000);
    s.add_worker_status()->set_pid(0);  // down
    auto* busy = s.add_worker_status();
    busy->set_pid(99);
    busy->set_busy(true);
    s.mutable_toolchain()->set_cccl_version("3.0.1");
    return s;
  }
  prometheus::ClientMetric CompileSeconds() override {
    prometheus::Histogram h({0.1, 1});
    h.Observe(0.5);
    h.Observe(2);
    return h.Collect();
  }
  std::vector<std::pair<std::string, prometheus::ClientMetric>> HitSeconds() override {
    prometheus::Histogram h({0.001});
    h.Observe(0.0005);
    return {{"memory", h.Collect()}, {"disk", prometheus::Histogram({0.001}).Collect()}};
  }
  int reads = 0;
};

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families,
                                     const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "";
}

TEST(Metrics, CollectsTheReadersFiguresUnderCoopdNames) {
  FixedReader reader;
  const auto families = CollectMetrics(reader);
  EXPECT_EQ(reader.reads, 1);  // one reading per scrape
  for (const auto& f : families) EXPECT_EQ(f.name.rfind("coopd_", 0), 0u) << f.name;
  const auto* requests = Find(families, "coopd_requests_total");
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->type, prometheus::MetricType::Counter);
  EXPECT_EQ(requests->metric.at(0).counter.value, 42);
  const auto* refused = Find(families, "coopd_refused_calls_total");
  ASSERT_NE(refused, nullptr);
  std::map<std::string, double> by_reason;
  for (const auto& m : refused->metric) by_reason[Label(m, "reason")] = m.counter.value;
  EXPECT_EQ(by_reason["unauthenticated"], 3);
  EXPECT_EQ(by_reason["oversized"], 0);
  const auto* workers = Find(families, "coopd_workers");
  ASSERT_NE(workers, nullptr);
  std::map<std::string, double> by_state;
  for (const auto& m : workers->metric) by_state[Label(m, "state")] = m.gauge.value;
  EXPECT_EQ(by_state["busy"], 1);
  EXPECT_EQ(by_state["idle"], 0);
  EXPECT_EQ(by_state["down"], 1);
  const auto* hits = Find(families, "coopd_cache_hits_total");
  ASSERT_NE(hits, nullptr);
  ASSERT_EQ(hits->metric.size(), 1u);
  EXPECT_EQ(Label(hits->metric[0], "tier"), "memory");
  EXPECT_EQ(hits->metric[0].counter.value, 7);
  const auto* compile = Find(families, "coopd_compile_duration_seconds");
  ASSERT_NE(compile, nullptr);
  EXPECT_EQ(compile->type, prometheus::MetricType::Histogram);
  EXPECT_EQ(compile->metric.at(0).histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(compile->metric.at(0).histogram.sample_sum, 2.5);
  const auto* hit_time = Find(families, "coopd_cache_hit_duration_seconds");
  ASSERT_NE(hit_time, nullptr);
  ASSERT_EQ(hit_time->metric.size(), 2u);
  EXPECT_EQ(Label(hit_time->metric[0], "tier"), "memory");
  EXPECT_EQ(hit_time->metric[0].histogram.sample_count, 1u);
  EXPECT_EQ(Label(hit_time->metric[1], "tier"), "disk");
  const auto* build = Find(families, "coopd_build_info");
  ASSERT_NE(build, nullptr);
  EXPECT_EQ(Label(build->metric.at(0), "cccl"), "3.0.1");
}

// One HTTP/1.0 GET on 127.0.0.1:port; the whole response.
std::string Get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(Metrics, ServesTheReadingOverHttpAndOnlyAtSlashMetrics) {
  FixedReader reader;
  auto server = MetricsServer::Start("127.0.0.1:0", &reader);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  const std::string page = Get((*server)->port(), "/metrics");
  EXPECT_EQ(page.rfind("HTTP/1.1 200", 0), 0u) << page.substr(0, 200);
  EXPECT_NE(page.find("\r\nContent-Type: text/plain"), std::string::npos);
  EXPECT_NE(page.find("\ncoopd_requests_total 42\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\ncoopd_queue_depth 5\n"), std::string::npos);
  EXPECT_EQ(reader.reads, 1);
  EXPECT_NE(Get((*server)->port(), "/other").find(" 404 "), std::string::npos);
  // A second server on the same port cannot listen, and says which flag and address.
  auto clash = MetricsServer::Start("127.0.0.1:" + std::to_string((*server)->port()), &reader);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(clash.status().message().find("--metrics: cannot listen on 127.0.0.1:"),
            std::string::npos);
}

TEST(Metrics, RefusesAMalformedAddressNamingTheFlag) {
  FixedReader reader;
  auto bad = MetricsServer::Start("localhost", &reader);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--metrics: must be HOST:PORT"), std::string::npos);
}

}  // namespace
}  // namespace coopd
