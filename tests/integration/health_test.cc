// The standard gRPC health service of a real coopd, through Client::Health and coopctl health
// (Python's grpcio health and reflection clients: tests/python/test_ops.py; no daemon at all:
// Autostart.NeverForHealthChecks); and coopctl stop, which drains as SIGTERM does (its role:
// Access.StopNeedsTheAdminRole).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "coop/client.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

TEST(Health, ServingForTheDaemonAndItsServiceNotFoundForOthers) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  coop::Client client = d.Client();
  auto whole = client.Health();
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(*whole, coop::HealthStatus::kServing);
  auto coop_service = client.Health("coop.v1.Coop");
  ASSERT_TRUE(coop_service) << coop_service.error().message;
  EXPECT_EQ(*coop_service, coop::HealthStatus::kServing);
  auto other = client.Health("no.such.Service");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, coop::ErrorCode::kNotFound);
  EXPECT_TRUE(other.error().from_server);
  EXPECT_NE(other.error().message.find("\"no.such.Service\""), std::string::npos)
      << other.error().message;
}

TEST(Health, CoopctlHealthExitStatusAndOutput) {
  TestDaemon d({"--workers", "1"});
  ASSERT_TRUE(d.started);
  const std::string socket = d.process.socket_path();
  std::string out, err;
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "health"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "SERVING (" + socket + ")\n");
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "health", "--service", "coop.v1.Coop",
                        "--json"},
                       &out, &err),
            0)
      << err;
  EXPECT_EQ(out, "{\"status\":\"SERVING\",\"socket\":\"" + socket + "\"}\n");
  // A service coopd does not have: the health service's NOT_FOUND, exit status 1.
  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "health", "--service", "x.Y"}, &out, &err),
      1);
  EXPECT_NE(err.find("NOT_FOUND"), std::string::npos) << err;
  // Usage errors: exit status 2, naming the argument.
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "health", "--bogus"}, &out, &err), 2);
  EXPECT_NE(err.find("\"--bogus\""), std::string::npos) << err;
}

// From SIGTERM on, while the requests in flight finish, the health service says NOT_SERVING (a
// load balancer stops sending work) and the request in flight still gets its artifact.
TEST(Health, NotServingWhileDraining) {
  TempDir dir;
  std::string error;
  // A grace no compile reaches, so the daemon drains for as long as the compile takes.
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--shutdown-grace", "600", "--workers", "1"});
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  auto client = d.MakeClient();
  auto pending = StartFirstCompile(client);  // seconds of work in flight
  d.Signal(SIGTERM);
  // The signal is handled on coopd's own thread: ask until the answer changes.
  coop::Result<coop::HealthStatus> h = coop::HealthStatus::kServing;
  for (int i = 0; i < 6000 && h && *h == coop::HealthStatus::kServing; ++i) {
    h = client.Health();
    if (h && *h == coop::HealthStatus::kServing) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(h) << h.error().message << "\n" << d.Log();
  EXPECT_EQ(*h, coop::HealthStatus::kNotServing);
  auto a = pending.get();
  ASSERT_TRUE(a) << a.error().message << "\n" << d.Log();
  EXPECT_EQ(a->origin, coop::Origin::kCompiled);
  EXPECT_EQ(d.WaitExit(120s), 0) << d.Log();
}

// coopctl stop on a daemon with a compile in flight: the compile finishes (the drain), coopctl
// returns once the daemon no longer answers, the daemon exits 0 and removes its socket. With no
// daemon left, coopctl stop says so with exit status 3 and starts none.
TEST(Stop, CoopctlStopDrainsTheCallsInFlightAndTheDaemonExits) {
  TempDir dir;
  std::string error, out, err;
  const std::string socket = dir.path() + "/coopd.sock";
  CoopdProcess d(socket, dir.path() + "/cache", {"--shutdown-grace", "600", "--workers", "1"});
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  auto client = d.MakeClient();
  auto pending = StartFirstCompile(client);
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "stop"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "stopped (" + socket + ")\n");
  auto a = pending.get();
  ASSERT_TRUE(a) << "the call in flight finishes: " << a.error().message << "\n" << d.Log();
  EXPECT_EQ(a->origin, coop::Origin::kCompiled);
  EXPECT_EQ(d.WaitExit(120s), 0) << d.Log();
  EXPECT_NE(d.Log().find("stop requested; stopping"), std::string::npos) << d.Log();
  EXPECT_FALSE(std::filesystem::exists(socket));
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "stop"}, &out, &err), 3) << err;
  EXPECT_NE(err.find("coopd is not running on " + socket), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(socket)) << "stop starts no daemon";
}

// `coopctl health --probe-exit-codes` exits as grpc_health_probe does: 0 SERVING, 1 bad
// arguments, 2 connection failure, 3 RPC failure, 4 an answer other than SERVING.
TEST(Health, CoopctlHealthWithProbeExitCodesExitsAsGrpcHealthProbe) {
  TempDir dir;
  std::string error, out, err;
  const std::string socket = dir.path() + "/coopd.sock";
  auto health = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {COOPCTL_BINARY, "--socket", socket, "health",
                                     "--probe-exit-codes"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, &out, &err);
  };
  EXPECT_EQ(health({}), 2) << "nothing listens yet: " << err;
  EXPECT_NE(err.find("coopd is not running"), std::string::npos) << err;
  EXPECT_EQ(health({"--json"}), 2) << err;
  EXPECT_NE(out.find("\"NOT_RUNNING\""), std::string::npos) << out;
  EXPECT_EQ(health({"--bogus"}), 1) << err;
  EXPECT_NE(err.find("\"--bogus\""), std::string::npos) << err;
  EXPECT_EQ(health({"--bogus", "--json"}), 1) << err;
  EXPECT_NE(out.find("\"exit_status\":1"), std::string::npos) << out;

  CoopdProcess d(socket, dir.path() + "/cache", {"--shutdown-grace", "600", "--workers", "1"});
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  EXPECT_EQ(health({}), 0) << err;
  EXPECT_EQ(out, "SERVING (" + socket + ")\n");
  EXPECT_EQ(health({"--service", "x.Y"}), 3) << "NOT_FOUND is a failed call: " << err;
  EXPECT_NE(err.find("NOT_FOUND"), std::string::npos) << err;
  // Without the flag, coopctl's own statuses are unchanged.
  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "health", "--service", "x.Y"}, &out, &err),
      1);

  // Draining (a compile in flight, a grace it never reaches): NOT_SERVING is 4.
  auto client = d.MakeClient();
  auto pending = StartFirstCompile(client);
  d.Signal(SIGTERM);
  int status = 0;
  for (int i = 0; i < 3000 && status == 0; ++i) {
    status = health({});
    if (status == 0) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(status, 4) << out << err << "\n" << d.Log();
  EXPECT_NE(out.find("NOT_SERVING"), std::string::npos) << out;
  auto a = pending.get();
  ASSERT_TRUE(a) << a.error().message << "\n" << d.Log();
  EXPECT_EQ(d.WaitExit(120s), 0) << d.Log();
}

}  // namespace
}  // namespace coopd_test
