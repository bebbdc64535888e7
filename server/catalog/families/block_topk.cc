// block_topk: cub::detail::block_topk (CCCL 3.3 or newer; the toolchain probe says whether the
// configured root has it). Its methods' signatures changed in CCCL 3.5; the device wrappers
// (device/include/coop/device/topk.cuh) call the form the headers have.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeTopKOptions(const SpecContext& c, PrimitiveSpec& out) {
  const std::string& value_dtype = c.in.top_k().value_dtype();
  const bool pairs = c.method.name.find("_pairs") != std::string_view::npos;
  if (pairs && value_dtype.empty()) {
    return Invalid(c.ctx, StrCat("method ", Quote(c.method.name),
                                 " needs top_k.value_dtype (the values' dtype: one of ",
                                 AllDTypeNames(), ")"));
  }
  if (!pairs && !value_dtype.empty()) {
    return Invalid(c.ctx, StrCat("top_k.value_dtype applies only to the *_pairs methods; method ",
                                 Quote(c.method.name), " sorts keys only"));
  }
  if (absl::Status st = CheckValueDtype(c.ctx, "top_k", value_dtype); !st.ok()) return st;
  if (out.block().y() != 1 || out.block().z() != 1) {
    return Invalid(c.ctx, StrCat("block must be one-dimensional (CUB's block_topk has no "
                                 "BLOCK_DIM_Y/Z); got ",
                                 out.block().x(), "x", out.block().y(), "x", out.block().z()));
  }
  if (c.in.top_k().valid_items() && !CcclAtLeast(c.cccl_version, 3, 5)) {
    return absl::FailedPreconditionError(
        StrCat(c.ctx,
               ": top_k.valid_items (the partial-tile form, num_valid) needs CCCL 3.5 or newer; "
               "the spec compiles against CCCL ",
               c.cccl_version,
               ". Name a CCCL 3.5 or newer in cccl, or serve one with coopd --cccl NAME=DIR, e.g. "
               "the headers of the cuda-cccl 1.1.1 wheel (site-packages/cuda/cccl/headers/"
               "include)"));
  }
  out.mutable_top_k()->set_value_dtype(value_dtype);
  out.mutable_top_k()->set_valid_items(c.in.top_k().valid_items());
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanTopK(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const std::string& value_dtype = s.top_k().value_dtype();
  EntryPlan p;
  p.result = "void";
  p.params = {{t + "*", "keys"}};
  if (!value_dtype.empty()) p.params.push_back({SortValueType(value_dtype) + "*", "values"});
  p.params.push_back({"int", "k"});
  const bool partial = s.top_k().valid_items();
  if (partial) p.params.push_back({"int", "num_valid"});
  p.params.push_back({"int", "begin_bit"});
  p.params.push_back({"int", "end_bit"});
  std::string args = "temp_storage";
  for (const auto& param : p.params) args += ", " + param.second;
  p.call = StrCat("::coop::device::topk_", s.method(), partial ? "_partial" : "", "<Prim, ", n,
                  ">(", args, ")");
  p.description = StrCat(
      "the k ", s.method().rfind("max", 0) == 0 ? "largest" : "smallest", " of the tile's ",
      s.block().x() * n, " keys", value_dtype.empty() ? "" : " (with their values)",
      " come first in blocked order, compared on key bits [begin_bit, end_bit); keys (and "
      "values) are the thread's ",
      n, "-item blocked arrays, rearranged in place",
      partial ? "; only the tile's first num_valid items (blocked order) are candidates" : "");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockTopK() {
  static const Family f{
      .name = "block_topk",
      .description =
          "cub::detail::block_topk: the k largest (max_*) or smallest (min_*) keys of "
          "the block's tile, with their values for *_pairs, come first in blocked "
          "order (CCCL 3.3 or newer). CCCL 3.3 and 3.4 ignore k and sort the whole "
          "tile (the k come first in order); CCCL 3.5 on selects them by radix "
          "selection, honouring k (the k come first in no set order); CCCL 3.6 on compares "
          "whole keys: a bit range other than [0, key bits) traps",
      .methods = {{.name = "max_keys",
                   .description = "the k largest keys first in blocked order (keys in place; bits "
                                  "[begin_bit, end_bit))"},
                  {.name = "min_keys", .description = "the k smallest keys first in blocked order"},
                  {.name = "max_pairs",
                   .description = "the k largest keys first, each value moved with its key "
                                  "(top_k.value_dtype)"},
                  {.name = "min_pairs",
                   .description = "the k smallest keys first, with their values"}},
      .dtypes = DtypeRule::kRadixSortable,
      .options = PrimitiveSpec::kTopK,
      .requires_header = "cub/block/block_topk.cuh",
      .min_cccl = "3.3",
      .canonicalize_options = CanonicalizeTopKOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            // CCCL 3.3's block_topk<KeyT, BlockDimX, ItemsPerThread, ValueT>: 1D blocks only.
            return StrCat("::cub::detail::block_topk<", t, ", ", s.block().x(), ", ",
                          s.items_per_thread(), ", ", SortValueType(s.top_k().value_dtype()), ">");
          },
      .plan_entries = PlanTopK,
  };
  return f;
}

}  // namespace coopd::families
