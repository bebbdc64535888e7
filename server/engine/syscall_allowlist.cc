#include "server/engine/syscall_allowlist.h"

#include <sys/ioctl.h>

#include <cerrno>

namespace coopd {
namespace {

// Why a group of calls is allowed. "seen" groups were observed in the derivation run
// (syscall_allowlist.h); "spare" ones are harmless relatives allowed so that a rarer path (an
// error path, a large compile, another glibc) does not fail a compile.
constexpr char kFiles[] =
    "files (seen): headers, libraries, PCH and scratch files; Landlock decides which paths";
constexpr char kFilesSpare[] = "files (spare): relatives of the calls seen; Landlock decides paths";
constexpr char kFds[] = "descriptors (seen): pipes to clang, the daemon's socketpair, polling";
constexpr char kMemory[] = "memory (seen): the allocator, mapped libraries, the PCH heap";
constexpr char kMemorySpare[] = "memory (spare): large compiles, NUMA queries of the CUDA libs";
constexpr char kProcess[] = "processes (seen): the worker runs clang (posix_spawn) and waits";
constexpr char kThreads[] = "threads (seen): glibc, NVRTC's and nvJitLink's threads";
constexpr char kSignals[] = "signals (seen): handlers, masks, clang's crash handler";
constexpr char kTime[] = "time (seen): clocks, timeouts, sleeping";
constexpr char kIdentity[] = "identity and limits (seen or spare): read-only queries, rlimits";

const std::vector<SyscallEntry> kAllowed = {
    // Files. Paths are Landlock's business; these only name the operations.
    {"read", kFiles},
    {"write", kFiles},
    {"readv", kFiles},
    {"writev", kFiles},
    {"pread64", kFiles},
    {"pwrite64", kFiles},
    {"preadv", kFilesSpare},
    {"pwritev", kFilesSpare},
    {"preadv2", kFilesSpare},
    {"pwritev2", kFilesSpare},
    {"open", kFiles},
    {"openat", kFiles},
    {"openat2", kFilesSpare},
    {"creat", kFilesSpare},
    {"close", kFiles},
    {"close_range", kFilesSpare},
    {"lseek", kFiles},
    {"stat", kFiles},
    {"fstat", kFiles},
    {"lstat", kFiles},
    {"newfstatat", kFiles},
    {"statx", kFiles},
    {"statfs", kFiles},
    {"fstatfs", kFiles},
    {"access", kFiles},
    {"faccessat", kFiles},
    {"faccessat2", kFiles},
    {"readlink", kFiles},
    {"readlinkat", kFiles},
    {"getdents", kFilesSpare},
    {"getdents64", kFiles},
    {"getcwd", kFiles},
    {"chdir", kFiles},
    {"fchdir", kFilesSpare},
    {"mkdir", kFiles},
    {"mkdirat", kFilesSpare},
    {"rmdir", kFiles},
    {"unlink", kFiles},
    {"unlinkat", kFiles},
    {"rename", kFiles},
    {"renameat", kFilesSpare},
    {"renameat2", kFilesSpare},
    {"link", kFilesSpare},
    {"linkat", kFilesSpare},
    {"symlink", kFilesSpare},
    {"symlinkat", kFilesSpare},
    {"chmod", kFiles},
    {"fchmod", kFilesSpare},
    {"fchmodat", kFilesSpare},
    {"umask", kFiles},
    {"truncate", kFilesSpare},
    {"ftruncate", kFiles},
    {"fallocate", kFilesSpare},
    {"fadvise64", kFilesSpare},
    {"fsync", kFilesSpare},
    {"fdatasync", kFilesSpare},
    {"sync_file_range", kFilesSpare},
    {"flock", kFiles},
    {"utime", kFilesSpare},
    {"utimes", kFilesSpare},
    {"utimensat", kFilesSpare},
    {"futimesat", kFilesSpare},
    {"sendfile", kFilesSpare},
    {"copy_file_range", kFilesSpare},
    {"splice", kFilesSpare},
    {"tee", kFilesSpare},
    // Descriptors: pipes, polling, and the socketpair the worker was given (no new sockets).
    {"fcntl", kFds},
    {"ioctl", kFds},  // the requests of kIoctls alone (InstallSeccomp)
    {"dup", kFds},
    {"dup2", kFds},
    {"dup3", kFds},
    {"pipe", kFds},
    {"pipe2", kFds},
    {"poll", kFds},
    {"ppoll", kFds},
    {"select", kFds},
    {"pselect6", kFds},
    {"epoll_create", kFds},
    {"epoll_create1", kFds},
    {"epoll_ctl", kFds},
    {"epoll_wait", kFds},
    {"epoll_pwait", kFds},
    {"epoll_pwait2", kFds},
    {"eventfd", kFds},
    {"eventfd2", kFds},
    {"sendmsg", kFds},
    {"recvmsg", kFds},
    {"sendto", kFds},
    {"recvfrom", kFds},
    {"shutdown", kFds},
    {"getsockopt", kFds},
    {"getsockname", kFds},
    {"getpeername", kFds},
    // Memory.
    {"brk", kMemory},
    {"mmap", kMemory},
    {"munmap", kMemory},
    {"mprotect", kMemory},
    {"mremap", kMemory},
    {"madvise", kMemory},
    {"mincore", kMemorySpare},
    {"msync", kMemorySpare},
    {"mlock", kMemorySpare},
    {"munlock", kMemorySpare},
    {"membarrier", kMemorySpare},
    {"memfd_create", kMemorySpare},
    {"get_mempolicy", kMemorySpare},
    {"pkey_alloc", kMemorySpare},
    {"pkey_free", kMemorySpare},
    {"pkey_mprotect", kMemorySpare},
    // Processes: clang is run with posix_spawn (clone with CLONE_VM|CLONE_VFORK) or fork.
    {"clone", kProcess},  // without namespace flags (InstallSeccomp)
    {"fork", kProcess},
    {"vfork", kProcess},
    {"execve", kProcess},  // Landlock's exec rule decides what
    {"execveat", kProcess},
    {"wait4", kProcess},
    {"waitid", kProcess},
    {"exit", kProcess},
    {"exit_group", kProcess},
    {"kill", kProcess},  // Landlock ABI 6 scopes signals to the worker's own domain
    {"tkill", kProcess},
    {"tgkill", kProcess},
    {"getpid", kProcess},
    {"getppid", kProcess},
    {"gettid", kProcess},
    {"getpgrp", kProcess},
    {"getpgid", kProcess},
    {"getsid", kProcess},
    {"setpgid", kProcess},
    {"prctl", kProcess},  // PR_SET_NAME, PR_SET_PDEATHSIG; cannot lift a filter
    {"arch_prctl", kProcess},
    {"seccomp", kProcess},  // a further filter only narrows this one
    // Threads.
    {"set_tid_address", kThreads},
    {"set_robust_list", kThreads},
    {"get_robust_list", kThreads},
    {"rseq", kThreads},
    {"futex", kThreads},
    {"futex_waitv", kThreads},
    {"sched_yield", kThreads},
    {"sched_getaffinity", kThreads},
    {"sched_setaffinity", kThreads},
    {"sched_getparam", kThreads},
    {"sched_getscheduler", kThreads},
    {"sched_getattr", kThreads},
    {"sched_get_priority_max", kThreads},
    {"sched_get_priority_min", kThreads},
    {"getcpu", kThreads},
    // Signals.
    {"rt_sigaction", kSignals},
    {"rt_sigprocmask", kSignals},
    {"rt_sigreturn", kSignals},
    {"rt_sigpending", kSignals},
    {"rt_sigsuspend", kSignals},
    {"rt_sigtimedwait", kSignals},
    {"sigaltstack", kSignals},
    {"pause", kSignals},
    {"alarm", kSignals},
    {"restart_syscall", kSignals},
    // Time.
    {"clock_gettime", kTime},
    {"clock_getres", kTime},
    {"clock_nanosleep", kTime},
    {"nanosleep", kTime},
    {"gettimeofday", kTime},
    {"time", kTime},
    {"times", kTime},
    {"getitimer", kTime},
    {"setitimer", kTime},
    {"timer_create", kTime},
    {"timer_settime", kTime},
    {"timer_gettime", kTime},
    {"timer_getoverrun", kTime},
    {"timer_delete", kTime},
    {"timerfd_create", kTime},
    {"timerfd_settime", kTime},
    {"timerfd_gettime", kTime},
    // Identity, limits, the system's description.
    {"getuid", kIdentity},
    {"geteuid", kIdentity},
    {"getgid", kIdentity},
    {"getegid", kIdentity},
    {"getresuid", kIdentity},
    {"getresgid", kIdentity},
    {"getgroups", kIdentity},
    {"capget", kIdentity},
    {"getrlimit", kIdentity},
    {"setrlimit", kIdentity},  // can only lower the hard limits the worker has
    {"prlimit64", kIdentity},
    {"getrusage", kIdentity},
    {"getpriority", kIdentity},
    {"setpriority", kIdentity},
    {"uname", kIdentity},
    {"sysinfo", kIdentity},
    {"getrandom", kIdentity},
};

const std::vector<IoctlEntry> kIoctls = {
    {TCGETS, "TCGETS"},          // isatty
    {0x802C542AUL, "TCGETS2"},   // _IOR('T', 0x2A, struct termios2): newer glibc
    {TIOCGWINSZ, "TIOCGWINSZ"},  // clang's diagnostics width
    {TIOCGPGRP, "TIOCGPGRP"},    // tcgetpgrp
    {FIONREAD, "FIONREAD"},      // bytes waiting on a pipe
    {FIONBIO, "FIONBIO"},        // non-blocking mode
    {FIOCLEX, "FIOCLEX"},        // close-on-exec
    {FIONCLEX, "FIONCLEX"},
};

constexpr char kNetwork[] = "the network, or a Unix socket of another process";

const std::vector<SyscallEntry> kRefused = {
    // Every socket route (EACCES): Landlock's TCP rules need Linux 6.7, and cover TCP alone.
    {"socket", kNetwork},
    {"socketpair", kNetwork},
    {"connect", kNetwork},
    {"bind", kNetwork},
    {"listen", kNetwork},
    {"accept", kNetwork},
    {"accept4", kNetwork},
    {"socketcall", kNetwork},  // the multiplexer of 32-bit ABIs
    {"io_uring_setup", "io_uring: IORING_OP_SOCKET, IORING_OP_CONNECT, unfiltered file ops"},
    {"io_uring_enter", "io_uring"},
    {"io_uring_register", "io_uring"},
    // Reaching other processes or the kernel's internals.
    {"ptrace", "other processes' memory and registers"},
    {"process_vm_readv", "other processes' memory"},
    {"process_vm_writev", "other processes' memory"},
    {"pidfd_getfd", "other processes' descriptors"},
    {"pidfd_open", "other processes (pidfd_getfd, pidfd_send_signal)"},
    {"pidfd_send_signal", "signals by pidfd"},
    {"kcmp", "other processes' kernel objects"},
    {"process_madvise", "other processes' memory"},
    {"rt_sigqueueinfo", "signals with forged senders"},
    {"rt_tgsigqueueinfo", "signals with forged senders"},
    {"bpf", "eBPF programs and maps"},
    {"perf_event_open", "performance counters, kernel addresses"},
    {"userfaultfd", "stalling the kernel in a page fault (race exploits)"},
    {"keyctl", "the kernel keyrings"},
    {"add_key", "the kernel keyrings"},
    {"request_key", "the kernel keyrings"},
    {"fanotify_init", "watching other files"},
    {"inotify_init", "watching other files"},
    {"inotify_init1", "watching other files"},
    // Namespaces and mounts: a new user namespace is a new attack surface; mounts rearrange
    // what Landlock sees.
    {"unshare", "namespaces"},
    {"setns", "namespaces"},
    {"clone3", "namespaces: flags in memory the filter cannot read (ENOSYS: glibc uses clone)"},
    {"mount", "mounts"},
    {"umount2", "mounts"},
    {"pivot_root", "mounts"},
    {"chroot", "mounts"},
    {"fsopen", "mounts"},
    {"fsconfig", "mounts"},
    {"fsmount", "mounts"},
    {"fspick", "mounts"},
    {"move_mount", "mounts"},
    {"open_tree", "mounts"},
    {"mount_setattr", "mounts"},
    {"open_by_handle_at", "files by handle, around path checks"},
    {"name_to_handle_at", "file handles"},
    // The machine itself.
    {"kexec_load", "another kernel"},
    {"kexec_file_load", "another kernel"},
    {"init_module", "kernel modules"},
    {"finit_module", "kernel modules"},
    {"delete_module", "kernel modules"},
    {"reboot", "the machine"},
    {"swapon", "the machine"},
    {"swapoff", "the machine"},
    {"acct", "the machine"},
    {"iopl", "I/O ports"},
    {"ioperm", "I/O ports"},
    {"quotactl", "quotas"},
    {"settimeofday", "the clock"},
    {"clock_settime", "the clock"},
    {"clock_adjtime", "the clock"},
    {"adjtimex", "the clock"},
    {"personality", "ADDR_NO_RANDOMIZE and other ABI changes"},
    {"setuid", "identity"},
    {"setgid", "identity"},
    {"setreuid", "identity"},
    {"setregid", "identity"},
    {"setresuid", "identity"},
    {"setresgid", "identity"},
    {"setgroups", "identity"},
    {"setfsuid", "identity"},
    {"setfsgid", "identity"},
    {"chown", "ownership"},
    {"fchown", "ownership"},
    {"lchown", "ownership"},
    {"fchownat", "ownership"},
    {"mknod", "device nodes"},
    {"mknodat", "device nodes"},
};

}  // namespace

const std::vector<SyscallEntry>& AllowedSyscalls() {
  return kAllowed;
}

const std::vector<SyscallEntry>& RefusedSyscalls() {
  return kRefused;
}

const std::vector<IoctlEntry>& AllowedIoctls() {
  return kIoctls;
}

int RefusedErrno(std::string_view name) {
  for (const char* net :
       {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "socketcall"}) {
    if (name == net) return EACCES;
  }
  return name == "clone3" ? ENOSYS : EPERM;
}

}  // namespace coopd
