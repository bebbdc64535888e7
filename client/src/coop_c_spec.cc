// coop_c_spec.cc: the C ABI's specs (coop/coop_c.h, "Spec"): a coop_spec_t is a
// coop.v1.PrimitiveSpec, set field by field by its path in the message with protobuf reflection
// (checked for the field's kind, for UTF-8 in string fields, and for the range of integers), or
// read from JSON.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coop/coop_c.h"
#include "coop/v1/coop.pb.h"
#include "coop_c_internal.h"

namespace pb = google::protobuf;

using coop::c_abi::ClearOut;
using coop::c_abi::Fail;
using coop::c_abi::Guard;
using coop::c_abi::Join;
using coop::c_abi::Null;
using coop::c_abi::Ok;
using coop::c_abi::ShortName;
using coop::c_abi::ToJson;

namespace {

// Fields the proto documents as set by coopd in resolved specs, never by a request.
bool ResolvedOnly(const pb::FieldDescriptor* f) {
  return f->containing_type() == coop::v1::UserOperator::descriptor() &&
         (f->name() == "digest" || f->name() == "user_type");
}

void SettablePaths(const pb::Descriptor* d, const std::string& prefix,
                   std::vector<std::string>* out) {
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (ResolvedOnly(f)) continue;
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      out->push_back(prefix + f->name());
    } else if (!f->is_repeated()) {
      SettablePaths(f->message_type(), prefix + f->name() + ".", out);
    }
  }
}

// The fields from the spec's root to the leaf `path` names, or empty when it names none.
std::vector<const pb::FieldDescriptor*> Resolve(const std::string& path) {
  std::vector<const pb::FieldDescriptor*> chain;
  const pb::Descriptor* d = coop::v1::PrimitiveSpec::descriptor();
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const pb::FieldDescriptor* f =
        d->FindFieldByName(path.substr(start, dot == std::string::npos ? dot : dot - start));
    if (f == nullptr || ResolvedOnly(f)) return {};
    chain.push_back(f);
    const bool message = f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if (dot == std::string::npos) return message ? decltype(chain)() : chain;
    if (!message || f->is_repeated()) return {};
    d = f->message_type();
    start = dot + 1;
  }
}

// The functions that set spec fields, by what they take.
enum class Setter { kString, kBytes, kUint, kBool, kAdd };

const char* SetterName(Setter s) {
  static const char* const kNames[] = {"coop_spec_set_string", "coop_spec_set_bytes",
                                       "coop_spec_set_uint", "coop_spec_set_bool",
                                       "coop_spec_add_string"};
  return kNames[static_cast<int>(s)];
}

// What a field holds, and the setter that sets it.
std::pair<const char*, Setter> KindOf(const pb::FieldDescriptor* f) {
  using F = pb::FieldDescriptor;
  if (f->is_repeated()) return {"a list of strings", Setter::kAdd};
  switch (f->cpp_type()) {
    case F::CPPTYPE_STRING:
      return f->type() == F::TYPE_BYTES ? std::pair{"bytes", Setter::kBytes}
                                        : std::pair{"a string", Setter::kString};
    case F::CPPTYPE_ENUM:
      return {"a name", Setter::kString};
    case F::CPPTYPE_BOOL:
      return {"a bool", Setter::kBool};
    default:
      return {"an integer", Setter::kUint};
  }
}

bool Accepts(Setter setter, const pb::FieldDescriptor* f) {
  if (setter == KindOf(f).second) return true;
  // Text may go to a bytes field, and counted bytes to a string field (not to an enum).
  const bool text = !f->is_repeated() && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING;
  return text && (setter == Setter::kString || setter == Setter::kBytes);
}

// The offset of the first byte of `s` that does not begin well-formed UTF-8 (no overlong forms,
// surrogates or values past U+10FFFF: what protobuf requires of a string field), or npos.
size_t InvalidUtf8At(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return i;
    uint32_t cp = n == 1 ? c : c & (0x7fu >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n;
  }
  return std::string_view::npos;
}

