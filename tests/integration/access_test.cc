// Access control (issue 14 item 5, docs/security.md) against a real coopd: the Unix socket's
// permissions and --socket-group; TCP that refuses to start without TLS and client
// authentication unless --insecure; bearer tokens with roles, each role against each RPC over
// TLS; client certificates (mTLS); tokens on the Unix socket; secrets never in logs or errors;
// coopctl through its environment. The CA, certificates and tokens are made at test time with
// the openssl CLI (no private key is checked in).
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

constexpr char kOpenssl[] = "/usr/bin/openssl";

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
}

void Openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kOpenssl};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out, err;
  ASSERT_EQ(RunCommand(argv, &out, &err), 0) << err;
}

// A test CA, a server certificate for localhost and 127.0.0.1 and a client certificate, both
// signed by it, and a client certificate of another CA; keys 0600. Tokens for each role, one
// file per token as clients read them, and the daemon's tokens file.
struct Pki {
  TempDir dir;
  std::string ca, server_cert, server_key, client_cert, client_key, rogue_cert, rogue_key;
  std::string tokens_file;
  std::string read_token, compile_token, admin_token, wrong_token;
  std::string read_file, compile_file, admin_file, wrong_file;

  std::string P(const std::string& name) const { return dir.path() + "/" + name; }

  void Make() {
    const std::string d = dir.path();
    auto key_and_csr = [&](const std::string& name, const std::string& cn) {
      Openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
               "-keyout", P(name + ".key"), "-out", P(name + ".csr"), "-subj", "/CN=" + cn});
    };
    auto self_signed = [&](const std::string& name) {
      Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
               "-nodes", "-keyout", P(name + ".key"), "-out", P(name + ".pem"), "-days", "2",
               "-subj", "/CN=coopd test " + name});
    };
    auto sign = [&](const std::string& name, const std::string& ca_name, const std::string& ext) {
      WriteFile(P(name + ".ext"), ext);
      Openssl({"x509", "-req", "-in", P(name + ".csr"), "-CA", P(ca_name + ".pem"), "-CAkey",
               P(ca_name + ".key"), "-CAcreateserial", "-out", P(name + ".pem"), "-days", "2",
               "-extfile", P(name + ".ext")});
    };
    self_signed("ca");
    self_signed("rogue-ca");
    key_and_csr("server", "localhost");
    sign("server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    key_and_csr("client", "coopd test client");
    sign("client", "ca", "extendedKeyUsage=clientAuth\n");
    key_and_csr("rogue", "coopd rogue client");
    sign("rogue", "rogue-ca", "extendedKeyUsage=clientAuth\n");
    for (const char* k : {"ca.key", "rogue-ca.key", "server.key", "client.key", "rogue.key"}) {
      ASSERT_EQ(chmod(P(k).c_str(), 0600), 0);
    }
    ca = P("ca.pem");
    server_cert = P("server.pem");
    server_key = P("server.key");
    client_cert = P("client.pem");
    client_key = P("client.key");
    rogue_cert = P("rogue.pem");
    rogue_key = P("rogue.key");
    auto token = [&](const std::string& name, std::string* value, std::string* file) {
      std::string out, err;
      ASSERT_EQ(RunCommand({kOpenssl, "rand", "-hex", "24"}, &out, &err), 0) << err;
      *value = out.substr(0, 48);
      *file = P(name + ".token");
      WriteFile(*file, "# coopd token\n" + *value + "\n");
    };
    token("read", &read_token, &read_file);
    token("compile", &compile_token, &compile_file);
    token("admin", &admin_token, &admin_file);
    token("wrong", &wrong_token, &wrong_file);
    tokens_file = P("tokens");
    WriteFile(tokens_file, "# ROLE NAME TOKEN\nread ci-reader " + read_token +
                               "\ncompile builder " + compile_token + "\nadmin ops " + admin_token +
                               "\n");
  }
  std::vector<std::string> Secrets() const {
    return {read_token, compile_token, admin_token, wrong_token};
  }
};

