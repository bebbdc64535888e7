// topk.cuh: wrappers for block top-k, which first appeared in CCCL 3.3
// (cub/block/block_topk.cuh, class cub::detail::block_topk). Included by the prelude only when
// the configured CCCL headers have it; coopd refuses block_topk requests otherwise.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// keys (and values) point at the thread's N-item blocked arrays, rearranged in place so that
// the k selected keys come first in blocked order.
#define COOP_TOPK(NAME)                                                                          \
  template <class Prim, int N, class K>                                                          \
  __device__ __forceinline__ void topk_##NAME(void* t, K* keys, int k, int begin_bit,            \
                                              int end_bit) {                                     \
    K kk[N];                                                                                     \
    load_items(keys, kk);                                                                        \
    Prim(temp<Prim>(t)).NAME(kk, k, begin_bit, end_bit);                                         \
    store_items(kk, keys);                                                                       \
  }                                                                                              \
  template <class Prim, int N, class K, class V>                                                 \
  __device__ __forceinline__ void topk_##NAME(void* t, K* keys, V* values, int k, int begin_bit, \
                                              int end_bit) {                                     \
    K kk[N];                                                                                     \
    V vv[N];                                                                                     \
    load_items(keys, kk);                                                                        \
    load_items(values, vv);                                                                      \
    Prim(temp<Prim>(t)).NAME(kk, vv, k, begin_bit, end_bit);                                     \
    store_items(kk, keys);                                                                       \
    store_items(vv, values);                                                                     \
  }
COOP_TOPK(max_keys)
COOP_TOPK(min_keys)
COOP_TOPK(max_pairs)
COOP_TOPK(min_pairs)
#undef COOP_TOPK

}  // namespace device
}  // namespace coop