// Finds the leaf `path` for `setter` and makes the messages above it present (which selects
// them in their oneofs). *message and *field receive the leaf's holder and descriptor. `text`,
// a text setter's value, must be UTF-8 when the leaf is a string field (protobuf cannot carry
// anything else there: the spec's JSON would lose it and coopd could not decode the request);
// it is checked before anything changes.
coop_status Locate(coop_spec_t* spec, Setter setter, const char* path, pb::Message** message,
                   const pb::FieldDescriptor** field, const std::string_view* text = nullptr) {
  const char* function = SetterName(setter);
  if (spec == nullptr) return Null(function, "spec");
  if (path == nullptr) return Null(function, "field");
  const auto chain = Resolve(path);
  if (chain.empty()) {
    std::vector<std::string> paths;
    SettablePaths(coop::v1::PrimitiveSpec::descriptor(), "", &paths);
    return Fail(COOP_INVALID_ARGUMENT, std::string(function) + ": \"" + path +
                                           "\" is not a spec field; the fields are " + Join(paths));
  }
  const pb::FieldDescriptor* leaf = chain.back();
  if (!Accepts(setter, leaf)) {
    const auto [what, right] = KindOf(leaf);
    return Fail(COOP_INVALID_ARGUMENT, std::string(function) + ": spec field \"" + path +
                                           "\" holds " + what + ": set it with " +
                                           SetterName(right));
  }
  if (text != nullptr && leaf->type() == pb::FieldDescriptor::TYPE_STRING) {
    const size_t bad = InvalidUtf8At(*text);
    if (bad != std::string_view::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>((*text)[bad]));
      return Fail(COOP_INVALID_ARGUMENT,
                  std::string(function) + ": spec field \"" + path +
                      "\" holds UTF-8 text; the value is not UTF-8 at byte " + std::to_string(bad) +
                      " (" + byte + ")");
    }
  }
  pb::Message* m = &spec->proto;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    m = m->GetReflection()->MutableMessage(m, chain[i]);
  }
  *message = m;
  *field = leaf;
  return COOP_OK;
}

coop_status SetEnum(pb::Message* m, const pb::FieldDescriptor* f, const char* path,
                    const std::string& value) {
  std::vector<std::string> names;
  const pb::EnumDescriptor* type = f->enum_type();
  for (int i = 0; i < type->value_count(); ++i) {
    const pb::EnumValueDescriptor* v = type->value(i);
    if (value == ShortName(v) || value == v->name()) {
      m->GetReflection()->SetEnum(m, f, v);
      return Ok();
    }
    if (v->number() != 0) names.push_back(ShortName(v));
  }
  return Fail(COOP_INVALID_ARGUMENT, std::string("coop_spec_set_string: spec field \"") + path +
                                         "\" must be one of " + Join(names) + "; got \"" + value +
                                         "\"");
}

coop_status SetText(coop_spec_t* spec, Setter setter, const char* path, const char* data,
                    size_t size) {
  pb::Message* m = nullptr;
  const pb::FieldDescriptor* f = nullptr;
  const std::string_view text = data == nullptr ? std::string_view() : std::string_view(data, size);
  if (coop_status s = Locate(spec, setter, path, &m, &f, &text); s != COOP_OK) return s;
  if (data == nullptr && size != 0) return Null(SetterName(setter), "value");
  std::string value = data == nullptr ? std::string() : std::string(data, size);
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM) return SetEnum(m, f, path, value);
  if (f->is_repeated()) {
    m->GetReflection()->AddString(m, f, std::move(value));
  } else {
    m->GetReflection()->SetString(m, f, std::move(value));
  }
  return Ok();
}

}  // namespace

