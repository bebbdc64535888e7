// reduce.cuh: the device helpers rendered block_reduce and warp_reduce (with the partial and
// segmented forms) entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_reduce / warp_reduce --------------------------------------------------------------

template <class Prim, class T>
__device__ __forceinline__ T reduce_sum(void* t, T input) {
  return Prim(temp<Prim>(t)).Sum(input);
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T reduce_op(void* t, T input, Op op) {
  return Prim(temp<Prim>(t)).Reduce(input, op);
}

// Partial forms: only the inputs of linear threads 0..num_valid-1 count.
template <class Prim, class T>
__device__ __forceinline__ T reduce_sum_partial(void* t, T input, int num_valid) {
  return Prim(temp<Prim>(t)).Sum(input, num_valid);
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T reduce_op_partial(void* t, T input, int num_valid, Op op) {
  return Prim(temp<Prim>(t)).Reduce(input, op, num_valid);
}

template <class Prim, int N, class T>
__device__ __forceinline__ T reduce_sum_items(void* t, const T* input) {
  T items[N];
  load_items(input, items);
  return Prim(temp<Prim>(t)).Sum(items);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ T reduce_op_items(void* t, const T* input, Op op) {
  T items[N];
  load_items(input, items);
  return Prim(temp<Prim>(t)).Reduce(items, op);
}

// warp_reduce's segmented reductions (op is the sum functor for the *_sum methods).
template <class Prim, class T, class Op>
__device__ __forceinline__ T reduce_head_segmented(void* t, T input, int head_flag, Op op) {
  return Prim(temp<Prim>(t)).HeadSegmentedReduce(input, head_flag, op);
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T reduce_tail_segmented(void* t, T input, int tail_flag, Op op) {
  return Prim(temp<Prim>(t)).TailSegmentedReduce(input, tail_flag, op);
}

}  // namespace device
}  // namespace coop
