// access.h: who may call what (docs/security.md, "Access control").
//
// Bearer tokens carry roles. A tokens file (--tokens-file) holds one `ROLE NAME TOKEN` per
// line; blank lines and lines starting with '#' are skipped. ROLE is read, compile or admin;
// NAME ([A-Za-z0-9._@-], at most 64 bytes) is what logs and errors say instead of the token;
// TOKEN is 16 to 512 printable ASCII bytes without spaces. Names and tokens are unique. The file
// must be a regular file that its group may read but others may neither read nor write (mode
// 0600 or 0640): coopd refuses to start otherwise. Only SHA-256 digests of the tokens are kept,
// and a presented token's digest is compared with every one in constant time.
//
// Roles nest: `read` fetches cached artifacts and reads stats, the catalogue, keys and entries,
// and never makes coopd compile or link (a miss is PERMISSION_DENIED); `compile` also compiles
// and links on a miss; `admin` also purges, verifies, vacuums, zeroes stats and stops coopd
// (stop_service.h).
//
// Which calls need a token: those on TCP listeners whenever a tokens file is given, and those
// on the Unix socket too with --tokens-unix. Other calls (the Unix socket without --tokens-unix,
// TCP without a tokens file) act as admin: there, the socket's permissions or the TLS client
// certificate decide who gets in. Thread-safe after construction.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/util/config_file.h"

namespace coopd {

enum class Role { kRead = 1, kCompile = 2, kAdmin = 3 };  // each includes the ones before

const char* RoleName(Role role);

// The metadata key of a bearer token ("authorization: Bearer TOKEN").
inline constexpr char kAuthorizationKey[] = "authorization";

struct TokenEntry {
  Role role = Role::kRead;
  std::string name;
  std::array<uint8_t, 32> digest{};  // SHA-256 of the token
};

// Parses a tokens file's text; `source` names it in errors ("FILE:LINE: ..."), which never
// quote a token.
absl::StatusOr<std::vector<TokenEntry>> ParseTokens(std::string_view text,
                                                    const std::string& source);

// ReadConfigFile (server/util/config_file.h) reads the tokens file and the TLS files.

// Reads (ReadConfigFile, secret) and parses a tokens file.
absl::StatusOr<std::vector<TokenEntry>> LoadTokensFile(const std::string& path,
                                                       const std::string& flag);

// TLS for the TCP listeners from PEM files: the certificate chain and its private key (a secret
// file; checked to match), and with `client_ca`, client certificates required and verified
// against it. FAILED_PRECONDITION naming the flag and the file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const std::string& cert, const std::string& key, const std::string& client_ca);

// Who a call came from.
struct Caller {
  Role role = Role::kAdmin;
  std::string name;  // the token's name; empty for calls that need no token
};

class AccessControl {
 public:
  AccessControl() = default;  // no tokens: every call is admin
  AccessControl(std::vector<TokenEntry> tokens, bool tokens_on_unix)
      : tokens_(std::move(tokens)), tokens_on_unix_(tokens_on_unix) {}

  // The caller of a call that needs `need`. UNAUTHENTICATED without a valid token where one is
  // required; PERMISSION_DENIED naming the token's name, its role and the role needed.
  absl::StatusOr<Caller> Admit(const grpc::ServerContextBase& context, Role need,
                               std::string_view rpc) const;

  // A check of bearer tokens on a call's headers, run by gRPC before it reads the call's
  // request, for the TCP listeners' credentials (ServerCredentials::SetAuthMetadataProcessor).
  // A call without a token of this coopd's is answered UNAUTHENTICATED (counted as
  // unauthenticated()) and its request is never received: a stranger's 600 MiB body costs no
  // memory. A call that passes is checked again by Admit, which decides its role: gRPC shares an
  // AuthContext among a connection's calls, so the check cannot hand a per-call role to the
  // handler. gRPC 1.51 runs processors on secure (TLS) credentials only: plaintext TCP
  // (--insecure) is checked by Admit alone, after the request arrived. Null without tokens.
  // Must not outlive this AccessControl.
  std::shared_ptr<grpc::AuthMetadataProcessor> HeaderCheck() const;

  bool enforced() const { return !tokens_.empty(); }
  uint64_t unauthenticated() const { return unauthenticated_.load(); }
  uint64_t denied() const { return denied_.load(); }

  // Whether a call came in on the Unix socket (its own or one systemd passed) rather than TCP:
  // gRPC names such peers "unix:..." (and "fd:N" for a socket added from an fd). Anything
  // else counts as TCP.
  static bool IsLocal(const grpc::ServerContextBase& context);

 private:
  // The entry of the token in `authorization` (the header's value), or UNAUTHENTICATED
  // (counted, logged with `rpc` and `peer`) naming `rpc` and where the token was required.
  absl::StatusOr<const TokenEntry*> Authenticate(std::string_view authorization,
                                                 std::string_view rpc, bool local,
                                                 const std::string& peer) const;

  std::vector<TokenEntry> tokens_;
  bool tokens_on_unix_ = false;
  mutable std::atomic<uint64_t> unauthenticated_{0}, denied_{0};
};

}  // namespace coopd
