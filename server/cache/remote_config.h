// remote_config.h: the farm tier's configuration, parsed from one URL, read the way redis-py
// reads its URLs (so the URL an operator already has for Redis works here too):
//
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?OPTION=VALUE&...]
//   redis://USER@HOST[:PORT][/DB]?password_file=FILE          (ACL user, password from a file)
//   redis-cluster://[[USER]:PASSWORD@]HOST[:PORT],HOST[:PORT][/0][?...]
//
// PORT defaults to 6379; DB is the database number SELECTed after AUTH (default 0; Redis
// Cluster has database 0 only, so redis-cluster:// takes no other). USER, PASSWORD, DB and
// the options' names and values are percent-decoded (`p%3Fss` is the password "p?ss"); '/',
// '?', '#' and '@' in a password must be percent-encoded, as in any URL. rediss:// (TLS) is
// refused with a message saying how to terminate TLS in front of Redis: hiredis 0.14 has no TLS.
//
// Options (all optional): prefix (the key namespace, letters, digits and - _ . :, 1..128
// characters; default "coopd"), db (the database, as the path gives it; both must agree),
// ttl (seconds, 0 = entries never expire; default 604800, 7 days),
// pool (connections per Redis node, 1..256; default 4), write (sync | async; default sync),
// read_only (0 | 1; default 0), timeout_ms (every command, 1..60000; default 200),
// connect_timeout_ms (1..60000; default 200), lease_ttl_ms (100..600000; default 10000),
// lease_wait_ms (how long a replica waits for another's compile, 0..3600000; default 60000;
// 0 turns the distributed single-flight off), password_file (a file whose first line is the
// password, so it never appears on a command line or in the environment).
//
// Before the database number, the path was the key prefix: a path that is not a number is
// refused with a message naming ?prefix= instead.
//
// Errors are INVALID_ARGUMENT, prefixed by `source` (the flag or variable the URL came from),
// naming the part that is wrong and the accepted forms. The password never appears in an
// error or in Redacted(): errors quote the URL's text as written, and
// nothing that stands where credentials may stand.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coopd {

struct RedisNode {
  std::string host;
  int port = 0;
  std::string Name() const;  // "host:port"
};

enum class RemoteWritePolicy {
  kSync,   // the write completes before the compile's reply (and before its lease is released)
  kAsync,  // a background writer stores it after the reply (a bounded queue; overflow counted)
};

struct RemoteCacheConfig {
  bool cluster = false;
  std::vector<RedisNode> nodes;  // standalone: exactly one; cluster: the seed nodes
  std::string user;              // ACL user ("" = the default user)
  std::string password;          // "" = no AUTH
  std::string prefix = "coopd";  // key namespace: "<prefix>:{<key>}:e"
  int database = 0;              // SELECTed on each connection when not 0 (standalone only)
  std::chrono::seconds ttl{604800};
  int pool_size = 4;
  RemoteWritePolicy write = RemoteWritePolicy::kSync;
  bool read_only = false;
  std::chrono::milliseconds command_timeout{200};
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds lease_ttl{10000};
  std::chrono::milliseconds lease_wait{60000};

  // The URL in its canonical form, options left out, with the password replaced by "***", for
  // logs and stats: redis://[USER[:***]@]HOST:PORT/DB?prefix=PREFIX.
  std::string Redacted() const;
};

// Parses `url`. `password_file`, when not empty, is read for the password (its first line,
// without the newline); a password in the URL and a password file together are an error.
absl::StatusOr<RemoteCacheConfig> ParseRemoteCacheUrl(const std::string& url,
                                                      const std::string& source,
                                                      const std::string& password_file = "");

// Where a Redis URL may hold a password: [begin, end), from after "://" (or the start) to the
// URL's last '@' (begin == end when there is no '@' after it). A password may hold an unescaped
// '@', ':', '/' or '?', so the parser's errors never quote text of this span that stands nowhere
// after it, and RedactRemoteCacheUrl hides it.
struct CredentialsSpan {
  size_t begin = 0, end = 0;
};
CredentialsSpan FindCredentials(const std::string& url);

// `url` as --print-config shows it, whether or not it parses: the credentials span above
// replaced by ***, keeping a user name before its first ':' when it is plainly one (none of
// / ? # @ in it). A URL without "://" or without credentials is shown as it is.
std::string RedactRemoteCacheUrl(const std::string& url);

}  // namespace coopd
