// coop_c_catalog.cc: the C ABI's catalog (coop/coop_c.h, "Catalog"): what the daemon accepts,
// read through ClientAccess (client_internal.h) as a coop.v1.CatalogResponse, with accessors
// for its families and methods and the whole of it as JSON.
#include <cstddef>
#include <memory>

#include "client_internal.h"
#include "coop/coop_c.h"
#include "coop/v1/coop.pb.h"
#include "coop_c_internal.h"

using coop::c_abi::ClearOut;
using coop::c_abi::FromError;
using coop::c_abi::Guard;
using coop::c_abi::InRange;
using coop::c_abi::Null;
using coop::c_abi::Ok;
using coop::c_abi::ToJson;

namespace {

const coop::v1::CatalogMethod* Method(const coop_catalog_t* c, size_t family, size_t method) {
  if (c == nullptr || !InRange(c->proto.families(), family)) return nullptr;
  const auto& f = c->proto.families(static_cast<int>(family));
  return InRange(f.methods(), method) ? &f.methods(static_cast<int>(method)) : nullptr;
}

}  // namespace

extern "C" {

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

}  // extern "C"