// The port of the daemon's first TCP listener, from its start-up log.
int TcpPort(const CoopdProcess& d) {
  const std::string log = d.Log();
  const std::string mark = "listening on tcp 127.0.0.1:";
  const size_t at = log.find(mark);
  if (at == std::string::npos) return 0;
  return std::atoi(log.c_str() + at + mark.size());
}

// A client of the daemon's TLS port, trusting the test CA, with a token file and a client
// certificate when given.
coop::Client TcpClient(const Pki& pki, int port, const std::string& token_file,
                       const std::string& cert = "", const std::string& key = "") {
  coop::ClientOptions o;
  o.target = "localhost:" + std::to_string(port);
  o.tls_ca_file = pki.ca;
  o.token_file = token_file;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  o.timeout = 180s;
  o.autostart = false;
  return coop::Client(o);
}

coop::Client UnixClient(const CoopdProcess& d, const std::string& token_file) {
  coop::ClientOptions o;
  o.socket_path = d.socket_path();
  o.token_file = token_file;
  o.timeout = 180s;
  o.autostart = false;
  return coop::Client(o);
}

// Starts a daemon that must come up; its TCP port in *port when it has one.
void StartDaemon(CoopdProcess* d, int* port = nullptr) {
  std::string error;
  ASSERT_TRUE(d->Start(&error) && d->WaitReady(120s, &error)) << error;
  if (port != nullptr) {
    *port = TcpPort(*d);
    ASSERT_GT(*port, 0) << d->Log();
  }
}

// A daemon that must refuse to start, with exit status `status` (2: a bad setting, refused
// before anything starts; 1: a file it cannot use): its log.
std::string RefusedStart(const TempDir& dir, const std::vector<std::string>& args, int status = 2) {
  static int n = 0;
  CoopdProcess d(dir.path() + "/refused" + std::to_string(++n) + ".sock", dir.path() + "/cache",
                 args);
  std::string error;
  EXPECT_TRUE(d.Start(&error)) << error;
  EXPECT_EQ(d.WaitExit(120s), status) << d.Log();
  return d.Log();
}

mode_t SocketMode(const std::string& path, gid_t* gid = nullptr) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  if (gid != nullptr) *gid = st.st_gid;
  return st.st_mode & 07777;
}

