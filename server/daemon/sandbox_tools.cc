#include "server/daemon/sandbox_tools.h"

#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "server/daemon/daemon.h"
#include "server/engine/sandbox.h"
#include "server/toolchain/toolchain.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

namespace fs = std::filesystem;

constexpr char kExecUsage[] =
    "usage: coopd sandbox-exec [SETTINGS...] [--read PATH]... -- PROG [ARGS...]\n"
    "Runs PROG under a compile worker's confinement (docs/security.md); SETTINGS are coopd's\n"
    "(--sandbox auto|require|off, --cccl-include, --clang, --worker-memory-mb, --config, ...).\n";

int ExecFail(const std::string& message) {
  std::fprintf(stderr, "coopd sandbox-exec: %s\n", message.c_str());
  return 125;
}

// `prog` as execvp would find it, made absolute; "" when there is none.
std::string FindProgram(const std::string& prog) {
  std::error_code ec;
  if (prog.find('/') != std::string::npos) {
    fs::path p = fs::canonical(prog, ec);
    return ec ? "" : p.string();
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + prog;
    if (access(candidate.c_str(), X_OK) == 0) {
      fs::path p = fs::canonical(candidate, ec);
      if (!ec) return p.string();
    }
    start = end + 1;
  }
  return "";
}

// A temporary directory of the caller's own: mkdtemp (a fresh name, mode 0700).
std::string MakeTempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/coopd-sandbox-exec-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

const char* ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "unknown errno";
}

// "refused (EPERM)" for a call that failed as the sandbox makes it fail, "ALLOWED" otherwise.
std::string Outcome(int err, bool* refused) {
  if (err == -1) return "no such route on this architecture";
  if (err == EPERM || err == EACCES || err == ENOSYS)
    return StrCat("refused (", ErrnoName(err), ")");
  *refused = false;
  return err == 0 ? "ALLOWED" : StrCat("ALLOWED (it reached the kernel: ", ErrnoName(err), ")");
}

// Whether a process of an unprivileged user may create a user namespace (as root: tried as
// nobody, uid 65534, in a child).
bool UnprivilegedUserNamespaces() {
  const pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setresgid(65534, 65534, 65534) != 0 || setgroups(0, nullptr) != 0 ||
                           setresuid(65534, 65534, 65534) != 0)) {
      _exit(2);
    }
    _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

}  // namespace

