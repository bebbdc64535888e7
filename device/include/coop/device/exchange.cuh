// exchange.cuh: the device helpers rendered block_exchange and warp_exchange entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_exchange ---------------------------------------------------------------------------

#define COOP_EXCHANGE(NAME, METHOD)                                                     \
  template <class Prim, int N, class T>                                                 \
  __device__ __forceinline__ void exchange_##NAME(void* t, const T* input, T* output) { \
    T in[N], out[N];                                                                    \
    load_items(input, in);                                                              \
    Prim(temp<Prim>(t)).METHOD(in, out);                                                \
    store_items(out, output);                                                           \
  }
COOP_EXCHANGE(striped_to_blocked, StripedToBlocked)
COOP_EXCHANGE(blocked_to_striped, BlockedToStriped)
COOP_EXCHANGE(warp_striped_to_blocked, WarpStripedToBlocked)
COOP_EXCHANGE(blocked_to_warp_striped, BlockedToWarpStriped)
#undef COOP_EXCHANGE

// ranks (and is_valid) point at N ints: each item's position in the tile (and whether it moves).
#define COOP_SCATTER(NAME, METHOD)                                                    \
  template <class Prim, int N, class T>                                               \
  __device__ __forceinline__ void exchange_##NAME(void* t, const T* input, T* output, \
                                                  const int* ranks) {                 \
    T in[N], out[N];                                                                  \
    int r[N];                                                                         \
    load_items(input, in);                                                            \
    load_items(ranks, r);                                                             \
    Prim(temp<Prim>(t)).METHOD(in, out, r);                                           \
    store_items(out, output);                                                         \
  }
COOP_SCATTER(scatter_to_blocked, ScatterToBlocked)
COOP_SCATTER(scatter_to_striped, ScatterToStriped)
COOP_SCATTER(scatter_to_striped_guarded, ScatterToStripedGuarded)
#undef COOP_SCATTER

template <class Prim, int N, class T>
__device__ __forceinline__ void exchange_scatter_to_striped_flagged(void* t, const T* input,
                                                                    T* output, const int* ranks,
                                                                    const int* is_valid) {
  T in[N], out[N];
  int r[N], v[N];
  load_items(input, in);
  load_items(ranks, r);
  load_items(is_valid, v);
  Prim(temp<Prim>(t)).ScatterToStripedFlagged(in, out, r, v);
  store_items(out, output);
}

}  // namespace device
}  // namespace coop
