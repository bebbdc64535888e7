#include "server/cache/record.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <memory>

#include "server/util/sha256.h"
#include "tests/unit/data_limit.h"

namespace coopd {
namespace {

std::string Compressible() {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += "ld.shared.f32 %f" + std::to_string(i % 7) + ";\n";
  return s;
}

TEST(Record, RoundTripsAndCompresses) {
  const std::string payload = Compressible();
  const std::string rec = EncodeRecord(payload);
  EXPECT_LT(rec.size(), payload.size() / 4) << "zstd should shrink repetitive payloads";
  auto back = DecodeRecord(rec);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, payload);
}

TEST(Record, IncompressiblePayloadIsStoredRaw) {
  std::string noise;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1103515245 + 12345;
    noise.push_back(static_cast<char>(x >> 24));
  }
  const std::string rec = EncodeRecord(noise);
  EXPECT_LE(rec.size(), noise.size() + 64);
  EXPECT_EQ(*DecodeRecord(rec), noise);
  EXPECT_EQ(*DecodeRecord(EncodeRecord("")), "");
}

TEST(Record, EveryDamageIsCaughtAndNamed) {
  const std::string good = EncodeRecord(Compressible());
  auto expect = [](const std::string& rec, const std::string& message) {
    auto r = DecodeRecord(rec);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(r.status().message(), message);
  };
  std::string bad = good;
  bad[0] = 'X';
  expect(bad, "record: bad magic");
  bad = good;
  bad[8] = 9;
  expect(bad, "record: format version 9, expected 2");
  bad = good;
  bad[12] = 7;
  expect(bad, "record: unknown codec 7");
  expect(good.substr(0, 20), "record: truncated (20 bytes, header needs 56)");
  // A flipped bit in the stored checksum.
  bad = good;
  bad[30] ^= 1;
  expect(bad, "record: checksum mismatch");
  // Flipped bytes inside the compressed payload: either zstd or the checksum catches it.
  for (size_t pos : {good.size() / 2, good.size() - 1, size_t{60}}) {
    bad = good;
    bad[pos] ^= 0x5a;
    auto r = DecodeRecord(bad);
    EXPECT_FALSE(r.ok()) << "flip at " << pos;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  }
}

// Found by the record fuzz target (its reproducer, a 75-byte record claiming 637 MB, is
// tests/fuzz/corpus/record/regress-oom-claimed-payload-size): the decoder allocated the payload
// size a zstd record's header claims before zstd had produced a byte. The payload now grows only
// as zstd produces it. Here: a real record whose header claims 2 GiB.
TEST(Record, AHeaderClaimingAHugePayloadAllocatesNothingForIt) {
  std::string rec = EncodeRecord(Compressible());
  ASSERT_EQ(rec[12], 1) << "expected a zstd record";
  for (int i = 0; i < 8; ++i) rec[16 + i] = static_cast<char>(((uint64_t{1} << 31) >> (8 * i)));
  if (testutil::UnderAddressSanitizer()) GTEST_SKIP() << "ASan build: no data limit";
  testutil::ExpectWithinDataLimit(256, [&] {
    auto r = DecodeRecord(rec);
    return !r.ok() && r.status().code() == absl::StatusCode::kDataLoss;
  });
  auto r = DecodeRecord(rec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "record: zstd payload does not decompress");
}

// Found by the record fuzz target (tests/fuzz/corpus/record/regress-oom-zstd-window-size, 68
// bytes): zstd allocates the window a frame's header asks for, by default up to 128 MiB, so a
// valid record whose frame asks for a large window cost that much memory to decode. Frames that
// ask for more than 8 MiB (coopd's need 2 MiB at most) are now refused. Here: a record with a
// correct checksum whose frame was compressed with a 128 MiB window.
TEST(Record, AZstdFrameAskingForAWindowAbove8MiBIsRefused) {
  const std::string payload = Compressible();
  auto compress = [&](int window_log) {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    EXPECT_FALSE(ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, window_log)));
    std::string frame(ZSTD_compressBound(payload.size()), '\0');
    ZSTD_inBuffer in{payload.data(), payload.size(), 0};
    ZSTD_outBuffer out{frame.data(), frame.size(), 0};
    // A stream whose size zstd learns only at its end: the header states the window (no
    // single segment sized to the content).
    EXPECT_FALSE(ZSTD_isError(ZSTD_compressStream2(cctx.get(), &out, &in, ZSTD_e_continue)));
    ZSTD_inBuffer none{nullptr, 0, 0};
    EXPECT_EQ(ZSTD_compressStream2(cctx.get(), &out, &none, ZSTD_e_end), 0u);
    frame.resize(out.pos);
    std::string rec = EncodeRecord("");  // the header, patched below
    rec[12] = 1;                         // codec zstd
    for (int i = 0; i < 8; ++i) rec[16 + i] = static_cast<char>((payload.size() >> (8 * i)) & 0xff);
    const auto digest = Sha256::Digest(payload);
    rec.replace(24, 32, reinterpret_cast<const char*>(digest.data()), digest.size());
    return rec.substr(0, 56) + frame;
  };
  auto ok = DecodeRecord(compress(21));  // the control: a 2 MiB window decodes
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, payload);
  auto r = DecodeRecord(compress(27));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "record: zstd payload does not decompress");
}

TEST(Record, AZstdPayloadWithBytesAfterItsFrameIsRefused) {
  const std::string payload = Compressible();
  const std::string rec = EncodeRecord(payload) + "trailing";
  auto r = DecodeRecord(rec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace coopd
