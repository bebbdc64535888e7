// strings.h: string concatenation that accepts std::string_view.
//
// Debian's abseil is built with its own absl::string_view (not std::string_view), so
// absl::StrCat rejects std::string_view arguments. These helpers take any mix of strings,
// string views, C strings, characters and arithmetic values.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace coopd {
namespace strings_internal {

inline void Append(std::string* out, std::string_view s) {
  out->append(s.data(), s.size());
}
inline void Append(std::string* out, const char* s) {
  out->append(s);
}
inline void Append(std::string* out, const std::string& s) {
  out->append(s);
}
inline void Append(std::string* out, char c) {
  out->push_back(c);
}
#ifndef ABSL_USES_STD_STRING_VIEW
inline void Append(std::string* out, absl::string_view s) {
  out->append(s.data(), s.size());
}
#endif
template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, char> &&
                                        !std::is_same_v<T, bool>,
                                    int> = 0>
void Append(std::string* out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", static_cast<double>(v));
    out->append(buf);
  } else {
    out->append(std::to_string(v));
  }
}

}  // namespace strings_internal

template <class... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(&out, args), ...);
  return out;
}

template <class... Args>
void StrAppend(std::string* out, const Args&... args) {
  (strings_internal::Append(out, args), ...);
}

template <class Range>
std::string StrJoin(const Range& range, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& x : range) {
    if (!first) out.append(sep.data(), sep.size());
    first = false;
    strings_internal::Append(&out, x);
  }
  return out;
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace coopd
