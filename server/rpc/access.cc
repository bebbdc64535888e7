#include "server/rpc/access.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "server/util/escape.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kCompile:
      return "compile";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

namespace {

constexpr size_t kMinTokenBytes = 16, kMaxTokenBytes = 512, kMaxNameBytes = 64;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '@' || c == '-';
}

// Splits a line at runs of spaces and tabs.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<TokenEntry>> ParseTokens(std::string_view text,
                                                    const std::string& source) {
  std::vector<TokenEntry> out;
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string_view> f = Fields(line);
    if (f.empty() || f[0][0] == '#') continue;
    const std::string where = StrCat(source, ":", line_no, ": ");
    // Errors name the line and the field, never the token's bytes.
    if (f.size() != 3) {
      return absl::InvalidArgumentError(
          StrCat(where, "expected ROLE NAME TOKEN (3 fields), got ", f.size()));
    }
    TokenEntry e;
    if (f[0] == "read") {
      e.role = Role::kRead;
    } else if (f[0] == "compile") {
      e.role = Role::kCompile;
    } else if (f[0] == "admin") {
      e.role = Role::kAdmin;
    } else {
      return absl::InvalidArgumentError(
          StrCat(where, "role must be one of read, compile, admin; got ", QuoteValue(f[0])));
    }
    if (f[1].size() > kMaxNameBytes ||
        std::find_if_not(f[1].begin(), f[1].end(), NameChar) != f[1].end()) {
      return absl::InvalidArgumentError(StrCat(where, "name must be 1..", kMaxNameBytes,
                                               " of the characters A-Z a-z 0-9 . _ @ -; got ",
                                               QuoteValue(f[1])));
    }
    e.name = std::string(f[1]);
    const std::string_view token = f[2];
    if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
      return absl::InvalidArgumentError(StrCat(where, "the token of \"", e.name, "\" must be ",
                                               kMinTokenBytes, "..", kMaxTokenBytes, " bytes, got ",
                                               token.size()));
    }
    for (char c : token) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x21 || u > 0x7E) {
        return absl::InvalidArgumentError(
            StrCat(where, "the token of \"", e.name,
                   "\" must be printable ASCII without spaces (e.g. openssl rand -hex 32)"));
      }
    }
    e.digest = Sha256::Digest(token);
    for (const TokenEntry& other : out) {
      if (other.name == e.name) {
        return absl::InvalidArgumentError(
            StrCat(where, "the name \"", e.name, "\" is given a second time"));
      }
      if (other.digest == e.digest) {
        return absl::InvalidArgumentError(StrCat(where, "the token of \"", e.name,
                                                 "\" is also the token of \"", other.name, "\""));
      }
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        StrCat(source, ": holds no tokens (one ROLE NAME TOKEN per line; docs/security.md)"));
  }
  return out;
}

absl::StatusOr<std::vector<TokenEntry>> LoadTokensFile(const std::string& path,
                                                       const std::string& flag) {
  auto text = ReadConfigFile(path, flag, /*secret=*/true);
  if (!text.ok()) return text.status();
  auto parsed = ParseTokens(*text, StrCat(flag, " ", path));
  // The digests are all that is kept; wipe the file's text.
  OPENSSL_cleanse(text->data(), text->size());
  return parsed;
}

