#include "server/catalog/spec.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "absl/status/status.h"
#include "server/catalog/user_op.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

struct MethodInfo {
  std::string_view name;
  OpKind op;  // the operator it takes (kNone: none)
  std::string_view description;
  bool single_item = false;  // this method takes exactly one item per thread
};

// Which dtypes a family accepts.
enum class DtypeRule {
  kAny,
  // Keys CUB's radix traits can order bit-wise: every arithmetic dtype (all of DTypes() today;
  // a user-declared struct would not be).
  kRadixSortable,
  kUnsignedInteger,  // histogram samples (used as bin indices)
};

bool AcceptsDtype(DtypeRule rule, const DType& t) {
  switch (rule) {
    case DtypeRule::kRadixSortable:
      // CUB's radix traits cover every arithmetic dtype, __half and __nv_bfloat16 included.
      return true;
    case DtypeRule::kUnsignedInteger:
      return t.is_integer && t.name.rfind("uint", 0) == 0;
    default:
      return true;
  }
}

struct FamilyInfo {
  std::string_view name;
  std::string_view description;
  std::vector<MethodInfo> methods;           // first is the default
  std::vector<std::string_view> algorithms;  // empty: the family has no algorithm choice
  std::string_view default_algorithm;        // empty with algorithms: the caller must choose
  bool warp;                                 // works on a logical warp; block shape does not apply
  bool multi_item;                           // accepts items_per_thread > 1
  bool scan_options;                         // accepts ScanOptions (with_aggregate)
  // Algorithms that need the block's thread count to be a multiple of the warp size (32).
  std::vector<std::string_view> warp_multiple_algorithms;
  bool exchange_options = false;  // accepts ExchangeOptions (warp_time_slicing)
  DtypeRule dtypes = DtypeRule::kAny;
  // The PrimitiveSpec.family_options case this family accepts, besides scan/exchange above.
  PrimitiveSpec::FamilyOptionsCase options = PrimitiveSpec::FAMILY_OPTIONS_NOT_SET;
  bool power_of_two_threads = false;  // x*y*z must be a power of two (CUB static_asserts it)
  // A header (relative to the CCCL root) the family needs, and the first CCCL release with it;
  // empty: every supported release has the family.
  std::string_view requires_header = "";
  std::string_view min_cccl = "";
};

const std::vector<MethodInfo> kMergeSortMethods = {
    {"sort", OpKind::kComparator,
     "sorts the keys (and values) of the tile by op, blocked in and out"},
    {"sort_guarded", OpKind::kComparator,
     "sorts the first valid_items keys (and values); the rest of the keys become oob_default"},
    {"stable_sort", OpKind::kComparator, "like sort, keeping the order of equal keys"},
    {"stable_sort_guarded", OpKind::kComparator,
     "like sort_guarded, keeping the order of equal keys"}};

