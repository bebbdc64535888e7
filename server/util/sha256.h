// sha256.h: SHA-256 (FIPS 180-4), used for cache keys, header digests and blob checksums.
//
// Backed by OpenSSL's libcrypto (EVP, which uses the CPU's SHA extensions where present: about
// 6x the portable implementation this replaced, on a 135 KB artifact). Not thread-safe per
// object; independent objects may be used concurrently. Move-only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace coopd {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // Hashes a length prefix before the bytes, so a sequence of fields has one encoding.
  void UpdateField(std::string_view s);
  // Finishes and returns the digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Finish();
  std::string FinishHex();

  static std::array<uint8_t, 32> Digest(std::string_view data);
  static std::string Hex(std::string_view data);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string ToHex(const uint8_t* data, size_t size);

}  // namespace coopd
