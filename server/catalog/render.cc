#include "server/catalog/render.h"

#include <algorithm>

#include "server/catalog/spec.h"
#include "server/catalog/user_op.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

// The functor of a builtin operator, of any op kind (spec.cc's OpKinds() lists them).
std::string OperatorExpr(std::string_view builtin, std::string_view c_type) {
  if (builtin == "sum") return StrCat("::cuda::std::plus<", c_type, ">{}");
  if (builtin == "difference") return StrCat("::cuda::std::minus<", c_type, ">{}");
  if (builtin == "less") return StrCat("::cuda::std::less<", c_type, ">{}");
  if (builtin == "greater") return StrCat("::cuda::std::greater<", c_type, ">{}");
  if (builtin == "equal") return StrCat("::cuda::std::equal_to<", c_type, ">{}");
  if (builtin == "not_equal") return StrCat("::cuda::std::not_equal_to<", c_type, ">{}");
  if (builtin == "max") return StrCat("::cuda::maximum<", c_type, ">{}");
  if (builtin == "min") return StrCat("::cuda::minimum<", c_type, ">{}");
  if (builtin == "bit_and") return StrCat("::cuda::std::bit_and<", c_type, ">{}");
  if (builtin == "bit_or") return StrCat("::cuda::std::bit_or<", c_type, ">{}");
  return StrCat("::cuda::std::bit_xor<", c_type, ">{}");  // bit_xor
}

// The functor type through which the primitive calls a user operator's extern "C" symbol.
std::string UserFunctorName(const coop::v1::UserOperator& user) {
  return StrCat("coop_fn_", UserOperatorSymbol(user));
}

// The operator as a functor expression: a builtin, or the user operator's functor (carrying the
// entry's `op_state` argument when the operator is stateful).
std::string OperatorExpr(const coop::v1::Operator& op, std::string_view c_type) {
  if (!op.has_user()) return OperatorExpr(op.builtin(), c_type);
  return StrCat(UserFunctorName(op.user()), "{", op.user().stateful() ? "op_state" : "", "}");
}

// For descriptions: "less", or a user operator's name.
std::string OperatorName(const coop::v1::Operator& op) {
  return op.has_user() ? op.user().name() : op.builtin();
}

// Declares a user operator's symbol and defines the functor that calls it.
std::string UserOperatorPreamble(const coop::v1::UserOperator& user) {
  const std::string t = UserOperatorOperandCType(user);
  std::vector<std::string> params, args;
  if (user.stateful()) args.push_back("state");
  for (int i = 0; i < user.operand_dtypes_size(); ++i) {
    params.push_back(StrCat("const ", t, "& x", i));
    args.push_back(StrCat("x", i));
  }
  return StrCat("\n// user operator ", user.name(), "\n", UserOperatorDeclaration(user), "\n",
                "struct ", UserFunctorName(user), " {\n", user.stateful() ? "  void* state;\n" : "",
                "  __device__ __forceinline__ ", UserOperatorResultCType(user), " operator()(",
                StrJoin(params, ", "), ") const {\n    return ", UserOperatorSymbol(user), "(",
                StrJoin(args, ", "), ");\n  }\n};\n");
}

std::string AlgorithmEnum(const PrimitiveSpec& s) {
  std::string upper;
  for (char c : s.algorithm()) upper.push_back(static_cast<char>(c == '_' ? '_' : c - 'a' + 'A'));
  if (s.family() == "block_reduce") return "::cub::BLOCK_REDUCE_" + upper;
  if (s.family() == "block_scan") return "::cub::BLOCK_SCAN_" + upper;
  if (s.family() == "block_load") return "::cub::BLOCK_LOAD_" + upper;
  if (s.family() == "block_store") return "::cub::BLOCK_STORE_" + upper;
  if (s.family() == "block_histogram") return "::cub::BLOCK_HISTO_" + upper;
  if (s.family() == "warp_load") return "::cub::WARP_LOAD_" + upper;
  if (s.family() == "warp_store") return "::cub::WARP_STORE_" + upper;
  if (s.family() == "warp_exchange") return "::cub::WARP_EXCHANGE_" + upper;
  return "";
}

// The C type of the sort options' value dtype, or CUB's NullType for keys only.
std::string SortValueType(std::string_view value_dtype) {
  if (value_dtype.empty()) return "::cub::NullType";
  return std::string(FindDType(value_dtype)->c_type);
}

