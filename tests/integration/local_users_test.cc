// Other local users (issue 27, docs/security.md "Other local users"): a socket directory another
// user planted (foreign-owned, world-writable, with links as the lock and the log), a socket
// another user owns, the cache's modes, and secrets files others may write. The attacker is uid
// 65534 (nobody): the tests run as root (as CI does) and skip otherwise, since only root can
// make a file another user's.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coop/client.h"
#include "coopd_process.h"
#include "server/cache/remote_config.h"
#include "server/rpc/access.h"
#include "test_util.h"

namespace coopd_test {
namespace {

using namespace std::chrono_literals;

constexpr uid_t kOther = 65534;  // nobody: the other local user
constexpr char kOpenssl[] = "/usr/bin/openssl";

#define REQUIRE_ROOT()                                                                       \
  if (geteuid() != 0) {                                                                      \
    GTEST_SKIP() << "needs root, to make files another user's (uid 65534); CI runs as root"; \
  }

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// Files of the victim (coopd's user) that a planted link points at, with their contents.
struct Victims {
  std::string keys, rc;
  std::string keys_text = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIvictimkey victim@host\n";
  std::string rc_text = "export PATH=/usr/bin:/bin\n";
  explicit Victims(const std::string& dir) : keys(dir + "/authorized_keys"), rc(dir + "/bashrc") {
    WriteFile(keys, keys_text, 0600);
    WriteFile(rc, rc_text, 0600);
  }
  void ExpectUnchanged() const {
    EXPECT_EQ(ReadAll(keys), keys_text) << keys << " was written through a planted link";
    EXPECT_EQ(ReadAll(rc), rc_text) << rc << " was written through a planted link";
  }
};

// The attack of issue 27 finding 5: `dir` made by the other user, mode 0777, with
// coopd.sock.lock linked to the victim's authorized_keys and coopd.log to its bashrc.
void PlantSocketDir(const std::string& dir, const Victims& v) {
  ASSERT_EQ(mkdir(dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  ASSERT_EQ(chown(dir.c_str(), kOther, kOther), 0);
  ASSERT_EQ(symlink(v.keys.c_str(), (dir + "/coopd.sock.lock").c_str()), 0);
  ASSERT_EQ(symlink(v.rc.c_str(), (dir + "/coopd.log").c_str()), 0);
  ASSERT_EQ(lchown((dir + "/coopd.sock.lock").c_str(), kOther, kOther), 0);
  ASSERT_EQ(lchown((dir + "/coopd.log").c_str(), kOther, kOther), 0);
}

// A daemon on `socket` that must refuse to start: its log.
std::string RefusedStart(const std::string& socket, const std::string& cache,
                         const std::vector<std::string>& args = {"--workers", "1"}) {
  CoopdProcess d(socket, cache, args);
  std::string error;
  EXPECT_TRUE(d.Start(&error)) << error;
  EXPECT_EQ(d.WaitExit(120s), 1) << d.Log();
  return d.Log();
}

TEST(LocalUsers, CoopdRefusesAPlantedSocketDirectoryAndWritesNothingThroughItsLinks) {
  REQUIRE_ROOT();
  TempDir t;
  const Victims victims(t.path());
  const std::string run = t.path() + "/run";
  PlantSocketDir(run, victims);
  const std::string log = RefusedStart(run + "/coopd.sock", t.path() + "/cache");
  EXPECT_NE(log.find("socket directory " + run +
                     ": owned by uid 65534, not coopd's user (0); remove it or choose --socket"),
            std::string::npos)
      << log;
  victims.ExpectUnchanged();
  struct stat st {};
  EXPECT_NE(stat((run + "/coopd.sock").c_str(), &st), 0) << "no socket in the planted directory";
}

TEST(LocalUsers, CoopdRefusesAWorldWritableOrLinkedSocketDirectoryOfItsOwn) {
  REQUIRE_ROOT();
  TempDir t;
  const Victims victims(t.path());
  const std::string open_dir = t.path() + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(symlink(victims.keys.c_str(), (open_dir + "/coopd.sock.lock").c_str()), 0);
  std::string log = RefusedStart(open_dir + "/coopd.sock", t.path() + "/cache");
  EXPECT_NE(log.find("socket directory " + open_dir +
                     ": mode 0777 lets every user write it (it must be writable by its owner "
                     "alone); remove it or choose --socket"),
            std::string::npos)
      << log;
  // A link to a directory (even a private one): refused, not followed.
  const std::string real = t.path() + "/real";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), (t.path() + "/linked").c_str()), 0);
  log = RefusedStart(t.path() + "/linked/coopd.sock", t.path() + "/cache");
  EXPECT_NE(log.find("socket directory " + t.path() + "/linked: is a symbolic link"),
            std::string::npos)
      << log;
  victims.ExpectUnchanged();
}

TEST(LocalUsers, TheLockFileIsOpenedWithoutFollowingALink) {
  REQUIRE_ROOT();
  // The directory is coopd's own and private, but a link sits where the lock goes (left by an
  // older coopd's directory, or made by the user by mistake): coopd refuses it, never truncates
  // what it points at.
  TempDir t;
  const Victims victims(t.path());
  const std::string run = t.path() + "/run";
  ASSERT_EQ(mkdir(run.c_str(), 0700), 0);
  ASSERT_EQ(symlink(victims.keys.c_str(), (run + "/coopd.sock.lock").c_str()), 0);
  const std::string log = RefusedStart(run + "/coopd.sock", t.path() + "/cache");
  EXPECT_NE(log.find("lock file " + run +
                     "/coopd.sock.lock: cannot open: Too many levels of "
                     "symbolic links (a symbolic link: refused, never followed)"),
            std::string::npos)
      << log;
  victims.ExpectUnchanged();
}

// Auto-start on for one test (the harness turns it off), the daemon found by COOPD_BIN.
class AutostartOn {
 public:
  AutostartOn() {
    unsetenv("COOPD_NO_AUTOSTART");
    setenv("COOPD_BIN", COOPD_BINARY, 1);
  }
  ~AutostartOn() {
    setenv("COOPD_NO_AUTOSTART", "1", 1);
    unsetenv("COOPD_BIN");
  }
};

TEST(LocalUsers, AutostartRefusesAPlantedDirectoryAndAppendsToNoLinkedLog) {
  REQUIRE_ROOT();
  TempDir t;
  const Victims victims(t.path());
  const std::string run = t.path() + "/run";
  PlantSocketDir(run, victims);
  AutostartOn on;
  coop::ClientOptions o;
  o.socket_path = run + "/coopd.sock";
  o.timeout = 10s;
  auto s = coop::Client(o).GetStats();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, coop::ErrorCode::kFailedPrecondition) << s.error().message;
  EXPECT_NE(s.error().message.find("socket " + run + "/coopd.sock: its directory " + run +
                                   ": owned by uid 65534, not you or root (0)"),
            std::string::npos)
      << s.error().message;
  victims.ExpectUnchanged();
  struct stat st {};
  EXPECT_NE(stat((run + "/coopd.sock").c_str(), &st), 0) << "no daemon was started there";
}

