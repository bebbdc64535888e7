// Integration tests of coopctl as scripts use it: its exit statuses (usage error, unreachable
// daemon, refused request, a warm with failures), --json output of every command parsed as JSON,
// --target against a coopd listening on TCP, and `warm` (a 50-spec manifest under a real terminal,
// script(1), and piped; failures; manifest errors) with the `ls --manifest` round trip into a
// fresh cache. Real coopd processes, the real coopctl binary.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "coopd_process.h"
#include "nlohmann/json.hpp"
#include "redis_harness.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

// coopctl's exit statuses (coopctl --help, docs/operators.md).
constexpr int kUsage = 2, kUnreachable = 3, kRefused = 4, kPartial = 7;

int Coopctl(const std::vector<std::string>& args, std::string* out, std::string* err) {
  std::vector<std::string> argv = {COOPCTL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, out, err);
}

// Parses coopctl's --json output: one JSON document on one line.
Json ParseJson(const std::string& out) {
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one line: " << out;
  try {
    return Json::parse(out);
  } catch (const Json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "): " << out;
    return Json();
  }
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The keys `coopctl ls --json` lists.
std::set<std::string> Keys(const std::string& socket) {
  std::string out, err;
  EXPECT_EQ(Coopctl({"--socket", socket, "ls", "--json"}, &out, &err), 0) << err;
  std::set<std::string> keys;
  for (const auto& e : ParseJson(out)) keys.insert(e.at("key").get<std::string>());
  return keys;
}

// ---- Parsing and usage errors: no daemon needed ------------------------------------------------

TEST(CoopctlParse, UsageErrorsExitTwoAndNameTheFlagAndItsAllowedValues) {
  TempDir dir;
  const std::string socket = dir.path() + "/nobody.sock";
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"frob"}, "unknown command \"frob\""},
      {{}, "missing COMMAND"},
      {{"specialize", "block_reduce", "--items", "0x10"}, "--items"},
      {{"specialize", "block_reduce", "--abi", "fortran"}, "--abi"},
      {{"specialize", "block_reduce", "--abi", "fortran"}, "must be c or numba, got \"fortran\""},
      {{"specialize", "block_reduce", "--format", "ptx"},
       "--format: must be ltoir, bitcode or both, got \"ptx\""},
      {{"specialize", "block_reduce", "+", "block_scan", "--threads", "1,2,3,4"}, "--threads"},
      {{"specialize", "--dtype", "float32"}, "FAMILY"},
      {{"explain", "block_reduce", "--format", "both"}, "must be ltoir or bitcode, got \"both\""},
      {{"explain", "block_reduce", "+", "block_scan"}, "no \"+\" bundles"},
      {{"ls", "--limit", "-1"}, "--limit"},
      {{"ls", "--manifest", "--json"}, "--manifest"},
      {{"health", "--bogus"}, "unknown argument \"--bogus\""},
      {{"warm"}, "MANIFEST"},
      {{"warm", dir.path() + "/none.json"}, "cannot read"},
      {{"--timeout", "soon", "catalog"}, "--timeout"},
      {{"link", "--arch", "sm_90", "--out", "x.cubin"}, "--ltoir FILE or --ptx FILE"},
      {{"purge"}, "give --all, or a filter"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--socket", socket};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string out, err;
    EXPECT_EQ(Coopctl(args, &out, &err), kUsage) << c.needle << ": " << err;
    EXPECT_EQ(err.rfind("coopctl: ", 0), 0u) << err;
    EXPECT_NE(err.find(c.needle), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
    // With --json (here the error itself for ls), the same error as an object on stdout.
    const bool has_json = std::find(args.begin(), args.end(), "--json") != args.end();
    if (!has_json) {
      EXPECT_EQ(out, "");
      args.push_back("--json");
    }
    EXPECT_EQ(Coopctl(args, &out, &err), kUsage) << c.needle << ": " << err;
    const Json j = ParseJson(out);
    EXPECT_EQ(j["error"]["exit_status"], kUsage) << out;
    EXPECT_EQ(j["error"]["code"], "USAGE") << out;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.needle), std::string::npos) << out;
  }
  // The bad case for the checks above: a well-formed command is no usage error (no daemon: 3).
  std::string out, err;
  EXPECT_EQ(Coopctl({"--socket", socket, "--timeout", "10", "catalog"}, &out, &err), kUnreachable)
      << err;
}

