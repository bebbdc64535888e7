#include "server/plan/planner.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "server/util/strings.h"

namespace coopd {
namespace {

bool IsPowerOfTwo(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

uint64_t AlignUp(uint64_t v, uint64_t align) {
  return (v + align - 1) & ~(align - 1);
}

// "uses[2] \"scan\"" (or without the name when the name itself is the problem).
std::string Where(bool reservation, size_t i) {
  return StrCat(reservation ? "reservations[" : "uses[", i, "]");
}

std::string Named(bool reservation, size_t i, const std::string& name) {
  return StrCat(Where(reservation, i), " \"", name, "\"");
}

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(StrCat("plan: ", message));
}

bool PrintableAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

absl::Status CheckRegion(const PlanRegionInput& r, bool reservation, size_t i) {
  const std::string who = Named(reservation, i, r.name);
  if (r.count > kMaxPlanCount) {
    return Invalid(
        StrCat(who, ": count must be 1..", kMaxPlanCount, " (0 means 1), got ", r.count));
  }
  if (!reservation && r.last < r.first) {
    return Invalid(StrCat(who, ": last must be >= first (the lifetime [first, last] is inclusive)",
                          ", got first ", r.first, ", last ", r.last));
  }
  if (!r.sized) return absl::OkStatus();
  const std::string field = reservation ? "" : "temp_storage.";
  if (!IsPowerOfTwo(r.align) || r.align > kMaxPlanAlign) {
    return Invalid(StrCat(who, ": ", field, "align must be a power of two, 1..", kMaxPlanAlign,
                          ", got ", r.align));
  }
  if (r.bytes > kMaxPlanBytes) {
    return Invalid(StrCat(who, ": ", field, "bytes must be 0..", kMaxPlanBytes,
                          " (a launch's 32-bit shared-memory size), got ", r.bytes));
  }
  const uint64_t count = std::max<uint32_t>(r.count, 1);
  const uint64_t whole = (count - 1) * AlignUp(r.bytes, r.align) + r.bytes;
  if (whole > kMaxPlanBytes) {
    return Invalid(StrCat(who, ": ", count, " elements of ", r.bytes, " bytes (aligned to ",
                          r.align, ") need ", whole, " bytes, more than a launch's 32-bit ",
                          "shared-memory size allows (", kMaxPlanBytes, ")"));
  }
  return absl::OkStatus();
}

// One region as the layout sees it.
struct Item {
  bool reservation;
  size_t index;  // in its input list
  uint64_t bytes, align, stride;
  uint32_t count, first, last;
};

bool Conflict(const Item& a, const Item& b) {
  if (a.bytes == 0 || b.bytes == 0) return false;
  if (a.reservation || b.reservation) return true;
  return a.first <= b.last && b.first <= a.last;
}

// First-fit in `order`: each region at the lowest aligned offset >= base where it overlaps no
// conflicting region placed before it. Returns the offsets, by item.
std::vector<uint64_t> FirstFit(const std::vector<Item>& items, const std::vector<size_t>& order,
                               uint64_t base) {
  std::vector<uint64_t> offset(items.size(), 0);
  std::vector<size_t> placed;  // items with bytes, sorted by offset
  for (size_t k : order) {
    const Item& it = items[k];
    if (it.bytes == 0) {
      offset[k] = AlignUp(base, it.align);
      continue;
    }
    uint64_t low = base;  // the candidate, before alignment
    for (size_t j : placed) {
      if (!Conflict(it, items[j])) continue;
      if (AlignUp(low, it.align) + it.bytes <= offset[j]) break;  // fits in the gap below j
      low = std::max(low, offset[j] + items[j].bytes);
    }
    offset[k] = AlignUp(low, it.align);
    auto at = std::upper_bound(placed.begin(), placed.end(), offset[k],
                               [&](uint64_t o, size_t j) { return o < offset[j]; });
    placed.insert(at, k);
  }
  return offset;
}

uint64_t Total(const std::vector<Item>& items, const std::vector<uint64_t>& offset, uint64_t base) {
  uint64_t total = base;
  for (size_t k = 0; k < items.size(); ++k) total = std::max(total, offset[k] + items[k].bytes);
  return total;
}

}  // namespace

absl::Status CheckPlanInput(const PlanInput& input) {
  if (input.uses.size() > kMaxPlanUses) {
    return Invalid(StrCat("uses must hold 0..", kMaxPlanUses, " uses, got ", input.uses.size()));
  }
  if (input.reservations.size() > kMaxPlanReservations) {
    return Invalid(StrCat("reservations must hold 0..", kMaxPlanReservations, " reservations, got ",
                          input.reservations.size()));
  }
  if (input.base_offset > kMaxPlanBytes) {
    return Invalid(StrCat("base_offset must be 0..", kMaxPlanBytes, ", got ", input.base_offset));
  }
  std::map<std::string, std::string> names;  // name -> "uses[1]"
  for (int pass = 0; pass < 2; ++pass) {
    const bool reservation = pass == 0;
    const auto& list = reservation ? input.reservations : input.uses;
    for (size_t i = 0; i < list.size(); ++i) {
      const PlanRegionInput& r = list[i];
      if (r.name.empty() || r.name.size() > kMaxPlanNameLength || !PrintableAscii(r.name)) {
        return Invalid(StrCat(Where(reservation, i), ".name must be 1..", kMaxPlanNameLength,
                              " printable ASCII characters, got \"",
                              PrintableAscii(r.name) ? r.name.substr(0, kMaxPlanNameLength + 8)
                                                     : std::string("(non-printable)"),
                              "\""));
      }
      auto [it, inserted] = names.emplace(r.name, Where(reservation, i));
      if (!inserted) {
        return Invalid(StrCat(Where(reservation, i), ".name \"", r.name, "\" is already ",
                              it->second, "'s; names must be unique among uses and reservations"));
      }
      if (absl::Status s = CheckRegion(r, reservation, i); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PlanLayout> LayOutPlan(const PlanInput& input) {
  if (absl::Status s = CheckPlanInput(input); !s.ok()) return s;
  std::vector<Item> items;
  for (int pass = 0; pass < 2; ++pass) {
    const bool reservation = pass == 0;
    const auto& list = reservation ? input.reservations : input.uses;
    for (size_t i = 0; i < list.size(); ++i) {
      const PlanRegionInput& r = list[i];
      if (!r.sized) {
        return absl::InternalError(
            StrCat("plan: ", Named(reservation, i, r.name), " has no size to lay out"));
      }
      const uint32_t count = std::max<uint32_t>(r.count, 1);
      const uint64_t stride = AlignUp(r.bytes, r.align);
      items.push_back({reservation, i, (count - 1) * stride + r.bytes, r.align, stride, count,
                       reservation ? 0 : r.first, reservation ? 0 : r.last});
    }
  }

  // Items are in request order, reservations first, so the index breaks ties that way.
  auto by = [&](bool align_first) {
    std::vector<size_t> order(items.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Item &x = items[a], &y = items[b];
      if (align_first) {
        if (x.align != y.align) return x.align > y.align;
        return x.bytes > y.bytes;
      }
      if (x.bytes != y.bytes) return x.bytes > y.bytes;
      return x.align > y.align;
    });
    return order;
  };
  const std::vector<size_t> align_first = by(true);
  std::vector<uint64_t> offset = FirstFit(items, align_first, input.base_offset);
  std::vector<uint64_t> other = FirstFit(items, by(false), input.base_offset);
  if (Total(items, other, input.base_offset) < Total(items, offset, input.base_offset)) {
    offset = std::move(other);
  }

  PlanLayout out;
  out.total = Total(items, offset, input.base_offset);
  out.reserved_bytes = input.base_offset;
  // Without reuse: end to end in the first order. First-fit in that order places each region
  // at most where this layout does (by induction: its candidate never passes the highest end so
  // far), and the second order wins only with a smaller total, so the plan never exceeds it.
  uint64_t end = input.base_offset;
  for (size_t k : align_first) end = AlignUp(end, items[k].align) + items[k].bytes;
  out.no_reuse_bytes = end;
  for (const Item& it : items) {
    out.base_align = std::max(out.base_align, it.align);
    if (it.reservation) out.reserved_bytes += it.bytes;
  }
  if (out.total > kMaxPlanBytes) {
    return Invalid(StrCat("the layout needs ", out.total,
                          " bytes of dynamic shared memory, more than a launch's 32-bit "
                          "shared-memory size allows (",
                          kMaxPlanBytes, ")"));
  }
  out.reservations.resize(input.reservations.size());
  out.uses.resize(input.uses.size());
  for (size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    // Padding from the final layout: regions placed later may have filled a gap below this one.
    uint64_t below = input.base_offset;
    for (size_t j = 0; j < items.size(); ++j) {
      const uint64_t end = offset[j] + items[j].bytes;
      if (j != k && Conflict(it, items[j]) && end <= offset[k]) below = std::max(below, end);
    }
    PlacedRegion& p = it.reservation ? out.reservations[it.index] : out.uses[it.index];
    p = {offset[k], it.bytes, it.align, offset[k] - below, it.stride, it.count};
  }
  return out;
}

}  // namespace coopd
