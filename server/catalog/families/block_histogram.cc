// block_histogram: cub::BlockHistogram.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeHistogramOptions(const SpecContext& c, PrimitiveSpec& out) {
  const uint32_t bins = c.in.histogram().bins();
  if (absl::Status st =
          CheckRequiredCount(c.ctx, "histogram.bins (the number of counters)", bins, 65536);
      !st.ok()) {
    return st;
  }
  out.mutable_histogram()->set_bins(bins);
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanHistogram(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  EntryPlan p;
  p.result = "void";
  const bool init = s.method() == "init_histogram";
  if (!init) p.params.push_back({StrCat("const ", t, "*"), "samples"});
  p.params.push_back({"unsigned int*", "histogram"});
  p.call = StrCat("::coop::device::", s.method(), "<Prim", init ? "" : StrCat(", ", n),
                  ">(temp_storage", init ? "" : ", samples", ", histogram)");
  const std::string counters =
      StrCat("histogram points to the block's ", s.histogram().bins(),
             " counters (the same pointer in every thread, usually shared memory)");
  // Each thread updates counters that other threads read: a barrier makes them whole.
  p.description =
      init ? StrCat("zeroes the counters; ", counters,
                    "; __syncthreads() before counting into them (composite)")
           : StrCat(s.method() == "histogram" ? "zeroes the counters, then counts " : "adds ", n,
                    " samples per thread (each < ", s.histogram().bins(),
                    s.method() == "histogram" ? ")" : ") to the counters", "; ", counters,
                    "; __syncthreads() before any thread reads the counters");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockHistogram() {
  static const Family f{
      .name = "block_histogram",
      .description =
          "cub::BlockHistogram: counts the block's samples (each < bins) into bins counters",
      .methods = {{.name = "histogram",
                   .description =
                       "zeroes the block's counters, then counts the tile's samples into them"},
                  {.name = "init_histogram", .description = "zeroes the block's counters"},
                  {.name = "composite",
                   .description = "adds the tile's samples to the counters (no zeroing)"}},
      .algorithms = {"sort", "atomic"},
      .default_algorithm = "sort",
      .algorithm_enum = "::cub::BLOCK_HISTO_",
      .dtypes = DtypeRule::kUnsignedInteger,
      .options = PrimitiveSpec::kHistogram,
      .auto_algorithms = {"sort", "atomic"},
      .auto_baseline = "sort",
      .auto_measured_method = "histogram",
      // Samples are bin indices: the grid measures 8- and 16-bit ones (up to 65536 bins).
      .auto_grid_dtype_sizes = {1, 2},
      .auto_tile_limits = {{.algorithm = "sort",
                            .max_tile = kMaxRadixRankTile,
                            .why = "ranks with BlockRadixRank, which counts in 16 bits"}},
      // The sort algorithm ranks with BlockRadixRank.
      .check =
          [](const SpecContext& c, const PrimitiveSpec& out) {
            return out.algorithm() == "sort" ? CheckRadixRankTile(c, out) : absl::OkStatus();
          },
      .canonicalize_options = CanonicalizeHistogramOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockHistogram<", t, ", ", s.block().x(), ", ",
                          s.items_per_thread(), ", ", s.histogram().bins(), ", ", AlgorithmEnum(s),
                          ", ", s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanHistogram,
  };
  return f;
}

}  // namespace coopd::families
