#include "server/util/escape.h"

#include <cstdint>
#include <cstdio>

namespace coopd {
namespace {

// The length of the well-formed UTF-8 sequence that starts s[i] (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 when s[i] does not start one. Sets *cp to it.
size_t Utf8Sequence(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t v, min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    n = 2, v = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, v = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

void AppendHex(std::string* out, const char* format, unsigned v) {
  char buf[12];
  std::snprintf(buf, sizeof(buf), format, v);
  out->append(buf);
}

// The number of bytes of `s` that fit in `max_bytes` without splitting a character.
size_t CharBoundary(std::string_view s, size_t max_bytes) {
  if (max_bytes >= s.size()) return s.size();
  size_t end = 0;
  while (end < max_bytes) {
    uint32_t cp = 0;
    const size_t n = Utf8Sequence(s, end, &cp);
    const size_t step = n == 0 ? 1 : n;  // a stray byte is one (escaped) unit
    if (end + step > max_bytes) break;
    end += step;
  }
  return end;
}

}  // namespace

std::string EscapeText(std::string_view s, bool quote_chars) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8Sequence(s, i, &cp);
    if (n == 0) {
      AppendHex(&out, "\\x%02x", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F) {
      AppendHex(&out, "\\x%02x", cp);
    } else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
      AppendHex(&out, "\\u%04x", cp);
    } else if (quote_chars && (cp == '"' || cp == '\\')) {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else {
      out.append(s.data() + i, n);
    }
    i += n;
  }
  return out;
}

std::string QuoteValue(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return "\"" + EscapeText(s, true) + "\"";
  return "\"" + EscapeText(s.substr(0, CharBoundary(s, max_bytes)), true) + "\xE2\x80\xA6\" (" +
         std::to_string(s.size()) + " bytes)";
}

std::string LogSafe(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return EscapeText(s);
  const size_t keep = CharBoundary(s, max_bytes);
  return EscapeText(s.substr(0, keep)) + "... (" + std::to_string(s.size() - keep) +
         " more bytes not logged)";
}

}  // namespace coopd
