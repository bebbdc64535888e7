// coop_c_specialize.cc: the C ABI's specializations (coop/coop_c.h, "Specialize"):
// coop_client_specialize and its bundle and formats forms, through ClientAccess
// (client_internal.h), and the accessors of the coop_artifact_t they hand out (a
// coop.v1.Artifact).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "client_internal.h"
#include "coop/client.h"
#include "coop/coop_c.h"
#include "coop/v1/coop.pb.h"
#include "coop_c_internal.h"

using coop::c_abi::Bytes;
using coop::c_abi::ClearOut;
using coop::c_abi::Fail;
using coop::c_abi::FromError;
using coop::c_abi::Guard;
using coop::c_abi::InRange;
using coop::c_abi::Null;
using coop::c_abi::Ok;
using coop::c_abi::OriginName;
using coop::c_abi::ToJson;

namespace {

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

const char* EntryField(const coop_artifact_t* a, size_t i,
                       const std::string& (coop::v1::Entry::*get)() const) {
  if (a == nullptr || !InRange(a->proto.entries(), i)) return nullptr;
  return (a->proto.entries(static_cast<int>(i)).*get)().c_str();
}

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

extern "C" {

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

}  // extern "C"
