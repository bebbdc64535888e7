// probe_specs.h: one small spec per family and method, built from the families' descriptions
// alone (no family is named here), for compiling every family against a CCCL to see which of
// them it has (the daemon's probe of each configured CCCL, service/cccl_probe.cc).
#pragma once

#include <string>
#include <vector>

#include "coop/v1/coop.pb.h"
#include "server/catalog/spec.h"

namespace coopd {

struct ProbeSpecs {
  // Canonical specs: for each family, one per method, in catalogue order.
  std::vector<coop::v1::PrimitiveSpec> specs;
  // The families none of whose specs `target` accepts, each "family: why" (a header the CCCL
  // lacks, a method that needs what a generic spec cannot give).
  std::vector<std::string> refused;
};

// Builds each family's probe specs for `arch` (int32 or uint32 items, 128 threads or a warp, one
// item per thread where the method allows it, the first builtin operator of the method's kind)
// and canonicalizes them against `target`.
ProbeSpecs MakeProbeSpecs(const TargetInfo& target, const std::string& arch);

}  // namespace coopd