TEST(LocalUsers, AutostartOpensItsLogWithoutFollowingALink) {
  REQUIRE_ROOT();
  // The client's own private directory, with a link where the log goes.
  TempDir t;
  const Victims victims(t.path());
  const std::string run = t.path() + "/run";
  ASSERT_EQ(mkdir(run.c_str(), 0700), 0);
  ASSERT_EQ(symlink(victims.rc.c_str(), (run + "/coopd.log").c_str()), 0);
  AutostartOn on;
  coop::ClientOptions o;
  o.socket_path = run + "/coopd.sock";
  o.timeout = 10s;
  auto s = coop::Client(o).GetStats();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, coop::ErrorCode::kUnavailable) << s.error().message;
  EXPECT_NE(s.error().message.find(run + "/coopd.log: cannot open: Too many levels of symbolic "
                                         "links (a symbolic link: refused, never followed))"),
            std::string::npos)
      << s.error().message;
  victims.ExpectUnchanged();
}

// A Unix socket listener run by the other user (a forked child, setresuid 65534): it accepts
// connections and counts them and their bytes, and whether `secret` came in them, until Finish.
// The child uses only system calls and fixed buffers (the test process has gRPC's threads).
class ForeignListener {
 public:
  ForeignListener(const std::string& path, const std::string& secret) {
    int ready[2], stop[2], result[2];
    if (pipe(ready) != 0 || pipe(stop) != 0 || pipe(result) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(stop[1]);
      close(result[0]);
      Child(path, secret, ready[1], stop[0], result[1]);
    }
    close(ready[1]);
    close(stop[0]);
    close(result[1]);
    stop_ = stop[1];
    result_ = result[0];
    char c = 0;
    ok_ = read(ready[0], &c, 1) == 1 && c == 'r';
    close(ready[0]);
  }
  ~ForeignListener() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return ok_; }

  struct Seen {
    long connections = -1, bytes = -1, secret = -1;
  };
  Seen Finish() {
    Seen seen;
    close(stop_);
    char buf[128] = {0};
    size_t n = 0;
    ssize_t r;
    while (n < sizeof(buf) - 1 && (r = read(result_, buf + n, sizeof(buf) - 1 - n)) > 0) n += r;
    close(result_);
    sscanf(buf, "%ld %ld %ld", &seen.connections, &seen.bytes, &seen.secret);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return seen;
  }

 private:
  [[noreturn]] static void Child(const std::string& path, const std::string& secret, int ready,
                                 int stop, int result) {
    if (setresgid(kOther, kOther, kOther) != 0 || setgroups(0, nullptr) != 0 ||
        setresuid(kOther, kOther, kOther) != 0) {
      _exit(1);
    }
    const int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(l, 16) != 0) {
      _exit(1);
    }
    if (write(ready, "r", 1) != 1) _exit(1);
    close(ready);
    static char seen[1 << 16];
    size_t kept = 0;
    long connections = 0, bytes = 0;
    std::vector<pollfd> fds = {{l, POLLIN, 0}, {stop, POLLIN, 0}};
    fds.reserve(64);
    for (;;) {
      if (poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[1].revents != 0) break;
      if (fds[0].revents & POLLIN) {
        const int c = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0 && fds.size() < 64) {
          // An HTTP/2 server's first frame (empty SETTINGS): gRPC sends a call once the server
          // has spoken, as a real coopd would.
          static const char kSettings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
          if (write(c, kSettings, sizeof(kSettings)) < 0) _exit(1);
          ++connections;
          fds.push_back({c, POLLIN, 0});
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
        char buf[4096];
        const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          fds[i].events = 0;
          continue;
        }
        bytes += n;
        const size_t take = std::min(static_cast<size_t>(n), sizeof(seen) - kept);
        memcpy(seen + kept, buf, take);
        kept += take;
      }
    }
    const long found = memmem(seen, kept, secret.data(), secret.size()) != nullptr ? 1 : 0;
    char out[96];
    const int len = snprintf(out, sizeof(out), "%ld %ld %ld\n", connections, bytes, found);
    if (write(result, out, static_cast<size_t>(len)) < 0) _exit(1);
    _exit(0);
  }

  pid_t pid_ = -1;
  int stop_ = -1, result_ = -1;
  bool ok_ = false;
};

