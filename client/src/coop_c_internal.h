// coop_c_internal.h: what the files of the C ABI (coop_c.cc and coop_c_*.cc, one for each
// section of coop/coop_c.h) share: the handles behind coop_c.h's opaque types, the last error
// and Guard(), and a few helpers. Internal to libcoop_c.so, which exports none of it.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstddef>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "coop/client.h"
#include "coop/coop_c.h"
#include "coop/v1/coop.pb.h"

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

namespace coop::c_abi {

// The last error of this thread (coop_last_error, coop_last_error_details): Fail() sets it,
// Ok() clears it.
coop_status Fail(coop_status status, std::string message);
coop_status Ok();
// Fail() for a coop::Error: its code (COOP_NOT_REACHABLE when no coopd answered) and message.
coop_status FromError(const coop::Error& e);
// Fail() for a caught exception: the message too may fail to allocate.
coop_status FailCaught(coop_status status, const char* function, const char* what) noexcept;

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

coop_status Null(const char* function, const char* argument);

// Starts a call that hands out a handle through `out`: clears *out.
template <class T>
bool ClearOut(T** out) {
  if (out == nullptr) return false;
  *out = nullptr;
  return true;
}

std::string Join(const std::vector<std::string>& items);
std::string ToJson(const google::protobuf::Message& message, bool print_defaults);
// "CALLING_CONVENTION_NUMBA" of enum CallingConvention -> "numba"; ORIGIN_DISK -> "disk".
std::string ShortName(const google::protobuf::EnumValueDescriptor* value);
std::string OriginName(coop::v1::Origin origin);

template <class Repeated>
bool InRange(const Repeated& items, size_t i) {
  return i < static_cast<size_t>(items.size());
}

// `bytes` and its size (through `size`, when not NULL).
const void* Bytes(const std::string& bytes, size_t* size);

}  // namespace coop::c_abi
