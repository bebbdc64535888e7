#include "server/plan/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/plan_checker.h"

namespace coopd {
namespace {

PlanRegionInput Use(const std::string& name, uint64_t bytes, uint64_t align, uint32_t first,
                    uint32_t last, uint32_t count = 0) {
  PlanRegionInput r;
  r.name = name;
  r.bytes = bytes;
  r.align = align;
  r.first = first;
  r.last = last;
  r.count = count;
  return r;
}

PlanRegionInput Reservation(const std::string& name, uint64_t bytes, uint64_t align,
                            uint32_t count = 0) {
  return Use(name, bytes, align, 0, 0, count);
}

PlanLayout Plan(const PlanInput& in) {
  auto layout = LayOutPlan(in);
  EXPECT_TRUE(layout.ok()) << layout.status();
  if (!layout.ok()) return {};
  EXPECT_EQ(PlanViolations(in, *layout), "");
  return *layout;
}

std::string Error(const PlanInput& in) {
  auto layout = LayOutPlan(in);
  EXPECT_FALSE(layout.ok());
  if (layout.ok()) return "";
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(layout.status().message());
}

TEST(Planner, UsesWithDisjointLifetimesShareBytes) {
  PlanInput in;
  in.uses = {Use("load", 1024, 16, 0, 1), Use("scan", 512, 16, 2, 3), Use("reduce", 256, 16, 3, 4)};
  PlanLayout out = Plan(in);
  // load is dead when scan and reduce run: both start at 0; reduce overlaps scan at point 3.
  EXPECT_EQ(out.uses[0].offset, 0u);
  EXPECT_EQ(out.uses[1].offset, 0u);
  EXPECT_EQ(out.uses[2].offset, 512u);
  EXPECT_EQ(out.total, 1024u);
  EXPECT_EQ(out.no_reuse_bytes, 1792u);
  EXPECT_EQ(out.base_align, 16u);
  for (const auto& u : out.uses) EXPECT_EQ(u.padding, 0u);
}

TEST(Planner, UsesAllLiveAtOnceNeverShare) {
  PlanInput in;  // lifetimes left at [0, 0]: all live at once
  in.uses = {Use("a", 44, 4, 0, 0), Use("b", 1184, 16, 0, 0), Use("c", 9280, 16, 0, 0)};
  PlanLayout out = Plan(in);
  EXPECT_EQ(out.uses[2].offset, 0u);
  EXPECT_EQ(out.uses[1].offset, 9280u);
  EXPECT_EQ(out.uses[0].offset, 10464u);
  EXPECT_EQ(out.total, 10508u);
  EXPECT_EQ(out.total, out.no_reuse_bytes);
}

TEST(Planner, AlignmentPaddingAboveTheBaseOffsetAndBetweenRegions) {
  PlanInput in;
  in.base_offset = 4;
  in.reservations = {Reservation("mine", 10, 2)};
  in.uses = {Use("x", 100, 16, 0, 0), Use("y", 7, 4, 0, 0)};
  PlanLayout out = Plan(in);
  // x goes first (largest alignment), at 16: 12 bytes of padding above the base; y right after
  // it at 116; the reservation then fits in x's padding, at 4..14, which leaves x 2 bytes of
  // padding. End to end (no reuse of the gap) the reservation would go at 124, ending at 134.
  EXPECT_EQ(out.uses[0].offset, 16u);
  EXPECT_EQ(out.uses[0].padding, 2u);
  EXPECT_EQ(out.uses[1].offset, 116u);
  EXPECT_EQ(out.uses[1].padding, 0u);
  EXPECT_EQ(out.reservations[0].offset, 4u);
  EXPECT_EQ(out.reservations[0].padding, 0u);
  EXPECT_EQ(out.total, 123u);
  EXPECT_EQ(out.no_reuse_bytes, 134u);
  EXPECT_EQ(out.reserved_bytes, 14u);
  EXPECT_EQ(out.base_align, 16u);

  // Without the base offset and the reservation, and y aligned to 8: y goes at 104, 4 bytes
  // of padding after x's end.
  in.base_offset = 0;
  in.reservations.clear();
  in.uses[1].align = 8;
  out = Plan(in);
  EXPECT_EQ(out.uses[0].offset, 0u);
  EXPECT_EQ(out.uses[1].offset, 104u);
  EXPECT_EQ(out.uses[1].padding, 4u);
  EXPECT_EQ(out.total, 111u);
}

TEST(Planner, TheSizeOrderWinsWhenItPadsLess) {
  PlanInput in;  // all three overlap; only padding differs between the orders
  in.uses = {Use("u0", 1000, 4, 2, 2), Use("u1", 16, 16, 1, 2), Use("u2", 1000, 16, 1, 2)};
  PlanLayout out = Plan(in);
  // By alignment: u2 0, u1 1008 (8 bytes of padding), u0 1024: 2024. By size: u2 0, u0 1000,
  // u1 2000: 2016.
  EXPECT_EQ(out.uses[2].offset, 0u);
  EXPECT_EQ(out.uses[0].offset, 1000u);
  EXPECT_EQ(out.uses[1].offset, 2000u);
  EXPECT_EQ(out.total, 2016u);
  EXPECT_EQ(out.no_reuse_bytes, 2024u);
}

TEST(Planner, ReservationsNeverShareAndNeverGoBelowTheirSum) {
  PlanInput in;
  in.reservations = {Reservation("tile", 4096, 16), Reservation("flags", 33, 1)};
  in.uses = {Use("early", 5008, 16, 0, 0), Use("late", 5008, 16, 1, 1)};
  PlanLayout out = Plan(in);
  EXPECT_EQ(out.uses[0].offset, out.uses[1].offset) << "early and late share their bytes";
  EXPECT_EQ(out.reservations[0].offset, 5008u);
  EXPECT_EQ(out.reservations[1].offset, 5008u + 4096u);
  EXPECT_EQ(out.total, 5008u + 4096u + 33u);
  EXPECT_EQ(out.reserved_bytes, 4096u + 33u);
}

TEST(Planner, CountLaysOutAnArrayOfAlignedElements) {
  PlanInput in;
  // WarpReduce<int>'s TempStorage is small; one per warp of an 8-warp block.
  in.uses = {Use("per_warp", 20, 8, 0, 0, 8), Use("block", 44, 4, 0, 0)};
  PlanLayout out = Plan(in);
  EXPECT_EQ(out.uses[0].count, 8u);
  EXPECT_EQ(out.uses[0].stride, 24u);
  EXPECT_EQ(out.uses[0].bytes, 7 * 24u + 20u);
  EXPECT_EQ(out.uses[0].offset, 0u);
  EXPECT_EQ(out.uses[1].offset, 188u);
  EXPECT_EQ(out.total, 232u);
}

TEST(Planner, EmptyRegionsAndAnEmptyPlan) {
  PlanLayout none = Plan(PlanInput{});
  EXPECT_EQ(none.total, 0u);
  EXPECT_EQ(none.base_align, 1u);
  PlanInput in;
  in.base_offset = 8;
  in.uses = {Use("nothing", 0, 32, 0, 5), Use("some", 8, 8, 0, 5)};
  PlanLayout out = Plan(in);
  EXPECT_EQ(out.uses[0].offset, 32u);  // the lowest aligned offset at or above the base
  EXPECT_EQ(out.uses[0].padding, 24u);
  EXPECT_EQ(out.uses[1].offset, 8u);
  EXPECT_EQ(out.total, 32u);
}

TEST(Planner, SameRequestSameLayout) {
  PlanInput in;
  in.reservations = {Reservation("r", 100, 8)};
  for (uint32_t i = 0; i < 50; ++i) {
    in.uses.push_back(
        Use("u" + std::to_string(i), 16 * (i % 7 + 1), 1u << (i % 5), i % 9, i % 9 + i % 4));
  }
  PlanLayout a = Plan(in), b = Plan(in);
  ASSERT_EQ(a.uses.size(), b.uses.size());
  for (size_t i = 0; i < a.uses.size(); ++i) {
    EXPECT_EQ(a.uses[i].offset, b.uses[i].offset);
    EXPECT_EQ(a.uses[i].padding, b.uses[i].padding);
  }
  EXPECT_EQ(a.total, b.total);
}

TEST(Planner, HundredsOfRandomRequestsMeetTheContract) {
  std::mt19937 rng(12);
  auto pick = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  int reused = 0;
  for (int round = 0; round < 600; ++round) {
    PlanInput in;
    in.base_offset = pick(0, 3) == 0 ? pick(0, 40) : 0;
    const uint32_t reservations = pick(0, 2), uses = pick(1, 14), points = pick(1, 8);
    for (uint32_t i = 0; i < reservations; ++i) {
      in.reservations.push_back(
          Reservation("r" + std::to_string(i), pick(0, 64), 1u << pick(0, 5), pick(0, 2)));
    }
    for (uint32_t i = 0; i < uses; ++i) {
      const uint32_t first = pick(0, points - 1);
      in.uses.push_back(Use("u" + std::to_string(i), pick(0, 3) == 0 ? pick(0, 8) : pick(1, 300),
                            1u << pick(0, 6), first, pick(first, points - 1), pick(0, 3)));
    }
    auto out = LayOutPlan(in);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(PlanViolations(in, *out), "") << "round " << round;
    if (out->total < out->no_reuse_bytes) ++reused;
  }
  EXPECT_GT(reused, 100) << "random lifetimes should let many plans reuse bytes";
}

TEST(Planner, BadRequestsNameTheFieldAndTheAllowedValues) {
  PlanInput in;
  in.uses = {Use("", 8, 8, 0, 0)};
  EXPECT_EQ(Error(in), "plan: uses[0].name must be 1..128 printable ASCII characters, got \"\"");
  in.uses = {Use("a\tb", 8, 8, 0, 0)};
  EXPECT_EQ(
      Error(in),
      "plan: uses[0].name must be 1..128 printable ASCII characters, got \"(non-printable)\"");
  in.uses = {Use(std::string(129, 'n'), 8, 8, 0, 0)};
  EXPECT_NE(Error(in).find("uses[0].name must be 1..128"), std::string::npos);

  in.reservations = {Reservation("scan", 8, 8)};
  in.uses = {Use("load", 8, 8, 0, 0), Use("scan", 8, 8, 0, 0)};
  EXPECT_EQ(Error(in),
            "plan: uses[1].name \"scan\" is already reservations[0]'s; names must be unique among "
            "uses and reservations");
  in.reservations.clear();

  in.uses = {Use("scan", 8, 8, 5, 3)};
  EXPECT_EQ(Error(in),
            "plan: uses[0] \"scan\": last must be >= first (the lifetime [first, last] is "
            "inclusive), got first 5, last 3");
  in.uses = {Use("scan", 8, 0, 0, 0)};
  EXPECT_EQ(Error(in),
            "plan: uses[0] \"scan\": temp_storage.align must be a power of two, 1..65536, got 0");
  in.uses = {Use("scan", 8, 24, 0, 0)};
  EXPECT_EQ(Error(in),
            "plan: uses[0] \"scan\": temp_storage.align must be a power of two, 1..65536, got 24");
  in.uses = {Use("scan", 8, 131072, 0, 0)};
  EXPECT_NE(Error(in).find("got 131072"), std::string::npos);
  in.uses = {Use("scan", uint64_t{1} << 32, 16, 0, 0)};
  EXPECT_EQ(Error(in),
            "plan: uses[0] \"scan\": temp_storage.bytes must be 0..4294967295 (a launch's 32-bit "
            "shared-memory size), got 4294967296");
  in.uses = {Use("scan", 8, 8, 0, 0, 1025)};
  EXPECT_EQ(Error(in), "plan: uses[0] \"scan\": count must be 1..1024 (0 means 1), got 1025");
  in.uses = {Use("scan", 0x10000000, 16, 0, 0, 16)};
  EXPECT_EQ(Error(in),
            "plan: uses[0] \"scan\": 16 elements of 268435456 bytes (aligned to 16) need "
            "4294967296 bytes, more than a launch's 32-bit shared-memory size allows (4294967295)");

  in.uses.clear();
  in.reservations = {Reservation("tile", 8, 3)};
  EXPECT_EQ(Error(in),
            "plan: reservations[0] \"tile\": align must be a power of two, 1..65536, got 3");
  // Regions that each fit but together do not.
  in.reservations = {Reservation("a", 0x80000000, 16), Reservation("b", 0x80000000, 16)};
  EXPECT_EQ(Error(in),
            "plan: the layout needs 4294967296 bytes of dynamic shared memory, more than a "
            "launch's 32-bit shared-memory size allows (4294967295)");
  in.reservations.clear();
  in.base_offset = uint64_t{1} << 32;
  EXPECT_EQ(Error(in), "plan: base_offset must be 0..4294967295, got 4294967296");
  in.base_offset = 0;

  for (size_t i = 0; i <= kMaxPlanUses; ++i)
    in.uses.push_back(Use("u" + std::to_string(i), 1, 1, 0, 0));
  EXPECT_EQ(Error(in), "plan: uses must hold 0..1024 uses, got 1025");
  in.uses.clear();
  for (size_t i = 0; i <= kMaxPlanReservations; ++i) {
    in.reservations.push_back(Reservation("r" + std::to_string(i), 1, 1));
  }
  EXPECT_EQ(Error(in), "plan: reservations must hold 0..256 reservations, got 257");
}

TEST(Planner, TheLargestRequestIsLaidOut) {
  PlanInput in;
  for (size_t i = 0; i < kMaxPlanReservations; ++i) {
    in.reservations.push_back(Reservation("r" + std::to_string(i), 1 + i % 17, 1u << (i % 4)));
  }
  for (size_t i = 0; i < kMaxPlanUses; ++i) {
    const uint32_t first = static_cast<uint32_t>(i % 37);
    in.uses.push_back(Use("u" + std::to_string(i), 16 + 16 * (i % 13), 16, first, first + 2));
  }
  auto out = LayOutPlan(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(PlanViolations(in, *out), "");
  EXPECT_LT(out->total, out->no_reuse_bytes);
}

TEST(Planner, AnUnsizedUseIsCheckedButNotLaidOut) {
  PlanInput in;
  PlanRegionInput spec_use = Use("reduce", 0, 0, 0, 0);
  spec_use.sized = false;  // its spec is still being resolved: align 0 is not its fault
  in.uses = {spec_use};
  EXPECT_TRUE(CheckPlanInput(in).ok());
  auto out = LayOutPlan(in);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace coopd
