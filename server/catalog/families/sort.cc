// block_radix_sort, block_merge_sort and warp_merge_sort: cub::BlockRadixSort,
// cub::BlockMergeSort and cub::WarpMergeSort sort the thread's N-item blocked arrays of keys
// (and values) in place and share the entry plan.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeRadixSortOptions(const SpecContext& c, PrimitiveSpec& out) {
  const auto& o = c.in.radix_sort();
  auto* r = out.mutable_radix_sort();
  if (absl::Status st = CheckValueDtype(c.ctx, "radix_sort", o.value_dtype()); !st.ok()) {
    return st;
  }
  r->set_value_dtype(o.value_dtype());
  const uint32_t bits = o.radix_bits() == 0 ? 4 : o.radix_bits();
  if (bits > 8) {
    return Invalid(c.ctx, StrCat("radix_sort.radix_bits must be 1..8 (0 means 4), got ", bits));
  }
  r->set_radix_bits(bits);
  return absl::OkStatus();
}

absl::Status CanonicalizeMergeSortOptions(const SpecContext& c, PrimitiveSpec& out) {
  const auto& o = c.in.merge_sort();
  if (absl::Status st = CheckValueDtype(c.ctx, "merge_sort", o.value_dtype()); !st.ok()) {
    return st;
  }
  out.mutable_merge_sort()->set_value_dtype(o.value_dtype());
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanSort(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const std::string op = s.has_op() ? OperatorExpr(s.op(), t) : "";
  const bool radix = s.family() == BlockRadixSort().name;
  const std::string& value_dtype =
      radix ? s.radix_sort().value_dtype() : s.merge_sort().value_dtype();
  EntryPlan p;
  p.result = "void";
  p.params = {{t + "*", "keys"}};
  std::string args = "temp_storage, keys";
  if (!value_dtype.empty()) {
    p.params.push_back({SortValueType(value_dtype) + "*", "values"});
    args += ", values";
  }
  const bool guarded = EndsWith(s.method(), "_guarded");
  if (radix) {
    p.params.push_back({"int", "begin_bit"});
    p.params.push_back({"int", "end_bit"});
    args += ", begin_bit, end_bit";
  } else if (guarded) {
    p.params.push_back({"int", "valid_items"});
    p.params.push_back({t, "oob_default"});
    args += ", valid_items, oob_default";
  }
  if (!op.empty()) args += ", " + op;
  p.call = StrCat("::coop::device::", radix ? "radix_" : "merge_", s.method(), "<Prim, ", n, ">(",
                  args, ")");
  p.description = StrCat(
      s.method(), " of ", n, " keys", value_dtype.empty() ? "" : " and values",
      " per thread, in place",
      radix ? " by key bits [begin_bit, end_bit) (0 and 8*sizeof(key) for all)"
            : StrCat(" by ", OperatorName(s.op())),
      guarded ? "; only the tile's first valid_items keys count, the rest become oob_default" : "",
      // CUB documents BlockRadixSort and StableSort as stable, Sort as not guaranteed stable.
      radix || StartsWith(s.method(), "stable_")
          ? "; stable: keys that compare equal keep their order in the tile"
          : "; not stable: keys that compare equal may be reordered (stable_sort keeps them in "
            "order)",
      s.family() == WarpMergeSort().name ? "; temp_storage is this logical warp's own" : "");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

std::vector<Method> MergeSortMethods() {
  return {{.name = "sort",
           .op = OpKind::kComparator,
           .description = "sorts the keys (and values) of the tile by op, blocked in and out"},
          {.name = "sort_guarded",
           .op = OpKind::kComparator,
           .description = "sorts the first valid_items keys (and values); the rest of the keys "
                          "become oob_default"},
          {.name = "stable_sort",
           .op = OpKind::kComparator,
           .description = "like sort, keeping the order of equal keys"},
          {.name = "stable_sort_guarded",
           .op = OpKind::kComparator,
           .description = "like sort_guarded, keeping the order of equal keys"}};
}

}  // namespace

const Family& BlockRadixSort() {
  static const Family f{
      .name = "block_radix_sort",
      .description =
          "cub::BlockRadixSort: sorts keys (or key-value pairs) across the block by "
          "their bits [begin_bit, end_bit)",
      .methods = {{.name = "sort", .description = "ascending sort; blocked in, blocked out"},
                  {.name = "sort_descending",
                   .description = "descending sort; blocked in, blocked out"},
                  {.name = "sort_blocked_to_striped",
                   .description = "ascending sort; blocked in, striped out"},
                  {.name = "sort_descending_blocked_to_striped",
                   .description = "descending sort; blocked in, striped out"}},
      .dtypes = DtypeRule::kRadixSortable,
      .options = PrimitiveSpec::kRadixSort,
      .check = CheckRadixRankTile,  // it ranks with BlockRadixRank
      .canonicalize_options = CanonicalizeRadixSortOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            // Template order: KeyT, BLOCK_DIM_X, ITEMS_PER_THREAD, ValueT, RADIX_BITS,
            // MEMOIZE_OUTER_SCAN, INNER_SCAN_ALGORITHM, SMEM_CONFIG, BLOCK_DIM_Y, BLOCK_DIM_Z; the
            // three before the block dims are CUB's defaults.
            return StrCat("::cub::BlockRadixSort<", t, ", ", s.block().x(), ", ",
                          s.items_per_thread(), ", ", SortValueType(s.radix_sort().value_dtype()),
                          ", ", s.radix_sort().radix_bits(),
                          ", true, ::cub::BLOCK_SCAN_WARP_SCANS, ::cudaSharedMemBankSizeFourByte, ",
                          s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanSort,
  };
  return f;
}

const Family& BlockMergeSort() {
  static const Family f{
      .name = "block_merge_sort",
      .description =
          "cub::BlockMergeSort: sorts keys (or key-value pairs) across the block with "
          "a comparator",
      .methods = MergeSortMethods(),
      .user_types = true,
      .options = PrimitiveSpec::kMergeSort,
      .power_of_two_threads = true,
      .canonicalize_options = CanonicalizeMergeSortOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockMergeSort<", t, ", ", s.block().x(), ", ",
                          s.items_per_thread(), ", ", SortValueType(s.merge_sort().value_dtype()),
                          ", ", s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanSort,
  };
  return f;
}

const Family& WarpMergeSort() {
  static const Family f{
      .name = "warp_merge_sort",
      .description =
          "cub::WarpMergeSort: sorts keys (or key-value pairs) across a logical warp "
          "with a comparator",
      .methods = MergeSortMethods(),
      .warp = true,
      .user_types = true,
      .options = PrimitiveSpec::kMergeSort,
      .canonicalize_options = CanonicalizeMergeSortOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::WarpMergeSort<", t, ", ", s.items_per_thread(), ", ",
                          s.warp_threads(), ", ", SortValueType(s.merge_sort().value_dtype()), ">");
          },
      .plan_entries = PlanSort,
  };
  return f;
}

}  // namespace coopd::families