TEST(LocalUsers, ClientsSendNoTokenToASocketAnotherUserOwns) {
  REQUIRE_ROOT();
  TempDir t;
  ASSERT_EQ(chmod(t.path().c_str(), 0711), 0);  // the other user reaches its directory
  const std::string token = "victims-token-0123456789abcdef0123456789";
  WriteFile(t.path() + "/token", token + "\n", 0600);
  auto client = [&](const std::string& socket, const std::string& owner) {
    coop::ClientOptions o;
    o.socket_path = socket;
    o.token_file = t.path() + "/token";
    o.socket_owner = owner;
    o.autostart = false;
    o.timeout = 3s;
    return coop::Client(o);
  };
  // 1. The other user's directory (its own, 0755) with its listener in it: refused by the
  // directory's owner.
  const std::string theirs = t.path() + "/theirs";
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(chown(theirs.c_str(), kOther, kOther), 0);
  {
    ForeignListener listener(theirs + "/coopd.sock", token);
    ASSERT_TRUE(listener.ok());
    auto s = client(theirs + "/coopd.sock", "").GetStats();
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, coop::ErrorCode::kFailedPrecondition) << s.error().message;
    EXPECT_NE(s.error().message.find("socket " + theirs + "/coopd.sock: its directory " + theirs +
                                     ": owned by uid 65534, not you or root (0)"),
              std::string::npos)
        << s.error().message;
    auto h = client(theirs + "/coopd.sock", "").Health();
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error().code, coop::ErrorCode::kFailedPrecondition) << h.error().message;
    const auto seen = listener.Finish();
    EXPECT_EQ(seen.connections, 0);
    EXPECT_EQ(seen.bytes, 0);
  }
  unlink((theirs + "/coopd.sock").c_str());
  // 2. The other user's socket moved into the victim's own private directory (a socket keeps
  // its owner): refused by the socket's owner.
  const std::string mine = t.path() + "/mine";
  ASSERT_EQ(mkdir(mine.c_str(), 0700), 0);
  {
    ForeignListener listener(theirs + "/coopd.sock", token);
    ASSERT_TRUE(listener.ok());
    ASSERT_EQ(rename((theirs + "/coopd.sock").c_str(), (mine + "/coopd.sock").c_str()), 0);
    auto s = client(mine + "/coopd.sock", "").GetStats();
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, coop::ErrorCode::kFailedPrecondition) << s.error().message;
    EXPECT_NE(s.error().message.find("socket " + mine +
                                     "/coopd.sock is owned by uid 65534, not you (0): refusing "
                                     "to send your token to it; if a shared coopd runs as that "
                                     "user on purpose, name it in COOPD_SOCKET_OWNER"),
              std::string::npos)
        << s.error().message;
    auto seen = listener.Finish();
    EXPECT_EQ(seen.connections, 0);
    EXPECT_EQ(seen.bytes, 0);
    EXPECT_EQ(seen.secret, 0);
  }
  // 3. The control: naming that user as the socket's owner (a coopd shared on purpose), the
  // client connects, and the listener gets the token. So the refusals above are what kept it.
  {
    unlink((mine + "/coopd.sock").c_str());
    ForeignListener listener(theirs + "/coopd.sock", token);
    ASSERT_TRUE(listener.ok());
    ASSERT_EQ(rename((theirs + "/coopd.sock").c_str(), (mine + "/coopd.sock").c_str()), 0);
    auto s = client(mine + "/coopd.sock", "nobody").GetStats();
    ASSERT_FALSE(s);  // the listener answers nothing
    EXPECT_EQ(s.error().code, coop::ErrorCode::kDeadlineExceeded) << s.error().message;
    const auto seen = listener.Finish();
    EXPECT_GE(seen.connections, 1);
    EXPECT_EQ(seen.secret, 1) << "the control listener should have received the token";
  }
}

