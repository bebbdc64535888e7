// coop_c.cc: the C ABI (coop/coop_c.h) over the C++ client: this file holds its version, its
// status codes and last error, and the helpers the others (coop_c_*.cc, one for each section of
// coop_c.h; coop_c_internal.h) share.
//
// Specs, link requests and replies are the wire messages themselves (coop.v1.*), reached through
// ClientAccess (client_internal.h): a spec is set by field path with protobuf reflection, so
// the C ABI follows coop.proto and not the shape of the C++ structs. No C++ exception leaves
// these files: every coop_status function runs inside Guard().
#include "coop/coop_c.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"
#include "coop_c_internal.h"

namespace pb = google::protobuf;

namespace {

thread_local std::string last_error;
thread_local std::string last_error_details;  // coop::Error::details of the last failure

}  // namespace

namespace coop::c_abi {

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

coop_status FailCaught(coop_status status, const char* function, const char* what) noexcept {
  try {
    return Fail(status, std::string(function) + ": " + what);
  } catch (...) {
    last_error.clear();
    return status;
  }
}

coop_status Null(const char* function, const char* argument) {
  return Fail(COOP_INVALID_ARGUMENT, std::string(function) + ": " + argument + " is NULL");
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

const void* Bytes(const std::string& bytes, size_t* size) {
  if (size != nullptr) *size = bytes.size();
  return bytes.data();
}

}  // namespace coop::c_abi

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

}  // extern "C"