TEST(Access, TheUnixSocketIsTheOwnersAloneByDefault) {
  TempDir dir;
  const std::string socket_dir = dir.path() + "/run";  // coopd creates it
  CoopdProcess d(socket_dir + "/coopd.sock", dir.path() + "/cache", {"--workers", "1"});
  StartDaemon(&d);
  EXPECT_EQ(SocketMode(d.socket_path()), 0600);
  struct stat st {};
  ASSERT_EQ(stat(socket_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  auto s = UnixClient(d, "").GetStats();
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->listeners.size(), 1u);
  EXPECT_EQ(s->listeners[0].address, "unix:" + d.socket_path());
  EXPECT_EQ(s->listeners[0].mode, "0600");
  EXPECT_FALSE(s->listeners[0].tokens);
  EXPECT_EQ(d.Stop(), 0);
}

TEST(Access, SocketGroupGivesTheSocketAndItsNewDirectoryToTheGroup) {
  // A system group that exists on Debian; root (CI) may give files to any group.
  struct group* g = getgrnam("daemon");
  ASSERT_NE(g, nullptr);
  const gid_t daemon_gid = g->gr_gid;
  TempDir dir;
  const std::string socket_dir = dir.path() + "/run";  // coopd creates it
  CoopdProcess d(socket_dir + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--socket-group", "daemon"});
  StartDaemon(&d);
  gid_t gid = 0;
  EXPECT_EQ(SocketMode(d.socket_path(), &gid), 0660);
  EXPECT_EQ(gid, daemon_gid);
  struct stat st {};
  ASSERT_EQ(stat(socket_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, daemon_gid);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  auto s = UnixClient(d, "").GetStats();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->listeners.at(0).mode, "0660 group daemon");
  // The lock file stays the owner's.
  ASSERT_EQ(stat((d.socket_path() + ".lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(d.Stop(), 0);
}

TEST(Access, AnUnknownSocketGroupIsRefusedByName) {
  TempDir dir;
  const std::string log = RefusedStart(dir, {"--socket-group", "no-such-group-coopd"});
  EXPECT_NE(log.find("--socket-group: no such group \"no-such-group-coopd\""), std::string::npos)
      << log;
}

TEST(Access, TcpWithoutTlsOrClientAuthenticationRefusesToStartUnlessInsecure) {
  Pki pki;
  pki.Make();
  TempDir dir;
  std::string log = RefusedStart(dir, {"--listen", "127.0.0.1:0"});
  EXPECT_NE(log.find("--listen 127.0.0.1:0: TCP needs TLS: give --tls-cert FILE and --tls-key "
                     "FILE"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("or --insecure (COOPD_INSECURE=1)"), std::string::npos) << log;
  log = RefusedStart(
      dir, {"--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert, "--tls-key", pki.server_key});
  EXPECT_NE(log.find("TCP clients must authenticate"), std::string::npos) << log;
  // Files that cannot serve: a key others may read, a key of another certificate.
  const std::string open_key = pki.P("open.key");
  WriteFile(open_key, "x", 0644);
  log = RefusedStart(dir,
                     {"--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert, "--tls-key",
                      open_key, "--tls-client-ca", pki.ca},
                     1);
  EXPECT_NE(log.find("--tls-key \"" + open_key + "\": others may access it (mode 0644)"),
            std::string::npos)
      << log;
  log = RefusedStart(dir,
                     {"--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert, "--tls-key",
                      pki.client_key, "--tls-client-ca", pki.ca},
                     1);
  EXPECT_NE(log.find("--tls-key \"" + pki.client_key + "\" is not the key of --tls-cert"),
            std::string::npos)
      << log;

  // --insecure: it serves, and says so at start, in its stats and in coopctl health.
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--listen", "127.0.0.1:0", "--insecure"});
  int port = 0;
  StartDaemon(&d, &port);
  EXPECT_NE(d.Log().find("INSECURE (--insecure): listening on tcp 127.0.0.1:" +
                         std::to_string(port) + " WITHOUT TLS OR AUTHENTICATION"),
            std::string::npos)
      << d.Log();
  auto s = UnixClient(d, "").GetStats();
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->listeners.size(), 2u);
  const coop::Listener& tcp = s->listeners[1];
  EXPECT_EQ(tcp.address, "tcp 127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(tcp.insecure);
  EXPECT_FALSE(tcp.tls);
  EXPECT_FALSE(s->listeners[0].insecure) << "the Unix socket";
  std::string out, err;
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", d.socket_path(), "health"}, &out, &err), 0)
      << err;
  EXPECT_EQ(out, "SERVING (" + d.socket_path() + ")\n");
  EXPECT_EQ(err, "warning: coopd serves tcp 127.0.0.1:" + std::to_string(port) +
                     ": plaintext  INSECURE: no TLS\n");
  EXPECT_EQ(d.Stop(), 0);
}

enum Who { kNone, kWrong, kRead, kCompile, kAdmin, kWhoCount };
constexpr const char* kWhoNames[] = {"no token", "wrong token", "read", "compile", "admin"};
constexpr auto kOk = coop::ErrorCode::kOk;
constexpr auto kUnauth = coop::ErrorCode::kUnauthenticated;
constexpr auto kDenied = coop::ErrorCode::kPermissionDenied;

template <class T>
coop::ErrorCode Code(const coop::Result<T>& r, std::vector<std::string>* errors) {
  if (r) return kOk;
  errors->push_back(r.error().message);
  return r.error().code;
}

// A spec no other row asks for (a block size of its own), so it is a miss.
coop::Spec Fresh(int n) {
  return BlockSpec("block_reduce", "sum", "float32", {static_cast<uint32_t>(32 * (n + 1))}, 1);
}

// Each role (and no token, and a token coopd does not know) against each RPC, over TLS. Rows
// run in order, each for every caller in turn: a "miss" row's request is new to the read
// caller (refused: it cannot compile), is compiled for the compile caller, and is then a hit.
TEST(Access, EachRoleAgainstEachRpcOverTls) {
  Pki pki;
  pki.Make();
  TempDir dir;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert,
                  "--tls-key", pki.server_key, "--tokens-file", pki.tokens_file});
  int port = 0;
  StartDaemon(&d, &port);
  EXPECT_NE(d.Log().find("access: 3 bearer token(s) from " + pki.tokens_file +
                         " (1 read, 1 compile, 1 admin), required on TCP"),
            std::string::npos)
      << d.Log();
  std::vector<coop::Client> clients;
  for (const std::string& f :
       {std::string(), pki.wrong_file, pki.read_file, pki.compile_file, pki.admin_file}) {
    clients.push_back(TcpClient(pki, port, f));
  }
  coop::Client& admin = clients[kAdmin];
  auto cached = admin.Specialize(BlockReduceF32());  // the hits' entry (and the PCH)
  ASSERT_TRUE(cached) << cached.error().message;
  coop::LinkRequest link;
  link.arch = "sm_90";
  link.modules = {
      {coop::LinkInputKind::kLtoIr, "kernel.ltoir", CompileKernel(BlockSumKernel(*cached))}};
  link.artifact_keys = {cached->key};
  const std::vector<coop::Spec> bundle = {BlockReduceF32(), Fresh(20)};
  coop::PlanRequest plan_hit, plan_miss;
  plan_hit.uses.push_back({"reduce", BlockReduceF32()});
  plan_miss.uses.push_back({"reduce", Fresh(21)});
  coop::CacheFilter nothing;
  nothing.dtype = "float64";  // nothing cached: purge removes nothing

  std::vector<std::string> errors;
  struct Row {
    const char* rpc;
    std::function<coop::ErrorCode(coop::Client&, Who)> call;
    std::array<coop::ErrorCode, kWhoCount> expected;  // no token, wrong, read, compile, admin
  };
  const std::vector<Row> rows = {
      {"Specialize (hit)",
       [&](coop::Client& c, Who) { return Code(c.Specialize(BlockReduceF32()), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"Specialize (miss)",
       [&](coop::Client& c, Who w) { return Code(c.Specialize(Fresh(w)), &errors); },
       {kUnauth, kUnauth, kDenied, kOk, kOk}},
      {"SpecializeBundle (miss, then hit)",
       [&](coop::Client& c, Who) { return Code(c.SpecializeBundle(bundle), &errors); },
       {kUnauth, kUnauth, kDenied, kOk, kOk}},
      {"SpecializeBundle (hit)",
       [&](coop::Client& c, Who) { return Code(c.SpecializeBundle(bundle), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"Link (miss, then hit)",
       [&](coop::Client& c, Who) { return Code(c.Link(link), &errors); },
       {kUnauth, kUnauth, kDenied, kOk, kOk}},
      {"Link (hit)",
       [&](coop::Client& c, Who) { return Code(c.Link(link), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"Plan (hit)",
       [&](coop::Client& c, Who) { return Code(c.Plan(plan_hit), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"Plan (miss, then hit)",
       [&](coop::Client& c, Who) { return Code(c.Plan(plan_miss), &errors); },
       {kUnauth, kUnauth, kDenied, kOk, kOk}},
      {"Explain",
       [&](coop::Client& c, Who) { return Code(c.Explain(BlockReduceF32()), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"Catalog",
       [&](coop::Client& c, Who) { return Code(c.GetCatalog(), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"GetStats",
       [&](coop::Client& c, Who) { return Code(c.GetStats(), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"ListEntries",
       [&](coop::Client& c, Who) { return Code(c.ListEntries(coop::CacheFilter{}), &errors); },
       {kUnauth, kUnauth, kOk, kOk, kOk}},
      {"ResetStats",
       [&](coop::Client& c, Who) { return Code(c.ResetStats(), &errors); },
       {kUnauth, kUnauth, kDenied, kDenied, kOk}},
      {"Purge",
       [&](coop::Client& c, Who) { return Code(c.Purge(nothing), &errors); },
       {kUnauth, kUnauth, kDenied, kDenied, kOk}},
      {"Verify",
       [&](coop::Client& c, Who) { return Code(c.Verify(), &errors); },
       {kUnauth, kUnauth, kDenied, kDenied, kOk}},
      {"Vacuum",
       [&](coop::Client& c, Who) { return Code(c.Vacuum(), &errors); },
       {kUnauth, kUnauth, kDenied, kDenied, kOk}},
  };
  for (const Row& row : rows) {
    for (int w = 0; w < kWhoCount; ++w) {
      const size_t seen = errors.size();
      const coop::ErrorCode got = row.call(clients[w], static_cast<Who>(w));
      EXPECT_EQ(got, row.expected[w])
          << row.rpc << " as " << kWhoNames[w] << ": "
          << (errors.size() > seen ? errors.back() : std::string("succeeded"));
    }
  }
  // The read caller's misses were refused, each saying why (ResetStats zeroed the counters in
  // between, so the refusals are counted from their messages).
  size_t read_refusals = 0;
  for (const auto& e : errors) {
    if (e.find("this caller's token has role read, which fetches cached") != std::string::npos) {
      ++read_refusals;
    }
  }
  EXPECT_EQ(read_refusals, 4u) << "Specialize, SpecializeBundle, Link and Plan misses";
  const std::string expected_denial =
      "Purge: token \"ci-reader\" has role read; Purge needs role admin";
  EXPECT_NE(std::find(errors.begin(), errors.end(), expected_denial), errors.end());
  const std::string no_token =
      "GetStats: this coopd requires a bearer token on TCP (metadata \"authorization: Bearer "
      "TOKEN\"; clients: ClientOptions::token_file, COOPD_TOKEN_FILE, "
      "coopd.Client(token_file=...))";
  EXPECT_NE(std::find(errors.begin(), errors.end(), no_token), errors.end());
  EXPECT_NE(std::find(errors.begin(), errors.end(),
                      "GetStats: the bearer token is not valid for this coopd"),
            errors.end());
  // The health service is gRPC's and open to every caller (it says only serving or not).
  auto h = clients[kNone].Health();
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(*h, coop::HealthStatus::kServing);
  // Counted, and no secret in any error or in the log.
  auto s = admin.GetStats();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_GT(s->unauthenticated_calls, 0u);
  EXPECT_GT(s->denied_calls, 0u);
  ASSERT_EQ(s->listeners.size(), 2u);
  EXPECT_TRUE(s->listeners[1].tls);
  EXPECT_TRUE(s->listeners[1].tokens);
  EXPECT_FALSE(s->listeners[1].insecure);
  EXPECT_FALSE(s->listeners[0].tokens) << "the Unix socket needs no token without --tokens-unix";
  const std::string log = d.Log();
  for (const std::string& secret : pki.Secrets()) {
    EXPECT_EQ(log.find(secret), std::string::npos) << "a token is in the daemon's log";
    for (const auto& e : errors) EXPECT_EQ(e.find(secret), std::string::npos) << e;
  }
  // Without --tokens-unix, the socket keeps its owner-only behaviour: no token needed.
  auto local = UnixClient(d, "").Purge(nothing);
  EXPECT_TRUE(local) << local.error().message;
  EXPECT_EQ(d.Stop(), 0);
}

// coopctl stop / Client::Stop: the admin role alone stops the daemon; the others are refused and
// the daemon serves on.
TEST(Access, StopNeedsTheAdminRole) {
  Pki pki;
  pki.Make();
  TempDir dir;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--tokens-file", pki.tokens_file, "--tokens-unix"});
  StartDaemon(&d);
  auto none = UnixClient(d, "").Stop();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, kUnauth);
  for (const std::string* file : {&pki.read_file, &pki.compile_file}) {
    auto refused = UnixClient(d, *file).Stop();
    ASSERT_FALSE(refused) << *file;
    EXPECT_EQ(refused.error().code, kDenied) << refused.error().message;
    EXPECT_NE(refused.error().message.find("Stop"), std::string::npos) << refused.error().message;
  }
  std::string out, err;
  setenv("COOPD_TOKEN_FILE", pki.compile_file.c_str(), 1);
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", d.socket_path(), "stop"}, &out, &err), 5)
      << err;
  auto still = UnixClient(d, pki.read_file).Health();
  ASSERT_TRUE(still) << still.error().message;
  EXPECT_EQ(*still, coop::HealthStatus::kServing) << "a refused stop stops nothing";
  setenv("COOPD_TOKEN_FILE", pki.admin_file.c_str(), 1);
  EXPECT_EQ(RunCommand({COOPCTL_BINARY, "--socket", d.socket_path(), "stop", "--json"}, &out, &err),
            0)
      << err;
  unsetenv("COOPD_TOKEN_FILE");
  EXPECT_EQ(out, "{\"status\":\"STOPPED\",\"socket\":\"" + d.socket_path() + "\"}\n");
  EXPECT_EQ(d.WaitExit(120s), 0) << d.Log();
  EXPECT_NE(d.Log().find("stop requested by ops; stopping"), std::string::npos) << d.Log();
  for (const auto& secret : pki.Secrets()) EXPECT_EQ(d.Log().find(secret), std::string::npos);
}

TEST(Access, TokensUnixRequiresTokensOnTheSocketToo) {
  Pki pki;
  pki.Make();
  TempDir dir;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--tokens-file", pki.tokens_file, "--tokens-unix"});
  StartDaemon(&d);
  auto none = UnixClient(d, "").GetStats();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, kUnauth);
  EXPECT_TRUE(none.error().from_server);
  EXPECT_NE(none.error().message.find("requires a bearer token on its Unix socket"),
            std::string::npos)
      << none.error().message;
  auto read = UnixClient(d, pki.read_file);
  auto stats = read.GetStats();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_TRUE(stats->listeners.at(0).tokens);
  auto miss = read.Specialize(BlockReduceF32());
  ASSERT_FALSE(miss);
  EXPECT_EQ(miss.error().code, kDenied);
  EXPECT_NE(miss.error().message.find("is not cached (key "), std::string::npos)
      << miss.error().message;
  EXPECT_EQ(UnixClient(d, pki.compile_file).ResetStats().error().code, kDenied);
  auto admin = UnixClient(d, pki.admin_file).ResetStats();
  EXPECT_TRUE(admin) << admin.error().message;
  EXPECT_EQ(admin->compiles, 0u) << "the read caller's miss compiled nothing";
  EXPECT_EQ(admin->misses, 1u);
  EXPECT_EQ(d.Stop(), 0);
}

// Every coop RPC is registered raw, and coopd admits a call (its token and role, then its
// client's limits) before it decodes the request. Raw calls on the socket with --tokens-unix: a
// caller without a valid token is UNAUTHENTICATED even for bytes that do not decode, and however
// many calls it sends, it spends no rate budget; a read token's Specialize miss is
// PERMISSION_DENIED and compiles nothing; a token's calls count against its name, whatever
// coopd-client metadata each sends, and another token has a budget of its own.
TEST(Access, RawCallsAreAuthenticatedBeforeTheyAreLimitedOrDecoded) {
  Pki pki;
  pki.Make();
  TempDir dir;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--tokens-file", pki.tokens_file, "--tokens-unix",
                  "--client-rate", "0.001", "--client-burst", "3"});
  StartDaemon(&d);
  using Metadata = std::vector<std::pair<std::string, std::string>>;
  auto as = [](const std::string& token, const std::string& client) {
    Metadata m = {{"coopd-client", client}};
    if (!token.empty()) m.push_back({"authorization", "Bearer " + token});
    return m;
  };
  const std::string garbage("\xff\xff\xff\xff", 4);  // does not decode
  for (int i = 0; i < 5; ++i) {                      // more than the burst of 3
    for (const std::string& token : {std::string(), pki.wrong_token}) {
      grpc::Status s =
          RawCall(d.socket_path(), "/coop.v1.Coop/Specialize", garbage, as(token, "stranger/1"));
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << "call " << i << (token.empty() ? " without a token: " : " with a wrong token: ")
          << s.error_message();
    }
  }
  coop::v1::SpecializeRequest request;
  request.mutable_spec()->set_family("block_reduce");
  request.mutable_spec()->set_dtype("float32");
  request.mutable_spec()->mutable_block()->set_x(256);
  request.mutable_spec()->set_arch("sm_90");
  const std::string body = request.SerializeAsString();
  grpc::Status miss =
      RawCall(d.socket_path(), "/coop.v1.Coop/Specialize", body, as(pki.read_token, "reader/1"));
  EXPECT_EQ(miss.error_code(), grpc::StatusCode::PERMISSION_DENIED) << miss.error_message();
  EXPECT_NE(miss.error_message().find("this caller's token has role read, which fetches cached"),
            std::string::npos)
      << miss.error_message();
  // The read token's budget: the miss above and these two, from clients of other names.
  for (const char* client : {"reader/2", "reader/3"}) {
    grpc::Status s =
        RawCall(d.socket_path(), "/coop.v1.Coop/Explain", body, as(pki.read_token, client));
    EXPECT_TRUE(s.ok()) << client << ": " << s.error_message();
  }
  grpc::Status over =
      RawCall(d.socket_path(), "/coop.v1.Coop/Explain", body, as(pki.read_token, "reader/4"));
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();
  EXPECT_NE(over.error_message().find("client \"token:ci-reader\" is over its rate limit"),
            std::string::npos)
      << over.error_message();
  grpc::Status other =
      RawCall(d.socket_path(), "/coop.v1.Coop/Explain", body, as(pki.compile_token, "reader/4"));
  EXPECT_TRUE(other.ok()) << other.error_message();
  auto stats = UnixClient(d, pki.admin_file).GetStats();  // GetStats is never limited
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_GE(stats->unauthenticated_calls, 10u);
  EXPECT_EQ(stats->compiles, 0u) << "the read caller's miss compiled nothing";
  EXPECT_EQ(d.Log().find("undecodable request"), std::string::npos)
      << "an unauthenticated request was decoded";
  EXPECT_EQ(d.Stop(), 0);
}

TEST(Access, ATokensFileOthersMayReadStopsTheDaemonWithoutQuotingIt) {
  Pki pki;
  pki.Make();
  ASSERT_EQ(chmod(pki.tokens_file.c_str(), 0644), 0);
  TempDir dir;
  const std::string log = RefusedStart(dir, {"--tokens-file", pki.tokens_file}, 1);
  EXPECT_NE(log.find("--tokens-file \"" + pki.tokens_file +
                     "\": others may access it (mode 0644), and it holds secrets"),
            std::string::npos)
      << log;
  for (const std::string& secret : pki.Secrets()) EXPECT_EQ(log.find(secret), std::string::npos);
  // A bad line is named by number, its token not quoted.
  WriteFile(pki.tokens_file, "read ci " + pki.read_token + "\nsuperuser root " + pki.admin_token);
  const std::string bad = RefusedStart(dir, {"--tokens-file", pki.tokens_file}, 1);
  EXPECT_NE(bad.find(pki.tokens_file + ":2: role must be one of read, compile, admin; got "
                                       "\"superuser\""),
            std::string::npos)
      << bad;
  for (const std::string& secret : pki.Secrets()) EXPECT_EQ(bad.find(secret), std::string::npos);
}

TEST(Access, ClientCertificatesAreRequiredAndVerifiedWithATlsClientCa) {
  Pki pki;
  pki.Make();
  TempDir dir;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert,
                  "--tls-key", pki.server_key, "--tls-client-ca", pki.ca});
  int port = 0;
  StartDaemon(&d, &port);
  auto with_cert = TcpClient(pki, port, "", pki.client_cert, pki.client_key).GetStats();
  ASSERT_TRUE(with_cert) << with_cert.error().message;
  EXPECT_TRUE(with_cert->listeners.at(1).client_certificates);
  EXPECT_FALSE(with_cert->listeners.at(1).insecure);
  // The handshake fails without a certificate, or with one of another CA: the call never
  // reaches coopd.
  for (const auto& [cert, key] :
       {std::pair<std::string, std::string>{"", ""},
        std::pair<std::string, std::string>{pki.rogue_cert, pki.rogue_key}}) {
    auto r = TcpClient(pki, port, "", cert, key).GetStats();
    ASSERT_FALSE(r) << (cert.empty() ? "no certificate" : "a certificate of another CA");
    EXPECT_EQ(r.error().code, coop::ErrorCode::kUnavailable) << r.error().message;
    EXPECT_FALSE(r.error().from_server);
  }
  // And a client that does not trust coopd's CA refuses the server.
  coop::ClientOptions o;
  o.target = "localhost:" + std::to_string(port);
  o.tls_ca_file = pki.P("rogue-ca.pem");
  o.tls_cert_file = pki.client_cert;
  o.tls_key_file = pki.client_key;
  o.timeout = 10s;
  auto untrusted = coop::Client(o).GetStats();
  ASSERT_FALSE(untrusted);
  EXPECT_EQ(untrusted.error().code, coop::ErrorCode::kUnavailable);
  EXPECT_EQ(d.Stop(), 0);
}

TEST(Access, ClientOptionsFilesAreCheckedAndNamed) {
  Pki pki;
  pki.Make();
  coop::ClientOptions o;
  o.socket_path = pki.P("none.sock");
  o.autostart = false;
  o.token_file = pki.read_file;
  ASSERT_EQ(chmod(pki.read_file.c_str(), 0644), 0);
  auto r = coop::Client(o).GetStats();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "ClientOptions::token_file (COOPD_TOKEN_FILE) \"" + pki.read_file +
                                   "\": others may access it (mode 0644), and it holds a "
                                   "secret: chmod 600 (or 640 for a group)");
  o.token_file = pki.P("missing.token");
  EXPECT_EQ(coop::Client(o).GetStats().error().message,
            "ClientOptions::token_file (COOPD_TOKEN_FILE) \"" + o.token_file +
                "\": cannot open: No such file or directory");
  o.token_file.clear();
  o.target = "localhost:1";
  o.tls_cert_file = pki.client_cert;
  EXPECT_EQ(coop::Client(o).Health().error().message,
            "ClientOptions::tls_cert_file and tls_key_file (COOPD_TLS_CERT, COOPD_TLS_KEY) go "
            "together; one of them is missing");
}

// coopctl reaches a TLS + token daemon through COOPD_TARGET, COOPD_TLS_CA and COOPD_TOKEN_FILE
// (the flags come with coopctl's new argument parser).
TEST(Access, CoopctlUsesTheEnvironmentsTargetTlsAndToken) {
  Pki pki;
  pki.Make();
  TempDir dir;
  CoopdProcess d(dir.path() + "/coopd.sock", dir.path() + "/cache",
                 {"--workers", "1", "--listen", "127.0.0.1:0", "--tls-cert", pki.server_cert,
                  "--tls-key", pki.server_key, "--tokens-file", pki.tokens_file});
  int port = 0;
  StartDaemon(&d, &port);
  auto coopctl = [&](const std::string& token_file, const std::vector<std::string>& args,
                     std::string* out, std::string* err) {
    std::vector<std::string> argv = {
        "/usr/bin/env", "COOPD_TARGET=localhost:" + std::to_string(port), "COOPD_TLS_CA=" + pki.ca,
        "COOPD_TOKEN_FILE=" + token_file, COOPCTL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, out, err);
  };
  std::string out, err;
  EXPECT_EQ(coopctl(pki.read_file, {"stats"}, &out, &err), 0) << err;
  EXPECT_NE(
      out.find("listening:       tcp 127.0.0.1:" + std::to_string(port) + ": TLS, bearer tokens\n"),
      std::string::npos)
      << out;
  EXPECT_NE(coopctl(pki.read_file, {"purge", "--all"}, &out, &err), 0);
  EXPECT_NE(err.find("PERMISSION_DENIED: Purge: token \"ci-reader\" has role read"),
            std::string::npos)
      << err;
  EXPECT_EQ(coopctl(pki.admin_file, {"purge", "--all"}, &out, &err), 0) << err;
  EXPECT_NE(coopctl(pki.wrong_file, {"stats"}, &out, &err), 0);
  EXPECT_NE(err.find("UNAUTHENTICATED"), std::string::npos) << err;
  for (const std::string& secret : pki.Secrets()) EXPECT_EQ(err.find(secret), std::string::npos);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace coopd_test