const std::vector<std::string_view> kLoadStoreAlgorithms = {
    "direct", "striped", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced"};

const std::vector<FamilyInfo>& Families() {
  static const auto* families = new std::vector<FamilyInfo>{
      {"block_reduce",
       "cub::BlockReduce: a reduction across the thread block",
       {{"sum", OpKind::kNone, "sum of every item in the block (valid in thread 0)"},
        {"max", OpKind::kNone, "maximum (valid in thread 0)"},
        {"min", OpKind::kNone, "minimum (valid in thread 0)"},
        {"reduce", OpKind::kBinary, "reduction with op (valid in thread 0)"},
        {"sum_partial", OpKind::kNone,
         "sum of the inputs of threads 0..num_valid-1, 1 item per thread (valid in thread 0)",
         true},
        {"reduce_partial", OpKind::kBinary,
         "reduction with op of threads 0..num_valid-1, 1 item per thread (valid in thread 0)",
         true}},
       {"raking", "raking_commutative_only", "warp_reductions"},
       "warp_reductions",
       false,
       true,
       false,
       {}},
      {"block_scan",
       "cub::BlockScan: a prefix scan across the thread block",
       {{"inclusive_sum", OpKind::kNone, "inclusive prefix sum"},
        {"exclusive_sum", OpKind::kNone, "exclusive prefix sum (thread 0 gets 0)"},
        {"inclusive_scan", OpKind::kBinary, "inclusive prefix scan with op"},
        {"exclusive_scan", OpKind::kBinary,
         "exclusive prefix scan with op, seeded by initial_value"},
        {"inclusive_scan_init", OpKind::kBinary,
         "inclusive prefix scan with op, seeded by initial_value (input and output are arrays "
         "even for one item per thread)"},
        {"exclusive_sum_prefix", OpKind::kNone,
         "exclusive prefix sum seeded by a running total carried across tiles"},
        {"inclusive_sum_prefix", OpKind::kNone,
         "inclusive prefix sum seeded by a running total carried across tiles"},
        {"exclusive_scan_prefix", OpKind::kBinary,
         "exclusive prefix scan with op seeded by a running total carried across tiles"},
        {"inclusive_scan_prefix", OpKind::kBinary,
         "inclusive prefix scan with op seeded by a running total carried across tiles"}},
       {"raking", "raking_memoize", "warp_scans"},
       "raking",
       false,
       true,
       true,
       {}},
      {"block_load",
       "cub::BlockLoad: a tile from global memory into a blocked arrangement in registers",
       {{"load", OpKind::kNone, "load the tile starting at block_src"},
        {"load_guarded", OpKind::kNone, "load only the tile's first valid_items items"},
        {"load_guarded_default", OpKind::kNone,
         "load the first valid_items items; the rest of the tile gets oob_default"}},
       kLoadStoreAlgorithms,
       "",  // CUB defaults to direct, often far from the best: coopd makes the caller choose
       false,
       true,
       false,
       {"warp_transpose", "warp_transpose_timesliced"}},
      {"block_store",
       "cub::BlockStore: a blocked arrangement in registers out to a tile in global memory",
       {{"store", OpKind::kNone, "store the tile starting at block_dst"},
        {"store_guarded", OpKind::kNone, "store only the tile's first valid_items items"}},
       kLoadStoreAlgorithms,
       "",
       false,
       true,
       false,
       {"warp_transpose", "warp_transpose_timesliced"}},
      {"block_exchange",
       "cub::BlockExchange: rearranges items between striped, blocked and warp-striped "
       "arrangements across the block",
       {{"striped_to_blocked", OpKind::kNone, "striped input -> blocked output"},
        {"blocked_to_striped", OpKind::kNone, "blocked input -> striped output"},
        {"warp_striped_to_blocked", OpKind::kNone, "warp-striped input -> blocked output"},
        {"blocked_to_warp_striped", OpKind::kNone, "blocked input -> warp-striped output"},
        {"scatter_to_blocked", OpKind::kNone,
         "item i goes to tile position ranks[i]; blocked output"},
        {"scatter_to_striped", OpKind::kNone,
         "item i goes to tile position ranks[i]; striped output"},
        {"scatter_to_striped_guarded", OpKind::kNone,
         "like scatter_to_striped; items with a negative rank are not moved"},
        {"scatter_to_striped_flagged", OpKind::kNone,
         "like scatter_to_striped; only items with is_valid[i] != 0 are moved"}},
       {},
       "",
       false,
       true,
       false,
       {},
       true},
      {"block_shuffle",
       "cub::BlockShuffle: moves items between threads of the block",
       {{"offset", OpKind::kNone,
         "output = the input of thread (this + distance), 1 item per thread", true},
        {"rotate", OpKind::kNone, "like offset, wrapping around the block, 1 item per thread",
         true},
        {"up", OpKind::kNone,
         "prev[i] = the item before item i in blocked order (thread 0's first is "
         "left as it was)"},
        {"down", OpKind::kNone,
         "next[i] = the item after item i in blocked order (the last thread's "
         "last is left as it was)"}},
       {},
       "",
       false,
       true,
       false,
       {}},
      {"block_radix_sort",
       "cub::BlockRadixSort: sorts keys (or key-value pairs) across the block by their bits "
       "[begin_bit, end_bit)",
       {{"sort", OpKind::kNone, "ascending sort; blocked in, blocked out"},
        {"sort_descending", OpKind::kNone, "descending sort; blocked in, blocked out"},
        {"sort_blocked_to_striped", OpKind::kNone, "ascending sort; blocked in, striped out"},
        {"sort_descending_blocked_to_striped", OpKind::kNone,
         "descending sort; blocked in, striped out"}},
       {},
       "",
       false,
       true,
       false,
       {},
       false,
       DtypeRule::kRadixSortable,
       PrimitiveSpec::kRadixSort},
      {"block_merge_sort",
       "cub::BlockMergeSort: sorts keys (or key-value pairs) across the block with a comparator",
       kMergeSortMethods,
       {},
       "",
       false,
       true,
       false,
       {},
       false,
       DtypeRule::kAny,
       PrimitiveSpec::kMergeSort,
       true},
      {"block_histogram",
       "cub::BlockHistogram: counts the block's samples (each < bins) into bins counters",
       {{"histogram", OpKind::kNone,
         "zeroes the block's counters, then counts the tile's samples into them"},
        {"init_histogram", OpKind::kNone, "zeroes the block's counters"},
        {"composite", OpKind::kNone, "adds the tile's samples to the counters (no zeroing)"}},
       {"sort", "atomic"},
       "sort",
       false,
       true,
       false,
       {},
       false,
       DtypeRule::kUnsignedInteger,
       PrimitiveSpec::kHistogram},
      {"block_discontinuity",
       "cub::BlockDiscontinuity: flags items that differ from their neighbour in blocked order",
       {{"flag_heads", OpKind::kFlag,
         "head_flags[i] = op(previous item, item i); the block's first item is flagged 1"},
        {"flag_heads_with_predecessor", OpKind::kFlag,
         "like flag_heads; the block's first item is compared with tile_predecessor_item"},
        {"flag_tails", OpKind::kFlag,
         "tail_flags[i] = op(item i, next item); the block's last item is flagged 1"},
        {"flag_tails_with_successor", OpKind::kFlag,
         "like flag_tails; the block's last item is compared with tile_successor_item"},
        {"flag_heads_and_tails", OpKind::kFlag, "flag_heads and flag_tails in one pass"},
        {"flag_heads_and_tails_with_predecessor", OpKind::kFlag,
         "heads with tile_predecessor_item, tails without a successor"},
        {"flag_heads_and_tails_with_successor", OpKind::kFlag,
         "heads without a predecessor, tails with tile_successor_item"},
        {"flag_heads_and_tails_with_predecessor_and_successor", OpKind::kFlag,
         "heads with tile_predecessor_item, tails with tile_successor_item"}},
       {},
       "",
       false,
       true,
       false,
       {}},
      {"block_adjacent_difference",
       "cub::BlockAdjacentDifference: combines each item with its neighbour in blocked order",
       {{"subtract_left", OpKind::kDifference,
         "output[i] = op(item i, previous item); the block's first item is copied"},
        {"subtract_left_with_predecessor", OpKind::kDifference,
         "like subtract_left; the block's first item is combined with tile_predecessor_item"},
        {"subtract_left_partial", OpKind::kDifference,
         "subtract_left over the tile's first valid_items items; the rest are copied"},
        {"subtract_left_partial_with_predecessor", OpKind::kDifference,
         "subtract_left_partial; the block's first item is combined with tile_predecessor_item"},
        {"subtract_right", OpKind::kDifference,
         "output[i] = op(item i, next item); the block's last item is copied"},
        {"subtract_right_with_successor", OpKind::kDifference,
         "like subtract_right; the block's last item is combined with tile_successor_item"},
        {"subtract_right_partial", OpKind::kDifference,
         "subtract_right over the tile's first valid_items items; the rest are copied"}},
       {},
       "",
       false,
       true,
       false,
       {}},
      {"block_run_length_decode",
       "cub::BlockRunLengthDecode: expands runs (value, length) into a window of decoded items",
       {{"decode", OpKind::kNone,
         "decodes the window of threads*decoded_items_per_thread items starting at "
         "from_decoded_offset; returns the total decoded size"},
        {"decode_with_offsets", OpKind::kNone,
         "decode, also writing each decoded item's offset within its run"}},
       {},
       "",
       false,
       true,
       false,
       {},
       false,
       DtypeRule::kAny,
       PrimitiveSpec::kRunLengthDecode},
      {"block_radix_rank",
       "cub::BlockRadixRank: ranks unsigned keys across the block by one digit",
       {{"rank_keys", OpKind::kNone,
         "ranks[i] = position of key i in the tile stably sorted by its digit, ascending"},
        {"rank_keys_descending", OpKind::kNone, "like rank_keys, digits descending"}},
       {},
       "",
       false,
       true,
       false,
       {},
       false,
       // RankKeys takes the keys' bits as unsigned integers: signed and float keys must be
       // mapped to an order-preserving unsigned form by the caller.
       DtypeRule::kUnsignedInteger,
       PrimitiveSpec::kRadixRank},
      {"warp_reduce",
       "cub::WarpReduce: a reduction across a logical warp",
       {{"sum", OpKind::kNone, "sum across the logical warp (valid in lane 0)"},
        {"max", OpKind::kNone, "maximum (valid in lane 0)"},
        {"min", OpKind::kNone, "minimum (valid in lane 0)"},
        {"reduce", OpKind::kBinary, "reduction with op (valid in lane 0)"},
        {"sum_partial", OpKind::kNone, "sum over lanes 0..num_valid-1 (valid in lane 0)"},
        {"reduce_partial", OpKind::kBinary,
         "reduction with op over lanes 0..num_valid-1 (valid in lane 0)"},
        {"head_segmented_sum", OpKind::kNone,
         "sum of each segment that a lane's nonzero flag starts (valid in the segment's first "
         "lane)"},
        {"tail_segmented_sum", OpKind::kNone,
         "sum of each segment that a lane's nonzero flag ends (valid in the segment's first "
         "lane)"},
        {"head_segmented_reduce", OpKind::kBinary, "head_segmented_sum with op"},
        {"tail_segmented_reduce", OpKind::kBinary, "tail_segmented_sum with op"}},
       {},
       "",
       true,
       false,
       false,
       {}},
      {"warp_scan",
       "cub::WarpScan: a prefix scan across a logical warp",
       {{"inclusive_sum", OpKind::kNone, "inclusive prefix sum"},
        {"exclusive_sum", OpKind::kNone, "exclusive prefix sum (lane 0 gets 0)"},
        {"inclusive_scan", OpKind::kBinary, "inclusive prefix scan with op"},
        {"exclusive_scan", OpKind::kBinary,
         "exclusive prefix scan with op, seeded by initial_value"}},
       {},
       "",
       true,
       false,
       true,
       {}},
      {"warp_load",
       "cub::WarpLoad: a tile from global memory into a blocked arrangement across a logical warp",
       {{"load", OpKind::kNone, "load the logical warp's tile starting at warp_src"},
        {"load_guarded", OpKind::kNone, "load only the tile's first valid_items items"},
        {"load_guarded_default", OpKind::kNone,
         "load the first valid_items items; the rest of the tile gets oob_default"}},
       {"direct", "striped", "vectorize", "transpose"},
       "",  // as block_load: the caller chooses
       true,
       true,
       false,
       {}},
      {"warp_store",
       "cub::WarpStore: a blocked arrangement across a logical warp out to global memory",
       {{"store", OpKind::kNone, "store the logical warp's tile starting at warp_dst"},
        {"store_guarded", OpKind::kNone, "store only the tile's first valid_items items"}},
       {"direct", "striped", "vectorize", "transpose"},
       "",
       true,
       true,
       false,
       {}},
      {"warp_exchange",
       "cub::WarpExchange: rearranges items between blocked and striped arrangements across a "
       "logical warp",
       {{"blocked_to_striped", OpKind::kNone, "blocked input -> striped output"},
        {"striped_to_blocked", OpKind::kNone, "striped input -> blocked output"},
        {"scatter_to_striped", OpKind::kNone,
         "item i goes to position ranks[i] of the warp's tile; striped output (smem only)"}},
       {"smem", "shuffle"},
       "smem",
       true,
       true,
       false,
       {}},
      {"warp_merge_sort",
       "cub::WarpMergeSort: sorts keys (or key-value pairs) across a logical warp with a "
       "comparator",
       kMergeSortMethods,
       {},
       "",
       true,
       true,
       false,
       {},
       false,
       DtypeRule::kAny,
       PrimitiveSpec::kMergeSort},
      {"block_topk",
       "cub::detail::block_topk: the k largest (max_*) or smallest (min_*) keys of the block's "
       "tile, with their values for *_pairs, come first in blocked order (CCCL 3.3 or newer)",
       {{"max_keys", OpKind::kNone,
         "the k largest keys first in blocked order (keys in place; bits [begin_bit, end_bit))"},
        {"min_keys", OpKind::kNone, "the k smallest keys first in blocked order"},
        {"max_pairs", OpKind::kNone,
         "the k largest keys first, each value moved with its key (top_k.value_dtype)"},
        {"min_pairs", OpKind::kNone, "the k smallest keys first, with their values"}},
       {},
       "",
       false,
       true,
       false,
       {},
       false,
       DtypeRule::kRadixSortable,
       PrimitiveSpec::kTopK,
       false,
       "cub/block/block_topk.cuh",
       "3.3"},
  };
  return *families;
}

// Families that take any type (CUB moves the values without looking inside them).
constexpr std::string_view kUserTypeFamilies =
    "block_load, block_store, block_exchange, block_shuffle, block_merge_sort, warp_merge_sort, "
    "warp_load, warp_store, warp_exchange";

bool AcceptsUserType(std::string_view family) {
  for (size_t start = 0; start < kUserTypeFamilies.size();) {
    size_t end = kUserTypeFamilies.find(", ", start);
    if (end == std::string_view::npos) end = kUserTypeFamilies.size();
    if (kUserTypeFamilies.substr(start, end - start) == family) return true;
    start = end + 2;
  }
  return false;
}

bool FamilyAvailable(const FamilyInfo& f, const TargetInfo& target) {
  return f.requires_header.empty() ||
         std::find(target.cccl_headers_present.begin(), target.cccl_headers_present.end(),
                   f.requires_header) != target.cccl_headers_present.end();
}

const FamilyInfo* FindFamily(std::string_view name) {
  for (const auto& f : Families()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

template <class Range, class Fn>
std::string JoinMapped(const Range& r, Fn fn) {
  std::vector<std::string> parts;
  for (const auto& x : r) parts.push_back(std::string(fn(x)));
  return StrJoin(parts, ", ");
}

absl::Status Invalid(std::string_view context, std::string_view detail) {
  return absl::InvalidArgumentError(StrCat(context, ": ", detail));
}

std::string Quote(std::string_view s) {
  return StrCat("\"", s, "\"");
}

std::vector<std::string_view> FamilyDtypes(const FamilyInfo& f) {
  std::vector<std::string_view> names;
  for (const auto& t : DTypes()) {
    if (AcceptsDtype(f.dtypes, t)) names.push_back(t.name);
  }
  return names;
}

// The name of a family-options field, as in the proto and in messages.
std::string_view OptionsName(PrimitiveSpec::FamilyOptionsCase c) {
  switch (c) {
    case PrimitiveSpec::kScan:
      return "scan";
    case PrimitiveSpec::kExchange:
      return "exchange";
    case PrimitiveSpec::kRadixSort:
      return "radix_sort";
    case PrimitiveSpec::kMergeSort:
      return "merge_sort";
    case PrimitiveSpec::kHistogram:
      return "histogram";
    case PrimitiveSpec::kTopK:
      return "top_k";
    case PrimitiveSpec::kRunLengthDecode:
      return "run_length_decode";
    case PrimitiveSpec::kRadixRank:
      return "radix_rank";
    default:
      return "";
  }
}

// value_dtype of the sort options: empty (keys only) or a dtype.
absl::Status CheckValueDtype(std::string_view ctx, std::string_view options,
                             const std::string& value_dtype) {
  if (value_dtype.empty() || FindDType(value_dtype) != nullptr) return absl::OkStatus();
  return Invalid(ctx, StrCat(options, ".value_dtype must be empty (keys only) or one of ",
                             JoinMapped(DTypes(), [](const DType& t) { return t.name; }), "; got ",
                             Quote(value_dtype)));
}

// A count option without a default: 0 (unset) is an error like any value past max.
absl::Status CheckRequiredCount(std::string_view ctx, std::string_view field, uint32_t value,
                                uint32_t max) {
  if (value >= 1 && value <= max) return absl::OkStatus();
  return Invalid(ctx, StrCat(field, " is required and must be 1..", max, ", got ", value));
}

}  // namespace

const std::vector<OpKindInfo>& OpKinds() {
  static const auto* kinds = new std::vector<OpKindInfo>{
      {OpKind::kBinary,
       "binary",
       "(T, T) -> T",
       {"sum", "max", "min", "bit_and", "bit_or", "bit_xor"}},
      {OpKind::kComparator, "comparator", "(T, T) -> bool", {"less", "greater"}},
      {OpKind::kFlag, "flag", "(T, T) -> bool", {"not_equal", "equal"}},
      {OpKind::kDifference, "difference", "(T, T) -> T", {"difference", "sum"}},
  };
  return *kinds;
}

const OpKindInfo& GetOpKind(OpKind kind) {
  for (const auto& k : OpKinds()) {
    if (k.kind == kind) return k;
  }
  std::abort();  // kNone has no info; callers check first
}

const std::vector<DType>& DTypes() {
  static const auto* types = new std::vector<DType>{
      {"int8", "signed char", "i8", true},     {"int16", "short", "i16", true},
      {"int32", "int", "i32", true},           {"int64", "long long", "i64", true},
      {"uint8", "unsigned char", "u8", true},  {"uint16", "unsigned short", "u16", true},
      {"uint32", "unsigned int", "u32", true}, {"uint64", "unsigned long long", "u64", true},
      {"float32", "float", "f32", false},      {"float64", "double", "f64", false},
      {"float16", "__half", "f16", false},     {"bfloat16", "__nv_bfloat16", "bf16", false},
  };
  return *types;
}

const DType* FindDType(std::string_view name) {
  for (const auto& t : DTypes()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool IsWarpFamily(std::string_view family) {
  const FamilyInfo* f = FindFamily(family);
  return f != nullptr && f->warp;
}

std::string_view CallingConventionName(coop::v1::CallingConvention cc) {
  switch (cc) {
    case coop::v1::CALLING_CONVENTION_NUMBA:
      return "numba";
    default:
      return "c";
  }
}

absl::StatusOr<PrimitiveSpec> Canonicalize(const PrimitiveSpec& in, const TargetInfo& target) {
  const FamilyInfo* fam = FindFamily(in.family());
  if (fam == nullptr) {
    return Invalid(
        "spec", StrCat("family must be one of ",
                       JoinMapped(Families(), [](const FamilyInfo& f) { return f.name; }), "; got ",
                       Quote(in.family())));
  }
  const std::string_view ctx = fam->name;
  if (!FamilyAvailable(*fam, target)) {
    return absl::FailedPreconditionError(StrCat(
        ctx, ": needs CCCL ", fam->min_cccl, " or newer (", fam->requires_header,
        "); this coopd compiles against CCCL ", target.cccl_version, " at ", target.cccl_include,
        ". Start coopd with --cccl-include pointing at newer headers, e.g. those of "
        "`pip install nvidia-cuda-cccl==13.3.3.3.1` (site-packages/nvidia/cu13/include/cccl)"));
  }
  PrimitiveSpec out;
  out.set_family(std::string(fam->name));

  // method
  const MethodInfo* method = nullptr;
  if (in.method().empty()) {
    method = &fam->methods.front();
  } else {
    for (const auto& m : fam->methods) {
      if (m.name == in.method()) method = &m;
    }
    if (method == nullptr) {
      return Invalid(ctx,
                     StrCat("method must be one of ",
                            JoinMapped(fam->methods, [](const MethodInfo& m) { return m.name; }),
                            "; got ", Quote(in.method())));
    }
  }
  out.set_method(std::string(method->name));

  // dtype
  static const DType kUserDType{"user", "", "user", false};
  const bool user_type_ok = AcceptsUserType(fam->name);
  const DType* dtype = FindDType(in.dtype());
  if (in.dtype() == "user" && user_type_ok) {
    const uint32_t size = in.user_type().size();
    const uint32_t align = in.user_type().align() == 0 ? 1 : in.user_type().align();
    if (align > 16 || (align & (align - 1)) != 0) {
      return Invalid(ctx, StrCat("user_type.align must be a power of two 1..16, got ", align));
    }
    if (size == 0 || size > 1024 || size % align != 0) {
      return Invalid(ctx, StrCat("user_type.size must be 1..1024 bytes and a multiple of "
                                 "user_type.align (",
                                 align, "), got ", size));
    }
    out.mutable_user_type()->set_size(size);
    out.mutable_user_type()->set_align(align);
    dtype = &kUserDType;
  } else if (dtype == nullptr || !AcceptsDtype(fam->dtypes, *dtype)) {
    return Invalid(
        ctx,
        StrCat(
            "dtype must be one of ", StrJoin(FamilyDtypes(*fam), ", "),
            user_type_ok ? ", or \"user\" (with user_type)" : "", "; got ", Quote(in.dtype()),
            in.dtype() == "user" ? StrCat(" (user types work in ", kUserTypeFamilies, ")") : ""));
  } else if (in.has_user_type()) {
    return Invalid(
        ctx, StrCat("user_type applies only with dtype \"user\"; got dtype ", Quote(in.dtype())));
  }
  out.set_dtype(std::string(dtype->name));

  // block shape
  if (fam->warp) {
    // The block shape does not change a warp primitive's code; drop it from the canonical spec
    // (and therefore from the key) after checking it is not nonsense.
    if (in.has_block()) {
      uint64_t x = in.block().x(), y = std::max<uint32_t>(in.block().y(), 1),
               z = std::max<uint32_t>(in.block().z(), 1);
      if (x * y * z > 1024) {
        return Invalid(ctx, StrCat("block threads (x*y*z) must be 1..1024, got ", x * y * z));
      }
    }
  } else {
    if (!in.has_block() || in.block().x() == 0) {
      return Invalid(ctx, StrCat("block.x (threads) must be 1..1024, got ",
                                 in.has_block() ? in.block().x() : 0));
    }
    const uint32_t x = in.block().x();
    const uint32_t y = in.block().y() == 0 ? 1 : in.block().y();
    const uint32_t z = in.block().z() == 0 ? 1 : in.block().z();
    if (x > 1024) return Invalid(ctx, StrCat("block.x must be 1..1024, got ", x));
    if (y > 1024) return Invalid(ctx, StrCat("block.y must be 1..1024, got ", y));
    if (z > 64) return Invalid(ctx, StrCat("block.z must be 1..64, got ", z));
    const uint64_t total = uint64_t{x} * y * z;
    if (total > 1024) {
      return Invalid(ctx, StrCat("block threads (x*y*z) must be 1..1024, got ", x, "*", y, "*", z,
                                 " = ", total));
    }
    if (fam->power_of_two_threads && (total & (total - 1)) != 0) {
      return Invalid(ctx, StrCat("block threads (x*y*z) must be a power of two, got ", x, "*", y,
                                 "*", z, " = ", total));
    }
    out.mutable_block()->set_x(x);
    out.mutable_block()->set_y(y);
    out.mutable_block()->set_z(z);
  }

  // items_per_thread
  const uint32_t items = in.items_per_thread() == 0 ? 1 : in.items_per_thread();
  if (method->single_item && items != 1) {
    return Invalid(ctx,
                   StrCat("method \"", method->name, "\" takes items_per_thread 1, got ", items));
  }
  if (!fam->multi_item && items != 1) {
    return Invalid(ctx, StrCat("items_per_thread must be 1, got ", items));
  }
  if (items > 64) {
    return Invalid(ctx, StrCat("items_per_thread must be 1..64, got ", items));
  }
  out.set_items_per_thread(items);

  // algorithm
  if (fam->algorithms.empty()) {
    if (!in.algorithm().empty()) {
      return Invalid(ctx, StrCat("algorithm does not apply (this family has none); got ",
                                 Quote(in.algorithm())));
    }
  } else {
    std::string_view algo = in.algorithm().empty() ? fam->default_algorithm : in.algorithm();
    if (algo.empty()) {
      return Invalid(ctx, StrCat("algorithm is required (one of ", StrJoin(fam->algorithms, ", "),
                                 "): CUB's default, direct, is often several times slower than "
                                 "the best choice, so coopd does not pick it silently"));
    }
    if (std::find(fam->algorithms.begin(), fam->algorithms.end(), algo) == fam->algorithms.end()) {
      return Invalid(ctx, StrCat("algorithm must be one of ", StrJoin(fam->algorithms, ", "),
                                 "; got ", Quote(in.algorithm())));
    }
    const uint64_t threads = uint64_t{out.block().x()} * out.block().y() * out.block().z();
    if (std::find(fam->warp_multiple_algorithms.begin(), fam->warp_multiple_algorithms.end(),
                  algo) != fam->warp_multiple_algorithms.end() &&
        threads % 32 != 0) {
      return Invalid(ctx, StrCat("algorithm \"", algo,
                                 "\" needs a block of a multiple of 32 threads, got ", threads));
    }
    out.set_algorithm(std::string(algo));
  }

  // operator
  if (method->op != OpKind::kNone && in.op().has_user()) {
    const OpKindInfo& kind = GetOpKind(method->op);
    OperatorSignature signature;
    signature.returns_bool = kind.kind == OpKind::kComparator || kind.kind == OpKind::kFlag;
    if (out.has_user_type() && !in.op().user().ltoir().empty()) {
      return Invalid(ctx,
                     "op.user.ltoir: operators on a user type must be given as source "
                     "(op.user.source), so coopd can check the struct's size and alignment "
                     "against user_type");
    }
    auto user = CanonicalUserOperator(in.op().user(), ctx, *dtype, signature, out.user_type());
    if (!user.ok()) return user.status();
    *out.mutable_op()->mutable_user() = std::move(*user);
  } else if (method->op != OpKind::kNone && out.has_user_type()) {
    return Invalid(ctx, StrCat("method ", Quote(method->name), " on a user type needs op.user (a ",
                               GetOpKind(method->op).name, " operator on your struct, ",
                               GetOpKind(method->op).signature,
                               "); builtin operators work on arithmetic dtypes only"));
  } else if (method->op != OpKind::kNone) {
    const OpKindInfo& kind = GetOpKind(method->op);
    const std::string allowed = StrJoin(kind.builtins, ", ");
    if (in.op().builtin().empty()) {
      return Invalid(
          ctx, StrCat("method ", Quote(method->name), " needs a ", kind.name, " operator ",
                      kind.signature, ": op.builtin must be one of ", allowed, ", or op.user"));
    }
    const std::string& op = in.op().builtin();
    if (std::find(kind.builtins.begin(), kind.builtins.end(), op) == kind.builtins.end()) {
      for (const OpKindInfo& other : OpKinds()) {
        if (std::find(other.builtins.begin(), other.builtins.end(), op) != other.builtins.end()) {
          return Invalid(
              ctx, StrCat("op.builtin ", Quote(op), " is a ", other.name, " operator, but method ",
                          Quote(method->name), " takes a ", kind.name, " operator ", kind.signature,
                          ": one of ", allowed));
        }
      }
      return Invalid(ctx, StrCat("op.builtin must be one of ", allowed, "; got ", Quote(op)));
    }
    if (op.rfind("bit_", 0) == 0 && !dtype->is_integer) {
      return Invalid(ctx, StrCat("op.builtin ", Quote(op), " needs an integer dtype; got ",
                                 Quote(dtype->name)));
    }
    out.mutable_op()->set_builtin(op);
  } else if (in.has_op()) {
    return Invalid(ctx, StrCat("op applies only to methods that take an operator; method ",
                               Quote(method->name), " does not"));
  }

  // prefix callback
  if (in.has_prefix_callback()) {
    if (!EndsWith(method->name, "_prefix")) {
      return Invalid(ctx, StrCat("prefix_callback applies only to block_scan's *_prefix methods; "
                                 "method ",
                                 Quote(method->name), " takes none"));
    }
    coop::v1::UserOperator callback = in.prefix_callback();
    callback.set_stateful(true);
    OperatorSignature signature;
    signature.arity = 1;
    auto user =
        CanonicalUserOperator(callback, StrCat(ctx, ": prefix_callback"), *dtype, signature);
    if (!user.ok()) return user.status();
    *out.mutable_prefix_callback() = std::move(*user);
  }

  // warp_threads
  if (fam->warp) {
    const uint32_t wt = in.warp_threads() == 0 ? 32 : in.warp_threads();
    if (wt > 32 || (wt & (wt - 1)) != 0) {
      return Invalid(ctx, StrCat("warp_threads must be a power of two 1..32 (1, 2, 4, 8, "
                                 "16, 32), got ",
                                 wt));
    }
    out.set_warp_threads(wt);
  } else if (in.warp_threads() != 0) {
    return Invalid(ctx,
                   StrCat("warp_threads applies only to warp_* families, got ", in.warp_threads()));
  }

  // BlockRadixRank counts digits in 16 bits and static_asserts a tile of at most 65535 keys; it
  // ranks for radix sort and for the sort histogram too.
  const uint64_t tile = uint64_t{out.block().x()} * out.block().y() * out.block().z() * items;
  if ((fam->name == "block_radix_sort" || fam->name == "block_radix_rank" ||
       (fam->name == "block_histogram" && out.algorithm() == "sort")) &&
      tile > 65535) {
    return Invalid(ctx, StrCat("block threads * items_per_thread must be at most 65535 (CUB's "
                               "radix rank counts in 16 bits), got ",
                               tile));
  }

  // CUB's WARP_EXCHANGE_SHUFFLE static_asserts both of these.
  if (fam->name == "warp_exchange" && out.algorithm() == "shuffle") {
    if (method->name == "scatter_to_striped") {
      return Invalid(ctx,
                     "method \"scatter_to_striped\" needs algorithm \"smem\"; CUB's shuffle "
                     "exchange does not scatter");
    }
    if (out.items_per_thread() != out.warp_threads()) {
      return Invalid(ctx,
                     StrCat("algorithm \"shuffle\" needs items_per_thread == warp_threads, "
                            "got ",
                            out.items_per_thread(), " items and ", out.warp_threads(), " threads"));
    }
  }

  // arch
  {
    std::string allowed =
        JoinMapped(target.supported_archs, [](int a) { return StrCat("sm_", a); });
    const std::string& arch = in.arch();
    int number = -1;
    if (arch.size() > 3 && arch.rfind("sm_", 0) == 0 &&
        std::all_of(arch.begin() + 3, arch.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        arch.size() <= 6) {
      number = std::stoi(arch.substr(3));
    }
    if (number < 0 || std::find(target.supported_archs.begin(), target.supported_archs.end(),
                                number) == target.supported_archs.end()) {
      return Invalid(ctx, StrCat("arch must be one of ", allowed,
                                 " (the architectures this NVRTC supports); got ", Quote(arch)));
    }
    out.set_arch(StrCat("sm_", number));
  }

  // calling convention
  switch (in.calling_convention()) {
    case coop::v1::CALLING_CONVENTION_UNSPECIFIED:
    case coop::v1::CALLING_CONVENTION_C:
      out.set_calling_convention(coop::v1::CALLING_CONVENTION_C);
      break;
    case coop::v1::CALLING_CONVENTION_NUMBA:
      out.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
      break;
    default:
      return Invalid(ctx, StrCat("calling_convention must be C (1) or NUMBA (2), got ",
                                 static_cast<int>(in.calling_convention())));
  }

  // family options
  if (in.family_options_case() == PrimitiveSpec::kExchange && !fam->exchange_options) {
    return Invalid(ctx, "exchange options apply only to block_exchange");
  }
  if (fam->exchange_options) {
    const bool slicing = in.exchange().warp_time_slicing();
    // CCCL 3.0.1's ScatterToStripedGuarded/Flagged index the whole tile in the time-sliced
    // buffer, which holds only one warp's items: past 32 threads they would write out of bounds.
    const uint64_t threads = uint64_t{out.block().x()} * out.block().y() * out.block().z();
    if (slicing && threads > 32 &&
        (method->name == "scatter_to_striped_guarded" ||
         method->name == "scatter_to_striped_flagged")) {
      return Invalid(ctx, StrCat("method ", Quote(method->name),
                                 " does not support exchange.warp_time_slicing with more than 32 "
                                 "threads (CUB's buffer then holds one warp's items), got ",
                                 threads));
    }
    out.mutable_exchange()->set_warp_time_slicing(slicing);
  }
  if (in.family_options_case() == PrimitiveSpec::kScan && !fam->scan_options) {
    return Invalid(ctx, "scan options apply only to block_scan");
  }
  if (fam->scan_options) {
    if (in.scan().with_aggregate() && EndsWith(method->name, "_prefix")) {
      return Invalid(ctx,
                     StrCat("scan.with_aggregate does not apply to method ", Quote(method->name),
                            ": the block aggregate goes into the running prefix"));
    }
    out.mutable_scan()->set_with_aggregate(in.scan().with_aggregate());
  }
  for (auto c :
       {PrimitiveSpec::kRadixSort, PrimitiveSpec::kMergeSort, PrimitiveSpec::kHistogram,
        PrimitiveSpec::kTopK, PrimitiveSpec::kRunLengthDecode, PrimitiveSpec::kRadixRank}) {
    if (in.family_options_case() == c && fam->options != c) {
      std::vector<std::string_view> takers;
      for (const auto& f : Families()) {
        if (f.options == c) takers.push_back(f.name);
      }
      return Invalid(ctx,
                     StrCat(OptionsName(c), " options apply only to ", StrJoin(takers, " and ")));
    }
  }
  if (fam->options == PrimitiveSpec::kRadixSort) {
    const auto& o = in.radix_sort();
    auto* r = out.mutable_radix_sort();
    if (absl::Status st = CheckValueDtype(ctx, "radix_sort", o.value_dtype()); !st.ok()) return st;
    r->set_value_dtype(o.value_dtype());
    const uint32_t bits = o.radix_bits() == 0 ? 4 : o.radix_bits();
    if (bits > 8) {
      return Invalid(ctx, StrCat("radix_sort.radix_bits must be 1..8 (0 means 4), got ", bits));
    }
    r->set_radix_bits(bits);
  }
  if (fam->options == PrimitiveSpec::kMergeSort) {
    const auto& o = in.merge_sort();
    if (absl::Status st = CheckValueDtype(ctx, "merge_sort", o.value_dtype()); !st.ok()) return st;
    out.mutable_merge_sort()->set_value_dtype(o.value_dtype());
  }
  if (fam->options == PrimitiveSpec::kHistogram) {
    const uint32_t bins = in.histogram().bins();
    if (absl::Status st =
            CheckRequiredCount(ctx, "histogram.bins (the number of counters)", bins, 65536);
        !st.ok()) {
      return st;
    }
    out.mutable_histogram()->set_bins(bins);
  }
  if (fam->options == PrimitiveSpec::kTopK) {
    const std::string& value_dtype = in.top_k().value_dtype();
    const bool pairs = method->name.find("_pairs") != std::string_view::npos;
    if (pairs && value_dtype.empty()) {
      return Invalid(ctx, StrCat("method ", Quote(method->name),
                                 " needs top_k.value_dtype (the values' dtype: one of ",
                                 JoinMapped(DTypes(), [](const DType& t) { return t.name; }), ")"));
    }
    if (!pairs && !value_dtype.empty()) {
      return Invalid(ctx, StrCat("top_k.value_dtype applies only to the *_pairs methods; method ",
                                 Quote(method->name), " sorts keys only"));
    }
    if (absl::Status st = CheckValueDtype(ctx, "top_k", value_dtype); !st.ok()) return st;
    if (out.block().y() != 1 || out.block().z() != 1) {
      return Invalid(ctx, StrCat("block must be one-dimensional (CUB's block_topk has no "
                                 "BLOCK_DIM_Y/Z); got ",
                                 out.block().x(), "x", out.block().y(), "x", out.block().z()));
    }
    out.mutable_top_k()->set_value_dtype(value_dtype);
  }
  if (fam->options == PrimitiveSpec::kRadixRank) {
    const uint32_t bits = in.radix_rank().radix_bits();
    if (absl::Status st = CheckRequiredCount(ctx, "radix_rank.radix_bits", bits, 8); !st.ok()) {
      return st;
    }
    out.mutable_radix_rank()->set_radix_bits(bits);
  }
  if (fam->options == PrimitiveSpec::kRunLengthDecode) {
    const uint32_t decoded = in.run_length_decode().decoded_items_per_thread();
    if (absl::Status st =
            CheckRequiredCount(ctx, "run_length_decode.decoded_items_per_thread", decoded, 64);
        !st.ok()) {
      return st;
    }
    out.mutable_run_length_decode()->set_decoded_items_per_thread(decoded);
  }
  return out;
}

std::string CanonicalEncoding(const PrimitiveSpec& s) {
  // One field per line, always all fields, in a fixed order. Changing this format changes every
  // key; bump kKeySchema in cache_key.cc when you do.
  return StrCat(
      "family=", s.family(), "\nmethod=", s.method(), "\ndtype=", s.dtype(),
      "\nblock=", s.block().x(), "x", s.block().y(), "x", s.block().z(),
      "\nitems_per_thread=", s.items_per_thread(), "\nalgorithm=", s.algorithm(),
      "\nop=", s.op().has_user() ? "user:" + s.op().user().digest() : s.op().builtin(),
      // Only user-type specs carry this line.
      s.has_user_type() ? StrCat("\nuser_type=", s.user_type().size(), "x", s.user_type().align())
                        : std::string(),
      "\nwarp_threads=", s.warp_threads(), "\narch=", s.arch(),
      "\ncalling_convention=", CallingConventionName(s.calling_convention()),
      "\nscan.with_aggregate=", s.has_scan() && s.scan().with_aggregate() ? 1 : 0, "\n",
      // Only block_exchange specs carry this line, so adding it changed no other key.
      s.has_exchange()
          ? StrCat("exchange.warp_time_slicing=", s.exchange().warp_time_slicing() ? 1 : 0, "\n")
          : std::string(),
      // Likewise: only the sort and histogram families' specs carry these lines.
      s.has_radix_sort() ? StrCat("radix_sort.value_dtype=", s.radix_sort().value_dtype(),
                                  "\nradix_sort.radix_bits=", s.radix_sort().radix_bits(), "\n")
                         : std::string(),
      s.has_merge_sort() ? StrCat("merge_sort.value_dtype=", s.merge_sort().value_dtype(), "\n")
                         : std::string(),
      s.has_histogram() ? StrCat("histogram.bins=", s.histogram().bins(), "\n") : std::string(),
      s.has_run_length_decode() ? StrCat("run_length_decode.decoded_items_per_thread=",
                                         s.run_length_decode().decoded_items_per_thread(), "\n")
                                : std::string(),
      s.has_radix_rank() ? StrCat("radix_rank.radix_bits=", s.radix_rank().radix_bits(), "\n")
                         : std::string(),
      s.has_top_k() ? StrCat("top_k.value_dtype=", s.top_k().value_dtype(), "\n") : std::string(),
      s.has_prefix_callback() ? StrCat("prefix_callback=user:", s.prefix_callback().digest(), "\n")
                              : std::string());
}

std::string UserTypeCName(const coop::v1::UserType& t) {
  return StrCat("coop_user_", t.size(), "_", t.align());
}

std::string UserTypeDefinition(const coop::v1::UserType& t) {
  const std::string name = UserTypeCName(t);
  std::string guard = name;
  for (char& c : guard) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return StrCat("#ifndef ", guard, "_DEFINED\n#define ", guard, "_DEFINED\nstruct alignas(",
                t.align(), ") ", name, " {\n  unsigned char bytes[", t.size(), "];\n};\n#endif\n");
}

std::vector<std::string> OptionalCcclHeaders() {
  std::vector<std::string> out;
  for (const auto& f : Families()) {
    if (!f.requires_header.empty()) out.emplace_back(f.requires_header);
  }
  return out;
}

coop::v1::CatalogResponse Catalog(const TargetInfo& target) {
  coop::v1::CatalogResponse out;
  for (const auto& f : Families()) {
    auto* pf = out.add_families();
    pf->set_name(std::string(f.name));
    pf->set_description(std::string(f.description));
    for (const auto& m : f.methods) {
      auto* pm = pf->add_methods();
      pm->set_name(std::string(m.name));
      pm->set_needs_op(m.op != OpKind::kNone);
      if (m.op != OpKind::kNone) pm->set_op_kind(std::string(GetOpKind(m.op).name));
      pm->set_description(std::string(m.description));
    }
    for (const auto& a : f.algorithms) pf->add_algorithms(std::string(a));
    pf->set_default_algorithm(std::string(f.default_algorithm));
    pf->set_warp(f.warp);
    pf->set_max_items_per_thread(f.multi_item ? 64 : 1);
    pf->set_scan_options(f.scan_options);
    for (const auto& a : f.warp_multiple_algorithms) {
      pf->add_warp_multiple_algorithms(std::string(a));
    }
    pf->set_exchange_options(f.exchange_options);
    pf->set_family_options(std::string(OptionsName(f.scan_options       ? PrimitiveSpec::kScan
                                                   : f.exchange_options ? PrimitiveSpec::kExchange
                                                                        : f.options)));
    for (const auto& t : FamilyDtypes(f)) pf->add_dtypes(std::string(t));
    pf->set_power_of_two_threads(f.power_of_two_threads);
    pf->set_available(FamilyAvailable(f, target));
    if (!f.requires_header.empty()) {
      pf->set_requires(StrCat("CCCL ", f.min_cccl, " or newer (", f.requires_header, ")"));
    }
  }
  for (const auto& t : DTypes()) out.add_dtypes(std::string(t.name));
  for (const auto& o : GetOpKind(OpKind::kBinary).builtins) out.add_builtin_ops(std::string(o));
  for (const auto& k : OpKinds()) {
    auto* pk = out.add_op_kinds();
    pk->set_name(std::string(k.name));
    pk->set_signature(std::string(k.signature));
    for (const auto& b : k.builtins) pk->add_builtins(std::string(b));
  }
  for (int a : target.supported_archs) out.add_archs(StrCat("sm_", a));
  out.add_calling_conventions("c");
  out.add_calling_conventions("numba");
  return out;
}

}  // namespace coopd
