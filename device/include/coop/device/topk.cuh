// topk.cuh: wrappers for block top-k, which first appeared in CCCL 3.3
// (cub/block/block_topk.cuh, class cub::detail::block_topk). Included by the prelude only when
// the configured CCCL headers have it; coopd refuses block_topk requests otherwise.
//
// The class changed under the same name. CCCL 3.3 and 3.4: NAME(keys[, values], k, begin_bit,
// end_bit), which ignores k and radix-sorts the whole tile (so the k selected keys come first,
// in order). CCCL 3.5 on: NAME<IsFullTile>(keys[, values], k, num_valid, begin_bit, end_bit), a
// radix selection (AIR) that honours k; the k selected keys come first, in no set order among
// themselves. COOP_TOPK_CALL picks the form the headers have; a full tile ignores num_valid.
#pragma once

#include <coop/device/common.cuh>

#if defined(CCCL_VERSION) && CCCL_VERSION >= 3005000
#define COOP_TOPK_CALL(NAME, ...) template NAME<true>(__VA_ARGS__, k, 0, begin_bit, end_bit)
#else
#define COOP_TOPK_CALL(NAME, ...) NAME(__VA_ARGS__, k, begin_bit, end_bit)
#endif

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
    Prim(temp<Prim>(t)).COOP_TOPK_CALL(NAME, kk);                                                \
    store_items(kk, keys);                                                                       \
  }                                                                                              \
  template <class Prim, int N, class K, class V>                                                 \
  __device__ __forceinline__ void topk_##NAME(void* t, K* keys, V* values, int k, int begin_bit, \
                                              int end_bit) {                                     \
    K kk[N];                                                                                     \
    V vv[N];                                                                                     \
    load_items(keys, kk);                                                                        \
    load_items(values, vv);                                                                      \
    Prim(temp<Prim>(t)).COOP_TOPK_CALL(NAME, kk, vv);                                            \
    store_items(kk, keys);                                                                       \
    store_items(vv, values);                                                                     \
  }
COOP_TOPK(max_keys)
COOP_TOPK(min_keys)
COOP_TOPK(max_pairs)
COOP_TOPK(min_pairs)
#undef COOP_TOPK

#if defined(CCCL_VERSION) && CCCL_VERSION >= 3005000
// The partial-tile form (spec option top_k.valid_items; CCCL 3.5 on): only the tile's first
// num_valid items, in blocked order, are candidates.
#define COOP_TOPK_PARTIAL(NAME)                                                                 \
  template <class Prim, int N, class K>                                                         \
  __device__ __forceinline__ void topk_##NAME##_partial(void* t, K* keys, int k, int num_valid, \
                                                        int begin_bit, int end_bit) {           \
    K kk[N];                                                                                    \
    load_items(keys, kk);                                                                       \
    Prim(temp<Prim>(t)).template NAME<false>(kk, k, num_valid, begin_bit, end_bit);             \
    store_items(kk, keys);                                                                      \
  }                                                                                             \
  template <class Prim, int N, class K, class V>                                                \
  __device__ __forceinline__ void topk_##NAME##_partial(                                        \
      void* t, K* keys, V* values, int k, int num_valid, int begin_bit, int end_bit) {          \
    K kk[N];                                                                                    \
    V vv[N];                                                                                    \
    load_items(keys, kk);                                                                       \
    load_items(values, vv);                                                                     \
    Prim(temp<Prim>(t)).template NAME<false>(kk, vv, k, num_valid, begin_bit, end_bit);         \
    store_items(kk, keys);                                                                      \
    store_items(vv, values);                                                                    \
  }
COOP_TOPK_PARTIAL(max_keys)
COOP_TOPK_PARTIAL(min_keys)
COOP_TOPK_PARTIAL(max_pairs)
COOP_TOPK_PARTIAL(min_pairs)
#undef COOP_TOPK_PARTIAL
#endif
#undef COOP_TOPK_CALL

}  // namespace device
}  // namespace coop