TEST(CoopctlParse, HelpListsEveryOptionTheExitStatusesAndExamples) {
  std::string out, err;
  ASSERT_EQ(Coopctl({"--help"}, &out, &err), 0) << err;
  for (const char* needle :
       {"--socket PATH", "--target TARGET", "--timeout SECONDS", "--full-error", "2 usage error",
        "3 coopd unreachable", "4 request refused", "7 warm: some specs failed"}) {
    EXPECT_NE(out.find(needle), std::string::npos) << needle << " in\n" << out;
  }
  // Each command's help lists its own options (from CLI11) besides the synopsis and examples.
  const std::vector<std::pair<std::string, std::vector<std::string>>> options = {
      {"specialize",
       {"--dtype", "--threads", "--decoded-items", "--op-source", "--format", "--out", "--json"}},
      {"link", {"--arch", "--ltoir", "--ptx", "--artifact", "--keep-unused-variables", "--json"}},
      {"plan", {"--base-offset", "--reserve", "--json"}},
      {"explain", {"--dtype", "--format", "--json"}},
      {"catalog", {"--json"}},
      {"stats", {"--zero", "--json"}},
      {"ls", {"--family", "--limit", "--manifest", "--json"}},
      {"purge", {"--all", "--family", "--json"}},
      {"verify", {"--json"}},
      {"vacuum", {"--json"}},
      {"health", {"--service", "--json"}},
      {"warm", {"MANIFEST", "--jobs", "--dry-run", "--json"}},
  };
  for (const auto& [command, flags] : options) {
    ASSERT_EQ(Coopctl({command, "--help"}, &out, &err), 0) << command << ": " << err;
    EXPECT_NE(out.find("\nexamples:\n  coopctl "), std::string::npos) << out;
    for (const auto& flag : flags) {
      EXPECT_NE(out.find("  " + flag), std::string::npos) << command << " " << flag << "\n" << out;
    }
    // Not another command's options: warm's --jobs appears only in warm's help.
    if (command != "warm") {
      EXPECT_EQ(out.find("--jobs"), std::string::npos) << command;
    }
  }
}

TEST(CoopctlExit, UnreachableDaemonIsThreeForEveryCommandWithAJsonError) {
  TempDir dir;
  const std::string socket = dir.path() + "/nobody.sock";
  const std::string manifest = dir.path() + "/m.json";
  WriteText(manifest,
            R"({"specs": [{"family": "block_reduce", "dtype": "float32", "threads": 256,
                           "arch": "sm_90"}]})");
  const std::vector<std::string> spec = {"block_reduce", "--dtype", "float32", "--threads",
                                         "256",          "--arch",  "sm_90"};
  std::vector<std::vector<std::string>> commands = {
      {"catalog"}, {"stats"},  {"ls"},     {"ls", "--manifest"}, {"purge", "--all"},
      {"verify"},  {"vacuum"}, {"health"}, {"warm", manifest},   {"plan", "a", "--bytes", "8"}};
  for (const char* c : {"specialize", "explain"}) {
    std::vector<std::string> args = {c};
    args.insert(args.end(), spec.begin(), spec.end());
    commands.push_back(args);
  }
  for (const auto& c : commands) {
    std::vector<std::string> args = {"--socket", socket, "--timeout", "10"};
    args.insert(args.end(), c.begin(), c.end());
    std::string out, err;
    EXPECT_EQ(Coopctl(args, &out, &err), kUnreachable) << c[0] << ": " << err;
    EXPECT_NE(err.find(socket), std::string::npos) << c[0] << ": " << err;
    if (c[0] == "ls" && c.size() > 1) continue;  // --manifest and --json exclude each other
    args.push_back("--json");
    EXPECT_EQ(Coopctl(args, &out, &err), kUnreachable) << c[0] << ": " << err;
    const Json j = ParseJson(out);
    if (c[0] == "health") {
      EXPECT_EQ(j["status"], "NOT_RUNNING") << out;
    } else if (c[0] == "warm") {
      EXPECT_EQ(j["failed"], 1) << out;
      EXPECT_EQ(j["results"][0]["code"], "UNAVAILABLE") << out;
    } else {
      EXPECT_EQ(j["error"]["exit_status"], kUnreachable) << out;
      EXPECT_EQ(j["error"]["code"], "UNAVAILABLE") << out;
    }
  }
}

