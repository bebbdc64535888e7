// coop/spec.h: a primitive specialization request (Spec) and the values it is made of: the
// block shape, the calling convention, frontend-supplied operators and the per-family options.
// Part of the public API; coop/client.h includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coop {

struct Dim3 {
  uint32_t x = 0;
  uint32_t y = 1;
  uint32_t z = 1;
};

enum class CallingConvention { kDefault, kC, kNumba };

// A frontend-supplied operator (proto coop.v1.UserOperator has the whole contract): a
// __device__ function `name` given as CUDA C++ source, or LTO-IR defining extern "C" `name`.
struct UserOperator {
  std::string name;
  std::string source;                       // or
  std::string ltoir;                        // bytes
  std::vector<std::string> operand_dtypes;  // empty: the spec's dtype, twice
  std::string result_dtype;                 // empty: what the method needs
  bool stateful = false;  // takes a leading void* state; entries then take `void* op_state`
  std::string digest;     // resolved specs: coopd's content digest (requests leave it empty)
  // op(a, b) == op(b, a): lets block_reduce's algorithm "auto" consider
  // raking_commutative_only. Not part of the key (resolved specs drop it).
  bool commutative = false;
  // LTO-IR operators: `void name([void* state,] R* result, const T* a, const T* b)` instead of
  // by value (what Numba compiles for records; needed on user types). Part of the digest.
  bool by_pointer = false;
};

// The messages of PrimitiveSpec's `family_options` oneof (proto/coop/v1/coop.proto has their
// whole contract). All-default means "not set".
struct ScanOptions {
  bool with_aggregate = false;  // also emit the `_aggregate` entry
};
struct ExchangeOptions {
  bool warp_time_slicing = false;  // CUB's WARP_TIME_SLICING
};
struct RadixSortOptions {
  std::string value_dtype;  // values sorted along with the keys; empty sorts keys only
  uint32_t radix_bits = 0;  // bits per pass, 1..8; 0 means 4
};
struct MergeSortOptions {
  std::string value_dtype;  // values sorted along with the keys; empty sorts keys only
};
struct TopKOptions {
  std::string value_dtype;  // values selected along with the keys; empty selects keys only
  // The partial-tile form: the entry takes `int num_valid` after k (CCCL 3.5 or newer).
  bool valid_items = false;
};
struct HistogramOptions {
  uint32_t bins = 0;  // number of counters (required, >= 1)
};
struct RunLengthDecodeOptions {
  // decoded items per thread per window (required, 1..64); items_per_thread is the runs per
  // thread
  uint32_t decoded_items_per_thread = 0;
};
struct RadixRankOptions {
  uint32_t radix_bits = 0;  // the digit's bits, 1..8 (required)
};

// A primitive specialization request; see proto/coop/v1/coop.proto for every field's allowed
// values. Empty / zero fields take coopd's documented defaults.
struct Spec {
  std::string family;  // "block_reduce", "block_scan", "warp_reduce"
  std::string method;  // "sum", "inclusive_sum", ... (empty: the family's default)
  std::string dtype;   // "float32", "int32", ...
  Dim3 block;          // block_* families
  uint32_t items_per_thread = 0;
  std::string algorithm;  // empty: CUB's default
  std::string op;         // builtin operator for methods that take one: "sum", "max", ...
  UserOperator user_op;   // instead of `op` when user_op.name is set
  // block_scan *_prefix methods: a stateful `T name(void* state, T block_aggregate)` instead
  // of the running total, when prefix_callback.name is set (the entry takes void* prefix_state).
  UserOperator prefix_callback;
  uint32_t warp_threads = 0;  // warp_* families; 0 means 32
  std::string arch;           // "sm_90"
  CallingConvention calling_convention = CallingConvention::kDefault;
  // dtype "user": an opaque struct of this many bytes and this alignment (power of two, 0 = 1).
  uint32_t user_type_size = 0;
  uint32_t user_type_align = 0;
  // Family options, one member per message of the proto's `family_options` oneof. A family
  // takes the one its Catalog entry names (CatalogFamily::family_options); set fields in at
  // most one of them (a spec that sets two is refused with INVALID_ARGUMENT before it is sent).
  ScanOptions scan;
  ExchangeOptions exchange;
  RadixSortOptions radix_sort;
  MergeSortOptions merge_sort;
  TopKOptions top_k;
  HistogramOptions histogram;
  RunLengthDecodeOptions run_length_decode;
  RadixRankOptions radix_rank;
  // The CCCL to compile against, when the daemon has several (Catalog::cccls): a name
  // ("toolkit", "default", or one the daemon configured) or a version, whole ("3.5.0") or a
  // prefix naming exactly one ("3.5"). Empty: the daemon's default. Every spec of a bundle or
  // plan names the same one.
  std::string cccl;
};

}  // namespace coop