extern "C" {

coop_spec_t* coop_spec_create(void) {
  return new (std::nothrow) coop_spec_t();
}

void coop_spec_destroy(coop_spec_t* spec) {
  delete spec;
}

coop_spec_t* coop_spec_clone(const coop_spec_t* spec) {
  if (spec == nullptr) return nullptr;
  try {
    auto* copy = new coop_spec_t();
    copy->proto = spec->proto;
    return copy;
  } catch (...) {
    return nullptr;
  }
}

coop_status coop_spec_from_json(const char* json, coop_spec_t** out) {
  return Guard("coop_spec_from_json", [&] {
    if (!ClearOut(out)) return Null("coop_spec_from_json", "out");
    if (json == nullptr) return Null("coop_spec_from_json", "json");
    auto spec = std::make_unique<coop_spec_t>();
    const auto status = pb::util::JsonStringToMessage(json, &spec->proto);
    if (!status.ok()) {
      return Fail(COOP_INVALID_ARGUMENT, "coop_spec_from_json: not a coop.v1.PrimitiveSpec: " +
                                             status.message().ToString());
    }
    *out = spec.release();
    return Ok();
  });
}

coop_status coop_spec_set_string(coop_spec_t* spec, const char* field, const char* value) {
  return Guard("coop_spec_set_string", [&] {
    return SetText(spec, Setter::kString, field, value, value == nullptr ? 0 : strlen(value));
  });
}

coop_status coop_spec_set_bytes(coop_spec_t* spec, const char* field, const void* data,
                                size_t size) {
  return Guard("coop_spec_set_bytes", [&] {
    return SetText(spec, Setter::kBytes, field, static_cast<const char*>(data), size);
  });
}

coop_status coop_spec_add_string(coop_spec_t* spec, const char* field, const char* value) {
  return Guard("coop_spec_add_string", [&] {
    if (value == nullptr) return Null("coop_spec_add_string", "value");
    return SetText(spec, Setter::kAdd, field, value, strlen(value));
  });
}

coop_status coop_spec_set_uint(coop_spec_t* spec, const char* field, uint64_t value) {
  return Guard("coop_spec_set_uint", [&] {
    using F = pb::FieldDescriptor;
    pb::Message* m = nullptr;
    const F* f = nullptr;
    if (coop_status s = Locate(spec, Setter::kUint, field, &m, &f); s != COOP_OK) return s;
    uint64_t max = std::numeric_limits<uint64_t>::max();
    if (f->cpp_type() == F::CPPTYPE_UINT32) max = std::numeric_limits<uint32_t>::max();
    if (f->cpp_type() == F::CPPTYPE_INT32) max = std::numeric_limits<int32_t>::max();
    if (f->cpp_type() == F::CPPTYPE_INT64) max = std::numeric_limits<int64_t>::max();
    if (value > max) {
      return Fail(COOP_INVALID_ARGUMENT, std::string("coop_spec_set_uint: spec field \"") + field +
                                             "\" holds 0.." + std::to_string(max) + "; got " +
                                             std::to_string(value));
    }
    const pb::Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case F::CPPTYPE_UINT32:
        r->SetUInt32(m, f, static_cast<uint32_t>(value));
        break;
      case F::CPPTYPE_INT32:
        r->SetInt32(m, f, static_cast<int32_t>(value));
        break;
      case F::CPPTYPE_INT64:
        r->SetInt64(m, f, static_cast<int64_t>(value));
        break;
      default:
        r->SetUInt64(m, f, value);
        break;
    }
    return Ok();
  });
}

coop_status coop_spec_set_bool(coop_spec_t* spec, const char* field, int value) {
  return Guard("coop_spec_set_bool", [&] {
    pb::Message* m = nullptr;
    const pb::FieldDescriptor* f = nullptr;
    if (coop_status s = Locate(spec, Setter::kBool, field, &m, &f); s != COOP_OK) return s;
    m->GetReflection()->SetBool(m, f, value != 0);
    return Ok();
  });
}

const char* coop_spec_json(coop_spec_t* spec) {
  if (spec == nullptr) return nullptr;
  try {
    spec->json = ToJson(spec->proto, false);
  } catch (...) {
    spec->json.clear();
  }
  return spec->json.c_str();
}

}  // extern "C"
