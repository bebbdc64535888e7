#include "coopd_process.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace coopd_test {

TempDir::TempDir() {
  char tmpl[] = "/tmp/coopd-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

CoopdProcess::CoopdProcess(std::string socket_path, std::string cache_dir,
                           std::vector<std::string> extra_args)
    : socket_path_(std::move(socket_path)),
      cache_dir_(std::move(cache_dir)),
      log_path_(socket_path_ + ".log"),
      extra_args_(std::move(extra_args)) {}

CoopdProcess::~CoopdProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

namespace {

// landlock_create_ruleset, landlock_add_rule and landlock_restrict_self fail with ENOSYS.
// Async-signal-safe (it runs between fork and exec).
void HideLandlock() {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SYS_landlock_create_ruleset, 0, 2),
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, SYS_landlock_restrict_self, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])),
                            filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    _exit(126);
  }
}

}  // namespace

bool CoopdProcess::Start(std::string* error) {
  // COOPD_TEST_BINARY runs another coopd (an older build: to show a test fails without a fix).
  const char* binary = std::getenv("COOPD_TEST_BINARY");
  std::vector<std::string> args = {binary != nullptr && *binary != '\0' ? binary : COOPD_BINARY,
                                   "--socket", socket_path_, "--cache-dir", cache_dir_};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  args.insert(args.begin(), wrapper.begin(), wrapper.end());
  pid_ = fork();
  if (pid_ < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid_ == 0) {
    if (const char* keep = std::getenv("COOPD_TEST_KEEP_LOG")) log_path_ = keep;
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (without_landlock) HideLandlock();
    execv(argv[0], argv.data());
    _exit(127);
  }
  return true;
}

bool CoopdProcess::WaitReady(std::chrono::seconds deadline, std::string* error) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  coop::ClientOptions options;
  options.socket_path = socket_path_;
  options.timeout = std::chrono::seconds(2);
  options.autostart = false;  // this harness starts its own daemon
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "coopd exited during start-up (status " + std::to_string(status) + "):\n" + Log();
      return false;
    }
    // Probe only once the socket exists, with a fresh client each time, so a connection
    // attempt made before the daemon listened does not leave a channel in reconnect backoff.
    // Any answer of coopd's own counts (UNAUTHENTICATED from a daemon with --tokens-unix).
    struct stat st;
    if (stat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      auto stats = coop::Client(options).GetStats();
      if (stats || stats.error().from_server) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  *error = "coopd did not become ready:\n" + Log();
  return false;
}

void CoopdProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int CoopdProcess::WaitExit(std::chrono::seconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (pid_ > 0 && std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

int CoopdProcess::Stop(int sig) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string CoopdProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

coop::Client CoopdProcess::MakeClient() const {
  coop::ClientOptions options;
  options.socket_path = socket_path_;
  options.client_name = "integration-test";
  options.autostart = false;
  return coop::Client(options);
}

int RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* err) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  auto drain = [](int fd, std::string* dst) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) dst->append(buf, static_cast<size_t>(n));
    close(fd);
  };
  std::string o, e;
  std::thread t([&] { drain(err_pipe[0], &e); });
  drain(out_pipe[0], &o);
  t.join();
  int status = 0;
  waitpid(pid, &status, 0);
  if (out) *out = o;
  if (err) *err = e;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace coopd_test
