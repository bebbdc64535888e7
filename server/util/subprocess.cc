#include "server/util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/util/strings.h"

namespace coopd {
namespace {

// Closes the fds it holds on destruction.
struct Fds {
  int fd[2] = {-1, -1};
  ~Fds() {
    Close(0);
    Close(1);
  }
  void Close(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
  bool Open() { return pipe2(fd, O_CLOEXEC) == 0; }
};

}  // namespace

std::string ProcessResult::Describe() const {
  if (timed_out) return "timed out and was killed";
  if (term_signal != 0) {
    return StrCat("killed by signal ", term_signal, " (", strsignal(term_signal), ")");
  }
  return StrCat("exited with status ", exit_code);
}

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const ProcessOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("run: empty command");
  Fds out, err, exec_error;
  if (!out.Open() || !err.Open() || !exec_error.Open()) {
    return absl::ResourceExhaustedError(StrCat("run ", argv[0], ": pipe: ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    return absl::ResourceExhaustedError(StrCat("run ", argv[0], ": fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only. It dies with the process that started it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) dup2(null, 0);
    dup2(out.fd[1], 1);
    dup2(err.fd[1], 2);
    // Nothing else of the parent's reaches the program (a worker's socket to the daemon, say).
    syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    int e = 0;
    if (cwd != nullptr && chdir(cwd) != 0) {
      e = errno;
    } else {
      execv(args[0], args.data());
      e = errno;
    }
    // Tells the parent why: it reads the errno from this pipe (closed by a successful exec).
    ssize_t ignored = write(exec_error.fd[1], &e, sizeof(e));
    (void)ignored;
    _exit(127);
  }
  out.Close(1);
  err.Close(1);
  exec_error.Close(1);

  int child_errno = 0;
  ssize_t n;
  do {
    n = read(exec_error.fd[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status = 0;
    waitpid(pid, &status, 0);
    return absl::FailedPreconditionError(
        StrCat("cannot run ", argv[0], cwd != nullptr ? StrCat(" in ", options.cwd) : std::string(),
               ": ", std::strerror(child_errno)));
  }

  ProcessResult result;
  const auto deadline = options.timeout ? std::chrono::steady_clock::now() + *options.timeout
                                        : std::chrono::steady_clock::time_point::max();
  char buf[65536];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    pollfd fds[2];
    int count = 0;
    int which[2];
    if (out.fd[0] >= 0) fds[count] = {out.fd[0], POLLIN, 0}, which[count++] = 0;
    if (err.fd[0] >= 0) fds[count] = {err.fd[0], POLLIN, 0}, which[count++] = 1;
    int wait_ms = -1;
    if (options.timeout) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        kill(pid, SIGKILL);
        result.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1000));
    }
    int ready = poll(fds, static_cast<nfds_t>(count), wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return absl::InternalError(StrCat("run ", argv[0], ": poll: ", std::strerror(errno)));
    }
    for (int i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      Fds& pipe = which[i] == 0 ? out : err;
      std::string& sink = which[i] == 0 ? result.out : result.err;
      ssize_t r = read(pipe.fd[0], buf, sizeof(buf));
      if (r > 0) {
        const size_t room =
            options.max_output_bytes - std::min(sink.size(), options.max_output_bytes);
        const size_t keep = std::min(static_cast<size_t>(r), room);
        sink.append(buf, keep);
        if (keep < static_cast<size_t>(r)) result.truncated = true;
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        pipe.Close(0);
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !result.timed_out) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace coopd
