#include "tests/fuzz/fuzz_common.h"

#include <algorithm>
#include <cstring>

namespace coopd::fuzz {

bool IsOneSafeLine(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlong forms, surrogates or values past U+10FFFF), and
    // none of the C1 controls or line/paragraph separators EscapeText() escapes.
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (n == 0 || c > 0xf4 || i + n > s.size()) return false;
    uint32_t cp = c & (0xff >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 ||
        cp == 0x2029) {
      return false;
    }
    i += n;
  }
  return true;
}

uint8_t InputReader::Byte() {
  if (left_ == 0) return 0;
  --left_;
  return *p_++;
}

uint64_t InputReader::Uint64() {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{Byte()} << (8 * i);
  return v;
}

std::string InputReader::String(size_t max) {
  size_t n = Byte();
  n |= size_t{Byte()} << 8;
  n = std::min({n, max, left_});
  std::string out(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  left_ -= n;
  return out;
}

std::string InputReader::Rest() {
  std::string out(reinterpret_cast<const char*>(p_), left_);
  p_ += left_;
  left_ = 0;
  return out;
}

}  // namespace coopd::fuzz
