// escape.h: values from requests made safe to quote in errors and to write to logs.
//
// A request's strings are the caller's: any length, any bytes. Quoted whole they can overflow
// gRPC's metadata limit (a 20,000-byte dtype turned INVALID_ARGUMENT into RESOURCE_EXHAUSTED)
// or forge log lines (an arch holding "\n2026-... error coopd: ..."). These functions keep what
// they produce on one line, in valid UTF-8, and short.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace coopd {

// The longest prefix of a rejected value that an error quotes (bytes of the value, before
// escaping).
inline constexpr size_t kMaxQuotedValueBytes = 48;

// `s` with every byte that could change how a line reads replaced by an escape: C0 controls
// and DEL as \n, \r, \t or \xNN (NUL is \x00), the C1 controls and U+2028/U+2029 as \uNNNN,
// every byte that is not part of well-formed UTF-8 as \xNN. With `quote_chars`, `"` and `\`
// are escaped too (\" and \\), so a quoted value cannot end its quotes early. Everything else
// (printable ASCII, well-formed multi-byte UTF-8) is kept as it is.
std::string EscapeText(std::string_view s, bool quote_chars = false);

// A value for an error message: "value" escaped, or, when it is longer than `max_bytes`, its
// first `max_bytes` bytes (cut at a character boundary), escaped, then an ellipsis and its
// length: "MMMM…" (20000 bytes).
std::string QuoteValue(std::string_view s, size_t max_bytes = kMaxQuotedValueBytes);

// `s` escaped for a log line (EscapeText without quote_chars) and cut to `max_bytes` of the
// original, with a note of what was left out: "... (1234 more bytes not logged)".
std::string LogSafe(std::string_view s, size_t max_bytes);

}  // namespace coopd
