// topk.cuh: wrappers for block top-k, which first appeared in CCCL 3.3
// (cub/block/block_topk.cuh, class cub::detail::block_topk). Included by the prelude only when
// the configured CCCL headers have it; coopd refuses block_topk requests otherwise.
//
// The class changed twice under the same name (coopd's probe compile of each CCCL found both):
//   CCCL 3.3 and 3.4: NAME(keys[, values], k, begin_bit, end_bit), which ignores k and
//     radix-sorts the whole tile (so the k selected keys come first, in order);
//   CCCL 3.5: NAME<IsFullTile>(keys[, values], k, num_valid, begin_bit, end_bit), a radix
//     selection (AIR) that honours k; the k selected keys come first, in no set order;
//   CCCL 3.6 on: NAME<IsFullTile>(keys[, values], k, num_valid): the same selection on the whole
//     key, with no bit range.
// The entries keep one signature on every CCCL (frontends call them the same way): on 3.6 and
// newer a bit range other than the whole key, [0, 8 * sizeof(key)), traps rather than be
// ignored. COOP_TOPK_SELECT picks the form the headers have; a full tile ignores num_valid.
#pragma once

#include <coop/device/common.cuh>

#if defined(CCCL_VERSION) && CCCL_VERSION >= 3006000
#define COOP_TOPK_SELECT(NAME, FULL, NUM_VALID, ...) template NAME<FULL>(__VA_ARGS__, k, NUM_VALID)
#define COOP_TOPK_WHOLE_KEY(K) \
  if (begin_bit != 0 || end_bit != static_cast<int>(8 * sizeof(K))) __trap()
#elif defined(CCCL_VERSION) && CCCL_VERSION >= 3005000
#define COOP_TOPK_SELECT(NAME, FULL, NUM_VALID, ...) \
  template NAME<FULL>(__VA_ARGS__, k, NUM_VALID, begin_bit, end_bit)
#define COOP_TOPK_WHOLE_KEY(K) (void)0
#else
#define COOP_TOPK_SELECT(NAME, FULL, NUM_VALID, ...) NAME(__VA_ARGS__, k, begin_bit, end_bit)
#define COOP_TOPK_WHOLE_KEY(K) (void)0
#endif

namespace coop {
namespace device {

// keys (and values) point at the thread's N-item blocked arrays, rearranged in place so that
// the k selected keys come first in blocked order. SUFFIX "" is the full tile; "_partial" (the
// spec option top_k.valid_items; CCCL 3.5 on) takes num_valid: only the tile's first num_valid
// items, in blocked order, are candidates.
#define COOP_TOPK(NAME, SUFFIX, FULL, NUM_VALID_PARAM, NUM_VALID)                              \
  template <class Prim, int N, class K>                                                        \
  __device__ __forceinline__ void topk_##NAME##SUFFIX(void* t, K* keys, int k NUM_VALID_PARAM, \
                                                      int begin_bit, int end_bit) {            \
    COOP_TOPK_WHOLE_KEY(K);                                                                    \
    K kk[N];                                                                                   \
    load_items(keys, kk);                                                                      \
    Prim(temp<Prim>(t)).COOP_TOPK_SELECT(NAME, FULL, NUM_VALID, kk);                           \
    store_items(kk, keys);                                                                     \
  }                                                                                            \
  template <class Prim, int N, class K, class V>                                               \
  __device__ __forceinline__ void topk_##NAME##SUFFIX(                                         \
      void* t, K* keys, V* values, int k NUM_VALID_PARAM, int begin_bit, int end_bit) {        \
    COOP_TOPK_WHOLE_KEY(K);                                                                    \
    K kk[N];                                                                                   \
    V vv[N];                                                                                   \
    load_items(keys, kk);                                                                      \
    load_items(values, vv);                                                                    \
    Prim(temp<Prim>(t)).COOP_TOPK_SELECT(NAME, FULL, NUM_VALID, kk, vv);                       \
    store_items(kk, keys);                                                                     \
    store_items(vv, values);                                                                   \
  }
#define COOP_TOPK_NO_PARAM
#define COOP_TOPK_NUM_VALID_PARAM , int num_valid
COOP_TOPK(max_keys, , true, COOP_TOPK_NO_PARAM, 0)
COOP_TOPK(min_keys, , true, COOP_TOPK_NO_PARAM, 0)
COOP_TOPK(max_pairs, , true, COOP_TOPK_NO_PARAM, 0)
COOP_TOPK(min_pairs, , true, COOP_TOPK_NO_PARAM, 0)
#if defined(CCCL_VERSION) && CCCL_VERSION >= 3005000
COOP_TOPK(max_keys, _partial, false, COOP_TOPK_NUM_VALID_PARAM, num_valid)
COOP_TOPK(min_keys, _partial, false, COOP_TOPK_NUM_VALID_PARAM, num_valid)
COOP_TOPK(max_pairs, _partial, false, COOP_TOPK_NUM_VALID_PARAM, num_valid)
COOP_TOPK(min_pairs, _partial, false, COOP_TOPK_NUM_VALID_PARAM, num_valid)
#endif
#undef COOP_TOPK
#undef COOP_TOPK_NO_PARAM
#undef COOP_TOPK_NUM_VALID_PARAM
#undef COOP_TOPK_SELECT
#undef COOP_TOPK_WHOLE_KEY

}  // namespace device
}  // namespace coop
