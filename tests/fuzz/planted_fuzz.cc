// planted_fuzz: the record target's input path with a bug planted on purpose, for the smoke's
// self-test (smoke_selftest.sh): an input that starts like a record ("COOP") and has 'X' where
// the record magic has 'R' reads one byte past the end of a heap copy of itself, which ASan
// reports. libFuzzer reaches it from the record seeds by changing one byte. Never a CI target of
// its own: the self-test expects it to fail.
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/cache/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);
  if (size >= 5 && std::memcmp(data, "COOP", 4) == 0 && data[4] == 'X') {
    volatile uint8_t past_the_end = copy.data()[size];  // the planted bug
    (void)past_the_end;
  }
  (void)coopd::DecodeRecord(
      std::string_view(reinterpret_cast<const char*>(copy.data()), copy.size()));
  return 0;
}
