// record.h: the self-verifying format of every value coopd stores on disk.
//
//   magic "COOPREC1" | u32 format version (2) | u32 codec (0 raw, 1 zstd) | u64 raw size |
//   sha256(raw payload) | payload bytes (compressed per codec)
//
// Decoding decompresses and re-hashes, so any flipped bit (in the header or the compressed
// bytes) is caught. All integers little-endian.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace coopd {

inline constexpr uint32_t kRecordVersion = 2;

// Compresses with zstd when that makes the record smaller.
std::string EncodeRecord(const std::string& payload, int zstd_level = 3);

// The payload, or DATA_LOSS naming the check that failed ("record: checksum mismatch").
absl::StatusOr<std::string> DecodeRecord(const std::string& record);

}  // namespace coopd
