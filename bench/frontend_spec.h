// frontend_spec.h: the one specialization the end-to-end frontend benchmark asks for
// (bench/frontend_e2e.cc and coopd_bench section G must agree on it).
#pragma once

#include "coop/client.h"

namespace coopd_bench {

inline constexpr char kFrontendArch[] = "sm_90";

// BlockReduce<float, 256> sum, the primitive of the brief's linked-kernel measurements.
inline coop::Spec FrontendSpec() {
  coop::Spec s;
  s.family = "block_reduce";
  s.method = "sum";
  s.dtype = "float32";
  s.block = {256, 1, 1};
  s.arch = kFrontendArch;
  return s;
}

}  // namespace coopd_bench
