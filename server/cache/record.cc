#include "server/cache/record.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'O', 'P', 'R', 'E', 'C', '1'};
constexpr size_t kHeaderSize = sizeof(kMagic) + 4 + 4 + 8 + 32;
constexpr uint32_t kCodecRaw = 0;
constexpr uint32_t kCodecZstd = 1;
constexpr uint64_t kMaxRawBytes = uint64_t{1} << 31;
constexpr int kMaxWindowLog = 23;  // 8 MiB

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// Decompresses the one zstd frame `in` holds into *out, which must come to exactly `raw_size`
// bytes. The header's raw size is a claim (of a damaged record, or of anyone who can write to
// the farm's Redis), so the output grows only as zstd produces it: a 100-byte record claiming 2
// GiB costs no more memory than its frame really expands to.
bool Decompress(std::string_view in, uint64_t raw_size, std::string* out) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (dctx == nullptr) return false;
  // zstd allocates the window a frame's header asks for (by default up to 128 MiB). coopd's
  // frames (levels 1 and 3) need at most 2 MiB: refuse frames that ask for more than 8 MiB.
  if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kMaxWindowLog))) {
    return false;
  }
  constexpr size_t kFirstChunk = size_t{64} << 10;
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t produced = 0;
  for (;;) {
    if (produced == out->size()) {
      // Room for one byte more than claimed, so a longer payload is caught, not cut.
      if (out->size() > raw_size) return false;
      out->resize(static_cast<size_t>(
          std::min<uint64_t>(raw_size + 1, std::max(kFirstChunk, out->size() * 2))));
    }
    ZSTD_outBuffer dst{out->data(), out->size(), produced};
    const size_t consumed_before = src.pos;
    const size_t left = ZSTD_decompressStream(dctx.get(), &dst, &src);
    if (ZSTD_isError(left)) return false;
    const bool progress = dst.pos != produced || src.pos != consumed_before;
    produced = dst.pos;
    if (left == 0) break;         // the frame is complete
    if (!progress) return false;  // truncated: zstd wants input that is not there
  }
  // Exactly one frame, nothing after it, and the size the header states.
  if (src.pos != src.size || produced != raw_size) return false;
  out->resize(produced);
  return true;
}

}  // namespace

std::string EncodeRecord(std::string_view payload, int zstd_level,
                         std::array<uint8_t, 32>* payload_sha256) {
  std::string compressed(ZSTD_compressBound(payload.size()), '\0');
  size_t n = ZSTD_compress(compressed.data(), compressed.size(), payload.data(), payload.size(),
                           zstd_level);
  const bool use_zstd = !ZSTD_isError(n) && n < payload.size();
  std::string rec;
  rec.reserve(kHeaderSize + (use_zstd ? n : payload.size()));
  rec.append(kMagic, sizeof(kMagic));
  PutLe(&rec, kRecordVersion, 4);
  PutLe(&rec, use_zstd ? kCodecZstd : kCodecRaw, 4);
  PutLe(&rec, payload.size(), 8);
  const auto d = Sha256::Digest(payload);
  if (payload_sha256 != nullptr) *payload_sha256 = d;
  rec.append(reinterpret_cast<const char*>(d.data()), d.size());
  if (use_zstd) {
    rec.append(compressed.data(), n);
  } else {
    rec.append(payload);
  }
  return rec;
}

absl::StatusOr<std::string> DecodeRecord(std::string_view rec,
                                         std::array<uint8_t, 32>* payload_sha256) {
  if (rec.size() < kHeaderSize) {
    return absl::DataLossError(
        StrCat("record: truncated (", rec.size(), " bytes, header needs ", kHeaderSize, ")"));
  }
  if (std::memcmp(rec.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError("record: bad magic");
  }
  const char* p = rec.data() + sizeof(kMagic);
  const uint32_t version = static_cast<uint32_t>(GetLe(p, 4));
  if (version != kRecordVersion) {
    return absl::DataLossError(
        StrCat("record: format version ", version, ", expected ", kRecordVersion));
  }
  const uint32_t codec = static_cast<uint32_t>(GetLe(p + 4, 4));
  const uint64_t raw_size = GetLe(p + 8, 8);
  const char* digest = p + 16;
  const char* data = rec.data() + kHeaderSize;
  const size_t data_size = rec.size() - kHeaderSize;
  if (raw_size > kMaxRawBytes) return absl::DataLossError("record: implausible size");
  std::string payload;
  if (codec == kCodecRaw) {
    if (data_size != raw_size) return absl::DataLossError("record: size mismatch");
    payload.assign(data, data_size);
  } else if (codec == kCodecZstd) {
    if (!Decompress(std::string_view(data, data_size), raw_size, &payload)) {
      return absl::DataLossError("record: zstd payload does not decompress");
    }
  } else {
    return absl::DataLossError(StrCat("record: unknown codec ", codec));
  }
  const auto d = Sha256::Digest(payload);
  if (std::memcmp(d.data(), digest, d.size()) != 0) {
    return absl::DataLossError("record: checksum mismatch");
  }
  if (payload_sha256 != nullptr) *payload_sha256 = d;
  return payload;
}

}  // namespace coopd
