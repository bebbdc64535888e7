#include "server/engine/sandbox.h"

#include <elf.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

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

absl::Status AddRule(int ruleset, const std::string& path, uint64_t access, uint64_t handled) {
  Fd fd{open(path.c_str(), O_PATH | O_CLOEXEC)};
  if (fd.fd < 0) return absl::OkStatus();  // a root that does not exist: nothing to allow
  struct stat st {};
  if (fstat(fd.fd, &st) != 0) return absl::OkStatus();
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

// socket(2) fails with EACCES and ptrace(2) with EPERM; everything else is allowed.
absl::Status InstallSeccomp() {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return absl::OkStatus();  // no filter for an architecture it was not written for
#endif
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),  // another ABI (x32 is not ours): as is
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog {};
  prog.len = static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0]));
  prog.filter = filter;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    return absl::InternalError(StrCat("sandbox: seccomp filter: ", std::strerror(errno)));
  }
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
      if (absl::Status s = AddRule(ruleset.fd, p, kFsRead, handled); !s.ok()) return s;
    }
    for (const auto& p : policy.write) {
      if (absl::Status s = AddRule(ruleset.fd, p, kFsRead | kFsWrite, handled); !s.ok()) return s;
    }
    for (const auto& p : policy.exec) {
      if (absl::Status s = AddRule(
              ruleset.fd, p, LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE, handled);
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

}  // namespace coopd
