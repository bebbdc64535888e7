// scan.cuh: the device helpers rendered block_scan and warp_scan, with and without a block-prefix
// callback entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_scan ------------------------------------------------------------------------------
// Scalar forms return the thread's output; array forms write N outputs. `_agg` forms also write
// the block-wide aggregate (every thread receives it).

template <class Prim, class T>
__device__ __forceinline__ T inclusive_sum(void* t, T input) {
  T out;
  Prim(temp<Prim>(t)).InclusiveSum(input, out);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T inclusive_sum_agg(void* t, T input, T* aggregate) {
  T out;
  Prim(temp<Prim>(t)).InclusiveSum(input, out, *aggregate);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T exclusive_sum(void* t, T input) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveSum(input, out);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T exclusive_sum_agg(void* t, T input, T* aggregate) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveSum(input, out, *aggregate);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T inclusive_scan(void* t, T input, Op op) {
  T out;
  Prim(temp<Prim>(t)).InclusiveScan(input, out, op);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T inclusive_scan_agg(void* t, T input, T* aggregate, Op op) {
  T out;
  Prim(temp<Prim>(t)).InclusiveScan(input, out, op, *aggregate);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T exclusive_scan(void* t, T input, T initial_value, Op op) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveScan(input, out, initial_value, op);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T exclusive_scan_agg(void* t, T input, T initial_value, T* aggregate,
                                                Op op) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveScan(input, out, initial_value, op, *aggregate);
  return out;
}

// Exclusive scans with no initial value (CUB's ExclusiveScan(input, output, op)): the first
// output of linear thread 0 (lane 0) is left unwritten.
template <class Prim, class T, class Op>
__device__ __forceinline__ T exclusive_scan_unseeded(void* t, T input, Op op) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveScan(input, out, op);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T exclusive_scan_unseeded_agg(void* t, T input, T* aggregate, Op op) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveScan(input, out, op, *aggregate);
  return out;
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void exclusive_scan_unseeded_items(void* t, const T* input, T* output,
                                                              Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveScan(in, out, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void exclusive_scan_unseeded_items_agg(void* t, const T* input,
                                                                  T* output, T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveScan(in, out, op, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void inclusive_sum_items(void* t, const T* input, T* output) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveSum(in, out);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void inclusive_sum_items_agg(void* t, const T* input, T* output,
                                                        T* aggregate) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveSum(in, out, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void exclusive_sum_items(void* t, const T* input, T* output) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveSum(in, out);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void exclusive_sum_items_agg(void* t, const T* input, T* output,
                                                        T* aggregate) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveSum(in, out, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_items(void* t, const T* input, T* output, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_items_agg(void* t, const T* input, T* output,
                                                         T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, op, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void exclusive_scan_items(void* t, const T* input, T* output,
                                                     T initial_value, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveScan(in, out, initial_value, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void exclusive_scan_items_agg(void* t, const T* input, T* output,
                                                         T initial_value, T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveScan(in, out, initial_value, op, *aggregate);
  store_items(out, output);
}

// Inclusive scan seeded by an initial value (CUB has it for arrays only).
template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_init_items(void* t, const T* input, T* output,
                                                          T initial_value, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, initial_value, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_init_items(void* t, const T* input, T* output,
                                                          T initial_value, T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, initial_value, op, *aggregate);
  store_items(out, output);
}

// ---- block_scan with a block-prefix callback ---------------------------------------------------
// CUB calls the callback in the first warp with the tile's block aggregate and uses lane 0's
// return value as the tile's prefix. RunningPrefix returns the running total and advances it,
// so consecutive tiles scan as one sequence; thread 0's *running_prefix is authoritative.

template <class T, class Op>
struct RunningPrefix {
  T* running_prefix;
  Op op;
  __device__ __forceinline__ T operator()(T block_aggregate) {
    const T prefix = *running_prefix;
    *running_prefix = op(prefix, block_aggregate);
    return prefix;
  }
};

// The rendered code passes the callback: RunningPrefix{running_prefix, op}, or a user
// operator's functor (a stateful `T cb(void* state, T block_aggregate)`).
#define COOP_SCAN_PREFIX(NAME, METHOD, OP_ARG)                                                    \
  template <class Prim, class T, class Prefix, class Op>                                          \
  __device__ __forceinline__ T NAME(void* t, T input, Prefix prefix, Op op) {                     \
    T out;                                                                                        \
    Prim(temp<Prim>(t)).METHOD(input, out OP_ARG, prefix);                                        \
    return out;                                                                                   \
  }                                                                                               \
  template <class Prim, int N, class T, class Prefix, class Op>                                   \
  __device__ __forceinline__ void NAME##_items(void* t, const T* input, T* output, Prefix prefix, \
                                               Op op) {                                           \
    T in[N], out[N];                                                                              \
    load_items(input, in);                                                                        \
    Prim(temp<Prim>(t)).METHOD(in, out OP_ARG, prefix);                                           \
    store_items(out, output);                                                                     \
  }
#define COOP_OP , op
COOP_SCAN_PREFIX(exclusive_sum_prefix, ExclusiveSum, )
COOP_SCAN_PREFIX(inclusive_sum_prefix, InclusiveSum, )
COOP_SCAN_PREFIX(exclusive_scan_prefix, ExclusiveScan, COOP_OP)
COOP_SCAN_PREFIX(inclusive_scan_prefix, InclusiveScan, COOP_OP)
#undef COOP_OP
#undef COOP_SCAN_PREFIX

}  // namespace device
}  // namespace coop
