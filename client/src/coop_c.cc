// coop_c.cc: the C ABI (coop/coop_c.h) over the C++ client.
//
// Specs, link requests and replies are the wire messages themselves (coop.v1.*), reached through
// ClientAccess (client_internal.h): a spec is set by field path with protobuf reflection, so
// the C ABI follows coop.proto and not the shape of the C++ structs. No C++ exception leaves
// this file: every coop_status function runs inside Guard().
#include "coop/coop_c.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client_internal.h"
#include "coop/client.h"
#include "coop/v1/coop.pb.h"

namespace pb = google::protobuf;

struct coop_options_t {
  coop::ClientOptions options;
};

struct coop_client_t {
  explicit coop_client_t(coop::ClientOptions options) : client(std::move(options)) {}
  coop::Client client;
};

struct coop_spec_t {
  coop::v1::PrimitiveSpec proto;
  std::string json;  // coop_spec_json's last answer
};

struct coop_artifact_t {
  coop::v1::Artifact proto;
  std::string origin;
  std::vector<size_t> part_first_entry;
  std::vector<std::string> part_spec_json;
};

struct coop_link_t {
  coop::v1::LinkRequest proto;
};

struct coop_cubin_t {
  coop::v1::LinkResponse proto;
  std::string origin;
};

struct coop_catalog_t {
  coop::v1::CatalogResponse proto;
  std::string json;
};

struct coop_stats_t {
  coop::v1::Stats proto;
  std::string json;
};

namespace {

thread_local std::string last_error;
thread_local std::string last_error_details;  // coop::Error::details of the last failure

coop_status Fail(coop_status status, std::string message) {
  last_error = std::move(message);
  last_error_details.clear();
  return status;
}

coop_status Ok() {
  last_error.clear();
  last_error_details.clear();
  return COOP_OK;
}

coop_status FromError(const coop::Error& e) {
  if (e.code == coop::ErrorCode::kUnavailable && !e.from_server) {
    return Fail(COOP_NOT_REACHABLE, e.message);
  }
  const int code = static_cast<int>(e.code);
  const coop_status status =
      Fail(code >= 1 && code <= 16 ? static_cast<coop_status>(code) : COOP_UNKNOWN, e.message);
  last_error_details = e.details;
  return status;
}

// Fail() for a caught exception: the message too may fail to allocate.
coop_status FailCaught(coop_status status, const char* function, const char* what) noexcept {
  try {
    return Fail(status, std::string(function) + ": " + what);
  } catch (...) {
    last_error.clear();
    return status;
  }
}

// Runs `body` (which returns a coop_status) so that no exception crosses the C boundary.
template <class Body>
coop_status Guard(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return FailCaught(COOP_RESOURCE_EXHAUSTED, function, "out of memory");
  } catch (const std::exception& e) {
    return FailCaught(COOP_INTERNAL, function, e.what());
  } catch (...) {
    return FailCaught(COOP_INTERNAL, function, "unexpected exception");
  }
}

coop_status Null(const char* function, const char* argument) {
  return Fail(COOP_INVALID_ARGUMENT, std::string(function) + ": " + argument + " is NULL");
}

// The request's formats from COOP_FORMAT_* flags.
template <class Request>
coop_status AddFormats(const char* function, unsigned formats, Request* request) {
  if (formats == 0 || (formats & ~unsigned{COOP_FORMAT_LTOIR | COOP_FORMAT_BITCODE}) != 0) {
    return Fail(COOP_INVALID_ARGUMENT,
                std::string(function) +
                    ": formats must be COOP_FORMAT_LTOIR, COOP_FORMAT_BITCODE "
                    "or both or-ed, got " +
                    std::to_string(formats));
  }
  if ((formats & COOP_FORMAT_LTOIR) != 0) request->add_formats(coop::v1::FORMAT_LTOIR);
  if ((formats & COOP_FORMAT_BITCODE) != 0) request->add_formats(coop::v1::FORMAT_BITCODE);
  return COOP_OK;
}

