// Integration tests of what clients say when a call fails: "not reachable" only when the
// transport failed (no daemon on the socket), never for an error a running coopd returned
// itself; and `coopctl COMMAND --help` for every command. Real coopd, real coopctl, the real
// sqlite3 CLI holding the cache database's lock from a second process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

// Every coopctl command and the first line of its usage in `coopctl --help`.
struct CommandUsage {
  std::string command;
  std::string usage;
};

const std::vector<CommandUsage>& Commands() {
  static const std::vector<CommandUsage> kCommands = {
      {"specialize",
       "  specialize FAMILY [--method M] --dtype T --threads X[,Y[,Z]] [--items N]\n"},
      {"link", "  link --arch sm_XX (--ltoir FILE | --ptx FILE)... [--artifact KEY]...\n"},
      {"plan", "  plan [--base-offset N] [--reserve NAME=BYTES[,ALIGN[,COUNT]]]... [--json]\n"},
      {"explain", "  explain SPEC [--format ltoir|bitcode] [--json]\n"},
      {"catalog", "  catalog [--cccl NAME|VERSION] [--json]\n"},
      {"stats", "  stats [--zero] [--json]\n"},
      {"ls", "  ls [--family F] [--dtype T] [--arch A] [--limit N] [--json | --manifest]\n"},
      {"purge", "  purge (--all | [--family F] [--dtype T] [--arch A]) [--json]\n"},
      {"verify", "  verify [--json]\n"},
      {"vacuum", "  vacuum [--json]\n"},
      {"health", "  health [--service NAME] [--probe-exit-codes] [--json]\n"},
      {"stop", "  stop [--no-wait] [--json]\n"},
      {"warm", "  warm MANIFEST [--jobs N] [--dry-run] [--json]\n"},
  };
  return kCommands;
}

// Runs coopctl against `socket` (no daemon needed for --help).
int Coopctl(const std::string& socket, std::vector<std::string> args, std::string* out,
            std::string* err) {
  std::vector<std::string> argv = {COOPCTL_BINARY, "--socket", socket};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, out, err);
}

TEST(CoopctlHelp, EveryCommandsHelpPrintsItsUsageAndExamplesAndExitsZero) {
  TempDir dir;
  const std::string socket = dir.path() + "/nobody.sock";
  for (const auto& c : Commands()) {
    for (const char* flag : {"--help", "-h"}) {
      std::string out, err;
      EXPECT_EQ(Coopctl(socket, {c.command, flag}, &out, &err), 0) << c.command << " " << flag;
      EXPECT_EQ(err, "") << c.command << " " << flag;
      EXPECT_EQ(out.rfind("coopctl " + c.command + ": ", 0), 0u) << out;
      EXPECT_NE(out.find(c.usage), std::string::npos) << c.command << ":\n" << out;
      EXPECT_NE(out.find("\nexamples:\n  coopctl " + c.command), std::string::npos) << out;
      // Only this command's usage, not every command's.
      for (const auto& other : Commands()) {
        if (other.command == c.command) continue;
        EXPECT_EQ(out.find(other.usage), std::string::npos) << c.command << ":\n" << out;
      }
    }
  }
}

TEST(CoopctlHelp, LinkHelpWinsWhereverItAppearsAmongTheArguments) {
  // The regression: `coopctl link --help` answered `link: unknown argument "--help"`.
  TempDir dir;
  const std::string socket = dir.path() + "/nobody.sock";
  const std::string& usage = Commands()[1].usage;
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"link", "--help"},
           {"link", "--arch", "sm_90", "--help"},
           {"link", "--bogus", "--help"},
           {"link", "--arch", "sm_90", "--ltoir", "/nonexistent.ltoir", "-h", "--out", "x"},
           {"specialize", "block_reduce", "--dtype", "float32", "+", "block_scan", "--help"}}) {
    std::string out, err;
    EXPECT_EQ(Coopctl(socket, args, &out, &err), 0) << args.back();
    EXPECT_EQ(err, "");
    EXPECT_NE(out.find(args[0] == "link" ? usage : Commands()[0].usage), std::string::npos) << out;
  }
  // The whole usage still lists every command.
  std::string out, err;
  EXPECT_EQ(Coopctl(socket, {"--help"}, &out, &err), 0);
  for (const auto& c : Commands()) EXPECT_NE(out.find(c.usage), std::string::npos) << out;
}

TEST(ClientErrors, NonexistentSocketIsUnavailableAndNotReachable) {
  TempDir dir;
  coop::ClientOptions options;
  options.socket_path = dir.path() + "/nobody.sock";
  options.timeout = 10s;
  coop::Client client(options);
  auto stats = client.GetStats();
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, coop::ErrorCode::kUnavailable) << stats.error().message;
  EXPECT_FALSE(stats.error().from_server);
  EXPECT_NE(stats.error().message.find("coopd is not reachable on " + options.socket_path),
            std::string::npos)
      << stats.error().message;
  auto verify = client.Verify();
  ASSERT_FALSE(verify);
  EXPECT_EQ(verify.error().code, coop::ErrorCode::kUnavailable);
  EXPECT_NE(verify.error().message.find("not reachable"), std::string::npos)
      << verify.error().message;

  std::string out, err;
  // Exit status 3: coopd unreachable.
  EXPECT_EQ(Coopctl(options.socket_path, {"vacuum"}, &out, &err), 3);
  EXPECT_EQ(err.rfind("coopctl: UNAVAILABLE: coopd is not reachable on " + options.socket_path, 0),
            0u)
      << err;
}

TEST(ClientErrors, StoppedDaemonIsUnavailableAndNotReachable) {
  TestDaemon d;
  ASSERT_TRUE(d.started);
  coop::Client client = d.Client();
  ASSERT_TRUE(client.GetStats());
  ASSERT_EQ(d.process.Stop(SIGTERM), 0) << d.process.Log();
  // The client that was connected, and a fresh one.
  coop::Client fresh = d.process.MakeClient();
  for (coop::Client* c : {&client, &fresh}) {
    auto stats = c->GetStats();
    ASSERT_FALSE(stats);
    EXPECT_EQ(stats.error().code, coop::ErrorCode::kUnavailable) << stats.error().message;
    EXPECT_FALSE(stats.error().from_server);
    EXPECT_NE(stats.error().message.find("not reachable"), std::string::npos)
        << stats.error().message;
  }
}

TEST(ClientErrors, DaemonsOwnErrorOnALockedDatabaseDoesNotSayNotReachable) {
  if (access("/usr/bin/sqlite3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/sqlite3";
  TempDir dir;
  TestDaemon d(dir.path(), {});
  ASSERT_TRUE(d.started);
  SqliteLockHolder lock(dir.path() + "/cache/cache.db");
  ASSERT_TRUE(lock.held()) << lock.output();

  // VACUUM needs the write lock the other process holds: after the daemon's 5 s busy timeout
  // SQLite says "database is locked". Whatever code coopd picks, the daemon answered.
  coop::Client client = d.Client();
  auto r = client.Vacuum();
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().from_server) << r.error().message;
  EXPECT_EQ(r.error().message.find("not reachable"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("locked"), std::string::npos) << r.error().message;

  std::string out, err;
  EXPECT_NE(Coopctl(d.process.socket_path(), {"vacuum"}, &out, &err), 0) << out;
  EXPECT_EQ(err.find("not reachable"), std::string::npos) << err;
  EXPECT_NE(err.find("locked"), std::string::npos) << err;

  // And a call the daemon answers successfully still works.
  EXPECT_TRUE(client.GetStats());
}

}  // namespace
}  // namespace coopd_test
