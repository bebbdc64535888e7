#include "coop/paths.h"

#include <unistd.h>

#include <cstdlib>

namespace coop {

std::string DefaultSocketPath() {
  if (const char* env = std::getenv("COOPD_SOCKET"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/coopd/coopd.sock";
  }
  return "/tmp/coopd-" + std::to_string(getuid()) + "/coopd.sock";
}

}  // namespace coop
