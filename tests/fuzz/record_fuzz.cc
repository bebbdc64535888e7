// record_fuzz: bytes -> DecodeRecord() (server/cache/record.h), the check every value read
// back from SQLite or from the farm's Redis passes before it is served; and the same bytes as a
// payload -> EncodeRecord() -> damage -> DecodeRecord().
//
// Properties:
//   - decoding any bytes either yields a payload or DATA_LOSS, and a decoded payload encodes
//     to a record that decodes to it again;
//   - every record EncodeRecord() writes decodes to its payload, and the same record with one
//     header byte changed, or one byte short, is refused (DATA_LOSS): damage is never served.
// The smoke runs with -malloc_limit_mb, so a record whose header claims a huge payload must not
// make the decoder allocate it before the data proves it.
#include <string>

#include "server/cache/record.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 32;

void ExpectRefused(const std::string& record, const char* what) {
  const auto decoded = coopd::DecodeRecord(record);
  FUZZ_CHECK(!decoded.ok(), "a record with %s decoded", what);
  FUZZ_CHECK(absl::IsDataLoss(decoded.status()), "%s: %s", what,
             decoded.status().ToString().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const auto decoded = coopd::DecodeRecord(input);
  if (decoded.ok()) {
    const auto again = coopd::DecodeRecord(coopd::EncodeRecord(*decoded));
    FUZZ_CHECK(again.ok() && *again == *decoded, "a decoded payload does not round-trip");
  } else {
    FUZZ_CHECK(absl::IsDataLoss(decoded.status()), "%s", decoded.status().ToString().c_str());
  }

  const std::string record = coopd::EncodeRecord(input);
  const auto back = coopd::DecodeRecord(record);
  FUZZ_CHECK(back.ok(), "a fresh record is refused: %s", back.status().ToString().c_str());
  FUZZ_CHECK(*back == input, "a record decodes to another payload");
  // One header byte (which one and how: from the input) changed.
  std::string damaged = record;
  const size_t at = size == 0 ? 0 : data[0] % kHeaderBytes;
  damaged[at] = static_cast<char>(damaged[at] ^ (size > 1 && data[1] != 0 ? data[1] : 0x01));
  ExpectRefused(damaged, "a changed header byte");
  ExpectRefused(record.substr(0, record.size() - 1), "its last byte cut off");
  return 0;
}
