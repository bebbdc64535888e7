// fuzz_common.h: what the libFuzzer targets of tests/fuzz share.
//
// A target defines LLVMFuzzerTestOneInput(). It is linked twice: with libFuzzer's main in the
// fuzz build (COOPD_FUZZ=ON, clang, ASan and UBSan), and with replay_main.cc in the ordinary
// build, where ctest runs every file of its corpus through it (FuzzCorpus.*), so a reproducer
// committed to the corpus is a regression test under gcc too.
//
// FUZZ_CHECK states a property the code under test must keep for every input; a violation
// prints the property and aborts, which libFuzzer reports as a crash and saves the input.
#pragma once

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, "  " __VA_ARGS__);                                              \
      std::fprintf(stderr, "\n");                                                          \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace coopd::fuzz {

// True when `s` is one line of valid UTF-8 without control characters: what an error message
// that quotes request values through server/util/escape.h must be.
bool IsOneSafeLine(std::string_view s);

// Silences protobuf's own log (a parse of a string field with invalid UTF-8 logs an ERROR line
// before it fails): at fuzzing rates the writes to stderr would cost more than the parse. Call
// from a static initializer of a target that parses messages.
inline bool QuietProtobufLog() {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}

// Reads typed values off the front of a fuzz input; past the end every read yields zero or
// empty (so a harness never branches on how much is left).
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size) : p_(data), left_(size) {}
  uint8_t Byte();
  uint64_t Uint64();
  // Up to `max` bytes: a length byte pair, then that many bytes.
  std::string String(size_t max);
  // Everything that is left.
  std::string Rest();
  bool empty() const { return left_ == 0; }

 private:
  const uint8_t* p_;
  size_t left_;
};

}  // namespace coopd::fuzz
