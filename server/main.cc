// coopd: the daemon's entry point. Everything else lives in the coopd_server library.
#include <cstdio>

#include "server/daemon.h"

int main(int argc, char** argv) {
  coopd::DaemonConfig config;
  bool exit_now = false;
  if (absl::Status s = coopd::ParseDaemonArgs(argc, argv, &config, &exit_now); !s.ok()) {
    std::fprintf(stderr, "coopd: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (exit_now) return 0;
  if (absl::Status s = coopd::RunDaemon(config); !s.ok()) {
    std::fprintf(stderr, "coopd: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
