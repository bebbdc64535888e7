// family.h: what a primitive family is, to the catalogue, the validator and the renderer.
//
// A Family is one CUB primitive (cub::BlockReduce, cub::WarpScan, ...) described once: its data
// (methods, algorithms, dtypes, options, block constraints, the header it needs) as named fields,
// and its code (the checks CUB's static_asserts require, the primitive's type, the plan of its
// entry points) as hooks. Each family is defined in server/catalog/families/ and registered in
// Families() (families/registry.cc); spec.cc and render.cc read only this description and name
// no family. ARCHITECTURE.md ("Adding a family") lists the files a new family touches.
//
// Thread-safe: the descriptions are immutable after their first use; hooks are pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "coop/v1/coop.pb.h"
#include "server/catalog/spec.h"

namespace coopd {

// One method (entry point) of a family.
struct Method {
  std::string_view name = {};
  // Uses a builtin arithmetic operator of its own (a sum, a maximum): refused on user types,
  // which have none, in families that accept them.
  bool arithmetic_only = false;
  OpKind op = OpKind::kNone;  // the operator it takes (kNone: none)
  std::string_view description = {};
  bool single_item = false;      // takes exactly one item per thread
  bool prefix_callback = false;  // may take PrimitiveSpec.prefix_callback (block_scan *_prefix)
};

// Which dtypes a family accepts.
enum class DtypeRule {
  kAny,
  // Keys CUB's radix traits can order bit-wise: every arithmetic dtype (all of DTypes() today;
  // a user-declared struct would not be).
  kRadixSortable,
  kUnsignedInteger,  // histogram samples (used as bin indices), radix rank keys
};

// What the hooks that validate a spec see.
struct SpecContext {
  std::string_view ctx;  // the error prefix: the family's name
  const coop::v1::PrimitiveSpec& in;
  const Method& method;           // the resolved method
  std::string_view cccl_version;  // of the headers the spec compiles against ("3.5.0")
};

// One entry to render: its C parameter list (after temp_storage), its C result type ("void"
// when it returns nothing) and the helper call that computes it.
struct EntryPlan {
  std::string suffix;  // appended to the symbol base ("" or "_aggregate")
  std::string result;  // C result type, or "void"
  std::vector<std::pair<std::string, std::string>> params;  // (type, name) after temp_storage
  std::string call;  // expression producing the result (or statement when void)
  std::string description;
};

struct Family {
  // ---- Data: the catalogue row ----
  std::string_view name = {};  // "block_reduce"
  std::string_view description = {};
  std::vector<Method> methods = {};               // the first is the default
  std::vector<std::string_view> algorithms = {};  // empty: the family has no algorithm choice
  std::string_view default_algorithm = {};        // empty with algorithms: the caller must choose
  // The CUB enumerator prefix an algorithm name is appended to, upper-cased
  // ("::cub::BLOCK_REDUCE_" + "RAKING").
  std::string_view algorithm_enum = {};
  // Algorithms that need the block's thread count to be a multiple of the warp size (32).
  std::vector<std::string_view> warp_multiple_algorithms = {};
  bool warp = false;       // works on a logical warp; block shape does not apply
  bool multi_item = true;  // accepts items_per_thread > 1
  DtypeRule dtypes = DtypeRule::kAny;
  bool user_types =
      false;  // accepts dtype "user" (opaque bytes; only a user operator looks inside)
  // The PrimitiveSpec.family_options case this family accepts (scan, exchange, radix_sort, ...).
  coop::v1::PrimitiveSpec::FamilyOptionsCase options =
      coop::v1::PrimitiveSpec::FAMILY_OPTIONS_NOT_SET;
  // Whether "<options> options apply only to ..." lists this family among the takers.
  bool named_in_options_errors = true;
  bool power_of_two_threads = false;  // x*y*z must be a power of two (CUB static_asserts it)
  // A header (relative to the CCCL root) the family needs, and the first CCCL release with it;
  // empty: every supported release has the family.
  std::string_view requires_header = {};
  std::string_view min_cccl = {};
  // Algorithm "auto" (docs/tuning.md): the algorithms it chooses among, in catalogue order
  // (only those that change speed, never results); empty: the family rejects "auto".
  std::vector<std::string_view> auto_algorithms = {};
  std::string_view auto_baseline = {};  // CUB's default: the fallback without a table
  // The method whose tuning-table cells decide "auto" for every method of the family.
  std::string_view auto_measured_method = {};
  // The dtype sizes (bytes) the tuning grid measures for the family: the CI coverage check
  // (tuning::CheckCoverage) wants a cell for each.
  std::vector<uint32_t> auto_grid_dtype_sizes = {1, 2, 4, 8};
  // Auto algorithms eligible only when the spec's operator is commutative.
  std::vector<std::string_view> commutative_algorithms = {};
  // An auto algorithm CUB allows only for tiles (block threads * items_per_thread) of at most
  // `max_tile` items, and why; auto never picks it for a larger tile.
  struct AutoTileLimit {
    std::string_view algorithm;
    uint64_t max_tile = 0;
    std::string_view why;
  };
  std::vector<AutoTileLimit> auto_tile_limits = {};

