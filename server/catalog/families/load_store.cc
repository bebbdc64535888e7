// block_load, block_store, warp_load and warp_store: cub::BlockLoad/BlockStore and
// cub::WarpLoad/WarpStore, which have the same member functions and so share the device helpers
// and the entry plan. None has a default algorithm: CUB's, direct, is often far from the best,
// so coopd makes the caller choose.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

const std::vector<std::string_view> kBlockAlgorithms = {
    "direct", "striped", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced"};
const std::vector<std::string_view> kWarpAlgorithms = {"direct", "striped", "vectorize",
                                                       "transpose"};
// "auto" never picks striped: it changes the arrangement of items[], not only the speed.
const std::vector<std::string_view> kBlockAutoAlgorithms = {
    "direct", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced"};
const std::vector<std::string_view> kWarpAutoAlgorithms = {"direct", "vectorize", "transpose"};

// Always an array of N items per thread, in a blocked arrangement; the tile pointer is the
// block's (logical warp's) first item, the same pointer in every thread.
std::vector<EntryPlan> PlanLoadStore(const PrimitiveSpec& s, const DType& dt, bool load,
                                     bool warp) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const std::string src = warp ? "warp_src" : "block_src", dst = warp ? "warp_dst" : "block_dst";
  EntryPlan p;
  p.result = "void";
  std::string args;
  if (load) {
    p.params = {{StrCat("const ", t, "*"), src}, {t + "*", "items"}};
    args = StrCat("temp_storage, ", src, ", items");
  } else {
    p.params = {{t + "*", dst}, {StrCat("const ", t, "*"), "items"}};
    args = StrCat("temp_storage, ", dst, ", items");
  }
  std::string fn = load ? "block_load" : "block_store";
  if (s.method() != "load" && s.method() != "store") {
    p.params.push_back({"int", "valid_items"});
    args += ", valid_items";
    fn += "_guarded";
  }
  if (s.method() == "load_guarded_default") {
    p.params.push_back({t, "oob_default"});
    args += ", oob_default";
    fn += "_default";
  }
  p.call = StrCat("::coop::device::", fn, "<Prim, ", n, ">(", args, ")");
  p.description = StrCat(
      load ? "loads " : "stores ", n, " items per thread (", s.algorithm(),
      s.algorithm() == "striped"
          ? "); items[] is striped: item i is tile element threadIdx + i * block threads"
          : "); items[] is this thread's blocked segment",
      s.method() == "load" || s.method() == "store" ? ""
                                                    : "; only the first valid_items of the tile",
      s.method() == "load_guarded_default" ? ", the rest set to oob_default" : "",
      warp ? "; temp_storage is this logical warp's own" : "");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

std::string BlockType(std::string_view cls, const PrimitiveSpec& s, std::string_view t) {
  return StrCat("::cub::", cls, "<", t, ", ", s.block().x(), ", ", s.items_per_thread(), ", ",
                AlgorithmEnum(s), ", ", s.block().y(), ", ", s.block().z(), ">");
}

std::string WarpType(std::string_view cls, const PrimitiveSpec& s, std::string_view t) {
  return StrCat("::cub::", cls, "<", t, ", ", s.items_per_thread(), ", ", AlgorithmEnum(s), ", ",
                s.warp_threads(), ">");
}

std::vector<Method> LoadMethods(std::string_view src) {
  return {{.name = "load", .description = src},
          {.name = "load_guarded", .description = "load only the tile's first valid_items items"},
          {.name = "load_guarded_default",
           .description = "load the first valid_items items; the rest of the tile gets "
                          "oob_default"}};
}

std::vector<Method> StoreMethods(std::string_view dst) {
  return {
      {.name = "store", .description = dst},
      {.name = "store_guarded", .description = "store only the tile's first valid_items items"}};
}

}  // namespace

const Family& BlockLoad() {
  static const Family f{
      .name = "block_load",
      .description =
          "cub::BlockLoad: a tile from global memory into a blocked arrangement in registers",
      .methods = LoadMethods("load the tile starting at block_src"),
      .algorithms = kBlockAlgorithms,
      .default_algorithm = "",  // the caller chooses
      .algorithm_enum = "::cub::BLOCK_LOAD_",
      .warp_multiple_algorithms = {"warp_transpose", "warp_transpose_timesliced"},
      .user_types = true,
      .auto_algorithms = kBlockAutoAlgorithms,
      .auto_baseline = "direct",
      .auto_measured_method = "load",
      .primitive_type = [](const PrimitiveSpec& s,
                           std::string_view t) { return BlockType("BlockLoad", s, t); },
      .plan_entries = [](const PrimitiveSpec& s,
                         const DType& dt) { return PlanLoadStore(s, dt, true, false); },
  };
  return f;
}

const Family& BlockStore() {
  static const Family f{
      .name = "block_store",
      .description =
          "cub::BlockStore: a blocked arrangement in registers out to a tile in global memory",
      .methods = StoreMethods("store the tile starting at block_dst"),
      .algorithms = kBlockAlgorithms,
      .default_algorithm = "",
      .algorithm_enum = "::cub::BLOCK_STORE_",
      .warp_multiple_algorithms = {"warp_transpose", "warp_transpose_timesliced"},
      .user_types = true,
      .auto_algorithms = kBlockAutoAlgorithms,
      .auto_baseline = "direct",
      .auto_measured_method = "store",
      .primitive_type = [](const PrimitiveSpec& s,
                           std::string_view t) { return BlockType("BlockStore", s, t); },
      .plan_entries = [](const PrimitiveSpec& s,
                         const DType& dt) { return PlanLoadStore(s, dt, false, false); },
  };
  return f;
}

const Family& WarpLoad() {
  static const Family f{
      .name = "warp_load",
      .description =
          "cub::WarpLoad: a tile from global memory into a blocked arrangement "
          "across a logical warp",
      .methods = LoadMethods("load the logical warp's tile starting at warp_src"),
      .algorithms = kWarpAlgorithms,
      .default_algorithm = "",  // as block_load: the caller chooses
      .algorithm_enum = "::cub::WARP_LOAD_",
      .warp = true,
      .user_types = true,
      .auto_algorithms = kWarpAutoAlgorithms,
      .auto_baseline = "direct",
      .auto_measured_method = "load",
      .primitive_type = [](const PrimitiveSpec& s,
                           std::string_view t) { return WarpType("WarpLoad", s, t); },
      .plan_entries = [](const PrimitiveSpec& s,
                         const DType& dt) { return PlanLoadStore(s, dt, true, true); },
  };
  return f;
}

const Family& WarpStore() {
  static const Family f{
      .name = "warp_store",
      .description =
          "cub::WarpStore: a blocked arrangement across a logical warp out to global memory",
      .methods = StoreMethods("store the logical warp's tile starting at warp_dst"),
      .algorithms = kWarpAlgorithms,
      .default_algorithm = "",
      .algorithm_enum = "::cub::WARP_STORE_",
      .warp = true,
      .user_types = true,
      .auto_algorithms = kWarpAutoAlgorithms,
      .auto_baseline = "direct",
      .auto_measured_method = "store",
      .primitive_type = [](const PrimitiveSpec& s,
                           std::string_view t) { return WarpType("WarpStore", s, t); },
      .plan_entries = [](const PrimitiveSpec& s,
                         const DType& dt) { return PlanLoadStore(s, dt, false, true); },
  };
  return f;
}

}  // namespace coopd::families
