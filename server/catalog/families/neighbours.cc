// block_discontinuity and block_adjacent_difference: cub::BlockDiscontinuity and
// cub::BlockAdjacentDifference combine each item with its neighbour in blocked order; the method
// name says which arrays and neighbour items an entry takes, so they share the entry plan.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

std::vector<EntryPlan> PlanNeighbours(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const std::string op = s.has_op() ? OperatorExpr(s.op(), t) : "";
  const bool flags = s.family() == BlockDiscontinuity().name;
  const std::string& m = s.method();
  auto has = [&](std::string_view word) { return m.find(word) != std::string::npos; };
  EntryPlan p;
  p.result = "void";
  p.params = {{StrCat("const ", t, "*"), "input"}};
  if (flags) {
    if (has("heads")) p.params.push_back({"int*", "head_flags"});
    if (has("tails")) p.params.push_back({"int*", "tail_flags"});
  } else {
    p.params.push_back({t + "*", "output"});
    if (has("partial")) p.params.push_back({"int", "valid_items"});
  }
  if (has("predecessor")) p.params.push_back({t, "tile_predecessor_item"});
  if (has("successor")) p.params.push_back({t, "tile_successor_item"});
  std::string args = "temp_storage";
  for (const auto& param : p.params) args += ", " + param.second;
  p.call = StrCat("::coop::device::", m, "<Prim, ", n, ">(", args, ", ", op, ")");
  p.description = StrCat(
      m, " over ", n, " blocked items per thread with ", OperatorName(s.op()),
      flags ? " (flags are 0 or 1)" : "",
      has("predecessor") ? "; tile_predecessor_item is read in thread 0 only" : "",
      has("successor") ? "; tile_successor_item is read in the block's last thread only" : "");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

std::string NeighbourType(std::string_view cls, const PrimitiveSpec& s, std::string_view t) {
  return StrCat("::cub::", cls, "<", t, ", ", s.block().x(), ", ", s.block().y(), ", ",
                s.block().z(), ">");
}

}  // namespace

const Family& BlockDiscontinuity() {
  constexpr OpKind kFlag = OpKind::kFlag;
  static const Family f{
      .name = "block_discontinuity",
      .description =
          "cub::BlockDiscontinuity: flags items that differ from their neighbour in blocked order",
      .methods = {{.name = "flag_heads",
                   .op = kFlag,
                   .description = "head_flags[i] = op(previous item, item i); the block's first "
                                  "item is flagged 1"},
                  {.name = "flag_heads_with_predecessor",
                   .op = kFlag,
                   .description = "like flag_heads; the block's first item is compared with "
                                  "tile_predecessor_item"},
                  {.name = "flag_tails",
                   .op = kFlag,
                   .description = "tail_flags[i] = op(item i, next item); the block's last item "
                                  "is flagged 1"},
                  {.name = "flag_tails_with_successor",
                   .op = kFlag,
                   .description = "like flag_tails; the block's last item is compared with "
                                  "tile_successor_item"},
                  {.name = "flag_heads_and_tails",
                   .op = kFlag,
                   .description = "flag_heads and flag_tails in one pass"},
                  {.name = "flag_heads_and_tails_with_predecessor",
                   .op = kFlag,
                   .description = "heads with tile_predecessor_item, tails without a successor"},
                  {.name = "flag_heads_and_tails_with_successor",
                   .op = kFlag,
                   .description = "heads without a predecessor, tails with tile_successor_item"},
                  {.name = "flag_heads_and_tails_with_predecessor_and_successor",
                   .op = kFlag,
                   .description =
                       "heads with tile_predecessor_item, tails with tile_successor_item"}},
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return NeighbourType("BlockDiscontinuity", s, t);
          },
      .plan_entries = PlanNeighbours,
  };
  return f;
}

const Family& BlockAdjacentDifference() {
  constexpr OpKind kDiff = OpKind::kDifference;
  static const Family f{
      .name = "block_adjacent_difference",
      .description =
          "cub::BlockAdjacentDifference: combines each item with its neighbour in blocked order",
      .methods = {{.name = "subtract_left",
                   .op = kDiff,
                   .description = "output[i] = op(item i, previous item); the block's first item "
                                  "is copied"},
                  {.name = "subtract_left_with_predecessor",
                   .op = kDiff,
                   .description = "like subtract_left; the block's first item is combined with "
                                  "tile_predecessor_item"},
                  {.name = "subtract_left_partial",
                   .op = kDiff,
                   .description = "subtract_left over the tile's first valid_items items; the "
                                  "rest are copied"},
                  {.name = "subtract_left_partial_with_predecessor",
                   .op = kDiff,
                   .description = "subtract_left_partial; the block's first item is combined "
                                  "with tile_predecessor_item"},
                  {.name = "subtract_right",
                   .op = kDiff,
                   .description = "output[i] = op(item i, next item); the block's last item is "
                                  "copied"},
                  {.name = "subtract_right_with_successor",
                   .op = kDiff,
                   .description = "like subtract_right; the block's last item is combined with "
                                  "tile_successor_item"},
                  {.name = "subtract_right_partial",
                   .op = kDiff,
                   .description = "subtract_right over the tile's first valid_items items; the "
                                  "rest are copied"}},
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return NeighbourType("BlockAdjacentDifference", s, t);
          },
      .plan_entries = PlanNeighbours,
  };
  return f;
}

}  // namespace coopd::families
