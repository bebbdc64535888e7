// merge_sort.cuh: the device helpers rendered block_merge_sort and warp_merge_sort entries call.
#pragma once

#include <coop/device/common.cuh>
#include <cub/warp/warp_merge_sort.cuh>

namespace coop {
namespace device {

// ---- block_merge_sort / warp_merge_sort ------------------------------------------------------
// Same arrays as radix sort; op is the comparator. The guarded forms sort the tile's first
// valid_items keys and fill the rest with oob_default.
//
// CUB 3.0.1's guarded Sort documents that it assigns oob_default past valid_items, but its merge
// leaves most of those items holding copies of other keys (found on an H200 by
// device/gpu_suite); the wrappers assign oob_default themselves, by blocked position.

// The index in the sorted tile of this thread's first item, over N items per thread.
template <class Prim>
struct SortTileRank {
  __device__ __forceinline__ static int get(int n) {
    const int linear =
        static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    return linear * n;
  }
};
template <class K, int N, int W, class V>
struct SortTileRank<::cub::WarpMergeSort<K, N, W, V>> {
  __device__ __forceinline__ static int get(int n) {
    const int linear =
        static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    return (linear % W) * n;  // the lane within its logical warp
  }
};

template <class Prim, int N, class K>
__device__ __forceinline__ void fill_past_valid(K (&k)[N], int valid_items, K oob_default) {
  const int first = SortTileRank<Prim>::get(N);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (first + i >= valid_items) k[i] = oob_default;
  }
}

#define COOP_MERGE_SORT(NAME, METHOD)                                                             \
  template <class Prim, int N, class K, class Op>                                                 \
  __device__ __forceinline__ void merge_##NAME(void* t, K* keys, Op op) {                         \
    K k[N];                                                                                       \
    load_items(keys, k);                                                                          \
    Prim(temp<Prim>(t)).METHOD(k, op);                                                            \
    store_items(k, keys);                                                                         \
  }                                                                                               \
  template <class Prim, int N, class K, class V, class Op>                                        \
  __device__ __forceinline__ void merge_##NAME(void* t, K* keys, V* values, Op op) {              \
    K k[N];                                                                                       \
    V v[N];                                                                                       \
    load_items(keys, k);                                                                          \
    load_items(values, v);                                                                        \
    Prim(temp<Prim>(t)).METHOD(k, v, op);                                                         \
    store_items(k, keys);                                                                         \
    store_items(v, values);                                                                       \
  }                                                                                               \
  template <class Prim, int N, class K, class Op>                                                 \
  __device__ __forceinline__ void merge_##NAME##_guarded(void* t, K* keys, int valid_items,       \
                                                         K oob_default, Op op) {                  \
    K k[N];                                                                                       \
    load_items(keys, k);                                                                          \
    Prim(temp<Prim>(t)).METHOD(k, op, valid_items, oob_default);                                  \
    fill_past_valid<Prim>(k, valid_items, oob_default);                                           \
    store_items(k, keys);                                                                         \
  }                                                                                               \
  template <class Prim, int N, class K, class V, class Op>                                        \
  __device__ __forceinline__ void merge_##NAME##_guarded(void* t, K* keys, V* values,             \
                                                         int valid_items, K oob_default, Op op) { \
    K k[N];                                                                                       \
    V v[N];                                                                                       \
    load_items(keys, k);                                                                          \
    load_items(values, v);                                                                        \
    Prim(temp<Prim>(t)).METHOD(k, v, op, valid_items, oob_default);                               \
    fill_past_valid<Prim>(k, valid_items, oob_default);                                           \
    store_items(k, keys);                                                                         \
    store_items(v, values);                                                                       \
  }
COOP_MERGE_SORT(sort, Sort)
COOP_MERGE_SORT(stable_sort, StableSort)
#undef COOP_MERGE_SORT

}  // namespace device
}  // namespace coop
