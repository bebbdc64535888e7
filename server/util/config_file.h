// config_file.h: reading the small files coopd's settings name (tokens, TLS certificates and
// keys, the Redis password file), with one rule for those that hold secrets.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace coopd {

// The contents of a regular file of at most 1 MiB. With `secret`, also refused when others
// (not the owner or the group) may read or write it, when its group may write it, or when it is
// owned by another user than coopd's effective user or root (coop::UnsafeSecretReason): such a
// file could be rewritten by someone else (say, a group member adding an admin token).
// FAILED_PRECONDITION naming `flag` and the file: `--tokens-file "/etc/coopd/tokens": mode 0660
// lets its group write it; chmod 640 (or 600)`.
absl::StatusOr<std::string> ReadConfigFile(const std::string& path, const std::string& flag,
                                           bool secret);

}  // namespace coopd
