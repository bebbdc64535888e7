#include "server/engine/sandbox.h"

#include <elf.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "server/engine/private_root.h"
#include "server/engine/syscall_allowlist.h"
#include "server/util/strings.h"

// Rights and fields newer than Debian 12's <linux/landlock.h> (ABI 2), with the kernel's values.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  // ABI 3
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)  // ABI 5
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)  // ABI 4
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  // ABI 6
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace coopd {
namespace {

// struct landlock_ruleset_attr as of ABI 6 (the kernel accepts the larger struct as long as
// the fields it does not know are zero).
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

// Owns an fd.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

constexpr uint64_t kFsRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFsWrite = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                              LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                              LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REFER |
                              LANDLOCK_ACCESS_FS_TRUNCATE;
// Rights that apply to a file (not only to directories): a rule on a file may hold only these.
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                                 LANDLOCK_ACCESS_FS_IOCTL_DEV;

// Every filesystem right the kernel's ABI knows: handled, hence denied unless a rule allows it.
uint64_t HandledFs(int abi) {
  uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) all |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) all |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return all;
}

// The rule is on the fd of `path` opened O_NOFOLLOW: a root whose last component is a symlink
// gets no rule (the daemon resolves the roots it is given: daemon_engine.cc WorkerSandbox), so a
// link planted under a root's name can never widen the rule to what it points at. A write root must
// moreover be a directory owned by this process's effective uid that neither group nor others
// may write: anything else is refused (FAILED_PRECONDITION), for another user could plant or
// swap what is in it.
absl::Status AddRule(int ruleset, const std::string& path, uint64_t access, uint64_t handled,
                     bool write_root) {
  Fd fd{open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)};
  if (fd.fd < 0 && errno == ENOENT) return absl::OkStatus();  // nothing there: nothing to allow
  struct stat st {};
  if (fd.fd >= 0 && fstat(fd.fd, &st) != 0) st.st_mode = 0;
  if (write_root && (fd.fd < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
                     (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)) {
    return absl::FailedPreconditionError(StrCat(
        "sandbox: write root ", path, " must be a directory of uid ", geteuid(),
        " that group and others cannot write; it is ",
        fd.fd < 0              ? StrCat("unusable (", std::strerror(errno), ")")
        : S_ISLNK(st.st_mode)  ? std::string("a symlink")
        : !S_ISDIR(st.st_mode) ? std::string("not a directory")
        : st.st_uid != geteuid()
            ? StrCat("owned by uid ", st.st_uid)
            : StrCat("mode 0", (st.st_mode >> 6) & 7, (st.st_mode >> 3) & 7, st.st_mode & 7)));
  }
  if (fd.fd < 0 || S_ISLNK(st.st_mode)) return absl::OkStatus();  // a link: no rule
  access &= handled;
  if (!S_ISDIR(st.st_mode)) access &= kFileRights;
  if (access == 0) return absl::OkStatus();
  struct landlock_path_beneath_attr rule {};
  rule.allowed_access = access;
  rule.parent_fd = fd.fd;
  if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
    return absl::InternalError(
        StrCat("sandbox: landlock_add_rule(", path, "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Owns a libseccomp filter context.
struct ScmpCtx {
  scmp_filter_ctx ctx = nullptr;
  ~ScmpCtx() {
    if (ctx != nullptr) seccomp_release(ctx);
  }
};

absl::Status ScmpError(const std::string& what, int rc) {
  return absl::InternalError(StrCat("sandbox: seccomp: ", what, ": ", std::strerror(-rc)));
}

// Namespace flags clone(2) may not carry (a new user namespace is new attack surface, a new
// mount namespace rearranges what Landlock sees).
constexpr uint64_t kCloneNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                          CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET;

// The allowlist filter of syscall_allowlist.h, for the native architecture only, on every
// thread of the process (TSYNC). COOPD_SECCOMP_LOG=1 turns "not on the list" from ENOSYS into
// "allowed and logged" (the derivation mode); the refused calls stay refused.
absl::Status InstallSeccomp() {
  const char* log_env = std::getenv("COOPD_SECCOMP_LOG");
  const bool log_mode = log_env != nullptr && std::strcmp(log_env, "1") == 0;
  ScmpCtx f{seccomp_init(log_mode ? SCMP_ACT_LOG : SCMP_ACT_ERRNO(ENOSYS))};
  if (f.ctx == nullptr) return absl::InternalError("sandbox: seccomp_init failed");
  // seccomp_init's filter holds the native architecture alone; i386 (int $0x80) and, on
  // x86_64, x32 (nr | 0x40000000, which carries x86_64's arch) get the bad-arch action.
  if (int rc = seccomp_attr_set(f.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM)); rc < 0) {
    return ScmpError("bad-arch action", rc);
  }
  if (int rc = seccomp_attr_set(f.ctx, SCMP_FLTATR_CTL_TSYNC, 1); rc < 0) {
    return ScmpError("thread sync", rc);
  }
  if (log_mode) seccomp_attr_set(f.ctx, SCMP_FLTATR_CTL_LOG, 1);
  for (const SyscallEntry& e : AllowedSyscalls()) {
    const int nr = seccomp_syscall_resolve_name(e.name);
    if (nr < 0) continue;  // not a call of this architecture
    int rc = 0;
    if (std::strcmp(e.name, "clone") == 0) {
      rc = seccomp_rule_add(f.ctx, SCMP_ACT_ALLOW, nr, 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNamespaceFlags, 0));
    } else if (std::strcmp(e.name, "ioctl") == 0) {
      // One rule per request, all 64 bits compared (libseccomp 2.5 takes one comparison per
      // argument and rule, and an unconditional rule would override a refusing one).
      for (const IoctlEntry& io : AllowedIoctls()) {
        rc = seccomp_rule_add(f.ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A1(SCMP_CMP_EQ, io.request));
        if (rc < 0) break;
      }
    } else {
      rc = seccomp_rule_add(f.ctx, SCMP_ACT_ALLOW, nr, 0);
    }
    if (rc < 0) return ScmpError(StrCat("allow ", e.name), rc);
  }
  for (const SyscallEntry& e : RefusedSyscalls()) {
    const int nr = seccomp_syscall_resolve_name(e.name);
    const uint32_t action = SCMP_ACT_ERRNO(RefusedErrno(e.name));
    // libseccomp takes no rule whose action is the default's (clone3's ENOSYS).
    if (nr < 0 || (!log_mode && action == SCMP_ACT_ERRNO(ENOSYS))) continue;
    if (int rc = seccomp_rule_add(f.ctx, action, nr, 0); rc < 0) {
      return ScmpError(StrCat("refuse ", e.name), rc);
    }
  }
  if (int rc = seccomp_load(f.ctx); rc < 0) return ScmpError("load", rc);
  return absl::OkStatus();
}

}  // namespace

