// coop/paths.h: where coopd listens by default. Shared by the daemon and its clients so both
// agree without configuration.
#pragma once

#include <string>

namespace coop {

// $COOPD_SOCKET if set; else $XDG_RUNTIME_DIR/coopd/coopd.sock when XDG_RUNTIME_DIR is set;
// else /tmp/coopd-$UID/coopd.sock.
std::string DefaultSocketPath();

}  // namespace coop
