// discontinuity.cuh: the device helpers rendered block_discontinuity entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

// ---- block_discontinuity ----------------------------------------------------------------------
// input points at the thread's N blocked items; head_flags / tail_flags at N ints each.

// Runs fn(in, heads, tails) on register copies and stores the flag arrays that were given.
template <int N, class T, class Fn>
__device__ __forceinline__ void with_flags(const T* input, int* head_flags, int* tail_flags,
                                           Fn fn) {
  T in[N];
  int heads[N], tails[N];
  load_items(input, in);
  fn(in, heads, tails);
  if (head_flags != nullptr) store_items(heads, head_flags);
  if (tail_flags != nullptr) store_items(tails, tail_flags);
}

#define COOP_FLAGS(NAME, PARAMS, HEADS, TAILS, CALL)                                      \
  template <class Prim, int N, class T, class Op>                                         \
  __device__ __forceinline__ void NAME(void* t, const T* input PARAMS, Op op) {           \
    with_flags<N>(input, HEADS, TAILS,                                                    \
                  [&](T(&in)[N], int(&h)[N], int(&tl)[N]) { Prim(temp<Prim>(t)).CALL; }); \
  }
COOP_FLAGS(flag_heads, COOP_COMMA int* head_flags, head_flags, nullptr, FlagHeads(h, in, op))
COOP_FLAGS(flag_heads_with_predecessor, COOP_COMMA int* head_flags COOP_COMMA T pred, head_flags,
           nullptr, FlagHeads(h, in, op, pred))
COOP_FLAGS(flag_tails, COOP_COMMA int* tail_flags, nullptr, tail_flags, FlagTails(tl, in, op))
COOP_FLAGS(flag_tails_with_successor, COOP_COMMA int* tail_flags COOP_COMMA T succ, nullptr,
           tail_flags, FlagTails(tl, in, op, succ))
COOP_FLAGS(flag_heads_and_tails, COOP_COMMA int* head_flags COOP_COMMA int* tail_flags, head_flags,
           tail_flags, FlagHeadsAndTails(h, tl, in, op))
COOP_FLAGS(flag_heads_and_tails_with_predecessor,
           COOP_COMMA int* head_flags COOP_COMMA int* tail_flags COOP_COMMA T pred, head_flags,
           tail_flags, FlagHeadsAndTails(h, pred, tl, in, op))
COOP_FLAGS(flag_heads_and_tails_with_successor,
           COOP_COMMA int* head_flags COOP_COMMA int* tail_flags COOP_COMMA T succ, head_flags,
           tail_flags, FlagHeadsAndTails(h, tl, succ, in, op))
COOP_FLAGS(flag_heads_and_tails_with_predecessor_and_successor,
           COOP_COMMA int* head_flags COOP_COMMA int* tail_flags COOP_COMMA T pred COOP_COMMA T
               succ,
           head_flags, tail_flags, FlagHeadsAndTails(h, pred, tl, succ, in, op))
#undef COOP_FLAGS

}  // namespace device
}  // namespace coop
