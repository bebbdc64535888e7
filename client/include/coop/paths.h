// coop/paths.h: where coopd listens by default, and the checks that the socket, its directory
// and the files coopd or its clients create there belong to whom they should. Shared by the
// daemon and its clients so both agree without configuration. No gRPC.
#pragma once

#include <optional>
#include <string>

namespace coop {

// $COOPD_SOCKET if set; else $XDG_RUNTIME_DIR/coopd/coopd.sock when XDG_RUNTIME_DIR is set;
// else /tmp/coopd-$UID/coopd.sock.
std::string DefaultSocketPath();

// The directory of a socket path ("." for a bare name).
std::string SocketDir(const std::string& socket_path);

// Why `dir` is no safe home for a socket, its lock or a log, or "" when it is. Checked with
// lstat, so a symbolic link is refused, never followed. It must be a directory owned by `owner`,
// `other_owner` (-1: none) or, with `root_ok`, root, and writable by no one else: no other-write
// bit, and no group-write bit unless its group is `writable_group` (-1: none). The message reads
// "<what> DIR: owned by uid 1001, not <who> (1000); <fix>". *missing (when given) is set when
// the directory does not exist, which is then no reason ("").
struct DirRule {
  long owner = -1;
  long other_owner = -1;
  bool root_ok = false;
  long writable_group = -1;
  std::string what = "socket directory";
  std::string who = "coopd's user";
  std::string fix = "remove it or choose --socket";
};
std::string UnsafeDirReason(const std::string& dir, const DirRule& rule, bool* missing = nullptr);

// Why the Unix socket `path` is not one a client running as `uid` should send its token to,
// or "" when it is (or does not exist: nothing listens there, and the connection fails). The
// socket (lstat: not a link) must be owned by `uid`, `other_owner` (-1: none) or root, and its
// directory pass UnsafeDirReason with the same owners (or root) and no writable group, so that
// no one else can replace the socket between this check and gRPC's connect.
std::string UnsafeSocketReason(const std::string& path, long uid, long other_owner);

// A uid for COOPD_SOCKET_OWNER / ClientOptions::socket_owner: a user name from the password
// database or a number; -1 with *error set when it is neither, and -1 for "".
long ParseOwner(const std::string& owner, std::string* error);

// Opens (creating it 0600 when missing) the file `path` that only the effective user may own:
// O_NOFOLLOW (a symbolic link is refused, never followed), O_CLOEXEC and `flags`, then fstat:
// a regular file owned by the effective user. Returns the fd, or -1 with *error set naming the
// path, what it is and who owns it. Nothing is written or truncated before the checks pass.
int OpenOwnFile(const std::string& path, int flags, std::string* error);

// Why a file holding secrets (a token file, a TLS key, a password file), whose stat gave `mode`
// and `uid`, must not be used, or "" when it may: others may not access it at all (0600, or
// 0640 for a group), no one but its owner may write it, and its owner is the reader's effective
// user or root. The reason continues a message that names the file: "mode 0660 lets its group
// write it; chmod 640 (or 600)". `holds` is "a secret" or "secrets".
std::string UnsafeSecretReason(unsigned mode, long uid, const std::string& holds);

// The contents of the small file `path` that a setting names (a token file, a TLS certificate or
// key, a password file): a regular file of at most 1 MiB, opened O_CLOEXEC and checked on the
// open descriptor. With `secret_holds` ("a secret", "secrets"), also refused for
// UnsafeSecretReason. nullopt with *error set to the reason alone ("cannot open: No such file or
// directory", "not a regular file", "larger than 1 MiB", "mode 0660 lets its group write it;
// chmod 640 (or 600)"), for the caller to put after the file's name; *unsafe (when not null)
// says whether the reason is UnsafeSecretReason's. The one reader of such files, in coopd and
// in the client.
std::optional<std::string> ReadSmallFile(const std::string& path, const char* secret_holds,
                                         std::string* error, bool* unsafe = nullptr);

}  // namespace coop
