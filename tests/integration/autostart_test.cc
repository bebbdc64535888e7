// Integration tests of auto-start: a client (coop::Client, coopctl) with no daemon on its socket
// starts one; COOPD_NO_AUTOSTART turns that off; `coopctl stats` and `coopctl health` never start
// one; 20 processes started at once end up talking to exactly one daemon. Real coopd binaries, real
// processes.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "coop/client.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Auto-start on for this test (the harness turns it off for every other), the daemon's cache in
// `dir`, and whatever daemon is left on the socket stopped at the end.
class AutostartScope {
 public:
  AutostartScope(const std::string& dir, const std::string& socket) : socket_(socket) {
    unsetenv("COOPD_NO_AUTOSTART");
    setenv("COOPD_CACHE_DIR", (dir + "/cache").c_str(), 1);
    setenv("COOPD_BIN", COOPD_BINARY, 1);
  }
  ~AutostartScope() {
    for (pid_t pid : DaemonsOn(socket_)) {
      kill(pid, SIGTERM);
      for (int i = 0; i < 600 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(50ms);
    }
    setenv("COOPD_NO_AUTOSTART", "1", 1);
    unsetenv("COOPD_CACHE_DIR");
    unsetenv("COOPD_BIN");
  }

  // A process's command line.
  static std::vector<std::string> CommandLine(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::vector<std::string> args;
    std::string arg;
    for (char c : ss.str()) {
      if (c == '\0') {
        args.push_back(arg);
        arg.clear();
      } else {
        arg.push_back(c);
      }
    }
    return args;
  }

  // Whether `pid` has exited (a zombie counts: the daemon is reparented, and who reaps it is
  // not this test's business).
  static bool Exited(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(f, stat);
    const size_t paren = stat.rfind(')');
    return kill(pid, 0) != 0 || stat.empty() ||
           (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
  }

  // Daemon processes (not workers) whose command line names `socket`.
  static std::vector<pid_t> DaemonsOn(const std::string& socket) {
    std::vector<pid_t> out;
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return out;
    while (dirent* e = readdir(proc)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      const std::vector<std::string> args = CommandLine(pid);
      bool daemon = false, worker = false;
      for (size_t i = 0; i + 1 < args.size(); ++i) {
        daemon |= args[i] == "--socket" && args[i + 1] == socket;
        worker |= args[i] == "--worker-fd";
      }
      if (daemon && !worker && !args.empty() &&
          fs::path(args[0]).filename() == fs::path(COOPD_BINARY).filename()) {
        out.push_back(pid);
      }
    }
    closedir(proc);
    return out;
  }

 private:
  std::string socket_;
};

TEST(Autostart, AClientWithNoDaemonStartsOneAndTalksToIt) {
  TempDir dir;
  const std::string socket = dir.path() + "/run/coopd.sock";
  AutostartScope scope(dir.path(), socket);
  ASSERT_TRUE(AutostartScope::DaemonsOn(socket).empty());
  coop::ClientOptions options;
  options.socket_path = socket;
  options.timeout = 120s;  // a liveness bound: the daemon probes the toolchain first
  coop::Client client(options);
  auto stats = client.GetStats();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(AutostartScope::DaemonsOn(socket).size(), 1u);
  EXPECT_TRUE(fs::exists(dir.path() + "/run/coopd.log")) << "the daemon logs beside its socket";
  EXPECT_EQ(stats->cache_path, dir.path() + "/cache/cache.db") << "COOPD_CACHE_DIR reached it";
  // A second client finds it running and starts nothing.
  coop::Client second(options);
  ASSERT_TRUE(second.GetCatalog());
  EXPECT_EQ(AutostartScope::DaemonsOn(socket).size(), 1u);
}

// An auto-started daemon goes away when unused: the client asks for --idle-exit 1800 unless
// COOPD_IDLE_EXIT is set (which the daemon inherits). With 5 s (room for the client's first
// connect, whose reconnect backoff is up to 1 s), a compile in flight is not idle, and after it
// the daemon exits by itself, removing its socket.
TEST(Autostart, AnAutoStartedDaemonExitsAfterItsIdleTime) {
  TempDir dir;
  const std::string socket = dir.path() + "/run/coopd.sock";
  AutostartScope scope(dir.path(), socket);
  coop::ClientOptions options;
  options.socket_path = socket;
  options.timeout = 120s;
  unsetenv("COOPD_IDLE_EXIT");
  {
    coop::Client client(options);
    ASSERT_TRUE(client.GetStats());
    const auto daemons = AutostartScope::DaemonsOn(socket);
    ASSERT_EQ(daemons.size(), 1u);
    const auto args = AutostartScope::CommandLine(daemons[0]);
    const auto flag = std::find(args.begin(), args.end(), "--idle-exit");
    ASSERT_NE(flag, args.end()) << "the client asks for an idle exit";
    ASSERT_NE(flag + 1, args.end());
    EXPECT_EQ(*(flag + 1), "1800");
    auto stopped = client.Stop();
    ASSERT_TRUE(stopped) << stopped.error().message;
    for (int i = 0; i < 2400 && !AutostartScope::Exited(daemons[0]); ++i) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(AutostartScope::Exited(daemons[0])) << "Client::Stop stops it";
  }
  setenv("COOPD_IDLE_EXIT", "5", 1);
  coop::Client client(options);
  auto compiled = StartFirstCompile(client).get();
  unsetenv("COOPD_IDLE_EXIT");
  auto daemon_log = [&] {
    std::ifstream log(dir.path() + "/run/coopd.log");
    std::stringstream text;
    text << log.rdbuf();
    return text.str();
  };
  ASSERT_TRUE(compiled) << compiled.error().message << "\n" << daemon_log();
  EXPECT_EQ(compiled->origin, coop::Origin::kCompiled);
  // A liveness bound, not a measurement: the daemon must exit by itself, and its socket goes
  // last (after the drain and the workers).
  for (int i = 0; i < 2400 && fs::exists(socket); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_FALSE(fs::exists(socket)) << "the daemon removed its socket";
  for (int i = 0; i < 2400 && !AutostartScope::DaemonsOn(socket).empty(); ++i) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(AutostartScope::DaemonsOn(socket).empty());
  EXPECT_NE(daemon_log().find("idle for 5 s (server.idle_exit_s): stopping"), std::string::npos)
      << daemon_log();
}

TEST(Autostart, OffWithCoopdNoAutostartAndForCoopctlStats) {
  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock";
  AutostartScope scope(dir.path(), socket);
  setenv("COOPD_NO_AUTOSTART", "1", 1);
  coop::ClientOptions options;
  options.socket_path = socket;
  options.timeout = 10s;
  auto off = coop::Client(options).GetStats();
  ASSERT_FALSE(off);
  EXPECT_EQ(off.error().code, coop::ErrorCode::kUnavailable);
  EXPECT_NE(off.error().message.find("auto-start is off: COOPD_NO_AUTOSTART is set"),
            std::string::npos)
      << off.error().message;
  unsetenv("COOPD_NO_AUTOSTART");
  // coopctl stats reports on the daemon: it says it is not running instead of starting one.
  std::string out, err;
  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "--timeout", "10", "stats"}, &out, &err),
      3);  // coopd unreachable
  EXPECT_NE(err.find("not reachable"), std::string::npos) << err;
  EXPECT_TRUE(AutostartScope::DaemonsOn(socket).empty());
  EXPECT_FALSE(fs::exists(socket));
  // Any other command starts it.
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "catalog"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("block_reduce"), std::string::npos);
  EXPECT_EQ(AutostartScope::DaemonsOn(socket).size(), 1u);
}

