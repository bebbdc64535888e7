// user_op.h: frontend-supplied operators ("typed scalar callbacks").
//
// A user operator arrives as device source or as LTO-IR plus its signature
// (proto: coop.v1.UserOperator). CanonicalUserOperator() validates it against the spec's value
// type and the operator kind the method needs, and returns the resolved form: no source or
// LTO-IR bytes, a content digest instead. The primitive's rendered wrapper calls the operator
// through one extern "C" symbol:
//   source: coop_op_<digest>, a forwarder RenderOperatorUnit() defines next to the user's code,
//           so identical operators share one compiled (and cached) LTO-IR;
//   LTO-IR: the user's own `name`, which the frontend's LTO-IR must define.
// Thread-safe: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"
#include "server/catalog/spec.h"

namespace coopd {

// Ceilings of what validation accepts. The daemon's own limit on a source, lower by default
// (1 MiB, --max-op-source-kb), is checked before (service/service.h's RequestLimits).
inline constexpr size_t kMaxOperatorSourceBytes = size_t{16} << 20;
inline constexpr size_t kMaxOperatorLtoIrBytes = size_t{16} << 20;

// What the method calls the operator for: its result type ("bool" for comparators and flag
// operators, else the value type) and its arity (operands, all of the value type).
struct OperatorSignature {
  bool returns_bool = false;
  int arity = 2;
};

// Validates `in` for a spec of value type `dtype`; errors are INVALID_ARGUMENT prefixed by
// `context` ("block_reduce") and name the field (op.user.name, op.user.operand_dtypes, ...).
// `user_type` is the spec's, for dtype "user" (its size and alignment become part of the
// operator's signature and digest).
absl::StatusOr<coop::v1::UserOperator> CanonicalUserOperator(
    const coop::v1::UserOperator& in, std::string_view context, const DType& dtype,
    const OperatorSignature& signature, const coop::v1::UserType& user_type = {});

// A pointer-ABI operator (UserOperator.by_pointer) takes its operands by pointer and, unless it
// returns bool (comparators, flag operators), writes its result through a leading pointer:
//   void name([void* state,] T* result, const T* a, const T* b);
//   bool name([void* state,] const T* a, const T* b);
// (cuda.coop's convention for values that are not numbers). True for the first form.
bool UserOperatorResultByPointer(const coop::v1::UserOperator& resolved);

// True for an operator given as source (which coopd compiles), false for LTO-IR.
bool UserOperatorIsSource(const coop::v1::UserOperator& resolved);

// The extern "C" symbol the primitive calls (resolved operators only).
std::string UserOperatorSymbol(const coop::v1::UserOperator& resolved);

// C types of a resolved operator's result and operands.
std::string UserOperatorResultCType(const coop::v1::UserOperator& resolved);
std::string UserOperatorOperandCType(const coop::v1::UserOperator& resolved);

// The forward declaration of the operator's symbol, as the primitive's unit needs it:
//   extern "C" __device__ float coop_op_ab12(void* state, float a, float b);
std::string UserOperatorDeclaration(const coop::v1::UserOperator& resolved);

// The translation unit that compiles a source operator: the user's source under
// `#line 1 "<name>.cu"` (so NVRTC's messages point at the user's lines), a static_assert that
// `name` accepts the declared operands and returns the declared result, and the forwarder
// defining UserOperatorSymbol(). `request` carries the source; `resolved` the digest.
std::string RenderOperatorUnit(const coop::v1::UserOperator& request,
                               const coop::v1::UserOperator& resolved);

// A unit with one kernel per operator that calls it, for the layout query: linking it proves
// that the operators' LTO-IR defines each symbol (LTO drops uncalled entry functions, and with
// them any reference to an undefined symbol).
std::string RenderOperatorProbe(const std::vector<coop::v1::UserOperator>& resolved);

// The canonical encoding of a source operator's compile (its cache key's request component).
std::string OperatorEncoding(const coop::v1::UserOperator& resolved, std::string_view arch);

}  // namespace coopd
