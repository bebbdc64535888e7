// coop_c_link.cc: the C ABI's links (coop/coop_c.h, "Link"): a coop_link_t is a
// coop.v1.LinkRequest (the kernel's modules, artifact keys and options), coop_client_link sends
// it through ClientAccess (client_internal.h), and the coop_cubin_t it hands out is the reply.
#include <cstddef>
#include <memory>
#include <string>

#include "client_internal.h"
#include "coop/coop_c.h"
#include "coop/v1/coop.pb.h"
#include "coop_c_internal.h"

using coop::c_abi::Bytes;
using coop::c_abi::ClearOut;
using coop::c_abi::FromError;
using coop::c_abi::Guard;
using coop::c_abi::Null;
using coop::c_abi::Ok;
using coop::c_abi::OriginName;

namespace {

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

}  // extern "C"