TEST(CoopctlWarm, ManifestErrorsNameTheItemAndTheKeyAndSendNothing) {
  TempDir dir;
  const std::string socket = dir.path() + "/nobody.sock";
  struct Case {
    std::string name, text, needle;
  };
  const std::vector<Case> cases = {
      {"m.json", R"({"specs": [{"family": "block_reduce", "dtyp": "float32"}]})",
       "specs[0]: unknown key \"dtyp\""},
      {"m.json", R"({"specs": [{"dtype": "float32"}]})", "specs[0]: missing \"family\""},
      {"m.json", R"({"specs": [{"family": "block_reduce", "format": "ptx"}]})",
       "specs[0].format: must be ltoir, bitcode or both"},
      {"m.json", R"({"specs": [{"family": "block_reduce", "items": "two"}]})", "specs[0]: --items"},
      {"m.json", R"({"specs": [{"family": "block_reduce", "with_aggregate": 3}]})",
       "specs[0].with_aggregate: expected true or false"},
      {"m.json", R"({"specs": [{"family": "block_reduce", "abi": "fortran"}]})",
       "specs[0]: --abi: must be c or numba"},
      {"m.json", R"({"specs": [{"bundle": [{"family": "block_reduce"}, {"famly": "x"}]}]})",
       "specs[0].bundle[1]: unknown key \"famly\""},
      {"m.json", R"({"specs": [{"bundle": [{"family": "block_reduce"}], "arch": "sm_90"}]})",
       "a bundle takes only"},
      {"m.json", R"({"coopctl_manifest": 2, "specs": []})", "reads version 1, got 2"},
      {"m.json", R"({"spec": []})", "unknown key \"spec\""},
      {"m.json", R"({"specs": [)", "not valid JSON"},
      {"m.yaml", "specs:\n  - {family: block_reduce\n", "not valid YAML: line"},
      {"m.yaml", "specs:\n  - family: block_reduce\n    threads: [1, 2, 3, 4]\n", "--threads"},
  };
  for (const auto& c : cases) {
    const std::string path = dir.path() + "/" + c.name;
    WriteText(path, c.text);
    std::string out, err;
    EXPECT_EQ(Coopctl({"--socket", socket, "warm", path}, &out, &err), kUsage) << c.text;
    EXPECT_NE(err.find(c.needle), std::string::npos) << c.text << "\n" << err;
  }
  // The bad case for the checks above: a good manifest, JSON or YAML, passes --dry-run with no
  // daemon at all, and lists each item with its format.
  WriteText(dir.path() + "/good.yaml",
            "specs:\n  - {family: block_reduce, dtype: float32, threads: [64, 2], arch: sm_90}\n"
            "  - bundle: [{family: block_scan, dtype: int32, threads: 64, with_aggregate: true,"
            " arch: sm_90}]\n    format: both\n");
  std::string out, err;
  ASSERT_EQ(Coopctl({"--socket", socket, "warm", "--dry-run", "--json", dir.path() + "/good.yaml"},
                    &out, &err),
            0)
      << err;
  const Json j = ParseJson(out);
  EXPECT_EQ(j["total"], 2);
  EXPECT_EQ(j["items"][0]["spec"], "block_reduce float32 block 64x2x1 sm_90") << out;
  EXPECT_EQ(j["items"][1]["format"], "both");
}

// The example manifest in deploy/ parses, and has one item per "  - " line at its top level.
TEST(CoopctlWarm, TheExampleManifestParses) {
  const std::string path = std::string(SOURCE_DIR) + "/deploy/warm-manifest.example.yaml";
  std::istringstream lines(ReadText(path));
  size_t items = 0;
  for (std::string line; std::getline(lines, line);) items += line.rfind("  - ", 0) == 0;
  ASSERT_GT(items, 10u);
  std::string out, err;
  ASSERT_EQ(Coopctl({"--socket", "/nonexistent", "warm", "--dry-run", "--json", path}, &out, &err),
            0)
      << err;
  EXPECT_EQ(ParseJson(out)["total"], items) << out;
}

// ---- One shared daemon
// ---------------------------------------------------------------------------

class CoopctlDaemon : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new TestDaemon();
    ASSERT_TRUE(daemon_->started);
  }
  static void TearDownTestSuite() {
    delete daemon_;  // stops it, and fails the suite if it does not exit cleanly
    daemon_ = nullptr;
  }
  static std::string Dir() { return daemon_->owned_dir->path(); }
  static int Run(std::vector<std::string> args, std::string* out, std::string* err) {
    args.insert(args.begin(), {"--socket", daemon_->process.socket_path()});
    return Coopctl(args, out, err);
  }

  static TestDaemon* daemon_;
};
TestDaemon* CoopctlDaemon::daemon_ = nullptr;