namespace {

// The first PEM object of `pem` that `read` parses, or null.
template <class T, class Read>
std::unique_ptr<T, void (*)(T*)> ReadPem(const std::string& pem, Read read, void (*free)(T*)) {
  std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                          BIO_free);
  T* v = bio ? read(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  return {v, free};
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const std::string& cert, const std::string& key, const std::string& client_ca) {
  auto cert_pem = ReadConfigFile(cert, "--tls-cert", /*secret=*/false);
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadConfigFile(key, "--tls-key", /*secret=*/true);
  if (!key_pem.ok()) return key_pem.status();
  auto x509 = ReadPem<X509>(*cert_pem, PEM_read_bio_X509, X509_free);
  if (!x509) {
    return absl::FailedPreconditionError(
        StrCat("--tls-cert ", QuoteValue(cert, 200), ": holds no PEM certificate"));
  }
  auto pkey = ReadPem<EVP_PKEY>(*key_pem, PEM_read_bio_PrivateKey, EVP_PKEY_free);
  if (!pkey) {
    return absl::FailedPreconditionError(StrCat("--tls-key ", QuoteValue(key, 200),
                                                ": holds no PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return absl::FailedPreconditionError(StrCat("--tls-key ", QuoteValue(key, 200),
                                                " is not the key of --tls-cert ",
                                                QuoteValue(cert, 200)));
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
  OPENSSL_cleanse(key_pem->data(), key_pem->size());
  if (!client_ca.empty()) {
    auto ca_pem = ReadConfigFile(client_ca, "--tls-client-ca", /*secret=*/false);
    if (!ca_pem.ok()) return ca_pem.status();
    if (!ReadPem<X509>(*ca_pem, PEM_read_bio_X509, X509_free)) {
      return absl::FailedPreconditionError(
          StrCat("--tls-client-ca ", QuoteValue(client_ca, 200), ": holds no PEM certificate"));
    }
    options.pem_root_certs = *ca_pem;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

bool AccessControl::IsLocal(const grpc::ServerContextBase& context) {
  const std::string peer = context.peer();
  return peer.rfind("unix:", 0) == 0 || peer.rfind("fd:", 0) == 0;
}

absl::StatusOr<const TokenEntry*> AccessControl::Authenticate(std::string_view value,
                                                              std::string_view rpc, bool local,
                                                              const std::string& peer) const {
  constexpr std::string_view kScheme = "Bearer ";
  const bool bearer = value.size() > kScheme.size() &&
                      std::equal(kScheme.begin(), kScheme.end(), value.begin(),
                                 [](char a, char b) { return std::tolower(a) == std::tolower(b); });
  if (!bearer) {
    ++unauthenticated_;
    spdlog::info("access: {} from {} refused: no bearer token", rpc, LogSafe(peer, 200));
    return absl::UnauthenticatedError(
        StrCat(rpc, ": this coopd requires a bearer token on ", local ? "its Unix socket" : "TCP",
               " (metadata \"authorization: Bearer TOKEN\"; clients: ClientOptions::token_file, "
               "COOPD_TOKEN_FILE, coopd.Client(token_file=...))"));
  }
  const auto digest = Sha256::Digest(value.substr(kScheme.size()));
  // Every entry is compared, each in constant time, so the time taken says nothing of which
  // token (or how much of one) matched.
  const TokenEntry* match = nullptr;
  for (const TokenEntry& e : tokens_) {
    if (CRYPTO_memcmp(e.digest.data(), digest.data(), digest.size()) == 0) match = &e;
  }
  if (match == nullptr) {
    ++unauthenticated_;
    spdlog::info("access: {} from {} refused: the bearer token is not one of this coopd's", rpc,
                 LogSafe(peer, 200));
    return absl::UnauthenticatedError(
        StrCat(rpc, ": the bearer token is not valid for this coopd"));
  }
  return match;
}

absl::StatusOr<Caller> AccessControl::Admit(const grpc::ServerContextBase& context, Role need,
                                            std::string_view rpc) const {
  const bool local = IsLocal(context);
  if (tokens_.empty() || (local && !tokens_on_unix_)) return Caller{};
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kAuthorizationKey);
  std::string_view value;
  if (it != metadata.end()) value = std::string_view(it->second.data(), it->second.size());
  auto match = Authenticate(value, rpc, local, context.peer());
  if (!match.ok()) return match.status();
  const TokenEntry& e = **match;
  if (e.role < need) {
    ++denied_;
    spdlog::info("access: {} from {} (token \"{}\", role {}) refused: needs role {}", rpc,
                 LogSafe(context.peer(), 200), e.name, RoleName(e.role), RoleName(need));
    return absl::PermissionDeniedError(
        StrCat(rpc, ": token \"", e.name, "\" has role ", RoleName(e.role), "; ", rpc,
               " needs role ", RoleName(need), need == Role::kAdmin ? "" : " or admin"));
  }
  return Caller{e.role, e.name};
}

namespace {

// AccessControl::HeaderCheck. Cheap (a SHA-256 and a comparison per token), so it runs on the
// thread that read the headers (IsBlocking false) rather than on gRPC's thread pool.
class TokenHeaderCheck final : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenHeaderCheck(
      std::function<absl::Status(std::string_view, std::string_view, const std::string&)> check)
      : check_(std::move(check)) {}
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    std::string_view value, path, rpc = "call";
    if (auto it = metadata.find(kAuthorizationKey); it != metadata.end()) {
      value = std::string_view(it->second.data(), it->second.size());
    }
    // The method: ":path" is "/coop.v1.Coop/Specialize". gRPC's health and reflection services
    // stay open without a token (docs/security.md); everything else is coopd's.
    if (auto it = metadata.find(":path"); it != metadata.end()) {
      path = std::string_view(it->second.data(), it->second.size());
      rpc = path.substr(path.rfind('/') + 1);
    }
    if (path.rfind("/grpc.health.v1.Health/", 0) == 0 || path.rfind("/grpc.reflection.", 0) == 0) {
      return grpc::Status::OK;
    }
    // The AuthContext holds the TLS peer's certificate, not its address.
    (void)context;
    absl::Status s = check_(value, rpc, "a TCP peer (before its request)");
    if (s.ok()) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(s.message()));
  }

 private:
  const std::function<absl::Status(std::string_view, std::string_view, const std::string&)> check_;
};

}  // namespace

std::shared_ptr<grpc::AuthMetadataProcessor> AccessControl::HeaderCheck() const {
  if (tokens_.empty()) return nullptr;
  return std::make_shared<TokenHeaderCheck>(
      [this](std::string_view value, std::string_view rpc, const std::string& peer) {
        return Authenticate(value, rpc, /*local=*/false, peer).status();
      });
}

}  // namespace coopd
