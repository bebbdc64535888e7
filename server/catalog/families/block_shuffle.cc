// block_shuffle: cub::BlockShuffle.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

std::vector<EntryPlan> PlanShuffle(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  EntryPlan p;
  if (s.method() == "offset" || s.method() == "rotate") {
    p.result = t;
    p.params = {{t, "input"}, {s.method() == "offset" ? "int" : "unsigned int", "distance"}};
    p.call =
        StrCat("::coop::device::shuffle_", s.method(), "<Prim>(temp_storage, input, distance)");
    p.description = StrCat("returns the input of the thread `distance` ranks ",
                           s.method() == "offset" ? "away (unchanged input past the block's ends)"
                                                  : "away, wrapping around the block");
  } else {
    const std::string out = s.method() == "up" ? "prev" : "next";
    p.result = "void";
    p.params = {{StrCat("const ", t, "*"), "input"}, {t + "*", out}};
    p.call = StrCat("::coop::device::shuffle_", s.method(), "<Prim, ", n, ">(temp_storage, input, ",
                    out, ")");
    p.description = StrCat("shifts ", n, " blocked items per thread ",
                           s.method() == "up" ? "up by one (" : "down by one (", out, ")");
  }
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockShuffle() {
  static const Family f{
      .name = "block_shuffle",
      .description = "cub::BlockShuffle: moves items between threads of the block",
      .methods = {{.name = "offset",
                   .description =
                       "output = the input of thread (this + distance), 1 item per thread",
                   .single_item = true},
                  {.name = "rotate",
                   .description = "like offset, wrapping around the block, 1 item per thread",
                   .single_item = true},
                  {.name = "up",
                   .description = "prev[i] = the item before item i in blocked order (thread 0's "
                                  "first is left as it was)"},
                  {.name = "down",
                   .description = "next[i] = the item after item i in blocked order (the last "
                                  "thread's last is left as it was)"}},
      .user_types = true,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockShuffle<", t, ", ", s.block().x(), ", ", s.block().y(), ", ",
                          s.block().z(), ">");
          },
      .plan_entries = PlanShuffle,
  };
  return f;
}

}  // namespace coopd::families