// coopctl health says "not running" with exit status 3, and neither it nor Client::Health
// starts a daemon, even with auto-start on and a coopd binary at hand.
TEST(Autostart, NeverForHealthChecks) {
  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock";
  AutostartScope scope(dir.path(), socket);
  std::string out, err;
  EXPECT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "--timeout", "10", "health"}, &out, &err), 3);
  EXPECT_NE(err.find("coopd is not running on " + socket), std::string::npos) << err;
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "--timeout", "10", "health", "--json"},
                       &out, &err),
            3);
  EXPECT_NE(out.find("\"status\":\"NOT_RUNNING\""), std::string::npos) << out;
  coop::ClientOptions options;
  options.socket_path = socket;
  options.timeout = 10s;
  options.autostart = true;
  auto h = coop::Client(options).Health();
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, coop::ErrorCode::kUnavailable);
  EXPECT_FALSE(h.error().from_server);
  EXPECT_TRUE(AutostartScope::DaemonsOn(socket).empty());
  EXPECT_FALSE(fs::exists(socket));
}

TEST(Autostart, TwentyProcessesAtOnceEndUpWithExactlyOneDaemon) {
  TempDir dir;
  const std::string socket = dir.path() + "/coopd.sock";
  AutostartScope scope(dir.path(), socket);
  std::vector<pid_t> clients;
  for (int i = 0; i < 20; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      execl(COOPCTL_BINARY, "coopctl", "--socket", socket.c_str(), "--timeout", "120", "catalog",
            "--json", static_cast<char*>(nullptr));
      _exit(127);
    }
    clients.push_back(pid);
  }
  int succeeded = 0;
  for (pid_t pid : clients) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++succeeded;
  }
  EXPECT_EQ(succeeded, 20) << "every process got its answer";
  // The daemons that lost the socket's lock exit at once; wait for them (liveness bound).
  std::vector<pid_t> daemons;
  for (int i = 0; i < 200; ++i) {
    daemons = AutostartScope::DaemonsOn(socket);
    if (daemons.size() <= 1) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(daemons.size(), 1u);
  std::ifstream lock(socket + ".lock");
  pid_t owner = 0;
  lock >> owner;
  EXPECT_EQ(owner, daemons[0]) << "the one left is the one holding the lock";
}

}  // namespace
}  // namespace coopd_test
