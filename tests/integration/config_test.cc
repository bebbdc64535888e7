// coopd's configuration (server/daemon/settings.h) and its structured logs, through the real
// coopd binary: --print-config shows each value and its source; the layers are defaults < file
// < COOPD_* environment < flags; a bad file names FILE:LINE; deploy/coopd.toml lists every key
// at its default; JSON log lines parse (python3's json) and carry the request id the client got.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "coop/v1/coop.grpc.pb.h"
#include "coopd_process.h"

namespace coopd_test {
namespace {

struct Outcome {
  int status = -1;
  std::string out, err;
};

// coopd with a clean environment: HOME (no config file in it unless a test writes one), PATH,
// and `env` ("NAME=value"), so the developer's COOPD_* variables and config file stay out.
Outcome Coopd(const TempDir& home, const std::vector<std::string>& env,
              const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "-i", "HOME=" + home.path(),
                                   "PATH=/usr/bin:/bin"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(COOPD_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  Outcome r;
  r.status = RunCommand(argv, &r.out, &r.err);
  return r;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --print-config's lines "key = value  # source", by "section.key".
struct Printed {
  std::string value, source;
};
std::map<std::string, Printed> ParsePrinted(const std::string& out) {
  std::map<std::string, Printed> m;
  std::string section, line;
  std::istringstream in(out);
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t eq = line.find(" = "), hash = line.rfind("  # ");
    if (eq == std::string::npos || hash == std::string::npos) continue;
    m[section + "." + line.substr(0, eq)] = {line.substr(eq + 3, hash - eq - 3),
                                             line.substr(hash + 4)};
  }
  return m;
}

TEST(Config, EachLayerOverridesTheOneBelowAndPrintConfigNamesTheSource) {
  TempDir home;
  const std::string file = home.path() + "/c.toml";
  WriteFile(file, "# a comment\n[cache]\nmemory_mb = 100\n\n[log]\nlevel = \"debug\"\n");

  Outcome r = Coopd(home, {}, {"--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto p = ParsePrinted(r.out);
  EXPECT_EQ(p["cache.memory_mb"].value, "256");
  EXPECT_EQ(p["cache.memory_mb"].source, "default");
  EXPECT_NE(r.out.find("# No config file was read."), std::string::npos) << r.out;

  r = Coopd(home, {}, {"--config", file, "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  p = ParsePrinted(r.out);
  EXPECT_EQ(p["cache.memory_mb"].value, "100");
  EXPECT_EQ(p["cache.memory_mb"].source, file + ":3");
  EXPECT_EQ(p["log.level"].value, "\"debug\"");
  EXPECT_EQ(p["log.level"].source, file + ":6");
  EXPECT_EQ(p["cache.max_mb"].source, "default") << "keys the file leaves out keep defaults";

  r = Coopd(home, {"COOPD_MEMORY_CACHE_MB=200"}, {"--config", file, "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  p = ParsePrinted(r.out);
  EXPECT_EQ(p["cache.memory_mb"].value, "200") << "the environment wins over the file";
  EXPECT_EQ(p["cache.memory_mb"].source, "COOPD_MEMORY_CACHE_MB");
  EXPECT_EQ(p["log.level"].source, file + ":6");

  r = Coopd(home, {"COOPD_MEMORY_CACHE_MB=200"},
            {"--config", file, "--memory-cache-mb", "300", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  p = ParsePrinted(r.out);
  EXPECT_EQ(p["cache.memory_mb"].value, "300") << "the flag wins over the environment";
  EXPECT_EQ(p["cache.memory_mb"].source, "--memory-cache-mb");

  // COOPD_CONFIG names the file too; a list from the environment; a value-less flag.
  r = Coopd(home, {"COOPD_CONFIG=" + file, "COOPD_LISTEN=127.0.0.1:1,[::1]:2", "COOPD_INSECURE=1"},
            {"--no-pch", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  p = ParsePrinted(r.out);
  EXPECT_EQ(p["cache.memory_mb"].source, file + ":3");
  EXPECT_EQ(p["listen.addresses"].value, "[\"127.0.0.1:1\", \"[::1]:2\"]");
  EXPECT_EQ(p["listen.addresses"].source, "COOPD_LISTEN");
  EXPECT_EQ(p["listen.insecure"].value, "true");
  EXPECT_EQ(p["listen.insecure"].source, "COOPD_INSECURE");
  EXPECT_EQ(p["compile.pch"].value, "false");
  EXPECT_EQ(p["compile.pch"].source, "--no-pch");
  EXPECT_EQ(p["compile.prewarm"].value, "[]") << "default: the archs the cache last compiled for";

  r = Coopd(home, {}, {"--prewarm", "none", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ParsePrinted(r.out)["compile.prewarm"].value, "[\"none\"]");
}

TEST(Config, TheDefaultFileIsReadFromXdgConfigHomeAndItsAbsenceIsFine) {
  TempDir home;
  // No file: fine.
  Outcome r = Coopd(home, {"XDG_CONFIG_HOME=" + home.path() + "/xdg"}, {"--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::filesystem::create_directories(home.path() + "/xdg/coopd");
  const std::string file = home.path() + "/xdg/coopd/coopd.toml";
  WriteFile(file, "[compile]\nworkers = 3\n");
  r = Coopd(home, {"XDG_CONFIG_HOME=" + home.path() + "/xdg"}, {"--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto p = ParsePrinted(r.out);
  EXPECT_EQ(p["compile.workers"].value, "3");
  EXPECT_EQ(p["compile.workers"].source, file + ":2");
  // Without XDG_CONFIG_HOME: ~/.config/coopd/coopd.toml.
  std::filesystem::create_directories(home.path() + "/.config/coopd");
  WriteFile(home.path() + "/.config/coopd/coopd.toml", "[compile]\n\nworkers = 5\n");
  r = Coopd(home, {}, {"--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ParsePrinted(r.out)["compile.workers"].value, "5");
}

TEST(Config, AMissingConfigFileIsAnErrorNamingItsSource) {
  TempDir home;
  Outcome r = Coopd(home, {}, {"--config", home.path() + "/nope.toml", "--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("coopd: --config: \"" + home.path() + "/nope.toml\" is not a readable file"),
            std::string::npos)
      << r.err;
  r = Coopd(home, {"COOPD_CONFIG=" + home.path() + "/nope.toml"}, {"--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("coopd: COOPD_CONFIG: "), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Each file must fail (exit 2, nothing on stdout) with an error that contains FILE + `error`.
struct BadFile {
  std::string text, error;
};
void ExpectRefused(const TempDir& home, const std::vector<BadFile>& cases) {
  const std::string file = home.path() + "/coopd.toml";
  for (const auto& c : cases) {
    WriteFile(file, c.text);
    Outcome r = Coopd(home, {}, {"--config", file, "--print-config"});
    EXPECT_EQ(r.status, 2) << c.text;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("coopd: " + file + c.error), std::string::npos)
        << "file:\n"
        << c.text << "error: " << r.err;
  }
}

// Further CCCLs come from [[cccl]] tables, [toolchain] cccl, COOPD_CCCL or the repeatable --cccl;
// --print-config shows them; a bad table or item is named with its file and line or source.
TEST(Config, FurtherCcclsComeFromTablesTheListOrTheRepeatableFlag) {
  TempDir home;
  const std::string file = home.path() + "/coopd.toml";
  WriteFile(file,
            "[[cccl]]\nname = \"wheel\"\ninclude = \"/opt/site-packages\"\n\n"
            "[[cccl]]\nname = \"pinned\"\ninclude = \"/opt/cccl-3.3/include\"\n\n"
            "[toolchain]\ncccl = [\"listed=/opt/listed\"]\n");
  Outcome r = Coopd(home, {}, {"--config", file, "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto printed = ParsePrinted(r.out);
  EXPECT_EQ(printed["toolchain.cccl"].value,
            "[\"listed=/opt/listed\", \"wheel=/opt/site-packages\", "
            "\"pinned=/opt/cccl-3.3/include\"]");
  EXPECT_EQ(printed["compile.probe_cccl"].value, "\"auto\"");
  // The flag, repeated, replaces the file's; the variable likewise.
  r = Coopd(home, {}, {"--config", file, "--cccl", "a=/x", "--cccl", "b=/y", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  printed = ParsePrinted(r.out);
  EXPECT_EQ(printed["toolchain.cccl"].value, "[\"a=/x\", \"b=/y\"]");
  EXPECT_EQ(printed["toolchain.cccl"].source, "--cccl");
  r = Coopd(home, {"COOPD_CCCL=c=/z"}, {"--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ParsePrinted(r.out)["toolchain.cccl"].value, "[\"c=/z\"]");
  r = Coopd(home, {}, {"--cccl", "nodir", "--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--cccl: must be NAME=DIR (e.g. cccl35=/opt/cccl-3.5/include), got "
                       "\"nodir\""),
            std::string::npos)
      << r.err;
  r = Coopd(home, {}, {"--probe-cccl", "some", "--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("auto, all, off"), std::string::npos) << r.err;
  ExpectRefused(home,
                {{"[[cccl]]\nname = \"a\"\n", ":1: [[cccl]]: include is required and not empty"},
                 {"[[cccl]]\nname = \"a\"\nincluded = \"/x\"\n",
                  ":3: [[cccl]]: unknown key \"included\"; its keys are name, include"},
                 {"[[cccl]]\nname = 3\ninclude = \"/x\"\n",
                  ":2: [[cccl]]: name must be a string, got an integer"},
                 {"cccl = \"a=/x\"\n", ":1: cccl must be [[cccl]] tables"}});
}

TEST(Config, AnUnknownKeyNamesFileLineAndTheLikelyKey) {
  TempDir home;
  ExpectRefused(
      home,
      {{"[cache]\nmemory_mb = 64\n\ncach_dir = \"/x\"\n",
        ":4: unknown key \"cache.cach_dir\" (did you mean \"cache.dir\"?); the keys of [cache] "
        "are dir, memory_mb, max_mb"},
       {"# top level\ncach_dir = \"/x\"\n",
        ":2: unknown key \"cach_dir\" (did you mean \"cache.dir\"?)"},
       {"[cache]\ndri = \"/x\"\n", ":2: unknown key \"cache.dri\" (did you mean \"cache.dir\"?)"},
       {"\n\n[cahce]\ndir = \"/x\"\n", ":3: unknown key \"cahce\" (did you mean \"cache\"?)"},
       {"[cache]\nzzzzzz = 1\n", ":2: unknown key \"cache.zzzzzz\"; the keys of [cache] are"}});
  // Bad input, good input: the same file corrected is accepted.
  const std::string file = home.path() + "/coopd.toml";
  WriteFile(file, "\n\n[cache]\ndir = \"/x\"\n");
  Outcome r = Coopd(home, {}, {"--config", file, "--print-config"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ParsePrinted(r.out)["cache.dir"].source, file + ":4");
}

TEST(Config, AWrongTypeOrValueNamesFileLineTheKeyAndWhatItMustBe) {
  TempDir home;
  ExpectRefused(
      home,
      {{"[cache]\nmemory_mb = \"256\"\n", ":2: cache.memory_mb: must be an integer, got a string"},
       {"[cache]\nmemory_mb = -1\n",
        ":2: cache.memory_mb: must be a whole number of MiB 0..1048576, got \"-1\""},
       {"[compile]\n\nsandbox = \"maybe\"\n",
        ":3: compile.sandbox: must be one of auto, require, off; got \"maybe\""},
       {"[compile]\npch = \"yes\"\n",
        ":2: compile.pch: must be a boolean (true or false), got a "
        "string"},
       {"[listen]\naddresses = \"127.0.0.1:7070\"\n",
        ":2: listen.addresses: must be an array of strings, got a string"},
       {"[listen]\naddresses = [\"7070\"]\n",
        ":2: listen.addresses: must be HOST:PORT (e.g. 0.0.0.0:7070, [::]:7070, 127.0.0.1:0), got "
        "\"7070\""},
       {"[remote]\nurl = \"memcached://h:1\"\n",
        ":2: remote.url: scheme must be redis or redis-cluster, got \"memcached\""},
       {"\n[[cache]]\ndir = \"/x\"\n", ":2: [cache] must be a table, got an array"},
       {"cache = 5\n", ":1: [cache] must be a table, got an integer"},
       // TOML syntax errors: FILE:LINE:COLUMN and toml++'s description.
       {"[log]\nlevel = \"info\"\nlevel = \"debug\"\n", ":3:"},
       {"[log]\nlevel = \"info\n", ":2:"}});

  // The environment and flags name themselves.
  Outcome r = Coopd(home, {"COOPD_LOG_FORMAT=xml"}, {"--print-config"});
  EXPECT_NE(r.err.find("COOPD_LOG_FORMAT: must be one of text, json; got \"xml\""),
            std::string::npos)
      << r.err;
  r = Coopd(home, {}, {"--cach-dir", "/x"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown argument \"--cach-dir\" (did you mean --cache-dir?)"),
            std::string::npos)
      << r.err;
}

// Found by the settings fuzz target (issue 27 item 10): toml++ quotes the character it saw raw,
// a value given to --metrics was quoted raw, and toml++ 3.3 reached __builtin_unreachable() on a
// non-ASCII character where it classifies whitespace (server/util/toml.h).
TEST(Config, ErrorsAboutTheInputStayOneEscapedLine) {
  TempDir home;
  const std::string file = home.path() + "/coopd.toml";
  WriteFile(file, "[compile]\npch = t\n");
  Outcome r = Coopd(home, {}, {"--config", file, "--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(":2:8: Error while parsing boolean: expected 'true', saw 't\\n'"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;

  r = Coopd(home, {}, {"--metrics", "127.0.0.1:x\x01\x1b[2J", "--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--metrics: must be HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, "
                       "0.0.0.0:9464), got \"127.0.0.1:x\\x01\\x1b[2J\""),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "no raw escape byte reaches the terminal";

  // U+00A7 first on the line after a line-ending backslash in a multi-line string: an ordinary
  // value (toml++ 3.3 asked its whitespace table, which ended in undefined behaviour).
  WriteFile(file, "s = \"\"\"\\\n\xc2\xa7\"\"\"\n");
  r = Coopd(home, {}, {"--config", file, "--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(":1: unknown key \"s\""), std::string::npos) << r.err;
}

// --print-config hides what the farm tier's parser may take for a password: everything between
// "://" and the URL's last '@' (a password may hold '/', '@' or '?'; the settings fuzz target
// found the first '@' and a '/' before it each let the rest of a password through).
TEST(Config, PrintConfigHidesEveryPartOfAPasswordThatHoldsDelimiters) {
  TempDir home;
  for (const std::string password : {"pa/ss", "p@ss@w", "pa?s/s"}) {
    Outcome r = Coopd(home, {"COOPD_REMOTE_CACHE=redis://alice:" + password + "@127.0.0.1:1"},
                      {"--print-config"});
    EXPECT_EQ(r.out.find(password), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(password), std::string::npos) << r.err;
    if (r.status == 0) {
      EXPECT_NE(r.out.find("\"redis://alice:***@127.0.0.1:1"), std::string::npos) << r.out;
    }
  }
}

// A percent-encoded password is hidden as written and as decoded, from the flag as from the
// environment, and a URL refused at start (a database for a cluster) does not quote it either.
TEST(Config, APercentEncodedPasswordIsNeverPrintedNorQuotedInAnError) {
  TempDir home;
  Outcome r =
      Coopd(home, {}, {"--remote-cache", "redis://:p%3Fss@127.0.0.1:1/3", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"redis://:***@127.0.0.1:1/3\""), std::string::npos) << r.out;
  for (const char* secret : {"p%3Fss", "p?ss"}) {
    EXPECT_EQ(r.out.find(secret), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  }
  r = Coopd(home, {"COOPD_REMOTE_CACHE=redis-cluster://:p%3Fss@127.0.0.1:1/3"}, {"--print-config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("COOPD_REMOTE_CACHE: redis-cluster:// has database 0 only"),
            std::string::npos)
      << r.err;
  for (const char* secret : {"p%3Fss", "p?ss"}) {
    EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  }
}

TEST(Config, PrintConfigIsValidTomlThatRoundTripsAndPrintsNoSecret) {
  TempDir home;
  Outcome r = Coopd(home,
                    {"COOPD_REMOTE_CACHE=redis://alice:hunter2@127.0.0.1:1/3?prefix=team&ttl=60",
                     "COOPD_PREWARM=sm_80,sm_90"},
                    {"--shutdown-grace", "2.5", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos) << r.out;
  auto first = ParsePrinted(r.out);
  EXPECT_EQ(first["remote.url"].value, "\"redis://alice:***@127.0.0.1:1/3?prefix=team&ttl=60\"");
  EXPECT_EQ(first["remote.url"].source.rfind("COOPD_REMOTE_CACHE", 0), 0u);
  EXPECT_EQ(first["server.shutdown_grace_s"].value, "2.5");
  EXPECT_EQ(first["compile.prewarm"].value, "[\"sm_80\", \"sm_90\"]");

  // Saved as a config file (without the redacted URL, which is not the real one), it gives the
  // same values, each now from the saved file.
  std::string saved = r.out;
  const size_t url = saved.find("\nurl = ");
  ASSERT_NE(url, std::string::npos);
  saved.erase(url + 1, saved.find('\n', url + 1) - url);
  WriteFile(home.path() + "/saved.toml", saved);
  r = Coopd(home, {}, {"--config", home.path() + "/saved.toml", "--print-config"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto second = ParsePrinted(r.out);
  ASSERT_EQ(second.size(), first.size());
  for (const auto& [key, printed] : first) {
    if (key == "remote.url") continue;
    EXPECT_EQ(second[key].value, printed.value) << key;
    EXPECT_EQ(second[key].source.rfind(home.path() + "/saved.toml:", 0), 0u)
        << key << " from " << second[key].source;
  }
}

TEST(Config, TheSampleConfigParsesAndHoldsEveryKeyAtItsDefault) {
  TempDir home;
  Outcome defaults = Coopd(home, {}, {"--print-config"});
  ASSERT_EQ(defaults.status, 0) << defaults.err;
  Outcome sample = Coopd(home, {}, {"--config", SAMPLE_CONFIG, "--print-config"});
  ASSERT_EQ(sample.status, 0) << sample.err;
  const auto d = ParsePrinted(defaults.out), s = ParsePrinted(sample.out);
  ASSERT_GT(d.size(), 15u);
  ASSERT_EQ(s.size(), d.size());
  // Every key of the table (--print-config prints them all) is in the sample, as a key or, for
  // defaults computed at start-up, as a commented-out "# key = ..." line, under its section.
  const std::string text = ReadFile(SAMPLE_CONFIG);
  for (const auto& [key, printed] : d) {
    const std::string section = "[" + key.substr(0, key.find('.')) + "]";
    const std::string name = key.substr(key.find('.') + 1);
    const size_t at = text.find("\n" + section + "\n");
    ASSERT_NE(at, std::string::npos) << section << " is missing from " << SAMPLE_CONFIG;
    const size_t next = text.find("\n[", at + 1);
    const std::string body = text.substr(at, next == std::string::npos ? next : next - at);
    const bool live = body.find("\n" + name + " = ") != std::string::npos;
    const bool commented = body.find("\n# " + name + " = ") != std::string::npos;
    EXPECT_TRUE(live || commented) << key << " is missing from " << SAMPLE_CONFIG;
    EXPECT_EQ(s.at(key).value, printed.value) << key << ": the sample must hold the default";
    EXPECT_EQ(s.at(key).source.rfind(SAMPLE_CONFIG, 0) == 0, live) << key;
  }
}

// ---- Structured logs ------------------------------------------------------------------------

// Runs python3 on the log: every line must be one JSON object; prints "request_id<TAB>level<TAB>
// message" per line, or exits 1 naming the line that is not JSON.
std::string ParseJsonLog(const std::string& log_path, int* status) {
  const std::string script =
      "import json, sys\n"
      "for n, line in enumerate(open(sys.argv[1], encoding='utf-8'), 1):\n"
      "    try:\n"
      "        o = json.loads(line)\n"
      "    except ValueError as e:\n"
      "        print('line %d is not JSON: %r (%s)' % (n, line, e)); sys.exit(1)\n"
      "    assert isinstance(o, dict) and line.endswith('}\\n'), line\n"
      "    for k in ('time', 'level', 'pid', 'thread', 'message'):\n"
      "        assert k in o, (k, line)\n"
      "    print('%s\\t%s\\t%s' % (o.get('request_id', ''), o['level'], o['message']))\n";
  std::string out, err;
  *status = RunCommand({"/usr/bin/python3", "-c", script, log_path}, &out, &err);
  return out + err;
}

coop::v1::SpecializeRequest BadRequest() {
  coop::v1::SpecializeRequest request;
  request.mutable_spec()->set_family("no_such_family");
  return request;
}

// A Specialize call with `request_id` as x-request-id (none when empty); returns the trailer.
std::string CallWithRequestId(const std::string& socket, const std::string& request_id,
                              grpc::Status* status) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = coop::v1::Coop::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!request_id.empty()) ctx.AddMetadata("x-request-id", request_id);
  coop::v1::SpecializeResponse response;
  *status = stub->Specialize(&ctx, BadRequest(), &response);
  auto it = ctx.GetServerTrailingMetadata().find("x-request-id");
  return it == ctx.GetServerTrailingMetadata().end()
             ? std::string()
             : std::string(it->second.data(), it->second.size());
}

// A real coopd on a temporary socket, its log kept for the test to read.
class Logs : public ::testing::Test {
 protected:
  void StartCoopd(std::vector<std::string> args, bool without_landlock = false) {
    args.insert(args.end(), {"--workers", "1"});
    coopd_ = std::make_unique<CoopdProcess>(dir_.path() + "/coopd.sock", dir_.path() + "/cache",
                                            std::move(args));
    coopd_->without_landlock = without_landlock;
    std::string error;
    ASSERT_TRUE(coopd_->Start(&error)) << error;
    ASSERT_TRUE(coopd_->WaitReady(std::chrono::seconds(120), &error)) << error;
  }
  TempDir dir_;
  std::unique_ptr<CoopdProcess> coopd_;
};

TEST_F(Logs, JsonLinesCarryTheRequestIdTheClientGot) {
  StartCoopd({"--log-format", "json"});
  CoopdProcess& coopd = *coopd_;
  TempDir& dir = dir_;

  // The client's own id is used and returned.
  grpc::Status status;
  EXPECT_EQ(CallWithRequestId(coopd.socket_path(), "build-42.step:7", &status), "build-42.step:7");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Without one, coopd makes one; coop::Error carries it.
  coop::Client client = coopd.MakeClient();
  coop::Spec spec;
  spec.family = "no_such_family";
  auto result = client.Specialize(spec);
  ASSERT_FALSE(result.ok());
  const std::string made = result.error().request_id;
  ASSERT_FALSE(made.empty());
  EXPECT_NE(made, "build-42.step:7");
  std::string second = CallWithRequestId(coopd.socket_path(), "", &status);
  EXPECT_FALSE(second.empty());
  EXPECT_NE(second, made) << "each call gets its own id";

  ASSERT_EQ(coopd.Stop(), 0);
  WriteFile(dir.path() + "/log.jsonl", coopd.Log());
  int parse_status = -1;
  const std::string lines = ParseJsonLog(dir.path() + "/log.jsonl", &parse_status);
  ASSERT_EQ(parse_status, 0) << lines;
  EXPECT_NE(lines.find("build-42.step:7\tinfo\tinvalid request: "), std::string::npos) << lines;
  EXPECT_NE(lines.find(made + "\tinfo\tinvalid request: "), std::string::npos) << lines;
  EXPECT_NE(lines.find("\tinfo\tready: listening on "), std::string::npos)
      << "lines about no request have no id: " << lines;
}

TEST_F(Logs, AForgedRequestIdCannotBreakOrForgeALogLine) {
  StartCoopd({"--log-format", "json"});
  CoopdProcess& coopd = *coopd_;
  TempDir& dir = dir_;

  // Printable, so gRPC sends it, but made to close the JSON string or fake a text tag.
  const std::string forged = "x\"} {\"level\":\"error\",\"message\":\"forged] [req evil] ";
  grpc::Status status;
  const std::string got = CallWithRequestId(coopd.socket_path(), forged, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(got.empty());
  EXPECT_NE(got, forged) << "an id that is not sane is replaced";
  const std::string long_id(65, 'a');
  const std::string bounded = CallWithRequestId(coopd.socket_path(), long_id, &status);
  EXPECT_FALSE(bounded.empty());
  EXPECT_NE(bounded, long_id) << "ids are bounded (64 bytes)";
  EXPECT_EQ(CallWithRequestId(coopd.socket_path(), long_id.substr(1), &status), long_id.substr(1));
  // A newline cannot be sent at all: gRPC clients refuse metadata values outside printable
  // ASCII (the C++ library aborts the process); tests/unit/server/daemon/log_format_test.cc and
  // grpc_service_test.cc check that one would be refused and could not break a line.

  ASSERT_EQ(coopd.Stop(), 0);
  WriteFile(dir.path() + "/log.jsonl", coopd.Log());
  int parse_status = -1;
  const std::string lines = ParseJsonLog(dir.path() + "/log.jsonl", &parse_status);
  ASSERT_EQ(parse_status, 0) << "every line is still one JSON object: " << lines;
  EXPECT_EQ(lines.find("\terror\t"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("\nevil\t"), std::string::npos) << lines;
  // The refused id is logged, escaped, under the id coopd made instead.
  EXPECT_NE(lines.find(got + "\tinfo\tnot using the client's x-request-id \"x\\\"}"),
            std::string::npos)
      << lines;
}

TEST_F(Logs, JsonLinesStayJsonOnAKernelWithoutLandlock) {
  // The degraded sandbox's warnings, the daemon's and its workers', in the same format.
  StartCoopd({"--log-format", "json", "--sandbox", "auto"}, /*without_landlock=*/true);
  grpc::Status status;
  EXPECT_EQ(CallWithRequestId(coopd_->socket_path(), "nl-1", &status), "nl-1");
  ASSERT_EQ(coopd_->Stop(), 0);
  WriteFile(dir_.path() + "/log.jsonl", coopd_->Log());
  int parse_status = -1;
  const std::string lines = ParseJsonLog(dir_.path() + "/log.jsonl", &parse_status);
  ASSERT_EQ(parse_status, 0) << lines;
  EXPECT_NE(lines.find("\twarning\tcompile sandbox DEGRADED: Landlock is unavailable"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("nl-1\tinfo\tinvalid request: "), std::string::npos) << lines;
}

TEST_F(Logs, TextLinesKeepTheirFormatWithTheRequestIdTag) {
  StartCoopd({});
  CoopdProcess& coopd = *coopd_;
  grpc::Status status;
  EXPECT_EQ(CallWithRequestId(coopd.socket_path(), "t-1", &status), "t-1");
  const std::string forged = "z] [req evil";
  const std::string got = CallWithRequestId(coopd.socket_path(), forged, &status);
  ASSERT_EQ(coopd.Stop(), 0);
  const std::string log = coopd.Log();
  EXPECT_NE(log.find(" info coopd: [req t-1] invalid request: "), std::string::npos) << log;
  EXPECT_NE(log.find(" info coopd: [req " + got +
                     "] not using the client's x-request-id "
                     "\"z] [req evil\""),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("coopd: [req evil"), std::string::npos) << log;
}

}  // namespace
}  // namespace coopd_test
