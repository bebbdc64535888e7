// as_user.h: runs test code as another user, for the tests where two uids matter (another user
// plants directories, owns entries, runs an unprivileged worker). Header-only: unit and
// integration tests both use it.
#pragma once

#include <grp.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace coopd_testing {

// uid and gid 65534 (nobody).
inline constexpr uid_t kNobody = 65534;

// Runs `body` in a forked child as uid/gid `uid` (no supplementary groups) with umask 0, which
// needs root; true when it returned true (false also when the switch failed).
inline bool AsUser(uid_t uid, const std::function<bool()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    umask(0);
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
        setresuid(uid, uid, uid) != 0) {
      _exit(2);
    }
    _exit(body() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace coopd_testing
