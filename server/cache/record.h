// record.h: the self-verifying format of every value coopd stores on disk.
//
//   magic "COOPREC1" | u32 format version (2) | u32 codec (0 raw, 1 zstd) | u64 raw size |
//   sha256(raw payload) | payload bytes (compressed per codec)
//
// Decoding decompresses and re-hashes, so any flipped bit (in the header or the compressed
// bytes) is caught. All integers little-endian.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace coopd {

inline constexpr uint32_t kRecordVersion = 2;

// Compresses with zstd when that makes the record smaller. When `payload_sha256` is given it
// receives the payload's digest (the one written into the header), so a caller that needs the
// digest does not hash the payload a second time.
std::string EncodeRecord(std::string_view payload, int zstd_level = 3,
                         std::array<uint8_t, 32>* payload_sha256 = nullptr);

// The payload, or DATA_LOSS naming the check that failed ("record: checksum mismatch"). The
// payload is hashed once; when `payload_sha256` is given it receives that verified digest.
absl::StatusOr<std::string> DecodeRecord(std::string_view record,
                                         std::array<uint8_t, 32>* payload_sha256 = nullptr);

}  // namespace coopd