int RunSandboxExec(int argc, char** argv) {
  // argv: coopd sandbox-exec [SETTINGS...] [--read PATH]... -- PROG [ARGS...]
  int dashes = -1;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      dashes = i;
      break;
    }
  }
  if (dashes < 0 || dashes + 1 >= argc) {
    std::fputs(kExecUsage, stderr);
    return ExecFail("no program: give it after --");
  }
  std::vector<std::string> extra_read;
  std::vector<char*> settings = {argv[0]};
  for (int i = 2; i < dashes; ++i) {
    if (std::strcmp(argv[i], "--read") == 0) {
      if (i + 1 >= dashes) return ExecFail("--read: give a PATH");
      extra_read.push_back(argv[++i]);
    } else if (std::strncmp(argv[i], "--read=", 7) == 0) {
      extra_read.push_back(argv[i] + 7);
    } else {
      settings.push_back(argv[i]);
    }
  }
  settings.push_back(nullptr);
  // Messages go to stderr: stdout is PROG's.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("coopd-sandbox-exec"));
  DaemonConfig config;
  bool exit_now = false;
  if (absl::Status s = ParseDaemonArgs(static_cast<int>(settings.size()) - 1, settings.data(),
                                       &config, &exit_now);
      !s.ok()) {
    return ExecFail(std::string(s.message()));
  }
  if (exit_now) return 0;

  const std::string prog = FindProgram(argv[dashes + 1]);
  if (prog.empty()) {
    std::fprintf(stderr, "coopd sandbox-exec: program %s not found\n",
                 QuoteValue(argv[dashes + 1]).c_str());
    return 127;
  }
  // The toolchain the daemon would find, for the same policy.
  ToolchainOptions tc_options;
  tc_options.cccl_include = config.cccl_include;
  tc_options.extra_cccls = config.cccls;
  tc_options.clang = config.clang;
  if (std::error_code ec; fs::is_directory(config.cache_dir, ec)) {
    tc_options.manifest_path = config.cache_dir + "/headers.manifest";
  }
  auto toolchains = ProbeToolchains(tc_options);
  if (!toolchains.ok()) return ExecFail(std::string(toolchains.status().message()));
  auto policy = WorkerSandbox(config.sandbox, *toolchains, nullptr);
  if (!policy.ok()) return ExecFail(std::string(policy.status().message()));
  if (config.sandbox != SandboxMode::kOff) {
    // PROG is executed as clang is: itself and its program interpreter.
    // Each by its real path (a Landlock rule never follows a link) and by the name given, for
    // the private root to recreate the links to it (/bin/sh -> dash, /bin -> usr/bin).
    auto add_exec = [&](const std::string& p) {
      std::error_code ec;
      const fs::path real = fs::canonical(p, ec);
      policy->exec.push_back(ec ? p : real.string());
      if (!ec && real.string() != p) policy->exec.push_back(p);
    };
    add_exec(prog);
    if (std::string interp = ProgramInterpreter(prog); !interp.empty()) add_exec(interp);
    for (const std::string& p : extra_read) policy->read.push_back(p);
  }
  const std::string temp = MakeTempDir();
  if (temp.empty())
    return ExecFail(StrCat("cannot make a temporary directory: ", std::strerror(errno)));
  if (config.sandbox != SandboxMode::kOff) policy->write.push_back(temp);

  std::vector<char*> args(argv + dashes + 1, argv + argc);
  args[0] = const_cast<char*>(prog.c_str());
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // As RunWorker: dies with its parent, the worker memory limit, then confined for life.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (config.worker_memory_bytes > 0) {
      rlimit limit{config.worker_memory_bytes, config.worker_memory_bytes};
      setrlimit(RLIMIT_AS, &limit);
    }
    setenv("TMPDIR", temp.c_str(), 1);
    if (absl::Status s = ConfineSelf(*policy); !s.ok()) {
      std::fprintf(
          stderr, "coopd sandbox-exec: %s%s\n", std::string(s.message()).c_str(),
          policy->mode == SandboxMode::kRequire ? "" : "; running unconfined, as a worker would");
      if (policy->mode == SandboxMode::kRequire) _exit(125);
    }
    execv(prog.c_str(), args.data());
    const int err = errno;
    std::fprintf(stderr, "coopd sandbox-exec: cannot execute %s: %s\n", prog.c_str(),
                 std::strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  if (pid < 0) {
    fs::remove_all(temp);
    return ExecFail(StrCat("fork: ", std::strerror(errno)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::error_code ec;
  fs::remove_all(temp, ec);  // a directory this call made, of this user; links are not followed
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}

int RunCheckSandbox(int argc, char** argv, std::ostream& out) {
  if (argc > 2) {
    std::fprintf(stderr, "coopd check-sandbox: takes no arguments, got %s\n",
                 QuoteValue(argv[2]).c_str());
    return 2;
  }
  utsname u{};
  uname(&u);
  out << "coopd check-sandbox: what this kernel lets the compile sandbox confine "
         "(docs/security.md)\n";
  out << "kernel: " << u.sysname << " " << u.release << " " << u.machine << "\n";

  std::string why;
  const int abi = LandlockAbi(&why);
  if (abi == 0) {
    out << "Landlock: unavailable: " << why << "\n";
  } else {
    out << "Landlock: ABI " << abi << "\n";
  }
  struct Feature {
    int abi;
    const char* what;
  };
  for (const Feature& f :
       {Feature{1, "read, write and execute only beneath allowed paths"},
        Feature{2, "renames and links across directories (refer)"}, Feature{3, "truncation"},
        Feature{4, "TCP bind and connect (other socket families: seccomp)"},
        Feature{5, "ioctl on devices"},
        Feature{6, "signals and abstract Unix sockets scoped to the sandbox"}}) {
    out << "  ABI " << f.abi << ", " << f.what << ": " << (abi >= f.abi ? "yes" : "no") << "\n";
  }

  const SeccompProbe probe = ProbeSeccomp();
  const bool kernel_seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  bool net_refused = probe.error.empty();
  out << "seccomp: " << (kernel_seccomp ? "available" : "unavailable") << ", libseccomp "
      << SeccompVersion() << "\n";
  if (!probe.error.empty()) {
    out << "  the allowlist filter could not be loaded: " << probe.error << "\n";
  } else {
    out << "  the allowlist filter, loaded in a test process:\n";
    out << "    socket(AF_INET), native ABI: " << Outcome(probe.native_socket_errno, &net_refused)
        << "\n";
    out << "    socket through int $0x80 (i386): " << Outcome(probe.i386_socket_errno, &net_refused)
        << "\n";
    out << "    socket as an x32 call (nr | 0x40000000): "
        << Outcome(probe.x32_socket_errno, &net_refused) << "\n";
    out << "    io_uring_setup: " << Outcome(probe.io_uring_errno, &net_refused) << "\n";
    bool ns_refused = true;
    out << "    unshare(CLONE_NEWUSER): " << Outcome(probe.unshare_errno, &ns_refused) << "\n";
    net_refused = net_refused && ns_refused;
  }
  out << "foreign ABIs (i386, x32): "
      << (probe.error.empty() && probe.i386_socket_errno != 0 && probe.x32_socket_errno != 0
              ? "refused by the filter"
              : "NOT refused")
      << "\n";
  out << "unprivileged user namespaces: "
      << (UnprivilegedUserNamespaces() ? "available (to processes outside the sandbox; the "
                                         "filter refuses them to compiles)"
                                       : "unavailable")
      << "\n";

  struct Threat {
    const char* what;
    bool confined;
    std::string how;
  };
  const std::string landlock = StrCat("Landlock ABI ", abi);
  const std::vector<Threat> threats = {
      {"file reads outside the header roots and the toolchain", abi >= 1,
       abi >= 1 ? landlock : "no Landlock: a compile reads every file coopd can"},
      {"file writes outside the worker's temporary directory", abi >= 1,
       abi >= 1 ? landlock : "no Landlock: a compile writes every file coopd can"},
      {"execution of anything but clang", abi >= 1,
       abi >= 1 ? landlock : "no Landlock: a compile may run any program"},
      {"network sockets of every family (native, i386 and x32 ABIs, socketpair, io_uring)",
       net_refused, net_refused ? "seccomp allowlist" : "the filter let a call through"},
      {"signals to processes outside the sandbox", abi >= 6,
       abi >= 6 ? landlock
                : "Landlock ABI 6 or later needed: a compile may signal any process of coopd's "
                  "user"},
  };
  bool all = true;
  out << "threats:\n";
  for (const Threat& t : threats) {
    out << "  " << t.what << ": " << (t.confined ? "confined" : "NOT confined") << " (" << t.how
        << ")\n";
    all = all && t.confined;
  }
  out << (all ? "summary: the compile sandbox is fully enforced on this kernel\n"
              : "summary: the compile sandbox is NOT fully enforced on this kernel (see above)\n");
  return all ? 0 : 1;
}

}  // namespace coopd
