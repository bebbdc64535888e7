// radix_sort.cuh: the device helpers rendered block_radix_sort entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_radix_sort -------------------------------------------------------------------------
// keys (and values) point at the thread's N-item blocked arrays; sorted in place.

#define COOP_RADIX_SORT(NAME, METHOD)                                                          \
  template <class Prim, int N, class K>                                                        \
  __device__ __forceinline__ void radix_##NAME(void* t, K* keys, int begin_bit, int end_bit) { \
    K k[N];                                                                                    \
    load_items(keys, k);                                                                       \
    Prim(temp<Prim>(t)).METHOD(k, begin_bit, end_bit);                                         \
    store_items(k, keys);                                                                      \
  }                                                                                            \
  template <class Prim, int N, class K, class V>                                               \
  __device__ __forceinline__ void radix_##NAME(void* t, K* keys, V* values, int begin_bit,     \
                                               int end_bit) {                                  \
    K k[N];                                                                                    \
    V v[N];                                                                                    \
    load_items(keys, k);                                                                       \
    load_items(values, v);                                                                     \
    Prim(temp<Prim>(t)).METHOD(k, v, begin_bit, end_bit);                                      \
    store_items(k, keys);                                                                      \
    store_items(v, values);                                                                    \
  }
COOP_RADIX_SORT(sort, Sort)
COOP_RADIX_SORT(sort_descending, SortDescending)
COOP_RADIX_SORT(sort_blocked_to_striped, SortBlockedToStriped)
COOP_RADIX_SORT(sort_descending_blocked_to_striped, SortDescendingBlockedToStriped)
#undef COOP_RADIX_SORT

}  // namespace device
}  // namespace coop
