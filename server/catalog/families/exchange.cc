// block_exchange and warp_exchange: cub::BlockExchange and cub::WarpExchange, whose member
// functions match and so share the device helpers and the entry plan.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeExchangeOptions(const SpecContext& c, PrimitiveSpec& out) {
  const bool slicing = c.in.exchange().warp_time_slicing();
  // CCCL 3.0.1's ScatterToStripedGuarded/Flagged index the whole tile in the time-sliced
  // buffer, which holds only one warp's items: past 32 threads they would write out of bounds.
  const uint64_t threads = BlockThreads(out);
  if (slicing && threads > 32 &&
      (c.method.name == "scatter_to_striped_guarded" ||
       c.method.name == "scatter_to_striped_flagged")) {
    return Invalid(c.ctx, StrCat("method ", Quote(c.method.name),
                                 " does not support exchange.warp_time_slicing with more than 32 "
                                 "threads (CUB's buffer then holds one warp's items), got ",
                                 threads));
  }
  out.mutable_exchange()->set_warp_time_slicing(slicing);
  return absl::OkStatus();
}

// CUB's WARP_EXCHANGE_SHUFFLE static_asserts both of these.
absl::Status CheckWarpExchange(const SpecContext& c, const PrimitiveSpec& out) {
  if (out.algorithm() != "shuffle") return absl::OkStatus();
  if (c.method.name == "scatter_to_striped") {
    return Invalid(c.ctx,
                   "method \"scatter_to_striped\" needs algorithm \"smem\"; CUB's shuffle "
                   "exchange does not scatter");
  }
  if (out.items_per_thread() != out.warp_threads()) {
    return Invalid(c.ctx,
                   StrCat("algorithm \"shuffle\" needs items_per_thread == warp_threads, "
                          "got ",
                          out.items_per_thread(), " items and ", out.warp_threads(), " threads"));
  }
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanExchange(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  EntryPlan p;
  p.result = "void";
  p.params = {{StrCat("const ", t, "*"), "input"}, {t + "*", "output"}};
  std::string args = "temp_storage, input, output";
  if (s.method().rfind("scatter_", 0) == 0) {
    p.params.push_back({"const int*", "ranks"});
    args += ", ranks";
  }
  if (s.method() == "scatter_to_striped_flagged") {
    p.params.push_back({"const int*", "is_valid"});
    args += ", is_valid";
  }
  p.call = StrCat("::coop::device::exchange_", s.method(), "<Prim, ", n, ">(", args, ")");
  p.description = StrCat(
      s.method(), " over ", n, " items per thread (input and output may be the same array)",
      s.method().rfind("scatter_", 0) == 0 ? "; ranks[i] is item i's position in the tile" : "",
      s.family() == WarpExchange().name ? "; temp_storage is this logical warp's own" : "");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockExchange() {
  static const Family f{
      .name = "block_exchange",
      .description =
          "cub::BlockExchange: rearranges items between striped, blocked and "
          "warp-striped arrangements across the block",
      .methods = {{.name = "striped_to_blocked", .description = "striped input -> blocked output"},
                  {.name = "blocked_to_striped", .description = "blocked input -> striped output"},
                  {.name = "warp_striped_to_blocked",
                   .description = "warp-striped input -> blocked output"},
                  {.name = "blocked_to_warp_striped",
                   .description = "blocked input -> warp-striped output"},
                  {.name = "scatter_to_blocked",
                   .description = "item i goes to tile position ranks[i]; blocked output"},
                  {.name = "scatter_to_striped",
                   .description = "item i goes to tile position ranks[i]; striped output"},
                  {.name = "scatter_to_striped_guarded",
                   .description = "like scatter_to_striped; items with a negative rank are not "
                                  "moved"},
                  {.name = "scatter_to_striped_flagged",
                   .description = "like scatter_to_striped; only items with is_valid[i] != 0 are "
                                  "moved"}},
      .user_types = true,
      .options = PrimitiveSpec::kExchange,
      .canonicalize_options = CanonicalizeExchangeOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockExchange<", t, ", ", s.block().x(), ", ",
                          s.items_per_thread(), ", ",
                          s.exchange().warp_time_slicing() ? "true" : "false", ", ", s.block().y(),
                          ", ", s.block().z(), ">");
          },
      .plan_entries = PlanExchange,
  };
  return f;
}

const Family& WarpExchange() {
  static const Family f{
      .name = "warp_exchange",
      .description =
          "cub::WarpExchange: rearranges items between blocked and striped "
          "arrangements across a logical warp",
      .methods = {{.name = "blocked_to_striped", .description = "blocked input -> striped output"},
                  {.name = "striped_to_blocked", .description = "striped input -> blocked output"},
                  {.name = "scatter_to_striped",
                   .description = "item i goes to position ranks[i] of the warp's tile; striped "
                                  "output (smem only)"}},
      .algorithms = {"smem", "shuffle"},
      .default_algorithm = "smem",
      .algorithm_enum = "::cub::WARP_EXCHANGE_",
      .warp = true,
      .user_types = true,
      .check = CheckWarpExchange,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::WarpExchange<", t, ", ", s.items_per_thread(), ", ",
                          s.warp_threads(), ", ", AlgorithmEnum(s), ">");
          },
      .plan_entries = PlanExchange,
  };
  return f;
}

}  // namespace coopd::families
