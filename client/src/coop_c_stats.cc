// coop_c_stats.cc: the C ABI's stats (coop/coop_c.h, "Stats"): the daemon's counters, read
// through ClientAccess (client_internal.h) as a coop.v1.Stats, each scalar counter by its field
// name with protobuf reflection, and the whole of them as JSON.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client_internal.h"
#include "coop/coop_c.h"
#include "coop/v1/coop.pb.h"
#include "coop_c_internal.h"

namespace pb = google::protobuf;

using coop::c_abi::ClearOut;
using coop::c_abi::Fail;
using coop::c_abi::FromError;
using coop::c_abi::Guard;
using coop::c_abi::Join;
using coop::c_abi::Null;
using coop::c_abi::Ok;
using coop::c_abi::ToJson;

namespace {

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

}  // namespace

extern "C" {

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