TEST(LocalUsers, TheCacheIsCoopdsUsersAloneAndOldOpenFilesAreTightened) {
  const mode_t old_umask = umask(022);  // the common default, under which files come out 0644
  TempDir t;
  const std::string cache = t.path() + "/cache";
  const std::string db = cache + "/cache.db";
  {
    CoopdProcess d(t.path() + "/coopd.sock", cache, {"--workers", "1"});
    std::string error;
    ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
    auto a = d.MakeClient().Specialize(BlockReduceF32());
    ASSERT_TRUE(a) << a.error().message;
    // While coopd runs, in WAL mode: the database, its -wal and -shm.
    EXPECT_EQ(ModeOf(cache), 0700u);
    EXPECT_EQ(ModeOf(db), 0600u);
    EXPECT_EQ(ModeOf(db + "-wal"), 0600u);
    EXPECT_EQ(ModeOf(db + "-shm"), 0600u);
    EXPECT_EQ(d.Stop(), 0);
  }
  // As an older coopd left them: open to every user.
  ASSERT_EQ(chmod(cache.c_str(), 0755), 0);
  ASSERT_EQ(chmod(db.c_str(), 0644), 0);
  CoopdProcess d(t.path() + "/coopd.sock", cache, {"--workers", "1"});
  std::string error;
  ASSERT_TRUE(d.Start(&error) && d.WaitReady(120s, &error)) << error;
  EXPECT_EQ(ModeOf(cache), 0700u);
  EXPECT_EQ(ModeOf(db), 0600u);
  const std::string log = d.Log();
  EXPECT_NE(log.find("cache: " + cache + " was mode 0755, open to other users; made it 0700"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("cache: " + db + " was mode 0644, open to other users; made it 0600"),
            std::string::npos)
      << log;
  auto a = d.MakeClient().Specialize(BlockReduceF32());
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->origin, coop::Origin::kDisk);
  EXPECT_EQ(d.Stop(), 0);
  umask(old_umask);
}

