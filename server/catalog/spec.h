// spec.h: validation and canonicalization of primitive specs, and the catalogue they draw on.
//
// Canonicalize() is the only gate between a request and the renderer: everything it accepts
// renders and compiles. It fills every default (so the result names CUB's default algorithm,
// the logical warp size, items_per_thread, ...) and clears fields that do not apply, so two
// requests that produce the same code produce the same canonical spec and the same key.
//
// Thread-safe: free functions over immutable tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"
#include "server/catalog/tuning.h"

namespace coopd {

struct DType {
  std::string_view name;        // "float32"
  std::string_view c_type;      // "float"
  std::string_view short_name;  // "f32", used in symbol names
  bool is_integer;
  uint32_t size;  // bytes (0 for "user": the spec's user_type says)
};

// All value types this daemon accepts, in documentation order.
const std::vector<DType>& DTypes();
const DType* FindDType(std::string_view name);

// The kind of operator a method takes. A kind fixes the operator's signature (T is the spec's
// dtype), so the builtins of a kind are interchangeable and a user-supplied operator (not yet
// accepted) will be checked against the kind's signature. Add a kind here and in OpKinds().
enum class OpKind {
  kNone,        // the method takes no operator
  kBinary,      // (T, T) -> T, associative: reduce and scan
  kComparator,  // (T, T) -> bool, a strict weak order: merge sort
  kFlag,        // (T, T) -> bool, true where two neighbours are discontinuous: block_discontinuity
  kDifference,  // (T, T) -> T, combines an item with its neighbour: block_adjacent_difference
};

struct OpKindInfo {
  OpKind kind;
  std::string_view name;                   // "binary", "comparator", "flag", "difference"
  std::string_view signature;              // "(T, T) -> T"
  std::vector<std::string_view> builtins;  // the builtin operators of this kind
};

// Every kind except kNone, in documentation order.
const std::vector<OpKindInfo>& OpKinds();
const OpKindInfo& GetOpKind(OpKind kind);  // kind must not be kNone

// What Canonicalize() checks the arch against.
struct TargetInfo {
  std::vector<int> supported_archs;  // e.g. {75, 80, 86, 89, 90, 100, 120}, from NVRTC
  std::string cccl_version;          // "3.0.1"
  std::string cccl_include;          // the CCCL header root NVRTC compiles against
  // Which of OptionalCcclHeaders() that root holds (families that need the others are refused
  // with FAILED_PRECONDITION).
  std::vector<std::string> cccl_headers_present;
  // The tuning tables that resolve algorithm "auto"; null: tuning::ActiveTables().
  std::shared_ptr<const tuning::TableSet> tuning;
};

// Headers, relative to the CCCL root, that some families need and older CCCL releases lack
// ("cub/block/block_topk.cuh").
std::vector<std::string> OptionalCcclHeaders();

// The arch names Canonicalize() accepts, in order: "sm_N" for each of `supported_archs`, and
// for N >= 90 also "sm_Na", the arch-specific feature set (sm_90a: what CuTe DSL kernels for an
// H100/H200 target). sm_90 and sm_90a are different specs (different keys and symbols).
std::vector<std::string> ArchNames(const std::vector<int>& supported_archs);

// INVALID_ARGUMENT "ctx: arch must be one of <ArchNames> (...); got ..." unless `arch` is one of
// ArchNames(target.supported_archs): Canonicalize's arch check, for callers that have an arch
// but no spec (the daemon's --prewarm).
absl::Status CheckArch(std::string_view ctx, std::string_view arch, const TargetInfo& target);

// Validates `in` and returns the canonical spec, or INVALID_ARGUMENT naming the field, the value
// received and the values allowed, e.g.
//   block_reduce: items_per_thread must be 1..64, got 0
// A family the configured CCCL headers lack gets FAILED_PRECONDITION naming the CCCL release it
// needs.
// Algorithm "auto" is resolved here (tuning.h) to a concrete algorithm, which the result names:
// an auto spec and the explicit spec for the algorithm it chose have the same canonical form.
// When `in` asks for "auto" and `auto_explanation` is not null, it receives how (its `choice`
// is what the reply reports).
absl::StatusOr<coop::v1::PrimitiveSpec> Canonicalize(
    const coop::v1::PrimitiveSpec& in, const TargetInfo& target,
    coop::v1::AutoExplanation* auto_explanation = nullptr);

// A deterministic, human-readable encoding of a canonical spec: the "canonical request"
// component of the cache key. Fields are named, so explain output can diff two of them.
std::string CanonicalEncoding(const coop::v1::PrimitiveSpec& canonical);

// The catalogue, generated from the tables Canonicalize() validates against.
coop::v1::CatalogResponse Catalog(const TargetInfo& target);

// Names for messages: "c" / "numba".
std::string_view CallingConventionName(coop::v1::CallingConvention cc);

// The C name and the (include-guarded) definition of a user type, e.g. coop_user_12_4.
std::string UserTypeCName(const coop::v1::UserType& t);
std::string UserTypeDefinition(const coop::v1::UserType& t);

// True for families whose entry points work on a logical warp rather than a block.
bool IsWarpFamily(std::string_view family);

}  // namespace coopd
