// adjacent_difference.cuh: the device helpers rendered block_adjacent_difference entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_adjacent_difference ----------------------------------------------------------------
// input and output point at the thread's N blocked items (they may be the same array).

#define COOP_SUBTRACT(NAME, PARAMS, CALL)                                                  \
  template <class Prim, int N, class T, class Op>                                          \
  __device__ __forceinline__ void NAME(void* t, const T* input, T* output PARAMS, Op op) { \
    T in[N], out[N];                                                                       \
    load_items(input, in);                                                                 \
    Prim(temp<Prim>(t)).CALL;                                                              \
    store_items(out, output);                                                              \
  }
COOP_SUBTRACT(subtract_left, , SubtractLeft(in, out, op))
COOP_SUBTRACT(subtract_left_with_predecessor, COOP_COMMA T pred, SubtractLeft(in, out, op, pred))
COOP_SUBTRACT(subtract_left_partial, COOP_COMMA int valid_items,
              SubtractLeftPartialTile(in, out, op, valid_items))
COOP_SUBTRACT(subtract_left_partial_with_predecessor, COOP_COMMA int valid_items COOP_COMMA T pred,
              SubtractLeftPartialTile(in, out, op, valid_items, pred))
COOP_SUBTRACT(subtract_right, , SubtractRight(in, out, op))
COOP_SUBTRACT(subtract_right_with_successor, COOP_COMMA T succ, SubtractRight(in, out, op, succ))
COOP_SUBTRACT(subtract_right_partial, COOP_COMMA int valid_items,
              SubtractRightPartialTile(in, out, op, valid_items))
#undef COOP_SUBTRACT

}  // namespace device
}  // namespace coop
