// subprocess.h: runs a program to completion and captures what it prints.
//
// Used for the tools coopd drives as separate programs (clang, for LLVM bitcode): the toolchain
// probe at start-up and the compile workers. The child dies with its parent (PR_SET_PDEATHSIG),
// so a worker killed for a timeout takes its compiler with it.
//
// Thread-safe. Between fork and exec the child calls only async-signal-safe functions, so it may
// be used from a multithreaded process.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coopd {

struct ProcessOptions {
  std::string cwd;  // empty: the caller's. The child's stdin is /dev/null.
  // Each of stdout and stderr is kept up to this many bytes; the rest is read and dropped (and
  // `truncated` set), so a chatty child can neither block nor exhaust memory.
  size_t max_output_bytes = size_t{64} << 20;
  // Killed (SIGKILL) when it runs longer; the result then has `timed_out` set.
  std::optional<std::chrono::milliseconds> timeout;
};

struct ProcessResult {
  int exit_code = -1;   // when it exited
  int term_signal = 0;  // when a signal ended it
  bool timed_out = false;
  bool truncated = false;
  std::string out, err;

  bool ok() const { return term_signal == 0 && !timed_out && exit_code == 0; }
  // "exited with status 1", "killed by signal 9 (Killed)", "timed out after 10 s".
  std::string Describe() const;
};

// Runs argv[0] (a path; PATH is not searched) with argv. FAILED_PRECONDITION naming the program
// when it cannot be started (missing, not executable); any exit status is a result, not an error.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const ProcessOptions& options = {});

}  // namespace coopd
