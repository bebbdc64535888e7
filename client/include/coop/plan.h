// coop/plan.h: shared-memory planning (Client::Plan): the primitives and reservations of one
// kernel in, their offsets in its dynamic shared memory out. Part of the public API;
// coop/client.h includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coop/spec.h"

namespace coop {

// Shared-memory planning (Client::Plan): one kernel's primitives and the frontend's own regions
// laid out in its dynamic shared memory. proto/coop/v1/coop.proto (PlanRequest) and
// docs/plan.md have the whole contract.
struct PlanUse {
  std::string name;  // the caller's label, unique among uses and reservations
  // A primitive: coopd resolves its temp storage as Specialize does. Without one, `bytes` and
  // `align` (a power of two) give it.
  std::optional<Spec> spec;
  uint64_t bytes = 0;
  uint64_t align = 0;
  // Lifetime, inclusive: the caller's program points from the first call that writes the temp
  // storage to the last that reads it. Uses whose lifetimes do not overlap may share bytes.
  uint32_t first = 0;
  uint32_t last = 0;
  uint32_t count = 0;  // instances (e.g. one per logical warp); 0 means 1
};

// A region the frontend lays out itself, live for the whole kernel.
struct PlanReservation {
  std::string name;
  uint64_t bytes = 0;
  uint64_t align = 0;  // a power of two
  uint32_t count = 0;  // 0 means 1
};

struct PlanRequest {
  std::vector<PlanUse> uses;
  std::vector<PlanReservation> reservations;
  uint64_t base_offset = 0;  // bytes at the start the frontend keeps; regions go above
};

struct PlanRegion {
  std::string name;
  uint64_t offset = 0;  // from the start of the dynamic shared memory; a multiple of align
  uint64_t bytes = 0;   // the whole region (every instance)
  uint64_t align = 0;
  uint64_t padding = 0;  // alignment padding below it
  uint32_t count = 1;
  uint64_t stride = 0;  // from one instance to the next
  uint32_t first = 0;   // uses: the lifetime
  uint32_t last = 0;
  std::string artifact_key;  // uses given by spec: the artifact (Artifact::key)
};

struct PlanResult {
  std::vector<PlanRegion> reservations;  // request order
  std::vector<PlanRegion> uses;          // request order
  uint64_t dynamic_shared_bytes = 0;     // launch with this much dynamic shared memory
  uint64_t base_align = 1;      // extern __shared__ __align__(base_align) unsigned char smem[];
  uint64_t reserved_bytes = 0;  // base_offset + the reservations; the total is never less
  uint64_t no_reuse_bytes = 0;  // every region end to end; the total is never more
  // The use or reservation called `name`, or nullptr.
  const PlanRegion* Find(const std::string& name) const;
};

}  // namespace coop
