// block_scan and warp_scan: cub::BlockScan and cub::WarpScan, whose scalar forms have the same
// signatures and so share the entry plan; both take ScanOptions (with_aggregate).
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeScanOptions(const SpecContext& c, PrimitiveSpec& out) {
  if (c.in.scan().with_aggregate() && c.method.prefix_callback) {
    return Invalid(c.ctx,
                   StrCat("scan.with_aggregate does not apply to method ", Quote(c.method.name),
                          ": the block aggregate goes into the running prefix"));
  }
  out.mutable_scan()->set_with_aggregate(c.in.scan().with_aggregate());
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanScan(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const bool items = n > 1;
  const std::string op = s.has_op() ? OperatorExpr(s.op(), t) : "";
  const std::string tmpl = items ? StrCat("<Prim, ", n, ">") : "<Prim>";
  std::vector<EntryPlan> plans;
  const bool warp = s.family() == WarpScan().name;
  const std::string& m = s.method();
  // Scalar scans take and return one item; array scans take input and output pointers. Sets
  // the plan's result and first parameters and returns the helper's first arguments.
  auto scan_io = [&](EntryPlan& p) -> std::string {
    if (!items) {
      p.result = t;
      p.params = {{t, "input"}};
      return "temp_storage, input";
    }
    p.result = "void";
    p.params = {{StrCat("const ", t, "*"), "input"}, {t + "*", "output"}};
    return "temp_storage, input, output";
  };
  if (EndsWith(m, "_prefix")) {
    // block_scan with CUB's block-prefix callback, here a running total
    // (device/include/coop/device/scan.cuh).
    EntryPlan p;
    std::string args = scan_io(p);
    const std::string scan_op = op.empty() ? OperatorExpr("sum", t) : op;
    if (s.has_prefix_callback()) {
      // The frontend's stateful callback instead of the running total.
      p.params.push_back({"void*", "prefix_state"});
      p.call = StrCat("::coop::device::", m, items ? "_items" : "", tmpl, "(", args, ", ",
                      UserFunctorName(s.prefix_callback()), "{prefix_state}, ", scan_op, ")");
      p.description =
          StrCat("block-wide ", m.substr(0, m.size() - 7),
                 items ? StrCat(" over ", n, " items per thread (input -> output)")
                       : " (returns this thread's output)",
                 "; the first warp calls ", s.prefix_callback().name(),
                 "(prefix_state, block_aggregate) and lane 0's result is the tile's prefix");
      plans.push_back(std::move(p));
      return plans;
    }
    p.params.push_back({t + "*", "running_prefix"});
    p.call = StrCat("::coop::device::", m, items ? "_items" : "", tmpl, "(", args,
                    ", ::coop::device::RunningPrefix<", t, ", decltype(", scan_op,
                    ")>{running_prefix, ", scan_op, "}, ", scan_op, ")");
    p.description = StrCat(
        "block-wide ", m.substr(0, m.size() - 7),
        items ? StrCat(" over ", n, " items per thread (input -> output)")
              : " (returns this thread's output)",
        " seeded by the running total *running_prefix: the tile's prefix is linear thread 0's "
        "*running_prefix, which then becomes prefix ",
        op.empty() ? "+" : s.op().builtin(),
        " block aggregate in each thread of the first warp (thread 0's copy is the one that "
        "counts; set it before the first tile, keep it across tiles)");
    plans.push_back(std::move(p));
    return plans;
  }
  if (m == "inclusive_scan_init") {
    // CUB has this overload for arrays only: input and output are arrays even for one item.
    for (bool agg : {false, true}) {
      if (agg && !s.scan().with_aggregate()) continue;
      EntryPlan p;
      p.suffix = agg ? "_aggregate" : "";
      p.result = "void";
      p.params = {{StrCat("const ", t, "*"), "input"}, {t + "*", "output"}, {t, "initial_value"}};
      if (agg) p.params.push_back({t + "*", "block_aggregate"});
      p.call = StrCat("::coop::device::inclusive_scan_init_items<Prim, ", n,
                      ">(temp_storage, input, output, initial_value, ",
                      agg ? "block_aggregate, " : "", op, ")");
      p.description = StrCat("block-wide inclusive scan with ", OperatorName(s.op()), " over ", n,
                             " items per thread (input -> output), seeded by initial_value",
                             agg ? "; also writes the block aggregate to *block_aggregate" : "");
      plans.push_back(std::move(p));
    }
    return plans;
  }
  const bool needs_init = m == "exclusive_scan";
  for (bool agg : {false, true}) {
    if (agg && !s.scan().with_aggregate()) continue;
    EntryPlan p;
    p.suffix = agg ? "_aggregate" : "";
    std::string fn = m;
    if (items) fn += "_items";
    if (agg) fn += "_agg";
    std::string args = scan_io(p);
    if (needs_init) {
      p.params.push_back({t, "initial_value"});
      args += ", initial_value";
    }
    if (agg) {
      const std::string name = warp ? "warp_aggregate" : "block_aggregate";
      p.params.push_back({t + "*", name});
      args += ", " + name;
    }
    if (!op.empty()) args += ", " + op;
    p.call = StrCat("::coop::device::", fn, tmpl, "(", args, ")");
    p.description = StrCat(
        warp ? "warp-wide " : "block-wide ", m,
        items ? StrCat(" over ", n, " items per thread (input -> output)")
              : " (returns this thread's output)",
        m == "exclusive_scan_unseeded"
            ? (warp ? "; lane 0's output is undefined" : "; linear thread 0's output is undefined")
            : "",
        agg ? (warp ? "; also writes the logical warp's aggregate to *warp_aggregate in every lane"
                    : "; also writes the block aggregate to *block_aggregate in every thread")
            : "");
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace

const Family& BlockScan() {
  static const Family f{
      .name = "block_scan",
      .description = "cub::BlockScan: a prefix scan across the thread block",
      .methods =
          {{.name = "inclusive_sum",
            .arithmetic_only = true,
            .description = "inclusive prefix sum"},
           {.name = "exclusive_sum",
            .arithmetic_only = true,
            .description = "exclusive prefix sum (thread 0 gets 0)"},
           {.name = "inclusive_scan",
            .op = OpKind::kBinary,
            .description = "inclusive prefix scan with op"},
           {.name = "exclusive_scan",
            .op = OpKind::kBinary,
            .description = "exclusive prefix scan with op, seeded by initial_value"},
           {.name = "exclusive_scan_unseeded",
            .op = OpKind::kBinary,
            .description = "exclusive prefix scan with op and no initial value: thread 0's output "
                           "is undefined (CUB's ExclusiveScan without one)"},
           {.name = "inclusive_scan_init",
            .op = OpKind::kBinary,
            .description = "inclusive prefix scan with op, seeded by initial_value (input and "
                           "output are arrays even for one item per thread)"},
           {.name = "exclusive_sum_prefix",
            .arithmetic_only = true,
            .description = "exclusive prefix sum seeded by a running total carried across tiles",
            .prefix_callback = true},
           {.name = "inclusive_sum_prefix",
            .arithmetic_only = true,
            .description = "inclusive prefix sum seeded by a running total carried across tiles",
            .prefix_callback = true},
           {.name = "exclusive_scan_prefix",
            .op = OpKind::kBinary,
            .description =
                "exclusive prefix scan with op seeded by a running total carried across tiles",
            .prefix_callback = true},
           {.name = "inclusive_scan_prefix",
            .op = OpKind::kBinary,
            .description =
                "inclusive prefix scan with op seeded by a running total carried across tiles",
            .prefix_callback = true}},
      .algorithms = {"raking", "raking_memoize", "warp_scans"},
      .default_algorithm = "raking",
      .algorithm_enum = "::cub::BLOCK_SCAN_",
      .user_types = true,
      .options = PrimitiveSpec::kScan,
      .auto_algorithms = {"raking", "raking_memoize", "warp_scans"},
      .auto_baseline = "raking",
      .auto_measured_method = "inclusive_sum",
      .canonicalize_options = CanonicalizeScanOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockScan<", t, ", ", s.block().x(), ", ", AlgorithmEnum(s), ", ",
                          s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanScan,
  };
  return f;
}

const Family& WarpScan() {
  static const Family f{
      .name = "warp_scan",
      .description = "cub::WarpScan: a prefix scan across a logical warp",
      .methods = {{.name = "inclusive_sum",
                   .arithmetic_only = true,
                   .description = "inclusive prefix sum"},
                  {.name = "exclusive_sum",
                   .arithmetic_only = true,
                   .description = "exclusive prefix sum (lane 0 gets 0)"},
                  {.name = "inclusive_scan",
                   .op = OpKind::kBinary,
                   .description = "inclusive prefix scan with op"},
                  {.name = "exclusive_scan",
                   .op = OpKind::kBinary,
                   .description = "exclusive prefix scan with op, seeded by initial_value"},
                  {.name = "exclusive_scan_unseeded",
                   .op = OpKind::kBinary,
                   .description = "exclusive prefix scan with op and no initial value: lane 0's "
                                  "output is undefined (CUB's ExclusiveScan without one)"}},
      .warp = true,
      .multi_item = false,
      .user_types = true,
      .options = PrimitiveSpec::kScan,
      // "scan options apply only to block_scan": the message predates warp_scan's scan options
      // and is pinned by tests.
      .named_in_options_errors = false,
      .canonicalize_options = CanonicalizeScanOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::WarpScan<", t, ", ", s.warp_threads(), ">");
          },
      .plan_entries = PlanScan,
  };
  return f;
}

}  // namespace coopd::families
