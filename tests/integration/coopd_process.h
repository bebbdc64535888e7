// coopd_process.h: runs a real coopd binary on a temporary socket and cache directory.
//
// Used by integration tests: no mocks; the daemon is the one users run. Start() forks and
// execs COOPD_BINARY with stdout/stderr going to a log file; WaitReady() polls GetStats through
// the real client until the daemon answers (a liveness deadline, not a performance threshold).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "coop/client.h"

namespace coopd_test {

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class CoopdProcess {
 public:
  CoopdProcess(std::string socket_path, std::string cache_dir,
               std::vector<std::string> extra_args = {});
  ~CoopdProcess();  // SIGKILLs a daemon still running

  // Starts the daemon; returns false (with the log in *error) if exec fails.
  bool Start(std::string* error);
  // Waits until the daemon answers GetStats, or it exits, or `deadline` passes.
  bool WaitReady(std::chrono::seconds deadline, std::string* error);
  // Sends `sig` and waits for the process; returns its exit status (or 128+signal).
  int Stop(int sig = SIGTERM);
  // Waits for the process to exit by itself; returns its exit status, or -1 on timeout.
  int WaitExit(std::chrono::seconds deadline);
  void Signal(int sig);

  std::string Log() const;
  coop::Client MakeClient() const;
  const std::string& socket_path() const { return socket_path_; }
  pid_t pid() const { return pid_; }

  // Set before Start(): the daemon runs under a seccomp filter that answers Landlock's system
  // calls with ENOSYS, as a kernel without Landlock does (its workers inherit it).
  bool without_landlock = false;
  // Set before Start(): a command line the daemon's runs under, its own arguments appended
  // (e.g. `unshare -rm -- sh -c 'mount ... && exec "$@"' sh`). It must exec coopd in the same
  // process, so pid() stays coopd's.
  std::vector<std::string> wrapper;

 private:
  std::string socket_path_, cache_dir_, log_path_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
};

// Runs a command, capturing stdout and stderr separately; returns the exit status.
int RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* err);

}  // namespace coopd_test
