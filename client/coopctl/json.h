// json.h: a minimal JSON writer for coopctl's --json output (objects, arrays, strings, numbers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace coopctl {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  const std::string& str() const { return out_; }

 private:
  void Separator();
  std::string out_;
  bool need_comma_ = false;
};

std::string JsonEscape(std::string_view s);

}  // namespace coopctl
