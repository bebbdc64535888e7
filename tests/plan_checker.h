// plan_checker.h: checks a shared-memory plan against its request using nothing but the
// contract (server/plan/planner.h, coop.proto's Plan messages), computed from scratch, the slow
// way: byte by byte at every program point (so for layouts of test sizes). Shared by the
// planner's unit tests and the Plan RPC's integration tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "server/plan/planner.h"

namespace coopd {

// Returns "" when `out` is a valid layout of `in`, else one line per violation.
inline std::string PlanViolations(const PlanInput& in, const PlanLayout& out) {
  struct R {
    bool reservation;
    const PlanRegionInput* input;
    const PlacedRegion* placed;
  };
  std::vector<R> all;
  if (out.reservations.size() != in.reservations.size() || out.uses.size() != in.uses.size()) {
    return "the layout does not have one region per input region";
  }
  for (size_t i = 0; i < in.reservations.size(); ++i) {
    all.push_back({true, &in.reservations[i], &out.reservations[i]});
  }
  for (size_t i = 0; i < in.uses.size(); ++i) all.push_back({false, &in.uses[i], &out.uses[i]});

  std::string bad;
  auto fail = [&](const std::string& what) { bad += what + "\n"; };
  uint64_t max_align = 1, max_end = in.base_offset, reserved = in.base_offset;
  uint32_t last_point = 0;
  for (const R& r : all) {
    const std::string name = r.input->name;
    const uint64_t count = r.input->count == 0 ? 1 : r.input->count;
    uint64_t stride = r.input->bytes;
    while (stride % r.input->align != 0) ++stride;  // rounded up the slow way
    if (r.placed->count != count) fail(name + ": count");
    if (r.placed->stride != stride) fail(name + ": stride");
    if (r.placed->bytes != (count - 1) * stride + r.input->bytes) fail(name + ": bytes");
    if (r.placed->align != r.input->align) fail(name + ": align");
    if (r.placed->offset % r.input->align != 0) fail(name + ": offset not aligned");
    if (r.placed->offset < in.base_offset) fail(name + ": below base_offset");
    if (r.placed->padding >= r.input->align) fail(name + ": padding >= align");
    max_align = std::max(max_align, r.input->align);
    max_end = std::max(max_end, r.placed->offset + r.placed->bytes);
    if (r.reservation) reserved += r.placed->bytes;
    if (!r.reservation) last_point = std::max(last_point, r.input->last);
  }

  // Byte by byte, at every program point: no byte belongs to two regions live at that point
  // (reservations live at every point). Also the largest live set, a lower bound of any layout.
  uint64_t live_bound = in.base_offset;
  for (uint32_t t = 0; t <= last_point; ++t) {
    std::vector<int> owner(max_end, -1);
    uint64_t live = in.base_offset;
    for (size_t k = 0; k < all.size(); ++k) {
      const R& r = all[k];
      if (!r.reservation && (t < r.input->first || t > r.input->last)) continue;
      live += r.placed->bytes;
      for (uint64_t b = r.placed->offset; b < r.placed->offset + r.placed->bytes; ++b) {
        if (owner[b] >= 0) {
          fail(all[owner[b]].input->name + " and " + r.input->name + " share byte " +
               std::to_string(b) + " at point " + std::to_string(t));
          break;
        }
        owner[b] = static_cast<int>(k);
      }
    }
    live_bound = std::max(live_bound, live);
  }

  // Padding: the gap down to the highest end of a region that shares a live point and bytes
  // (both non-empty) and lies entirely below, or down to base_offset.
  for (const R& r : all) {
    uint64_t below = in.base_offset;
    for (const R& o : all) {
      if (&o == &r || r.placed->bytes == 0 || o.placed->bytes == 0) continue;
      const bool overlap = r.reservation || o.reservation ||
                           (r.input->first <= o.input->last && o.input->first <= r.input->last);
      const uint64_t end = o.placed->offset + o.placed->bytes;
      if (overlap && end <= r.placed->offset) below = std::max(below, end);
    }
    if (r.placed->padding != r.placed->offset - below) fail(r.input->name + ": padding");
  }

  // No reuse: every region end to end, largest alignment first, then largest first.
  std::vector<const R*> order;
  for (const R& r : all) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const R* a, const R* b) {
    if (a->placed->align != b->placed->align) return a->placed->align > b->placed->align;
    return a->placed->bytes > b->placed->bytes;
  });
  uint64_t end = in.base_offset;
  for (const R* r : order) {
    while (end % r->placed->align != 0) ++end;
    end += r->placed->bytes;
  }

  if (out.total != max_end) fail("total is not the highest end");
  if (out.total < reserved) fail("total below the reservations");
  if (out.reserved_bytes != reserved) fail("reserved_bytes");
  if (out.total < live_bound) fail("total below the bytes live at one point");
  if (out.no_reuse_bytes != end) fail("no_reuse_bytes");
  if (out.total > end) fail("total above the no-reuse layout");
  if (out.base_align != max_align) fail("base_align");
  return bad;
}

}  // namespace coopd