const char* SandboxModeName(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kOff:
      return "off";
    case SandboxMode::kRequire:
      return "require";
    default:
      return "auto";
  }
}

int LandlockAbi(std::string* why) {
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi > 0) return static_cast<int>(abi);
  if (why != nullptr) {
    *why = errno == EOPNOTSUPP
               ? "Landlock is built into the kernel but disabled (boot with lsm=...,landlock)"
           : errno == ENOSYS ? "the kernel has no Landlock (ENOSYS; it needs Linux 5.13 or later "
                               "built with CONFIG_SECURITY_LANDLOCK)"
                             : StrCat("landlock_create_ruleset: ", std::strerror(errno));
  }
  return 0;
}

absl::Status ConfineSelf(const SandboxPolicy& policy) {
  if (policy.mode == SandboxMode::kOff) return absl::OkStatus();
  // Required by both layers for an unprivileged process; also keeps setuid programs from
  // gaining privileges in here.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return absl::InternalError(StrCat("sandbox: PR_SET_NO_NEW_PRIVS: ", std::strerror(errno)));
  }
  // Only the policy's roots exist from here on (private_root.h). Where that fails, Landlock and
  // seccomp below confine as before, and what exists outside the roots stays visible.
  if (absl::Status s = EnterPrivateRoot(policy); !s.ok()) {
    spdlog::warn(
        "{}; files outside the sandbox's roots stay visible to compiles (they exist, "
        "and opening one is \"Permission denied\": docs/security.md, \"Existence\")",
        std::string(s.message()));
  }
  std::string why;
  const int abi = LandlockAbi(&why);
  if (abi == 0 && policy.mode == SandboxMode::kRequire) {
    return absl::FailedPreconditionError(
        StrCat("sandbox: Landlock is required (--sandbox "
               "require) but unavailable: ",
               why));
  }
  if (abi > 0) {
    RulesetAttr attr;
    attr.handled_access_fs = HandledFs(abi);
    if (abi >= 4) {
      attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    }
    if (abi >= 6) attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    Fd ruleset{static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0))};
    if (ruleset.fd < 0) {
      return absl::InternalError(
          StrCat("sandbox: landlock_create_ruleset: ", std::strerror(errno)));
    }
    const uint64_t handled = attr.handled_access_fs;
    for (const auto& p : policy.read) {
      if (absl::Status s = AddRule(ruleset.fd, p, kFsRead, handled, false); !s.ok()) return s;
    }
    for (const auto& p : policy.write) {
      if (absl::Status s = AddRule(ruleset.fd, p, kFsRead | kFsWrite, handled, true); !s.ok()) {
        return s;
      }
    }
    for (const auto& p : policy.exec) {
      if (absl::Status s =
              AddRule(ruleset.fd, p, LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE,
                      handled, false);
          !s.ok()) {
        return s;
      }
    }
    if (syscall(SYS_landlock_restrict_self, ruleset.fd, 0) != 0) {
      return absl::InternalError(StrCat("sandbox: landlock_restrict_self: ", std::strerror(errno)));
    }
  }
  return InstallSeccomp();
}

