// coopd: the daemon's entry point. Everything else lives in the coopd_server library.
//
// `coopd --worker-fd N ...` runs a compile worker instead (the daemon starts these itself);
// `coopd sandbox-exec ... -- PROG` and `coopd check-sandbox` show the compile sandbox.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>

#include "server/daemon/daemon.h"
#include "server/daemon/log_format.h"
#include "server/daemon/sandbox_tools.h"
#include "server/engine/worker.h"

int main(int argc, char** argv) {
  // The compile sandbox seen from outside (server/daemon/sandbox_tools.h).
  if (argc >= 2 && std::strcmp(argv[1], "sandbox-exec") == 0) {
    return coopd::RunSandboxExec(argc, argv);
  }
  if (argc >= 2 && std::strcmp(argv[1], "check-sandbox") == 0) {
    return coopd::RunCheckSandbox(argc, argv, std::cout);
  }
  if (argc >= 3 && std::strcmp(argv[1], "--worker-fd") == 0) {
    int fd = std::atoi(argv[2]);
    pid_t parent = 0;
    uint64_t memory = 0;
    coopd::SandboxPolicy sandbox;
    std::string temp;  // the worker's own temporary directory, made by the daemon
    for (int i = 3; i + 1 < argc; i += 2) {
      const char* v = argv[i + 1];
      if (std::strcmp(argv[i], "--worker-parent") == 0) parent = std::atoi(v);
      if (std::strcmp(argv[i], "--worker-memory-bytes") == 0)
        memory = std::strtoull(v, nullptr, 10);
      if (std::strcmp(argv[i], "--worker-sandbox") == 0) {
        sandbox.mode = std::strcmp(v, "off") == 0       ? coopd::SandboxMode::kOff
                       : std::strcmp(v, "require") == 0 ? coopd::SandboxMode::kRequire
                                                        : coopd::SandboxMode::kAuto;
      }
      if (std::strcmp(argv[i], "--worker-read") == 0) sandbox.read.push_back(v);
      if (std::strcmp(argv[i], "--worker-write") == 0) sandbox.write.push_back(v);
      if (std::strcmp(argv[i], "--worker-exec") == 0) sandbox.exec.push_back(v);
      if (std::strcmp(argv[i], "--worker-temp") == 0) temp = v;
    }
    // A worker's few messages (a confinement that failed) join the daemon's log in its format,
    // which the daemon passes down in COOPD_LOG_FORMAT (RunDaemon).
    const char* format = std::getenv("COOPD_LOG_FORMAT");
    if (format != nullptr && std::strcmp(format, "json") == 0) {
      coopd::InstallJsonLogFormat();
    } else {
      coopd::InstallSafeLogFormat(coopd::kTextLogPattern);
    }
    return coopd::RunWorker(fd, parent, memory, std::move(sandbox), std::move(temp));
  }
  coopd::DaemonConfig config;
  bool exit_now = false;
  if (absl::Status s = coopd::ParseDaemonArgs(argc, argv, &config, &exit_now); !s.ok()) {
    std::fprintf(stderr, "%scoopd: %s\n", coopd::JournalPrefix(2, spdlog::level::err).c_str(),
                 std::string(s.message()).c_str());
    return 2;
  }
  if (exit_now) return 0;
  if (absl::Status s = coopd::RunDaemon(config); !s.ok()) {
    std::fprintf(stderr, "%scoopd: %s\n", coopd::JournalPrefix(2, spdlog::level::err).c_str(),
                 std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