std::string PrimitiveType(const PrimitiveSpec& s, std::string_view t) {
  if (s.family() == "block_topk") {
    // CCCL 3.3's block_topk<KeyT, BlockDimX, ItemsPerThread, ValueT>: 1D blocks only.
    return StrCat("::cub::detail::block_topk<", t, ", ", s.block().x(), ", ", s.items_per_thread(),
                  ", ", SortValueType(s.top_k().value_dtype()), ">");
  }
  if (s.family() == "block_radix_sort") {
    // Template order: KeyT, BLOCK_DIM_X, ITEMS_PER_THREAD, ValueT, RADIX_BITS,
    // MEMOIZE_OUTER_SCAN, INNER_SCAN_ALGORITHM, SMEM_CONFIG, BLOCK_DIM_Y, BLOCK_DIM_Z; the three
    // before the block dims are CUB's defaults.
    return StrCat("::cub::BlockRadixSort<", t, ", ", s.block().x(), ", ", s.items_per_thread(),
                  ", ", SortValueType(s.radix_sort().value_dtype()), ", ",
                  s.radix_sort().radix_bits(),
                  ", true, ::cub::BLOCK_SCAN_WARP_SCANS, ::cudaSharedMemBankSizeFourByte, ",
                  s.block().y(), ", ", s.block().z(), ">");
  }
  if (s.family() == "block_discontinuity" || s.family() == "block_adjacent_difference") {
    return StrCat(
        "::cub::",
        s.family() == "block_discontinuity" ? "BlockDiscontinuity<" : "BlockAdjacentDifference<", t,
        ", ", s.block().x(), ", ", s.block().y(), ", ", s.block().z(), ">");
  }
  if (s.family() == "block_radix_rank") {
    return StrCat("::cub::BlockRadixRank<", s.block().x(), ", ", s.radix_rank().radix_bits(), ", ",
                  s.method() == "rank_keys_descending" ? "true" : "false",
                  ", true, ::cub::BLOCK_SCAN_WARP_SCANS, ::cudaSharedMemBankSizeFourByte, ",
                  s.block().y(), ", ", s.block().z(), ">");
  }
  if (s.family() == "block_run_length_decode") {
    return StrCat("::cub::BlockRunLengthDecode<", t, ", ", s.block().x(), ", ",
                  s.items_per_thread(), ", ", s.run_length_decode().decoded_items_per_thread(),
                  ", unsigned int, ", s.block().y(), ", ", s.block().z(), ">");
  }
  if (s.family() == "block_histogram") {
    return StrCat("::cub::BlockHistogram<", t, ", ", s.block().x(), ", ", s.items_per_thread(),
                  ", ", s.histogram().bins(), ", ", AlgorithmEnum(s), ", ", s.block().y(), ", ",
                  s.block().z(), ">");
  }
  if (s.family() == "block_merge_sort") {
    return StrCat("::cub::BlockMergeSort<", t, ", ", s.block().x(), ", ", s.items_per_thread(),
                  ", ", SortValueType(s.merge_sort().value_dtype()), ", ", s.block().y(), ", ",
                  s.block().z(), ">");
  }
  if (s.family() == "warp_merge_sort") {
    return StrCat("::cub::WarpMergeSort<", t, ", ", s.items_per_thread(), ", ", s.warp_threads(),
                  ", ", SortValueType(s.merge_sort().value_dtype()), ">");
  }
  if (s.family() == "warp_reduce") {
    return StrCat("::cub::WarpReduce<", t, ", ", s.warp_threads(), ">");
  }
  if (s.family() == "warp_scan") {
    return StrCat("::cub::WarpScan<", t, ", ", s.warp_threads(), ">");
  }
  if (s.family() == "block_shuffle") {
    return StrCat("::cub::BlockShuffle<", t, ", ", s.block().x(), ", ", s.block().y(), ", ",
                  s.block().z(), ">");
  }
  if (s.family() == "block_exchange") {
    return StrCat("::cub::BlockExchange<", t, ", ", s.block().x(), ", ", s.items_per_thread(), ", ",
                  s.exchange().warp_time_slicing() ? "true" : "false", ", ", s.block().y(), ", ",
                  s.block().z(), ">");
  }
  if (s.family() == "warp_load" || s.family() == "warp_store") {
    return StrCat("::cub::", s.family() == "warp_load" ? "WarpLoad<" : "WarpStore<", t, ", ",
                  s.items_per_thread(), ", ", AlgorithmEnum(s), ", ", s.warp_threads(), ">");
  }
  if (s.family() == "warp_exchange") {
    return StrCat("::cub::WarpExchange<", t, ", ", s.items_per_thread(), ", ", s.warp_threads(),
                  ", ", AlgorithmEnum(s), ">");
  }
  if (s.family() == "block_load" || s.family() == "block_store") {
    const char* cls = s.family() == "block_load" ? "BlockLoad" : "BlockStore";
    return StrCat("::cub::", cls, "<", t, ", ", s.block().x(), ", ", s.items_per_thread(), ", ",
                  AlgorithmEnum(s), ", ", s.block().y(), ", ", s.block().z(), ">");
  }
  const char* cls = s.family() == "block_reduce" ? "BlockReduce" : "BlockScan";
  return StrCat("::cub::", cls, "<", t, ", ", s.block().x(), ", ", AlgorithmEnum(s), ", ",
                s.block().y(), ", ", s.block().z(), ">");
}