// A self-signed certificate and its key (mode 0600) in `dir`.
void MakeCertificate(const std::string& dir) {
  std::string out, err;
  ASSERT_EQ(RunCommand({kOpenssl, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", dir + "/key.pem",
                        "-out", dir + "/cert.pem", "-days", "2", "-subj", "/CN=localhost"},
                       &out, &err),
            0)
      << err;
  ASSERT_EQ(chmod((dir + "/key.pem").c_str(), 0600), 0);
}

TEST(LocalUsers, SecretsFilesOthersCouldRewriteAreRefused) {
  TempDir t;
  const std::string tokens = t.path() + "/tokens";
  WriteFile(tokens, "admin ops 0123456789abcdef0123456789abcdef\n", 0660);
  const std::string password = t.path() + "/redis.pw";
  WriteFile(password, "redis-secret-pass\n", 0660);
  MakeCertificate(t.path());
  const std::string key = t.path() + "/key.pem", cert = t.path() + "/cert.pem";
  ASSERT_EQ(chmod(key.c_str(), 0660), 0);
  const std::string group_writes = ": mode 0660 lets its group write it; chmod 640 (or 600)";

  // The daemon: its tokens file, its TLS key and its Redis password file.
  auto loaded = coopd::LoadTokensFile(tokens, "--tokens-file");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "--tokens-file \"" + tokens + "\"" + group_writes + " and start again");
  auto creds = coopd::TlsServerCredentials(cert, key, "");
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(creds.status().message(),
            "--tls-key \"" + key + "\"" + group_writes + " and start again");
  auto redis = coopd::ParseRemoteCacheUrl("redis://h:1", "--remote-cache", password);
  ASSERT_FALSE(redis.ok());
  EXPECT_NE(std::string(redis.status().message()).find(password + "\"" + group_writes),
            std::string::npos)
      << redis.status();
  // And a daemon given that tokens file does not start.
  const std::string log =
      RefusedStart(t.path() + "/coopd.sock", t.path() + "/cache",
                   {"--workers", "1", "--tokens-file", tokens, "--tokens-unix"});
  EXPECT_NE(log.find("--tokens-file \"" + tokens + "\"" + group_writes), std::string::npos) << log;
  // The clients' token file.
  auto s = [&] {
    coop::ClientOptions o;
    o.socket_path = t.path() + "/none.sock";
    o.token_file = tokens;
    o.autostart = false;
    return coop::Client(o).GetStats();
  }();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, coop::ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message,
            "ClientOptions::token_file (COOPD_TOKEN_FILE) \"" + tokens + "\"" + group_writes);

  // Mode 0640 (a group reads it) and owned by coopd's user or root: accepted.
  for (const std::string& f : {tokens, password, key}) ASSERT_EQ(chmod(f.c_str(), 0640), 0);
  EXPECT_TRUE(coopd::LoadTokensFile(tokens, "--tokens-file").ok());
  EXPECT_TRUE(coopd::TlsServerCredentials(cert, key, "").ok());
  auto ok = coopd::ParseRemoteCacheUrl("redis://h:1", "--remote-cache", password);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->password, "redis-secret-pass");

  // Owned by another user (who could rewrite it), even at 0600: refused.
  if (geteuid() == 0) {
    for (const std::string& f : {tokens, password, key}) {
      ASSERT_EQ(chmod(f.c_str(), 0600), 0);
      ASSERT_EQ(chown(f.c_str(), kOther, kOther), 0);
    }
    const std::string foreign =
        ": owned by uid 65534, who may rewrite it; it must be owned by "
        "this user (0) or root: chown it";
    loaded = coopd::LoadTokensFile(tokens, "--tokens-file");
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().message(),
              "--tokens-file \"" + tokens + "\"" + foreign + " and start again");
    EXPECT_FALSE(coopd::TlsServerCredentials(cert, key, "").ok());
    EXPECT_FALSE(coopd::ParseRemoteCacheUrl("redis://h:1", "--remote-cache", password).ok());
  }
}

}  // namespace
}  // namespace coopd_test
