// sandbox_probe: tries what a compromised compiler would try, and prints one line per attempt:
//   "NAME: refused (errno EACCES: Permission denied)"  or  "NAME: ALLOWED (...)".
// An attempt is "refused" when the call failed with EPERM, EACCES or ENOSYS (what Landlock and
// the seccomp filter answer) or, for paths, ENOENT or EROFS (what the worker's private root
// answers: the path is not there, or read-only); any other outcome, success or an error from
// deeper in the kernel (EBADF, EINVAL: the call got past them), is "ALLOWED".
//
// Exit status: 0 when every attempt was refused, 1 when at least one was allowed, 2 on a usage
// error. Run it under `coopd sandbox-exec -- sandbox_probe` (tests/integration/
// sandbox_exec_test.cc); with `--sandbox off` the same attempts succeed (the control).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

static int g_allowed = 0;

// Reports an attempt: `rc` is the call's result, `err` its errno when rc < 0.
static void Report(const char* name, long rc, int err) {
  // ENOENT and EROFS: the private root (engine/private_root.h) shows no such path, or only a
  // read-only one, which refuses as surely as Landlock's EACCES.
  const int on_path = strncmp(name, "read-", 5) == 0 || strncmp(name, "create-", 7) == 0 ||
                      strncmp(name, "exec-", 5) == 0;
  if (rc < 0 && (err == EPERM || err == EACCES || err == ENOSYS ||
                 (on_path && (err == ENOENT || err == EROFS)))) {
    printf("%s: refused (errno %s: %s)\n", name, strerrorname_np(err), strerror(err));
  } else if (rc < 0) {
    printf("%s: ALLOWED (reached the kernel: errno %s: %s)\n", name, strerrorname_np(err),
           strerror(err));
    g_allowed = 1;
  } else {
    printf("%s: ALLOWED (returned %ld)\n", name, rc);
    g_allowed = 1;
  }
  fflush(stdout);
}

// A call that returns -1 and sets errno on failure (errno read after the call).
#define TRY(name, call)       \
  do {                        \
    const long rc_ = (call);  \
    Report(name, rc_, errno); \
  } while (0)

// A call that returns an fd: reported, and the fd closed.
static void ReportFd(const char* name, long fd) {
  const int err = errno;
  Report(name, fd, err);
  if (fd >= 0) close((int)fd);
}

#if defined(__x86_64__)
// A system call through the i386 ABI (int $0x80): numbers and arguments are 32-bit.
static long Int80(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80"
                   : "=a"(ret)
                   : "a"(nr), "b"(a), "c"(b), "d"(c)
                   : "memory", "r8", "r9", "r10", "r11");
  return (int)ret;  // the kernel's 32-bit result, -errno on failure
}
#endif

// Runs `body` in a child (calls that would change or end the probe) and reports the child's
// exit status as the errno (0: the call succeeded).
static void InChild(const char* name, int (*body)(void)) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) {
    Report(name, -1, EINVAL);
    return;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
  Report(name, code == 0 ? 0 : -1, code);
}

static int TraceMe(void) {
  return ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : errno;
}

static int Unshare(void) {
  return unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
}

static int ExecShell(void) {
  char* argv[] = {(char*)"sh", (char*)"-c", (char*)"exit 0", NULL};
  char* envp[] = {NULL};
  execve("/bin/sh", argv, envp);
  return errno;
}

static void CreateFile(const char* name, const char* dir) {
  if (dir == NULL || *dir == '\0') return;
  char path[4096];
  snprintf(path, sizeof(path), "%s/coopd-probe-%d", strcmp(dir, "/") == 0 ? "" : dir,
           (int)getpid());
  const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const int err = errno;
  Report(name, fd, err);
  if (fd >= 0) {
    close(fd);
    unlink(path);
  }
}

int main(int argc, char** argv) {
  if (argc > 1) {
    fprintf(stderr, "usage: %s (no arguments)\n", argv[0]);
    return 2;
  }
  ReportFd("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
  ReportFd("socket-inet6", socket(AF_INET6, SOCK_DGRAM, 0));
  ReportFd("socket-unix", socket(AF_UNIX, SOCK_STREAM, 0));
  ReportFd("socket-netlink", socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
#if defined(__x86_64__)
  {
    long r = Int80(359, AF_INET, SOCK_STREAM, 0);  // socket in the i386 table
    Report("socket-i386", r < 0 ? -1 : r, r < 0 ? (int)-r : 0);
    if (r >= 0) close((int)r);
    // socketcall(SYS_SOCKET, args): the arguments in memory a 32-bit pointer reaches.
    uint32_t* args =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (args != MAP_FAILED) {
      args[0] = AF_INET;
      args[1] = SOCK_STREAM;
      args[2] = 0;
      r = Int80(102, 1, (long)(uintptr_t)args, 0);
      Report("socketcall-i386", r < 0 ? -1 : r, r < 0 ? (int)-r : 0);
      if (r >= 0) close((int)r);
      munmap(args, 4096);
    }
    ReportFd("socket-x32", syscall(__X32_SYSCALL_BIT | __NR_socket, AF_INET, SOCK_STREAM, 0));
  }
#endif
  {
    int sv[2] = {-1, -1};
    const int rc = socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    const int err = errno;
    Report("socketpair", rc, err);
    if (rc == 0) {
      close(sv[0]);
      close(sv[1]);
    }
  }
  {
    // On a socket of its own when it got one; on an invalid fd otherwise (EBADF then means the
    // call reached the kernel).
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(1);
    TRY("connect", connect(fd, (struct sockaddr*)&addr, sizeof(addr)));
    addr.sin_port = 0;
    TRY("bind", bind(fd, (struct sockaddr*)&addr, sizeof(addr)));
    if (fd >= 0) close(fd);
  }
  {
    unsigned char params[120];  // struct io_uring_params
    memset(params, 0, sizeof(params));
    ReportFd("io_uring_setup", syscall(__NR_io_uring_setup, 1, params));
  }
  InChild("ptrace-traceme", TraceMe);
  {
    unsigned char attr[128];  // union bpf_attr, BPF_MAP_CREATE with nothing set: EINVAL if let in
    memset(attr, 0, sizeof(attr));
    ReportFd("bpf", syscall(__NR_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr)));
  }
  ReportFd("userfaultfd", syscall(__NR_userfaultfd, O_CLOEXEC));
  TRY("keyctl", syscall(__NR_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  InChild("unshare-user", Unshare);
  // A remount of a path that does not exist: ENOENT once past the filter, and nothing mounted.
  TRY("mount", mount(NULL, "/coopd-probe-no-such-dir", NULL, MS_REMOUNT, NULL));
  {
    char from[16] = "coopd-probe", to[16];
    struct iovec local = {to, sizeof(to)}, remote = {from, sizeof(from)};
    TRY("process_vm_readv", process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
  }
  ReportFd("read-etc-passwd", open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  CreateFile("create-in-root", "/");
  CreateFile("create-in-home", getenv("HOME"));
  CreateFile("create-in-tmp", "/tmp");
  InChild("exec-bin-sh", ExecShell);
  return g_allowed ? 1 : 0;
}