// Starts a call that hands out a handle through `out`: clears *out.
template <class T>
bool ClearOut(T** out) {
  if (out == nullptr) return false;
  *out = nullptr;
  return true;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string ToJson(const pb::Message& message, bool print_defaults) {
  pb::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = print_defaults;
  std::string out;
  if (!pb::util::MessageToJsonString(message, &out, options).ok()) out = "{}";
  return out;
}

// "CALLING_CONVENTION_NUMBA" of enum CallingConvention -> "numba"; ORIGIN_DISK -> "disk".
std::string ShortName(const pb::EnumValueDescriptor* value) {
  std::string prefix;
  for (char c : value->type()->name()) {
    if (std::isupper(static_cast<unsigned char>(c)) && !prefix.empty()) prefix += '_';
    prefix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  prefix += '_';
  std::string name = value->name();
  if (name.compare(0, prefix.size(), prefix) == 0) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string OriginName(coop::v1::Origin origin) {
  const auto* value = coop::v1::Origin_descriptor()->FindValueByNumber(origin);
  return value == nullptr ? "unspecified" : ShortName(value);
}

// ---- Spec fields by path ------------------------------------------------------------------

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

// ---- Artifacts ----------------------------------------------------------------------------

coop_artifact_t* MakeArtifact(coop::v1::Artifact proto) {
  auto a = std::make_unique<coop_artifact_t>();
  a->proto = std::move(proto);
  a->origin = OriginName(a->proto.origin());
  size_t first = 0;
  for (const auto& part : a->proto.parts()) {
    a->part_first_entry.push_back(first);
    first += static_cast<size_t>(part.entries_size());
    a->part_spec_json.push_back(ToJson(part.spec(), false));
  }
  return a.release();
}

template <class Repeated>
bool InRange(const Repeated& items, size_t i) {
  return i < static_cast<size_t>(items.size());
}

const char* EntryField(const coop_artifact_t* a, size_t i,
                       const std::string& (coop::v1::Entry::*get)() const) {
  if (a == nullptr || !InRange(a->proto.entries(), i)) return nullptr;
  return (a->proto.entries(static_cast<int>(i)).*get)().c_str();
}

const void* Bytes(const std::string& bytes, size_t* size) {
  if (size != nullptr) *size = bytes.size();
  return bytes.data();
}

const coop::v1::CatalogMethod* Method(const coop_catalog_t* c, size_t family, size_t method) {
  if (c == nullptr || !InRange(c->proto.families(), family)) return nullptr;
  const auto& f = c->proto.families(static_cast<int>(family));
  return InRange(f.methods(), method) ? &f.methods(static_cast<int>(method)) : nullptr;
}

// ---- Stats by name ------------------------------------------------------------------------

// A top-level scalar field of coop.v1.Stats for coop_stats_uint (integers, bools) or
// coop_stats_double (doubles).
coop_status StatsField(const coop_stats_t* stats, const char* name, bool want_double,
                       const pb::FieldDescriptor** out) {
  using F = pb::FieldDescriptor;
  const char* function = want_double ? "coop_stats_double" : "coop_stats_uint";
  if (stats == nullptr) return Null(function, "stats");
  if (name == nullptr) return Null(function, "name");
  auto is_double = [](const F* f) {
    return f->cpp_type() == F::CPPTYPE_DOUBLE || f->cpp_type() == F::CPPTYPE_FLOAT;
  };
  std::vector<std::string> allowed;
  const pb::Descriptor* d = coop::v1::Stats::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const F* f = d->field(i);
    const bool scalar = !f->is_repeated() && f->cpp_type() != F::CPPTYPE_MESSAGE &&
                        f->cpp_type() != F::CPPTYPE_STRING && f->cpp_type() != F::CPPTYPE_ENUM;
    if (scalar && is_double(f) == want_double) allowed.push_back(f->name());
    if (scalar && f->name() == name) {
      if (is_double(f) == want_double) {
        *out = f;
        return COOP_OK;
      }
      return Fail(COOP_INVALID_ARGUMENT, std::string(function) + ": \"" + name + "\" is " +
                                             (want_double ? "an integer: read it with "
                                                            "coop_stats_uint"
                                                          : "a double: read it with "
                                                            "coop_stats_double"));
    }
  }
  return Fail(COOP_INVALID_ARGUMENT, std::string(function) + ": no counter \"" + name +
                                         "\"; the counters are " + Join(allowed) +
                                         " (everything else: coop_stats_json)");
}

// ---- Link requests ------------------------------------------------------------------------

coop_status AddModule(const char* function, coop_link_t* link, coop::v1::LinkModule::Kind kind,
                      const char* name, const void* data, size_t size) {
  return Guard(function, [&] {
    if (link == nullptr) return Null(function, "link");
    if (data == nullptr && size != 0) return Null(function, "data");
    auto* m = link->proto.add_modules();
    m->set_kind(kind);
    m->set_name(name != nullptr && *name != '\0'
                    ? std::string(name)
                    : "module" + std::to_string(link->proto.modules_size() - 1));
    m->set_data(data == nullptr ? std::string()
                                : std::string(static_cast<const char*>(data), size));
    return Ok();
  });
}

coop_status AddString(const char* function, coop_link_t* link, const char* value,
                      void (coop::v1::LinkRequest::*add)(const std::string&)) {
  return Guard(function, [&] {
    if (link == nullptr) return Null(function, "link");
    if (value == nullptr) return Null(function, "value");
    (link->proto.*add)(value);
    return Ok();
  });
}

}  // namespace

extern "C" {

int coop_abi_version(void) {
  return COOP_C_ABI_VERSION;
}

const char* coop_status_name(coop_status status) {
  if (status == COOP_NOT_REACHABLE) return "NOT_REACHABLE";
  const int code = static_cast<int>(status);
  return code >= 0 && code <= 16 ? coop::ErrorCodeName(static_cast<coop::ErrorCode>(code))
                                 : "UNKNOWN";
}

const char* coop_last_error(void) {
  return last_error.c_str();
}

const char* coop_last_error_details(void) {
  return last_error_details.c_str();
}

// ---- Client ---------------------------------------------------------------------------------

coop_options_t* coop_options_create(void) {
  return new (std::nothrow) coop_options_t();
}

void coop_options_destroy(coop_options_t* options) {
  delete options;
}

coop_status coop_options_set_timeout_ms(coop_options_t* options, uint64_t timeout_ms) {
  if (options == nullptr) return Null("coop_options_set_timeout_ms", "options");
  constexpr uint64_t kYear = 365ull * 24 * 3600 * 1000;
  if (timeout_ms == 0 || timeout_ms > kYear) {
    return Fail(COOP_INVALID_ARGUMENT, "coop_options_set_timeout_ms: timeout_ms must be 1.." +
                                           std::to_string(kYear) + " (a year); got " +
                                           std::to_string(timeout_ms));
  }
  options->options.timeout = std::chrono::milliseconds(timeout_ms);
  return Ok();
}

void coop_options_set_autostart(coop_options_t* options, int autostart) {
  if (options != nullptr) options->options.autostart = autostart != 0;
}

void coop_options_set_coopd_binary(coop_options_t* options, const char* path) {
  if (options == nullptr) return;
  try {
    options->options.coopd_binary = path == nullptr ? "" : path;
  } catch (...) {
  }
}

void coop_options_set_full_errors(coop_options_t* options, int full_errors) {
  if (options != nullptr) options->options.full_errors = full_errors != 0;
}

void coop_options_set_client_name(coop_options_t* options, const char* name) {
  if (options == nullptr) return;
  try {
    options->options.client_name = name == nullptr ? "" : name;
  } catch (...) {
  }
}

coop_status coop_client_open(const char* socket_path, const coop_options_t* options,
                             coop_client_t** out) {
  return Guard("coop_client_open", [&] {
    if (!ClearOut(out)) return Null("coop_client_open", "out");
    coop::ClientOptions o = options == nullptr ? coop::ClientOptions() : options->options;
    o.socket_path = socket_path == nullptr ? "" : socket_path;
    *out = new coop_client_t(std::move(o));
    return Ok();
  });
}

void coop_client_destroy(coop_client_t* client) {
  delete client;
}

const char* coop_client_socket_path(const coop_client_t* client) {
  return client == nullptr ? nullptr : client->client.socket_path().c_str();
}

// ---- Spec -----------------------------------------------------------------------------------

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

// ---- Specialize -----------------------------------------------------------------------------

namespace {

// coop_client_specialize and _formats, for `function`'s messages.
coop_status Specialize(const char* function, coop_client_t* client, const coop_spec_t* spec,
                       unsigned formats, coop_artifact_t** out) {
  if (!ClearOut(out)) return Null(function, "out");
  if (client == nullptr) return Null(function, "client");
  if (spec == nullptr) return Null(function, "spec");
  coop::v1::SpecializeRequest request;
  if (coop_status s = AddFormats(function, formats, &request); s != COOP_OK) return s;
  *request.mutable_spec() = spec->proto;
  coop::v1::SpecializeResponse response;
  if (auto e = coop::ClientAccess::Specialize(client->client, std::move(request), &response)) {
    return FromError(*e);
  }
  *out = MakeArtifact(std::move(*response.mutable_artifact()));
  return Ok();
}

coop_status SpecializeBundle(const char* function, coop_client_t* client,
                             const coop_spec_t* const* specs, size_t count, unsigned formats,
                             coop_artifact_t** out) {
  if (!ClearOut(out)) return Null(function, "out");
  if (client == nullptr) return Null(function, "client");
  if (specs == nullptr && count != 0) return Null(function, "specs");
  coop::v1::SpecializeBundleRequest request;
  if (coop_status s = AddFormats(function, formats, &request); s != COOP_OK) return s;
  for (size_t i = 0; i < count; ++i) {
    if (specs[i] == nullptr) {
      return Null(function, ("specs[" + std::to_string(i) + "]").c_str());
    }
    *request.add_specs() = specs[i]->proto;
  }
  coop::v1::SpecializeResponse response;
  if (auto e =
          coop::ClientAccess::SpecializeBundle(client->client, std::move(request), &response)) {
    return FromError(*e);
  }
  *out = MakeArtifact(std::move(*response.mutable_artifact()));
  return Ok();
}

}  // namespace

coop_status coop_client_specialize(coop_client_t* client, const coop_spec_t* spec,
                                   coop_artifact_t** out) {
  return Guard("coop_client_specialize", [&] {
    return Specialize("coop_client_specialize", client, spec, COOP_FORMAT_LTOIR, out);
  });
}

coop_status coop_client_specialize_formats(coop_client_t* client, const coop_spec_t* spec,
                                           unsigned formats, coop_artifact_t** out) {
  return Guard("coop_client_specialize_formats", [&] {
    return Specialize("coop_client_specialize_formats", client, spec, formats, out);
  });
}

coop_status coop_client_specialize_bundle(coop_client_t* client, const coop_spec_t* const* specs,
                                          size_t count, coop_artifact_t** out) {
  return Guard("coop_client_specialize_bundle", [&] {
    return SpecializeBundle("coop_client_specialize_bundle", client, specs, count,
                            COOP_FORMAT_LTOIR, out);
  });
}

coop_status coop_client_specialize_bundle_formats(coop_client_t* client,
                                                  const coop_spec_t* const* specs, size_t count,
                                                  unsigned formats, coop_artifact_t** out) {
  return Guard("coop_client_specialize_bundle_formats", [&] {
    return SpecializeBundle("coop_client_specialize_bundle_formats", client, specs, count, formats,
                            out);
  });
}

void coop_artifact_destroy(coop_artifact_t* artifact) {
  delete artifact;
}

const void* coop_artifact_ltoir(const coop_artifact_t* artifact, size_t* size) {
  if (size != nullptr) *size = 0;
  if (artifact == nullptr || artifact->proto.ltoir().empty()) return nullptr;
  return Bytes(artifact->proto.ltoir(), size);
}

const void* coop_artifact_bitcode(const coop_artifact_t* artifact, size_t* size) {
  if (size != nullptr) *size = 0;
  if (artifact == nullptr || artifact->proto.bitcode().data().empty()) return nullptr;
  return Bytes(artifact->proto.bitcode().data(), size);
}

const char* coop_artifact_bitcode_key(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->proto.bitcode().key().c_str();
}

const char* coop_artifact_key(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->proto.key().c_str();
}

const char* coop_artifact_arch(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->proto.arch().c_str();
}

const char* coop_artifact_origin(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->origin.c_str();
}

double coop_artifact_compile_ms(const coop_artifact_t* artifact) {
  return artifact == nullptr ? 0 : artifact->proto.compile_ms();
}

const char* coop_artifact_compile_log(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->proto.compile_log().c_str();
}

const char* coop_artifact_source(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->proto.source().c_str();
}

const char* coop_artifact_type_definitions(const coop_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->proto.type_definitions().c_str();
}

void coop_artifact_temp_storage(const coop_artifact_t* artifact, uint64_t* bytes, uint64_t* align) {
  if (bytes != nullptr) *bytes = artifact == nullptr ? 0 : artifact->proto.temp_storage().bytes();
  if (align != nullptr) *align = artifact == nullptr ? 0 : artifact->proto.temp_storage().align();
}

size_t coop_artifact_entry_count(const coop_artifact_t* artifact) {
  return artifact == nullptr ? 0 : static_cast<size_t>(artifact->proto.entries_size());
}

const char* coop_artifact_entry_symbol(const coop_artifact_t* artifact, size_t entry) {
  return EntryField(artifact, entry, &coop::v1::Entry::symbol);
}

const char* coop_artifact_entry_declaration(const coop_artifact_t* artifact, size_t entry) {
  return EntryField(artifact, entry, &coop::v1::Entry::declaration);
}

const char* coop_artifact_entry_description(const coop_artifact_t* artifact, size_t entry) {
  return EntryField(artifact, entry, &coop::v1::Entry::description);
}

size_t coop_artifact_part_count(const coop_artifact_t* artifact) {
  return artifact == nullptr ? 0 : static_cast<size_t>(artifact->proto.parts_size());
}

void coop_artifact_part_entries(const coop_artifact_t* artifact, size_t part, size_t* first,
                                size_t* count) {
  const bool ok = artifact != nullptr && InRange(artifact->proto.parts(), part);
  if (first != nullptr) *first = ok ? artifact->part_first_entry[part] : 0;
  if (count != nullptr) {
    *count =
        ok ? static_cast<size_t>(artifact->proto.parts(static_cast<int>(part)).entries_size()) : 0;
  }
}

void coop_artifact_part_temp_storage(const coop_artifact_t* artifact, size_t part, uint64_t* bytes,
                                     uint64_t* align) {
  const bool ok = artifact != nullptr && InRange(artifact->proto.parts(), part);
  const auto* t = ok ? &artifact->proto.parts(static_cast<int>(part)).temp_storage() : nullptr;
  if (bytes != nullptr) *bytes = t == nullptr ? 0 : t->bytes();
  if (align != nullptr) *align = t == nullptr ? 0 : t->align();
}

const char* coop_artifact_part_spec_json(const coop_artifact_t* artifact, size_t part) {
  if (artifact == nullptr || part >= artifact->part_spec_json.size()) return nullptr;
  return artifact->part_spec_json[part].c_str();
}

size_t coop_artifact_link_input_count(const coop_artifact_t* artifact) {
  return artifact == nullptr ? 0 : static_cast<size_t>(artifact->proto.link_inputs_size());
}

const char* coop_artifact_link_input_symbol(const coop_artifact_t* artifact, size_t input) {
  if (artifact == nullptr || !InRange(artifact->proto.link_inputs(), input)) return nullptr;
  return artifact->proto.link_inputs(static_cast<int>(input)).symbol().c_str();
}

const void* coop_artifact_link_input_ltoir(const coop_artifact_t* artifact, size_t input,
                                           size_t* size) {
  if (size != nullptr) *size = 0;
  if (artifact == nullptr || !InRange(artifact->proto.link_inputs(), input)) return nullptr;
  return Bytes(artifact->proto.link_inputs(static_cast<int>(input)).ltoir(), size);
}

const void* coop_artifact_link_input_bitcode(const coop_artifact_t* artifact, size_t input,
                                             size_t* size) {
  if (size != nullptr) *size = 0;
  if (artifact == nullptr || !InRange(artifact->proto.link_inputs(), input)) return nullptr;
  const std::string& bitcode = artifact->proto.link_inputs(static_cast<int>(input)).bitcode();
  return bitcode.empty() ? nullptr : Bytes(bitcode, size);
}

// ---- Link -----------------------------------------------------------------------------------

coop_link_t* coop_link_create(const char* arch) {
  try {
    auto* link = new coop_link_t();
    link->proto.set_arch(arch == nullptr ? "" : arch);
    return link;
  } catch (...) {
    return nullptr;
  }
}

void coop_link_destroy(coop_link_t* link) {
  delete link;
}

coop_status coop_link_add_ltoir(coop_link_t* link, const char* name, const void* data,
                                size_t size) {
  return AddModule("coop_link_add_ltoir", link, coop::v1::LinkModule::KIND_LTOIR, name, data, size);
}

coop_status coop_link_add_ptx(coop_link_t* link, const char* name, const char* ptx, size_t size) {
  return AddModule("coop_link_add_ptx", link, coop::v1::LinkModule::KIND_PTX, name, ptx, size);
}

coop_status coop_link_add_artifact_key(coop_link_t* link, const char* key) {
  return AddString("coop_link_add_artifact_key", link, key,
                   &coop::v1::LinkRequest::add_artifact_keys);
}

coop_status coop_link_add_option(coop_link_t* link, const char* option) {
  return AddString("coop_link_add_option", link, option, &coop::v1::LinkRequest::add_options);
}

void coop_link_set_keep_unused_variables(coop_link_t* link, int keep) {
  if (link != nullptr) link->proto.set_keep_unused_variables(keep != 0);
}

coop_status coop_client_link(coop_client_t* client, const coop_link_t* link, coop_cubin_t** out) {
  return Guard("coop_client_link", [&] {
    if (!ClearOut(out)) return Null("coop_client_link", "out");
    if (client == nullptr) return Null("coop_client_link", "client");
    if (link == nullptr) return Null("coop_client_link", "link");
    auto cubin = std::make_unique<coop_cubin_t>();
    if (auto e = coop::ClientAccess::Link(client->client, link->proto, &cubin->proto)) {
      return FromError(*e);
    }
    cubin->origin = OriginName(cubin->proto.origin());
    *out = cubin.release();
    return Ok();
  });
}

void coop_cubin_destroy(coop_cubin_t* cubin) {
  delete cubin;
}

const void* coop_cubin_data(const coop_cubin_t* cubin, size_t* size) {
  if (cubin == nullptr) return nullptr;
  return Bytes(cubin->proto.cubin(), size);
}

const char* coop_cubin_key(const coop_cubin_t* cubin) {
  return cubin == nullptr ? nullptr : cubin->proto.key().c_str();
}

const char* coop_cubin_origin(const coop_cubin_t* cubin) {
  return cubin == nullptr ? nullptr : cubin->origin.c_str();
}

double coop_cubin_link_ms(const coop_cubin_t* cubin) {
  return cubin == nullptr ? 0 : cubin->proto.link_ms();
}

// ---- Catalog --------------------------------------------------------------------------------

coop_status coop_client_catalog(coop_client_t* client, coop_catalog_t** out) {
  return Guard("coop_client_catalog", [&] {
    if (!ClearOut(out)) return Null("coop_client_catalog", "out");
    if (client == nullptr) return Null("coop_client_catalog", "client");
    auto catalog = std::make_unique<coop_catalog_t>();
    if (auto e = coop::ClientAccess::Catalog(client->client, &catalog->proto)) {
      return FromError(*e);
    }
    catalog->json = ToJson(catalog->proto, true);
    *out = catalog.release();
    return Ok();
  });
}

void coop_catalog_destroy(coop_catalog_t* catalog) {
  delete catalog;
}

size_t coop_catalog_family_count(const coop_catalog_t* catalog) {
  return catalog == nullptr ? 0 : static_cast<size_t>(catalog->proto.families_size());
}

const char* coop_catalog_family_name(const coop_catalog_t* catalog, size_t family) {
  if (catalog == nullptr || !InRange(catalog->proto.families(), family)) return nullptr;
  return catalog->proto.families(static_cast<int>(family)).name().c_str();
}

const char* coop_catalog_family_description(const coop_catalog_t* catalog, size_t family) {
  if (catalog == nullptr || !InRange(catalog->proto.families(), family)) return nullptr;
  return catalog->proto.families(static_cast<int>(family)).description().c_str();
}

int coop_catalog_family_available(const coop_catalog_t* catalog, size_t family) {
  if (catalog == nullptr || !InRange(catalog->proto.families(), family)) return 0;
  return catalog->proto.families(static_cast<int>(family)).available() ? 1 : 0;
}

size_t coop_catalog_method_count(const coop_catalog_t* catalog, size_t family) {
  if (catalog == nullptr || !InRange(catalog->proto.families(), family)) return 0;
  return static_cast<size_t>(catalog->proto.families(static_cast<int>(family)).methods_size());
}

const char* coop_catalog_method_name(const coop_catalog_t* catalog, size_t family, size_t method) {
  const auto* m = Method(catalog, family, method);
  return m == nullptr ? nullptr : m->name().c_str();
}

const char* coop_catalog_method_description(const coop_catalog_t* catalog, size_t family,
                                            size_t method) {
  const auto* m = Method(catalog, family, method);
  return m == nullptr ? nullptr : m->description().c_str();
}

const char* coop_catalog_method_op_kind(const coop_catalog_t* catalog, size_t family,
                                        size_t method) {
  const auto* m = Method(catalog, family, method);
  return m == nullptr ? nullptr : m->op_kind().c_str();
}

const char* coop_catalog_json(const coop_catalog_t* catalog) {
  return catalog == nullptr ? nullptr : catalog->json.c_str();
}

// ---- Stats ----------------------------------------------------------------------------------

coop_status coop_client_stats(coop_client_t* client, coop_stats_t** out) {
  return Guard("coop_client_stats", [&] {
    if (!ClearOut(out)) return Null("coop_client_stats", "out");
    if (client == nullptr) return Null("coop_client_stats", "client");
    auto stats = std::make_unique<coop_stats_t>();
    if (auto e = coop::ClientAccess::GetStats(client->client, &stats->proto)) {
      return FromError(*e);
    }
    stats->json = ToJson(stats->proto, true);
    *out = stats.release();
    return Ok();
  });
}

void coop_stats_destroy(coop_stats_t* stats) {
  delete stats;
}

coop_status coop_stats_uint(const coop_stats_t* stats, const char* name, uint64_t* value) {
  return Guard("coop_stats_uint", [&] {
    using F = pb::FieldDescriptor;
    if (value == nullptr) return Null("coop_stats_uint", "value");
    const F* f = nullptr;
    if (coop_status s = StatsField(stats, name, false, &f); s != COOP_OK) return s;
    const pb::Reflection* r = stats->proto.GetReflection();
    switch (f->cpp_type()) {
      case F::CPPTYPE_UINT32:
        *value = r->GetUInt32(stats->proto, f);
        break;
      case F::CPPTYPE_INT32:
        *value = static_cast<uint64_t>(r->GetInt32(stats->proto, f));
        break;
      case F::CPPTYPE_INT64:
        *value = static_cast<uint64_t>(r->GetInt64(stats->proto, f));
        break;
      case F::CPPTYPE_BOOL:
        *value = r->GetBool(stats->proto, f) ? 1 : 0;
        break;
      default:
        *value = r->GetUInt64(stats->proto, f);
        break;
    }
    return Ok();
  });
}

coop_status coop_stats_double(const coop_stats_t* stats, const char* name, double* value) {
  return Guard("coop_stats_double", [&] {
    using F = pb::FieldDescriptor;
    if (value == nullptr) return Null("coop_stats_double", "value");
    const F* f = nullptr;
    if (coop_status s = StatsField(stats, name, true, &f); s != COOP_OK) return s;
    const pb::Reflection* r = stats->proto.GetReflection();
    *value = f->cpp_type() == F::CPPTYPE_FLOAT ? r->GetFloat(stats->proto, f)
                                               : r->GetDouble(stats->proto, f);
    return Ok();
  });
}

const char* coop_stats_json(const coop_stats_t* stats) {
  return stats == nullptr ? nullptr : stats->json.c_str();
}

}  // extern "C"
