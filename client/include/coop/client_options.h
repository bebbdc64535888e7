// coop/client_options.h: how a coop::Client connects: the socket or gRPC target, the socket
// owner check, deadline, auto-start, token and TLS files, and the client's artifact cache.
// Part of the public API; coop/client.h includes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace coop {

struct ClientOptions {
  std::string socket_path;  // empty: coop::DefaultSocketPath()
  // Before every call on the socket (and before auto-start) the client checks that the socket
  // and its directory are its own (docs/security.md, "Other local users"): the socket owned by
  // this process's effective uid (or root), its directory owned by that uid (or root) and
  // writable by no one else. Otherwise the call fails with kFailedPrecondition and nothing is
  // sent. A coopd shared on purpose (--socket-group) runs as another user: name that user here
  // (a user name or a uid) to accept its socket. Empty: $COOPD_SOCKET_OWNER, else none.
  std::string socket_owner;
  // Per-call deadline. A first compile takes about a second; a cold daemon a few.
  std::chrono::milliseconds timeout{std::chrono::minutes(3)};
  // Shown in coopd's logs; with the pid, it names this client for coopd's per-client limits
  // on the Unix socket (the "coopd-client" metadata; docs/security.md).
  std::string client_name;
  // When no daemon answers on the socket, start one (`coopd --socket PATH`, detached, logging
  // to coopd.log beside the socket) and retry until it answers or the deadline passes, the way
  // sccache's client starts its server. Off when COOPD_NO_AUTOSTART is set (to anything but
  // "0"). The binary: `coopd_binary`, else $COOPD_BIN, else next to this program, else PATH.
  // Concurrent clients may each start one: exactly one daemon wins the socket's lock.
  bool autostart = true;
  std::string coopd_binary;
  // A gRPC target instead of the Unix socket, for coopd replicas listening on TCP
  // (`coopd --listen`): "dns:///coopd.farm:7070" (every address the name resolves to),
  // "ipv4:10.0.0.1:7070,10.0.0.2:7070", ... Calls are spread over the addresses with gRPC's
  // round_robin policy. No auto-start for a target. Empty: $COOPD_TARGET, else the socket.
  std::string target;
  // Access control (docs/security.md). A file holding a bearer token for coopd's
  // --tokens-file (its first line that is neither empty nor a # comment), sent with every call,
  // on `target` and on the socket alike. Others may not read the file (mode 0600 or 0640); no
  // one but its owner may write it, and its owner is this process's effective user or root.
  // Empty: $COOPD_TOKEN_FILE, else no token.
  std::string token_file;
  // TLS for `target` connections, PEM files: the CA that signed coopd's certificate (empty:
  // the system's roots), and this client's certificate and key for a coopd that requires
  // client certificates (--tls-client-ca). TLS is on when any of the three is set. Empty:
  // $COOPD_TLS_CA, $COOPD_TLS_CERT, $COOPD_TLS_KEY. A problem with any of these files is an
  // Error of kInvalidArgument from every call, naming the file.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Ask coopd for the whole message of errors whose status message it bounds (Error::details);
  // this client then accepts metadata of up to 64 MiB.
  bool full_errors = false;
  // Digest-only hits: the client keeps the artifacts Specialize and SpecializeBundle returned
  // (at most this many, and this many bytes of LTO-IR, bitcode, source and logs in all; least
  // recently used first out) and sends their digests with a repeated request, so coopd answers
  // a hit with the metadata alone and the client fills the bytes back in: callers always get
  // complete artifacts. Either limit 0 turns it off (every reply then carries its bytes).
  size_t artifact_cache_entries = 256;
  uint64_t artifact_cache_bytes = uint64_t{64} << 20;
};

}  // namespace coop