  // ---- Hooks: code ----
  // Checks that CUB's static_asserts require of the common fields (block, items_per_thread,
  // algorithm, warp_threads), run once they are canonical in `out`. Null: none.
  absl::Status (*check)(const SpecContext& c, const coop::v1::PrimitiveSpec& out) = nullptr;
  // Validates the family's options message of `c.in` and writes it, defaults resolved, to `out`
  // (whose other fields are canonical). Null: the family has no options.
  absl::Status (*canonicalize_options)(const SpecContext& c,
                                       coop::v1::PrimitiveSpec& out) = nullptr;
  // The CUB primitive's type for a canonical spec whose value type is the C type `t`.
  std::string (*primitive_type)(const coop::v1::PrimitiveSpec& s, std::string_view t) = nullptr;
  // The entry points of a canonical spec.
  std::vector<EntryPlan> (*plan_entries)(const coop::v1::PrimitiveSpec& s,
                                         const DType& dt) = nullptr;
};

// Every family, in catalogue order (families/registry.cc).
const std::vector<const Family*>& Families();
const Family* FindFamily(std::string_view name);

// The families that accept user types, in the order errors list them.
const std::vector<std::string_view>& UserTypeFamilyNames();

// ---- Helpers for the hooks (family.cc) ----

// Whether CCCL `version` ("3.5.0") is at least major.minor. An unreadable version is not.
bool CcclAtLeast(std::string_view version, int major, int minor);
// INVALID_ARGUMENT "context: detail".
absl::Status Invalid(std::string_view context, std::string_view detail);
std::string Quote(std::string_view s);
// "int8, int16, ...": every dtype name.
std::string AllDTypeNames();
// value_dtype of the sort options: empty (keys only) or a dtype.
absl::Status CheckValueDtype(std::string_view ctx, std::string_view options,
                             const std::string& value_dtype);
// A count option without a default: 0 (unset) is an error like any value past max.
absl::Status CheckRequiredCount(std::string_view ctx, std::string_view field, uint32_t value,
                                uint32_t max);
// Threads of a canonical block spec (x*y*z).
uint64_t BlockThreads(const coop::v1::PrimitiveSpec& s);

// The functor expression of a builtin operator, of any op kind, on C type `c_type`.
std::string OperatorExpr(std::string_view builtin, std::string_view c_type);
// The operator as a functor expression: a builtin, or the user operator's functor (carrying the
// entry's `op_state` argument when the operator is stateful).
std::string OperatorExpr(const coop::v1::Operator& op, std::string_view c_type);
// The functor type through which the primitive calls a user operator's extern "C" symbol.
std::string UserFunctorName(const coop::v1::UserOperator& user);
// For descriptions: "less", or a user operator's name.
std::string OperatorName(const coop::v1::Operator& op);
// The family's algorithm enumerator for a canonical spec ("::cub::BLOCK_REDUCE_RAKING"): its
// algorithm_enum and the algorithm upper-cased; empty for a family without one.
std::string AlgorithmEnum(const coop::v1::PrimitiveSpec& s);
// The C type of the sort options' value dtype, or CUB's NullType for keys only.
std::string SortValueType(std::string_view value_dtype);

}  // namespace coopd
