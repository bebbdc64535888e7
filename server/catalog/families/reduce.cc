// block_reduce and warp_reduce: cub::BlockReduce and cub::WarpReduce, whose reductions share
// the device helpers (device/include/coop/device/reduce.cuh) and so the entry plan.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

std::vector<EntryPlan> PlanReduce(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const bool items = n > 1;
  const std::string op = s.has_op() ? OperatorExpr(s.op(), t) : "";
  const std::string tmpl = items ? StrCat("<Prim, ", n, ">") : "<Prim>";
  std::vector<EntryPlan> plans;
  EntryPlan p;
  p.result = t;
  if (items) {
    p.params = {{StrCat("const ", t, "*"), "input"}};
  } else {
    p.params = {{t, "input"}};
  }
  const bool partial = s.method() == "sum_partial" || s.method() == "reduce_partial";
  if (s.method().find("_segmented_") != std::string::npos) {
    // warp_reduce head/tail-segmented sums and reductions: one flag per lane.
    const bool head = s.method().rfind("head", 0) == 0;
    const bool sum = EndsWith(s.method(), "_sum");
    const std::string flag = head ? "head_flag" : "tail_flag";
    p.params.push_back({"int", flag});
    p.call = StrCat("::coop::device::reduce_", head ? "head" : "tail", "_segmented<Prim>(",
                    "temp_storage, input, ", flag, ", ", sum ? OperatorExpr("sum", t) : op, ")");
    p.description = StrCat("warp-wide ", s.method(), ": ", flag, " != 0 marks a lane that ",
                           head ? "starts" : "ends",
                           " a segment; each segment's result is valid in its first lane");
    plans.push_back(std::move(p));
    return plans;
  }
  std::string fn = s.method() == "sum" || s.method() == "sum_partial" ? "reduce_sum" : "reduce_op";
  if (items) fn += "_items";
  std::string args = "temp_storage, input";
  if (partial) {  // single_item methods: the input is a scalar
    fn += "_partial";
    p.params.push_back({"int", "num_valid"});
    args += ", num_valid";
  }
  std::string red_op = op;
  if (s.method() == "max") red_op = OperatorExpr("max", t);
  if (s.method() == "min") red_op = OperatorExpr("min", t);
  p.call =
      StrCat("::coop::device::", fn, tmpl, "(", args, red_op.empty() ? "" : ", " + red_op, ")");
  const bool warp = s.family() == WarpReduce().name;
  const std::string who =
      warp ? "lane 0 of each logical warp" : "thread 0 of the block (linear thread id 0)";
  p.description = StrCat(warp ? "warp-wide " : "block-wide ", s.method(),
                         items ? StrCat(" of ", n, " items per thread (input points to them)") : "",
                         partial ? " over the inputs of linear threads 0..num_valid-1" : "",
                         "; the result is valid in ", who, " only");
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockReduce() {
  static const Family f{
      .name = "block_reduce",
      .description = "cub::BlockReduce: a reduction across the thread block",
      .methods =
          {{.name = "sum",
            .arithmetic_only = true,
            .description = "sum of every item in the block (valid in thread 0)"},
           {.name = "max", .arithmetic_only = true, .description = "maximum (valid in thread 0)"},
           {.name = "min", .arithmetic_only = true, .description = "minimum (valid in thread 0)"},
           {.name = "reduce",
            .op = OpKind::kBinary,
            .description = "reduction with op (valid in thread 0)"},
           {.name = "sum_partial",
            .arithmetic_only = true,
            .description = "sum of the inputs of threads 0..num_valid-1, 1 item per thread "
                           "(valid in thread 0)",
            .single_item = true},
           {.name = "reduce_partial",
            .op = OpKind::kBinary,
            .description = "reduction with op of threads 0..num_valid-1, 1 item per thread "
                           "(valid in thread 0)",
            .single_item = true}},
      .algorithms = {"raking", "raking_commutative_only", "warp_reductions"},
      .default_algorithm = "warp_reductions",
      .algorithm_enum = "::cub::BLOCK_REDUCE_",
      .user_types = true,
      .auto_algorithms = {"raking", "raking_commutative_only", "warp_reductions"},
      .auto_baseline = "warp_reductions",
      .auto_measured_method = "sum",
      // CUB's commutative raking reorders operands: right only for a commutative operator.
      .commutative_algorithms = {"raking_commutative_only"},
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockReduce<", t, ", ", s.block().x(), ", ", AlgorithmEnum(s),
                          ", ", s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanReduce,
  };
  return f;
}

const Family& WarpReduce() {
  static const Family f{
      .name = "warp_reduce",
      .description = "cub::WarpReduce: a reduction across a logical warp",
      .methods =
          {{.name = "sum",
            .arithmetic_only = true,
            .description = "sum across the logical warp (valid in lane 0)"},
           {.name = "max", .arithmetic_only = true, .description = "maximum (valid in lane 0)"},
           {.name = "min", .arithmetic_only = true, .description = "minimum (valid in lane 0)"},
           {.name = "reduce",
            .op = OpKind::kBinary,
            .description = "reduction with op (valid in lane 0)"},
           {.name = "sum_partial",
            .arithmetic_only = true,
            .description = "sum over lanes 0..num_valid-1 (valid in lane 0)"},
           {.name = "reduce_partial",
            .op = OpKind::kBinary,
            .description = "reduction with op over lanes 0..num_valid-1 (valid in lane 0)"},
           {.name = "head_segmented_sum",
            .arithmetic_only = true,
            .description = "sum of each segment that a lane's nonzero flag starts (valid in the "
                           "segment's first lane)"},
           {.name = "tail_segmented_sum",
            .arithmetic_only = true,
            .description = "sum of each segment that a lane's nonzero flag ends (valid in the "
                           "segment's first lane)"},
           {.name = "head_segmented_reduce",
            .op = OpKind::kBinary,
            .description = "head_segmented_sum with op"},
           {.name = "tail_segmented_reduce",
            .op = OpKind::kBinary,
            .description = "tail_segmented_sum with op"}},
      .warp = true,
      .multi_item = false,
      .user_types = true,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::WarpReduce<", t, ", ", s.warp_threads(), ">");
          },
      .plan_entries = PlanReduce,
  };
  return f;
}

}  // namespace coopd::families