std::string ProgramInterpreter(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof(eh)) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return "";
  }
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + uint64_t(i) * eh.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof(ph))) return "";
    if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > 4096) continue;
    std::string interp(ph.p_filesz, '\0');
    in.seekg(static_cast<std::streamoff>(ph.p_offset));
    if (!in.read(interp.data(), static_cast<std::streamsize>(interp.size()))) return "";
    interp.resize(std::strlen(interp.c_str()));
    return interp;
  }
  return "";
}

std::string SeccompVersion() {
  const scmp_version* v = seccomp_version();
  return v == nullptr ? std::string("unknown") : StrCat(v->major, ".", v->minor, ".", v->micro);
}

namespace {

// errno of a call that returns a result or -1; 0 when it succeeded (and the fd it made closed).
int ErrnoOf(long rc) {
  if (rc < 0) return errno;
  close(static_cast<int>(rc));
  return 0;
}

}  // namespace

SeccompProbe ProbeSeccomp() {
  SeccompProbe probe;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    probe.error = StrCat("pipe: ", std::strerror(errno));
    return probe;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    SeccompProbe result;
    absl::Status s =
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            ? InstallSeccomp()
            : absl::InternalError(StrCat("PR_SET_NO_NEW_PRIVS: ", std::strerror(errno)));
    if (!s.ok()) {
      const std::string m(s.message());
      (void)!write(fds[1], m.data(), m.size());
      _exit(1);
    }
    result.native_socket_errno = ErrnoOf(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(359L), "b"(long{AF_INET}), "c"(long{SOCK_STREAM}), "d"(0L)
                     : "memory", "r8", "r9", "r10", "r11");
    ret = static_cast<int>(ret);
    result.i386_socket_errno = ret < 0 ? static_cast<int>(-ret) : ErrnoOf(ret);
    result.x32_socket_errno = ErrnoOf(syscall(0x40000000L | SYS_socket, AF_INET, SOCK_STREAM, 0));
#endif
    unsigned char params[120] = {};  // struct io_uring_params
    result.io_uring_errno = ErrnoOf(syscall(SYS_io_uring_setup, 1, params));
    result.unshare_errno = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
    const int codes[] = {result.native_socket_errno, result.i386_socket_errno,
                         result.x32_socket_errno, result.io_uring_errno, result.unshare_errno};
    (void)!write(fds[1], codes, sizeof(codes));
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  if (pid < 0) {
    probe.error = StrCat("fork: ", std::strerror(errno));
  } else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    probe.error = "the probe process died";
  } else if (WEXITSTATUS(status) != 0) {
    probe.error = out;
  } else {
    int codes[5];
    if (out.size() != sizeof(codes)) {
      probe.error = "the probe process reported nothing";
    } else {
      std::memcpy(codes, out.data(), sizeof(codes));
      probe.native_socket_errno = codes[0];
      probe.i386_socket_errno = codes[1];
      probe.x32_socket_errno = codes[2];
      probe.io_uring_errno = codes[3];
      probe.unshare_errno = codes[4];
    }
  }
  return probe;
}

}  // namespace coopd