TEST_F(CoopctlDaemon, RefusedRequestsExitFourWithTheCodeInTheJsonError) {
  std::string out, err;
  const std::vector<std::vector<std::string>> refused = {
      {"specialize", "block_reduce", "--dtype", "float32", "--threads", "0", "--arch", "sm_90"},
      {"specialize", "block_frobnicate", "--dtype", "float32", "--threads", "64", "--arch",
       "sm_90"},
      {"explain", "block_reduce", "--dtype", "complex7", "--threads", "64", "--arch", "sm_90"},
      {"plan", "a@3-1", "--bytes", "8"},
      {"link", "--arch", "sm_90", "--ltoir", "/dev/null", "--artifact", "nosuchkey", "--out",
       Dir() + "/x.cubin"}};
  for (auto args : refused) {
    EXPECT_EQ(Run(args, &out, &err), kRefused) << args[0] << ": " << err;
    args.push_back("--json");
    EXPECT_EQ(Run(args, &out, &err), kRefused) << args[0] << ": " << err;
    const Json j = ParseJson(out);
    EXPECT_EQ(j["error"]["exit_status"], kRefused) << out;
    const std::string code = j["error"]["code"];
    EXPECT_TRUE(code == "INVALID_ARGUMENT" || code == "NOT_FOUND") << out;
    EXPECT_NE(err.find("coopctl: " + code + ": "), std::string::npos) << err;
  }
  // health keeps its own statuses: another answer than SERVING is 1.
  EXPECT_EQ(Run({"health", "--service", "x.Y"}, &out, &err), 1) << err;
}

