// sha256.h: SHA-256 (FIPS 180-4), used for cache keys, header digests and blob checksums.
//
// Not thread-safe per object; independent objects may be used concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace coopd {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // Hashes a length prefix before the bytes, so a sequence of fields has one encoding.
  void UpdateField(std::string_view s);
  // Finishes and returns the digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Finish();
  std::string FinishHex();

  static std::string Hex(std::string_view data);

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string ToHex(const uint8_t* data, size_t size);

}  // namespace coopd
