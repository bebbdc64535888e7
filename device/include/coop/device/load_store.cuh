// load_store.cuh: the device helpers rendered block_load, block_store, warp_load and warp_store
// entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_load / block_store --------------------------------------------------------------
// items points at the thread's N-item blocked segment (registers after inlining).

template <class Prim, int N, class T>
__device__ __forceinline__ void block_load(void* t, const T* block_src, T* items) {
  T v[N];
  Prim(temp<Prim>(t)).Load(block_src, v);
  store_items(v, items);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void block_load_guarded(void* t, const T* block_src, T* items,
                                                   int valid_items) {
  T v[N];
  load_items(items, v);  // CUB leaves items past valid_items as they were: keep the caller's
  Prim(temp<Prim>(t)).Load(block_src, v, valid_items);
  store_items(v, items);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void block_load_guarded_default(void* t, const T* block_src, T* items,
                                                           int valid_items, T oob_default) {
  T v[N];
  Prim(temp<Prim>(t)).Load(block_src, v, valid_items, oob_default);
  store_items(v, items);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void block_store(void* t, T* block_dst, const T* items) {
  T v[N];
  load_items(items, v);
  Prim(temp<Prim>(t)).Store(block_dst, v);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void block_store_guarded(void* t, T* block_dst, const T* items,
                                                    int valid_items) {
  T v[N];
  load_items(items, v);
  Prim(temp<Prim>(t)).Store(block_dst, v, valid_items);
}

}  // namespace device
}  // namespace coop
