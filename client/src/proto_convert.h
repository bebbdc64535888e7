// proto_convert.h: the client's conversions between the structs of coop/client.h and the wire
// messages of coop.proto (coop.v1.*). Internal to the client library.
#pragma once

#include <optional>
#include <string>

#include "coop/client.h"
#include "coop/v1/coop.pb.h"

namespace coop::internal {

// The proto carries one options message per spec (a oneof): refuse a spec that sets two rather
// than send only the last.
// `where` names the spec in the message.
std::optional<Error> CheckFamilyOptions(const Spec& s, const std::string& where);

v1::PrimitiveSpec ToProto(const Spec& s);
v1::CacheFilter ToProto(const CacheFilter& f);

Spec FromProto(const v1::PrimitiveSpec& p);
AlgorithmChoice FromProto(const v1::AlgorithmChoice& c);
Toolchain FromProto(const v1::Toolchain& t);
CcclInfo FromProto(const v1::CcclInfo& c);
Catalog FromProto(const v1::CatalogResponse& resp);
Origin FromProto(v1::Origin o);
Stats FromProto(const v1::Stats& resp);
PlanRegion FromProto(const v1::PlanRegion& r);

}  // namespace coop::internal