// One entry to render: its C parameter list (after temp_storage), its C result type ("void"
// when it returns nothing) and the helper call that computes it.
struct EntryPlan {
  std::string suffix;  // appended to the symbol base ("" or "_aggregate")
  std::string result;  // C result type, or "void"
  std::vector<std::pair<std::string, std::string>> params;  // (type, name) after temp_storage
  std::string call;  // expression producing the result (or statement when void)
  std::string description;
};

std::vector<EntryPlan> PlanEntries(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const bool items = n > 1;
  const std::string op = s.has_op() ? OperatorExpr(s.op(), t) : "";
  const std::string tmpl = items ? StrCat("<Prim, ", n, ">") : "<Prim>";
  std::vector<EntryPlan> plans;

  auto input_params = [&]() -> std::vector<std::pair<std::string, std::string>> {
    if (items) return {{StrCat("const ", t, "*"), "input"}};
    return {{t, "input"}};
  };

  if (s.family() == "block_reduce" || s.family() == "warp_reduce") {
    EntryPlan p;
    p.result = t;
    p.params = input_params();
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
    std::string fn =
        s.method() == "sum" || s.method() == "sum_partial" ? "reduce_sum" : "reduce_op";
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
    const std::string who = s.family() == "warp_reduce"
                                ? "lane 0 of each logical warp"
                                : "thread 0 of the block (linear thread id 0)";
    p.description =
        StrCat("block_reduce" == s.family() ? "block-wide " : "warp-wide ", s.method(),
               items ? StrCat(" of ", n, " items per thread (input points to them)") : "",
               partial ? " over the inputs of linear threads 0..num_valid-1" : "",
               "; the result is valid in ", who, " only");
    plans.push_back(std::move(p));
    return plans;
  }

  if (s.family() == "block_topk") {
    const std::string& value_dtype = s.top_k().value_dtype();
    EntryPlan p;
    p.result = "void";
    p.params = {{t + "*", "keys"}};
    if (!value_dtype.empty()) p.params.push_back({SortValueType(value_dtype) + "*", "values"});
    p.params.push_back({"int", "k"});
    p.params.push_back({"int", "begin_bit"});
    p.params.push_back({"int", "end_bit"});
    std::string args = "temp_storage";
    for (const auto& param : p.params) args += ", " + param.second;
    p.call = StrCat("::coop::device::topk_", s.method(), "<Prim, ", n, ">(", args, ")");
    p.description = StrCat(
        "the k ", s.method().rfind("max", 0) == 0 ? "largest" : "smallest", " of the tile's ",
        s.block().x() * n, " keys", value_dtype.empty() ? "" : " (with their values)",
        " come first in blocked order, compared on key bits [begin_bit, end_bit); keys (and "
        "values) are the thread's ",
        n, "-item blocked arrays, rearranged in place");
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_radix_sort" || s.family() == "block_merge_sort" ||
      s.family() == "warp_merge_sort") {
    // keys (and values) are the thread's N-item blocked arrays, sorted in place.
    const bool radix = s.family() == "block_radix_sort";
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
        guarded ? "; only the tile's first valid_items keys count, the rest become oob_default"
                : "",
        s.family() == "warp_merge_sort" ? "; temp_storage is this logical warp's own" : "");
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_discontinuity" || s.family() == "block_adjacent_difference") {
    // The method name says which arrays and neighbour items the entry takes.
    const std::string& m = s.method();
    auto has = [&](std::string_view word) { return m.find(word) != std::string::npos; };
    EntryPlan p;
    p.result = "void";
    p.params = {{StrCat("const ", t, "*"), "input"}};
    if (s.family() == "block_discontinuity") {
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
        s.family() == "block_discontinuity" ? " (flags are 0 or 1)" : "",
        has("predecessor") ? "; tile_predecessor_item is read in thread 0 only" : "",
        has("successor") ? "; tile_successor_item is read in the block's last thread only" : "");
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_radix_rank") {
    const uint32_t bits = s.radix_rank().radix_bits();
    EntryPlan p;
    p.result = "void";
    p.params = {{StrCat("const ", t, "*"), "keys"}, {"int*", "ranks"}, {"int", "begin_bit"}};
    p.call = StrCat("::coop::device::radix_rank_keys<Prim, ", n,
                    ">(temp_storage, keys, ranks, ::cub::BFEDigitExtractor<", t, ">(begin_bit, ",
                    bits, "))");
    p.description = StrCat("ranks ", n, " blocked keys per thread by bits [begin_bit, begin_bit + ",
                           bits, "), ", s.method() == "rank_keys" ? "ascending" : "descending",
                           "; ranks[i] is key i's position in the tile (stable)");
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_run_length_decode") {
    const uint32_t decoded = s.run_length_decode().decoded_items_per_thread();
    const bool offsets = s.method() == "decode_with_offsets";
    EntryPlan p;
    p.result = "unsigned int";
    p.params = {{StrCat("const ", t, "*"), "run_values"},
                {"const unsigned int*", "run_lengths"},
                {t + "*", "decoded_items"}};
    if (offsets) p.params.push_back({"unsigned int*", "relative_offsets"});
    p.params.push_back({"unsigned int", "from_decoded_offset"});
    p.call = StrCat("::coop::device::run_length_", s.method(), "<Prim, ", n, ", ", decoded,
                    ">(temp_storage, run_values, run_lengths, decoded_items",
                    offsets ? ", relative_offsets" : "", ", from_decoded_offset)");
    p.description = StrCat(
        "takes ", n,
        " runs per thread (values and lengths, blocked; trailing runs may have length "
        "0) and writes the ",
        decoded,
        " decoded items per thread of the window starting at "
        "from_decoded_offset",
        offsets ? " and their offsets within their runs" : "",
        "; returns the total decoded size (every thread); __syncthreads() before calling again");
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_histogram") {
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
    p.description =
        init ? StrCat("zeroes the counters; ", counters)
             : StrCat(s.method() == "histogram" ? "zeroes the counters, then counts " : "adds ", n,
                      " samples per thread (each < ", s.histogram().bins(),
                      s.method() == "histogram" ? ")" : ") to the counters", "; ", counters);
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_shuffle") {
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
      p.call = StrCat("::coop::device::shuffle_", s.method(), "<Prim, ", n,
                      ">(temp_storage, input, ", out, ")");
      p.description = StrCat("shifts ", n, " blocked items per thread ",
                             s.method() == "up" ? "up by one (" : "down by one (", out, ")");
    }
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_exchange" || s.family() == "warp_exchange") {
    // WarpExchange's member functions match BlockExchange's: the helpers serve both.
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
        s.family() == "warp_exchange" ? "; temp_storage is this logical warp's own" : "");
    plans.push_back(std::move(p));
    return plans;
  }
  if (s.family() == "block_load" || s.family() == "block_store" || s.family() == "warp_load" ||
      s.family() == "warp_store") {
    // Always an array of N items per thread, in a blocked arrangement; the tile pointer is the
    // block's (logical warp's) first item, the same pointer in every thread. WarpLoad/WarpStore
    // have BlockLoad/BlockStore's member functions, so they share the helpers.
    const bool load = s.family() == "block_load" || s.family() == "warp_load";
    const bool warp = s.family() == "warp_load" || s.family() == "warp_store";
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
    plans.push_back(std::move(p));
    return plans;
  }

  // block_scan and warp_scan (whose scalar forms have the same signatures)
  const bool warp = s.family() == "warp_scan";
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
    // block_scan with CUB's block-prefix callback, here a running total (wrappers.cuh).
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
        agg ? (warp ? "; also writes the logical warp's aggregate to *warp_aggregate in every lane"
                    : "; also writes the block aggregate to *block_aggregate in every thread")
            : "");
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace

RenderedUnit Render(const std::vector<PrimitiveSpec>& specs) {
  RenderedUnit unit;
  std::string body;
  std::vector<std::string> user_symbols;  // declared already
  for (size_t i = 0; i < specs.size(); ++i) {
    const PrimitiveSpec& s = specs[i];
    // A user type: an opaque struct of its size and alignment, defined once per unit.
    std::string user_c_name, user_short_name;
    if (s.has_user_type()) {
      user_c_name = UserTypeCName(s.user_type());
      user_short_name = StrCat("u", s.user_type().size(), "a", s.user_type().align());
      const std::string definition = UserTypeDefinition(s.user_type());
      if (unit.type_definitions.find(definition) == std::string::npos) {
        unit.type_definitions += definition;
        StrAppend(&body, "\n", definition);
      }
    }
    const bool user_op = s.op().has_user();
    for (const coop::v1::UserOperator* u :
         {user_op ? &s.op().user() : nullptr,
          s.has_prefix_callback() ? &s.prefix_callback() : nullptr}) {
      if (u == nullptr) continue;
      const std::string symbol = UserOperatorSymbol(*u);
      if (std::find(user_symbols.begin(), user_symbols.end(), symbol) == user_symbols.end()) {
        user_symbols.push_back(symbol);
        StrAppend(&body, UserOperatorPreamble(*u));
      }
    }
    const DType user_dt{"user", user_c_name, user_short_name, false};
    const DType& dt = s.has_user_type() ? user_dt : *FindDType(s.dtype());
    RenderedPart part;
    // The symbol names the spec, so distinct specs linked into one kernel never collide, and
    // the same spec always gets the same name (independent of toolchain and of bundling).
    const std::string spec_digest = Sha256::Hex(CanonicalEncoding(s)).substr(0, 16);
    part.symbol_base =
        StrCat("coop_", s.family(), "_", s.method(), "_", dt.short_name, "_", spec_digest);
    part.temp_bytes_symbol = part.symbol_base + "__temp_bytes";
    part.temp_align_symbol = part.symbol_base + "__temp_align";
    const std::string alias = StrCat("coop_prim_", i, "_t");
    StrAppend(&body, "\n// ", s.family(), " ", s.method(), " ", s.dtype(), "\n", "using ", alias,
              " = ", PrimitiveType(s, dt.c_type), ";\n", "COOP_LAYOUT(", part.symbol_base, ", ",
              alias, ")\n");

    const bool numba = s.calling_convention() == coop::v1::CALLING_CONVENTION_NUMBA;
    for (EntryPlan& p : PlanEntries(s, dt)) {
      if (user_op && s.op().user().stateful()) {
        p.params.push_back({"void*", "op_state"});
        p.description += "; op_state is passed to the operator unchanged";
      }
      RenderedEntry e;
      e.symbol = part.symbol_base + p.suffix;
      std::string params;
      // Numba passes a result pointer first even to a void function; such entries ignore it.
      if (numba) params = StrCat(p.result == "void" ? "void" : p.result, "* result, ");
      params += "void* temp_storage";
      for (const auto& [type, name] : p.params) StrAppend(&params, ", ", type, " ", name);
      const std::string ret = numba ? "int" : p.result;
      const std::string signature =
          StrCat("extern \"C\" __device__ ", ret, " ", e.symbol, "(", params, ")");
      e.declaration = signature + ";";
      e.description = p.description;
      std::string stmt;
      if (numba) {
        stmt = p.result == "void" ? StrCat("  ", p.call, ";\n  return 0;\n")
                                  : StrCat("  *result = ", p.call, ";\n  return 0;\n");
      } else {
        stmt =
            p.result == "void" ? StrCat("  ", p.call, ";\n") : StrCat("  return ", p.call, ";\n");
      }
      StrAppend(&body, signature, "\n{\n", "  using Prim = ", alias, ";\n", stmt, "}\n");
      part.entries.push_back(std::move(e));
    }
    unit.parts.push_back(std::move(part));
  }
  unit.source = StrCat("#include <coop/device/prelude.cuh>\n", body);
  return unit;
}

}  // namespace coopd
