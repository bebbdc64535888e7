// planner.h: the shared-memory layout behind the Plan RPC, for kernels that use several
// primitives. Pure computation: no gRPC, no protobuf, no cache; the service resolves specs to
// sizes and hands this module plain numbers.
//
// A region is a reservation (the frontend's own, live for the whole kernel) or a use (one
// primitive's temp storage, live over [first, last] of the caller's program points), made of
// `count` elements of `bytes` each, `stride` = bytes rounded up to `align` apart. Reservations
// conflict with every region; uses conflict when their lifetimes share a point; a region of 0
// bytes conflicts with nothing. Conflicting regions never share a byte.
//
// Algorithm: first-fit (each region at the lowest offset >= base_offset, a multiple of its
// alignment, where it overlaps no conflicting region placed before it), run in two orders,
// (align, bytes) and (bytes, align), both largest first, ties by request order with
// reservations before uses; the layout with the smaller total wins (the first on a tie). It is
// deterministic, and its total never exceeds `no_reuse_bytes`, every region laid end to end by
// alignment then size (the first order's first-fit can place each region no higher than that
// layout does).
//
// Thread safety: the functions are pure and may run on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coopd {

inline constexpr size_t kMaxPlanUses = 1024;
inline constexpr size_t kMaxPlanReservations = 256;
inline constexpr size_t kMaxPlanNameLength = 128;
inline constexpr uint32_t kMaxPlanCount = 1024;
inline constexpr uint64_t kMaxPlanAlign = 65536;
// A launch's shared-memory size is 32-bit (cuLaunchKernel's sharedMemBytes).
inline constexpr uint64_t kMaxPlanBytes = 0xffffffffu;

struct PlanRegionInput {
  std::string name;
  uint64_t bytes = 0;  // one element
  uint64_t align = 0;  // a power of two, 1..kMaxPlanAlign
  uint32_t count = 0;  // 0 means 1
  uint32_t first = 0;  // uses: the lifetime [first, last]; ignored for reservations
  uint32_t last = 0;
  // False for a use whose size is not known yet (its spec is still being resolved):
  // CheckPlanInput skips its bytes and align; LayOutPlan refuses it.
  bool sized = true;
};

struct PlanInput {
  std::vector<PlanRegionInput> reservations;
  std::vector<PlanRegionInput> uses;
  uint64_t base_offset = 0;
};

struct PlacedRegion {
  uint64_t offset = 0;
  uint64_t bytes = 0;  // the whole region: (count - 1) * stride + element bytes
  uint64_t align = 0;
  // offset minus the highest end of the conflicting regions entirely below it, or base_offset
  // when none ends higher; always < align.
  uint64_t padding = 0;
  uint64_t stride = 0;
  uint32_t count = 0;  // resolved, >= 1
};

struct PlanLayout {
  std::vector<PlacedRegion> reservations;  // input order
  std::vector<PlacedRegion> uses;          // input order
  uint64_t total = 0;                      // max(base_offset, the highest end of any region)
  uint64_t base_align = 1;                 // the largest alignment of any region
  uint64_t reserved_bytes = 0;             // base_offset + every reservation's bytes; total >= this
  uint64_t no_reuse_bytes = 0;             // regions end to end from base_offset; total <= this
};

// INVALID_ARGUMENT naming the field ("plan: uses[2] \"scan\": last must be >= first ...") for
// bad counts, names (empty, too long, not printable ASCII, duplicated across uses and
// reservations), lifetimes (last < first), counts, base_offset, and the bytes and align of
// every sized region (a use's are named as the RPC's explicit size, `temp_storage.bytes`).
absl::Status CheckPlanInput(const PlanInput& input);

// Checks the input (every use must be sized) and lays it out. A layout needing more than
// kMaxPlanBytes is INVALID_ARGUMENT.
absl::StatusOr<PlanLayout> LayOutPlan(const PlanInput& input);

}  // namespace coopd
