#include "coopctl/json.h"

#include <cmath>
#include <cstdio>

namespace coopctl {

std::string JsonEscape(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"";
  return out;
}

void JsonWriter::Separator() {
  if (need_comma_) out_ += ",";
  need_comma_ = true;
}

JsonWriter& JsonWriter::BeginObject() {
  Separator();
  out_ += "{";
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  out_ += "}";
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  Separator();
  out_ += "[";
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  out_ += "]";
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  Separator();
  out_ += JsonEscape(key);
  out_ += ":";
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view value) {
  Separator();
  out_ += JsonEscape(value);
  return *this;
}
JsonWriter& JsonWriter::Uint(uint64_t value) {
  Separator();
  out_ += std::to_string(value);
  return *this;
}
JsonWriter& JsonWriter::Double(double value) {
  Separator();
  if (!std::isfinite(value)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", value);
  out_ += buf;
  return *this;
}
JsonWriter& JsonWriter::Bool(bool value) {
  Separator();
  out_ += value ? "true" : "false";
  return *this;
}

}  // namespace coopctl