TEST_F(CoopctlDaemon, EveryCommandsJsonParses) {
  std::string out, err;
  const std::vector<std::string> spec = {"block_reduce", "--dtype", "float32", "--threads",
                                         "64",           "--arch",  "sm_90"};
  std::vector<std::string> args = {"specialize"};
  args.insert(args.end(), spec.begin(), spec.end());
  args.push_back("--json");
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  const Json artifact = ParseJson(out);
  const std::string key = artifact["key"];
  EXPECT_EQ(key.size(), 64u) << out;
  EXPECT_EQ(artifact["spec"]["threads"], Json::array({64, 1, 1})) << out;

  args[0] = "explain";
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["key"], key);
  EXPECT_EQ(ParseJson(out)["cached"], true);

  ASSERT_EQ(Run({"ls", "--json"}, &out, &err), 0) << err;
  const Json ls = ParseJson(out);
  ASSERT_TRUE(ls.is_array());
  EXPECT_TRUE(std::any_of(ls.begin(), ls.end(), [&](const Json& e) { return e["key"] == key; }));

  ASSERT_EQ(Run({"catalog", "--json"}, &out, &err), 0) << err;
  EXPECT_FALSE(ParseJson(out)["families"].empty());
  ASSERT_EQ(Run({"stats", "--json"}, &out, &err), 0) << err;
  EXPECT_GE(ParseJson(out)["requests"].get<uint64_t>(), 1u);  // the specialize above
  ASSERT_EQ(Run({"--json", "stats"}, &out, &err), 0) << "--json before the command: " << err;
  EXPECT_TRUE(ParseJson(out).contains("disk_entries"));
  ASSERT_EQ(Run({"plan", "--json", "a", "--bytes", "24", "--align", "8"}, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["dynamic_shared_bytes"], 24) << out;
  ASSERT_EQ(Run({"verify", "--json"}, &out, &err), 0) << err;
  EXPECT_GE(ParseJson(out)["entries_checked"].get<uint64_t>(), 1u);
  ASSERT_EQ(Run({"vacuum", "--json"}, &out, &err), 0) << err;
  EXPECT_GT(ParseJson(out)["file_bytes_after"].get<uint64_t>(), 0u);
  ASSERT_EQ(Run({"purge", "--family", "no_such_family", "--json"}, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["entries_removed"], 0);
  ASSERT_EQ(Run({"health", "--json"}, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["status"], "SERVING");

  // link: the kernel calling the reduction, linked with the cached artifact into a cubin.
  auto reduce = daemon_->Client().Specialize(BlockReduceF32());
  ASSERT_TRUE(reduce) << reduce.error().message;
  const std::string kernel = Dir() + "/kernel.ltoir";
  WriteText(kernel, CompileKernel(BlockSumKernel(*reduce)));
  ASSERT_EQ(Run({"link", "--arch", "sm_90", "--ltoir", kernel, "--artifact", reduce->key, "--out",
                 Dir() + "/k.cubin", "--json"},
                &out, &err),
            0)
      << err;
  const Json link = ParseJson(out);
  EXPECT_GT(link["cubin_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(link["cubin_bytes"], ReadText(Dir() + "/k.cubin").size());
}

// explain for --algorithm auto: the eligible set, the table and cell, every measured
// algorithm's median, the choice; text and --json agree with each other and with the key of the
// explicit spec. No compile: explain only resolves and keys.
TEST_F(CoopctlDaemon, ExplainShowsHowAutoChoseFromTheTable) {
  std::string out, err;
  std::vector<std::string> args = {"explain",     "block_reduce", "--dtype", "int32",
                                   "--threads",   "256",          "--items", "16",
                                   "--algorithm", "auto",         "--arch",  "sm_90a"};
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  args.push_back("--json");
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  const Json j = ParseJson(out);
  const Json& a = j["auto"];
  ASSERT_TRUE(a.is_object()) << out;
  const std::string chosen = a["choice"]["chosen"];
  EXPECT_EQ(a["choice"]["requested"], "auto");
  EXPECT_EQ(a["table_arch"], "sm_90") << "sm_90a reads sm_90's table";
  EXPECT_EQ(a["baseline"], "warp_reductions");
  // sum is commutative: all three are eligible.
  EXPECT_EQ(a["eligible"], Json::array({"raking", "raking_commutative_only", "warp_reductions"}));
  ASSERT_TRUE(a["rule"] == "exact" || a["rule"] == "nearest") << out;
  ASSERT_TRUE(a["cell"].is_object()) << out;
  EXPECT_EQ(a["cell"]["family"], "block_reduce");
  EXPECT_EQ(a["cell"]["method"], "sum");
  ASSERT_FALSE(a["measured"].empty()) << out;
  bool found = false;
  for (const Json& m : a["measured"]) {
    EXPECT_TRUE(m["median_gbps"].is_number()) << m;
    found |= m["algorithm"] == chosen;
  }
  EXPECT_TRUE(found) << "the chosen algorithm is among the measured ones: " << out;
  const std::string reason = a["choice"]["reason"];
  EXPECT_NE(reason.find("block_reduce/sum S=4 T=256 N=16"), std::string::npos) << reason;

  // The text form says the same.
  args.pop_back();
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  EXPECT_NE(out.find("algorithm auto: " + chosen + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  reason:    " + reason + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  eligible:  raking, raking_commutative_only, warp_reductions"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  <- chosen"), std::string::npos) << out;

  // The explicit spec has the same key and no auto section; a non-commutative operator drops
  // raking_commutative_only, and says why.
  std::vector<std::string> explicit_args = args;
  explicit_args[9] = chosen;
  explicit_args.push_back("--json");
  ASSERT_EQ(Run(explicit_args, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["key"], j["key"]);
  EXPECT_FALSE(ParseJson(out).contains("auto"));
  args.insert(args.end(), {"--method", "reduce", "--op", "bit_xor", "--json"});
  ASSERT_EQ(Run(args, &out, &err), 0) << err;
  const Json x = ParseJson(out)["auto"];
  EXPECT_EQ(x["eligible"], Json::array({"raking", "warp_reductions"})) << out;
  ASSERT_EQ(x["filtered_out"].size(), 1u) << out;
  EXPECT_EQ(x["filtered_out"][0].get<std::string>().substr(0, 42),
            "raking_commutative_only: needs a commutati");

  // stats shows the table, catalog which families take auto.
  ASSERT_EQ(Run({"stats", "--json"}, &out, &err), 0) << err;
  const Json stats = ParseJson(out);
  ASSERT_EQ(stats["tuning_tables"].size(), 1u) << out;
  EXPECT_EQ(stats["tuning_tables"][0]["arch"], "sm_90");
  EXPECT_EQ(stats["tuning_tables"][0]["digest"].get<std::string>().size(), 64u);
  EXPECT_EQ(stats["tuning_digest"].get<std::string>().size(), 64u);
  ASSERT_EQ(Run({"stats"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("tuning table:    sm_90 version "), std::string::npos) << out;
  ASSERT_EQ(Run({"catalog", "--json"}, &out, &err), 0) << err;
  for (const Json& f : ParseJson(out)["families"]) {
    if (f["name"] == "block_load") {
      EXPECT_EQ(f["auto_baseline"], "direct");
    }
    if (f["name"] == "warp_exchange") {
      EXPECT_TRUE(f["auto_algorithms"].empty());
    }
  }
}

// A failed spec does not stop the others: they are prepared, the summary counts the failure and
// the exit status is 7.
TEST_F(CoopctlDaemon, WarmGoesOnPastFailedSpecsAndExitsSeven) {
  const std::string manifest = Dir() + "/mixed.json";
  WriteText(manifest, R"({"coopctl_manifest": 1, "defaults": {"arch": "sm_90", "dtype": "float32"},
    "specs": [{"family": "block_reduce", "threads": 96},
              {"family": "block_reduce", "threads": 0},
              {"family": "block_reduce", "threads": [32, 2]},
              {"family": "no_such_family", "threads": 32}]})");
  std::string out, err;
  ASSERT_EQ(Run({"warm", "--json", manifest}, &out, &err), kPartial) << err;
  const Json j = ParseJson(out);
  EXPECT_EQ(j["total"], 4);
  EXPECT_EQ(j["failed"], 2);
  EXPECT_EQ(j["hits"].get<int>() + j["compiled"].get<int>(), 2) << out;
  EXPECT_EQ(j["results"][1]["status"], "failed");
  EXPECT_EQ(j["results"][1]["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(j["results"][3]["code"], "INVALID_ARGUMENT");
  for (int i : {0, 2}) EXPECT_EQ(j["results"][i]["key"].get<std::string>().size(), 64u) << out;

  // Plain lines when piped: one per spec, then the summary.
  ASSERT_EQ(Run({"warm", manifest}, &out, &err), kPartial) << err;
  EXPECT_NE(out.find("FAILED specs[1] block_reduce float32 sm_90: INVALID_ARGUMENT: "),
            std::string::npos)
      << out;
  EXPECT_EQ(err, "coopctl: warm: 2 of 4 specs failed\n");
  EXPECT_NE(out.find("FAILED specs[3] no_such_family"), std::string::npos) << out;
  EXPECT_NE(out.find("warm: 4 specs: 2 hits, 0 compiled, 2 failed"), std::string::npos) << out;
  // The bad case: the same manifest without its failing specs exits 0.
  WriteText(manifest, R"({"specs": [{"family": "block_reduce", "threads": 96, "arch": "sm_90",
                                     "dtype": "float32"}]})");
  EXPECT_EQ(Run({"warm", manifest}, &out, &err), 0) << err;
}

// A manifest's op_commutative reaches coopd as --op-commutative does: with algorithm auto, the
// user operator declared commutative gets raking_commutative_only (the table's choice for
// block_reduce float32 at 64 threads, 1 item: the key of that explicit spec), the same operator
// not declared so never does (another key).
TEST_F(CoopctlDaemon, WarmManifestsDeclareUserOperatorsCommutative) {
  WriteText(Dir() + "/clamp_add.cu",
            "__device__ float clamp_add(float a, float b) { return fminf(a + b, 100.0f); }\n");
  const std::string manifest = Dir() + "/commutative.yaml";
  WriteText(manifest,
            "defaults: {family: block_reduce, method: reduce, dtype: float32, threads: 64,"
            " arch: sm_90, algorithm: auto, op_name: clamp_add, op_source: clamp_add.cu}\n"
            "specs:\n"
            "  - {op_commutative: true}\n"
            "  - {op_commutative: false}\n");
  std::string out, err;
  ASSERT_EQ(Run({"warm", "--json", manifest}, &out, &err), 0) << err << out;
  const Json j = ParseJson(out);
  ASSERT_EQ(j["results"].size(), 2u) << out;
  const std::string commutative = j["results"][0]["key"];
  const std::string plain = j["results"][1]["key"];
  ASSERT_EQ(commutative.size(), 64u) << out;
  EXPECT_NE(commutative, plain) << "op_commutative changed what auto chose";
  const std::vector<std::string> spec = {"specialize",  "block_reduce",
                                         "--method",    "reduce",
                                         "--dtype",     "float32",
                                         "--threads",   "64",
                                         "--arch",      "sm_90",
                                         "--op-name",   "clamp_add",
                                         "--op-source", Dir() + "/clamp_add.cu",
                                         "--json",      "--algorithm"};
  std::vector<std::string> explicit_args = spec;
  explicit_args.push_back("raking_commutative_only");
  ASSERT_EQ(Run(explicit_args, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["key"], commutative) << out;
  explicit_args = spec;
  explicit_args.insert(explicit_args.end(), {"auto", "--op-commutative"});
  ASSERT_EQ(Run(explicit_args, &out, &err), 0) << err;
  EXPECT_EQ(ParseJson(out)["key"], commutative) << "the flag and the manifest key agree: " << out;
}

// ---- --target: a coopd listening on TCP
// ----------------------------------------------------------

TEST(CoopctlTarget, TalksToACoopdListeningOnTcp) {
  const int port = FreeLoopbackPort();
  const std::string target = "ipv4:127.0.0.1:" + std::to_string(port);
  // Plaintext TCP, so --insecure (docs/security.md; the Access tests cover TLS and tokens).
  TestDaemon d({"--listen", "127.0.0.1:" + std::to_string(port), "--insecure"});
  ASSERT_TRUE(d.started);
  std::string out, err;
  ASSERT_EQ(Coopctl({"--target", target, "health"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "SERVING (" + target + ")\n");
  ASSERT_EQ(Coopctl({"--target", target, "--timeout", "60", "catalog", "--json"}, &out, &err), 0)
      << err;
  EXPECT_FALSE(ParseJson(out)["families"].empty());
  ASSERT_EQ(Coopctl({"--target", target, "stats", "--json"}, &out, &err), 0) << err;
  // The daemon counted them: the calls went over TCP to this coopd.
  EXPECT_EQ(ParseJson(out)["cache_path"], d.Stats().cache_path);
  // The bad case: nothing listens on the port any more.
  ASSERT_EQ(d.process.Stop(SIGTERM), 0);
  EXPECT_EQ(Coopctl({"--target", target, "--timeout", "10", "stats"}, &out, &err), kUnreachable)
      << err;
  EXPECT_EQ(Coopctl({"--target", target, "--timeout", "10", "health"}, &out, &err), kUnreachable)
      << err;
  EXPECT_NE(err.find(target), std::string::npos) << err;
}

// ---- warm: 50 specs, a terminal, a pipe
// ----------------------------------------------------------

// 50 distinct cheap specs (block_reduce sum: one header set, so the workers' PCH serves all).
std::string FiftySpecManifest() {
  std::string specs;
  for (const char* dtype : {"float32", "int32", "uint32", "int64", "float64"}) {
    for (int threads = 32; threads <= 320; threads += 32) {
      specs += std::string(specs.empty() ? "" : ",\n") + "  {\"family\": \"block_reduce\", " +
               "\"dtype\": \"" + dtype + "\", \"threads\": " + std::to_string(threads) + "}";
    }
  }
  return "{\"coopctl_manifest\": 1, \"defaults\": {\"arch\": \"sm_90\", \"method\": \"sum\"},\n"
         "\"specs\": [\n" +
         specs + "]}\n";
}

TEST(CoopctlWarm, FiftySpecsWithAProgressBarOnATerminalAndPlainLinesWhenPiped) {
  TestDaemon d;
  ASSERT_TRUE(d.started);
  const std::string socket = d.process.socket_path();
  const std::string manifest = d.owned_dir->path() + "/fifty.json";
  WriteText(manifest, FiftySpecManifest());

  // Under a real terminal (script(1) gives the command a pty): the bar, redrawn in place.
  std::string out, err;
  const std::string command = std::string(COOPCTL_BINARY) + " --socket " + socket +
                              " --timeout 600 warm --jobs 4 " + manifest;
  ASSERT_EQ(RunCommand({"/usr/bin/script", "-qec", command, "/dev/null"}, &out, &err), 0)
      << out << err;
  EXPECT_NE(out.find("\r\033[K["), std::string::npos) << "redrawn in place: " << out;
  EXPECT_NE(out.find("] 0/50  hits 0  compiled 0  failed 0  ETA --:--"), std::string::npos) << out;
  EXPECT_NE(out.find("[" + std::string(30, '#') + "] 50/50  hits 0  compiled 50  failed 0  ETA"),
            std::string::npos)
      << out;
  // An estimate once something finished: "ETA m:ss" on a partial bar.
  bool eta = false;
  for (size_t at = out.find("/50  hits"); at != std::string::npos;
       at = out.find("/50  hits", at + 1)) {
    const size_t e = out.find("ETA ", at);
    if (e != std::string::npos && out.compare(at - 2, 2, "50") != 0 &&
        std::isdigit(static_cast<unsigned char>(out[e + 4]))) {
      eta = true;
    }
  }
  EXPECT_TRUE(eta) << out;
  EXPECT_EQ(out.find("[1/50] ok"), std::string::npos) << "no plain lines on a terminal: " << out;
  EXPECT_NE(out.find("warm: 50 specs: 0 hits, 50 compiled, 0 failed"), std::string::npos) << out;
  EXPECT_EQ(d.Stats().compiles, 50u);

  // Piped: one plain line per spec, no bar; all hits now.
  ASSERT_EQ(RunCommand({COOPCTL_BINARY, "--socket", socket, "warm", manifest}, &out, &err), 0)
      << err;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(err, "");
  std::istringstream lines(out);
  std::set<std::string> numbers;
  size_t count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("warm: ", 0) == 0) {
      EXPECT_EQ(line.rfind("warm: 50 specs: 50 hits, 0 compiled, 0 failed (", 0), 0u) << line;
      continue;
    }
    ++count;
    EXPECT_NE(line.find("] ok memory "), std::string::npos) << line;
    numbers.insert(line.substr(0, line.find(']') + 1));
  }
  EXPECT_EQ(count, 50u) << out;
  EXPECT_EQ(numbers.size(), 50u) << "[1/50] .. [50/50]: " << out;
  EXPECT_TRUE(numbers.count("[1/50]") && numbers.count("[50/50]")) << out;

  // --json: the summary, one result per spec.
  ASSERT_EQ(
      RunCommand({COOPCTL_BINARY, "--socket", socket, "warm", "--json", manifest}, &out, &err), 0)
      << err;
  const Json j = ParseJson(out);
  EXPECT_EQ(j["total"], 50);
  EXPECT_EQ(j["hits"], 50);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["results"].size(), 50u);
  EXPECT_EQ(d.Stats().compiles, 50u);
}

// ---- ls --manifest → a fresh cache → warm → every entry ----------------------------------------

TEST(CoopctlWarm, LsManifestThenWarmPreparesAFreshCacheWithEveryEntry) {
  TempDir dir;
  TestDaemon a;
  ASSERT_TRUE(a.started);
  const std::string example = std::string(SOURCE_DIR) + "/deploy/warm-manifest.example.yaml";
  std::string out, err;
  ASSERT_EQ(Coopctl({"--socket", a.process.socket_path(), "warm", "--json", example}, &out, &err),
            0)
      << err << out;
  const size_t items = ParseJson(out)["total"];
  // A user operator's entry cannot be exported (coopd keeps no source): named on stderr.
  const std::string op = dir.path() + "/op.cu";
  WriteText(op, "__device__ float my_max(float a, float b) { return a > b ? a : b; }\n");
  ASSERT_EQ(Coopctl({"--socket", a.process.socket_path(), "specialize", "block_reduce", "--method",
                     "reduce", "--dtype", "float32", "--threads", "64", "--op-name", "my_max",
                     "--op-source", op, "--arch", "sm_90", "--json"},
                    &out, &err),
            0)
      << err;
  const Json with_op = ParseJson(out);
  std::set<std::string> not_exported = {with_op["key"].get<std::string>()};
  for (const auto& in : with_op["link_inputs"]) not_exported.insert(in["key"].get<std::string>());

  const std::string manifest = dir.path() + "/app.json";
  ASSERT_EQ(Coopctl({"--socket", a.process.socket_path(), "ls", "--manifest"}, &out, &err), 0)
      << err;
  WriteText(manifest, out);
  const Json doc = ParseJson(out);
  EXPECT_EQ(doc["coopctl_manifest"], 1);
  EXPECT_EQ(doc["specs"].size(), items) << out;
  EXPECT_NE(
      err.find("left out " + with_op["key"].get<std::string>().substr(0, 16) + " (a user operator"),
      std::string::npos)
      << err;

  std::set<std::string> expected = Keys(a.process.socket_path());
  for (const auto& k : not_exported) EXPECT_EQ(expected.erase(k), 1u) << k;
  ASSERT_EQ(expected.size(), items);

  TestDaemon b;
  ASSERT_TRUE(b.started);
  ASSERT_TRUE(Keys(b.process.socket_path()).empty()) << "a fresh cache";
  ASSERT_EQ(Coopctl({"--socket", b.process.socket_path(), "warm", "--json", manifest}, &out, &err),
            0)
      << err << out;
  EXPECT_EQ(ParseJson(out)["compiled"], items) << out;
  EXPECT_EQ(Keys(b.process.socket_path()), expected);
  // And B exports the same manifest (as a set of items).
  ASSERT_EQ(Coopctl({"--socket", b.process.socket_path(), "ls", "--manifest"}, &out, &err), 0)
      << err;
  auto items_of = [](const Json& d) {
    std::set<std::string> s;
    for (const auto& i : d["specs"]) s.insert(i.dump());
    return s;
  };
  EXPECT_EQ(items_of(ParseJson(out)), items_of(doc));
}

}  // namespace
}  // namespace coopd_test
