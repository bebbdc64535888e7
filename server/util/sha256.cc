#include "server/util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace coopd {
namespace {

// Fetched once: an implicit fetch on every init costs a provider lookup under a lock.
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = [] {
    const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    return m != nullptr ? m : EVP_sha256();
  }();
  return md;
}

// libcrypto fails these calls only on allocation failure or a broken installation; a digest
// that silently came out wrong would poison the cache, so stop instead.
void Check(int ok, const char* what) {
  if (ok != 1) {
    std::fprintf(stderr, "coopd: sha256: %s failed (libcrypto)\n", what);
    std::abort();
  }
}

}  // namespace

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  Check(ctx_->md != nullptr, "EVP_MD_CTX_new");
  Check(EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr), "EVP_DigestInit_ex");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::Update(const void* data, size_t size) {
  if (size == 0) return;
  Check(EVP_DigestUpdate(ctx_->md, data, size), "EVP_DigestUpdate");
}

void Sha256::UpdateField(std::string_view s) {
  uint8_t len[8];
  uint64_t n = s.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  Update(len, sizeof(len));
  Update(s);
}

std::array<uint8_t, 32> Sha256::Finish() {
  std::array<uint8_t, 32> out{};
  unsigned int n = 0;
  Check(EVP_DigestFinal_ex(ctx_->md, out.data(), &n), "EVP_DigestFinal_ex");
  Check(n == out.size() ? 1 : 0, "digest length");
  return out;
}

std::string Sha256::FinishHex() {
  auto d = Finish();
  return ToHex(d.data(), d.size());
}

std::array<uint8_t, 32> Sha256::Digest(std::string_view data) {
  std::array<uint8_t, 32> out{};
  unsigned int n = 0;
  Check(EVP_Digest(data.data(), data.size(), out.data(), &n, Sha256Md(), nullptr), "EVP_Digest");
  Check(n == out.size() ? 1 : 0, "digest length");
  return out;
}

std::string Sha256::Hex(std::string_view data) {
  auto d = Digest(data);
  return ToHex(d.data(), d.size());
}

std::string ToHex(const uint8_t* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

}  // namespace coopd
