// wrappers.cuh: small device-side helpers that rendered translation units call.
//
// The renderer (server/render.cc) emits, per entry point, an `extern "C" __device__` function
// whose body is one call into these helpers, plus two `extern "C" __device__ const` globals
// holding sizeof/alignof of the primitive's TempStorage. coopd reads those globals back from
// the PTX that nvJitLink produces from the LTO-IR (the layout query), so TempStorage layout is
// reported by the compiler itself, never computed by hand.
//
// Temp storage is always passed as an untyped pointer to memory the frontend reserved (shared
// memory, `temp_storage.bytes` bytes aligned to `temp_storage.align`).
#pragma once

#include <cub/warp/warp_merge_sort.cuh>

namespace coop {
namespace device {

template <class Prim>
__device__ __forceinline__ typename Prim::TempStorage& temp(void* p) {
  return *static_cast<typename Prim::TempStorage*>(p);
}

// Copies N items from a pointer into a register array (N is a compile-time constant, so after
// inlining the copy disappears into registers).
template <class T, int N>
__device__ __forceinline__ void load_items(const T* src, T (&dst)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    dst[i] = src[i];
  }
}

template <class T, int N>
__device__ __forceinline__ void store_items(const T (&src)[N], T* dst) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    dst[i] = src[i];
  }
}

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

// ---- block_scan ------------------------------------------------------------------------------
// Scalar forms return the thread's output; array forms write N outputs. `_agg` forms also write
// the block-wide aggregate (every thread receives it).

template <class Prim, class T>
__device__ __forceinline__ T inclusive_sum(void* t, T input) {
  T out;
  Prim(temp<Prim>(t)).InclusiveSum(input, out);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T inclusive_sum_agg(void* t, T input, T* aggregate) {
  T out;
  Prim(temp<Prim>(t)).InclusiveSum(input, out, *aggregate);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T exclusive_sum(void* t, T input) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveSum(input, out);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T exclusive_sum_agg(void* t, T input, T* aggregate) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveSum(input, out, *aggregate);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T inclusive_scan(void* t, T input, Op op) {
  T out;
  Prim(temp<Prim>(t)).InclusiveScan(input, out, op);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T inclusive_scan_agg(void* t, T input, T* aggregate, Op op) {
  T out;
  Prim(temp<Prim>(t)).InclusiveScan(input, out, op, *aggregate);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T exclusive_scan(void* t, T input, T initial_value, Op op) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveScan(input, out, initial_value, op);
  return out;
}

template <class Prim, class T, class Op>
__device__ __forceinline__ T exclusive_scan_agg(void* t, T input, T initial_value, T* aggregate,
                                                Op op) {
  T out;
  Prim(temp<Prim>(t)).ExclusiveScan(input, out, initial_value, op, *aggregate);
  return out;
}

template <class Prim, int N, class T>
__device__ __forceinline__ void inclusive_sum_items(void* t, const T* input, T* output) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveSum(in, out);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void inclusive_sum_items_agg(void* t, const T* input, T* output,
                                                        T* aggregate) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveSum(in, out, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void exclusive_sum_items(void* t, const T* input, T* output) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveSum(in, out);
  store_items(out, output);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void exclusive_sum_items_agg(void* t, const T* input, T* output,
                                                        T* aggregate) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveSum(in, out, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_items(void* t, const T* input, T* output, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_items_agg(void* t, const T* input, T* output,
                                                         T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, op, *aggregate);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void exclusive_scan_items(void* t, const T* input, T* output,
                                                     T initial_value, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveScan(in, out, initial_value, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void exclusive_scan_items_agg(void* t, const T* input, T* output,
                                                         T initial_value, T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).ExclusiveScan(in, out, initial_value, op, *aggregate);
  store_items(out, output);
}

// Inclusive scan seeded by an initial value (CUB has it for arrays only).
template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_init_items(void* t, const T* input, T* output,
                                                          T initial_value, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, initial_value, op);
  store_items(out, output);
}

template <class Prim, int N, class T, class Op>
__device__ __forceinline__ void inclusive_scan_init_items(void* t, const T* input, T* output,
                                                          T initial_value, T* aggregate, Op op) {
  T in[N], out[N];
  load_items(input, in);
  Prim(temp<Prim>(t)).InclusiveScan(in, out, initial_value, op, *aggregate);
  store_items(out, output);
}

// ---- block_scan with a block-prefix callback ---------------------------------------------------
// CUB calls the callback in the first warp with the tile's block aggregate and uses lane 0's
// return value as the tile's prefix. RunningPrefix returns the running total and advances it,
// so consecutive tiles scan as one sequence; thread 0's *running_prefix is authoritative.

template <class T, class Op>
struct RunningPrefix {
  T* running_prefix;
  Op op;
  __device__ __forceinline__ T operator()(T block_aggregate) {
    const T prefix = *running_prefix;
    *running_prefix = op(prefix, block_aggregate);
    return prefix;
  }
};

// The rendered code passes the callback: RunningPrefix{running_prefix, op}, or a user
// operator's functor (a stateful `T cb(void* state, T block_aggregate)`).
#define COOP_SCAN_PREFIX(NAME, METHOD, OP_ARG)                                                    \
  template <class Prim, class T, class Prefix, class Op>                                          \
  __device__ __forceinline__ T NAME(void* t, T input, Prefix prefix, Op op) {                     \
    T out;                                                                                        \
    Prim(temp<Prim>(t)).METHOD(input, out OP_ARG, prefix);                                        \
    return out;                                                                                   \
  }                                                                                               \
  template <class Prim, int N, class T, class Prefix, class Op>                                   \
  __device__ __forceinline__ void NAME##_items(void* t, const T* input, T* output, Prefix prefix, \
                                               Op op) {                                           \
    T in[N], out[N];                                                                              \
    load_items(input, in);                                                                        \
    Prim(temp<Prim>(t)).METHOD(in, out OP_ARG, prefix);                                           \
    store_items(out, output);                                                                     \
  }
#define COOP_OP , op
COOP_SCAN_PREFIX(exclusive_sum_prefix, ExclusiveSum, )
COOP_SCAN_PREFIX(inclusive_sum_prefix, InclusiveSum, )
COOP_SCAN_PREFIX(exclusive_scan_prefix, ExclusiveScan, COOP_OP)
COOP_SCAN_PREFIX(inclusive_scan_prefix, InclusiveScan, COOP_OP)
#undef COOP_OP
#undef COOP_SCAN_PREFIX

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

// ---- block_shuffle ----------------------------------------------------------------------------

template <class Prim, class T>
__device__ __forceinline__ T shuffle_offset(void* t, T input, int distance) {
  T out = input;  // CUB leaves the output untouched where the source is outside the block
  Prim(temp<Prim>(t)).Offset(input, out, distance);
  return out;
}

template <class Prim, class T>
__device__ __forceinline__ T shuffle_rotate(void* t, T input, unsigned int distance) {
  T out = input;
  Prim(temp<Prim>(t)).Rotate(input, out, distance);
  return out;
}

template <class Prim, int N, class T>
__device__ __forceinline__ void shuffle_up(void* t, const T* input, T* prev) {
  T in[N], out[N];
  load_items(input, in);
  load_items(prev, out);  // keeps what CUB does not write
  Prim(temp<Prim>(t)).Up(in, out);
  store_items(out, prev);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void shuffle_down(void* t, const T* input, T* next) {
  T in[N], out[N];
  load_items(input, in);
  load_items(next, out);
  Prim(temp<Prim>(t)).Down(in, out);
  store_items(out, next);
}

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
#define COOP_COMMA ,
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
#undef COOP_COMMA

// ---- block_run_length_decode ------------------------------------------------------------------
// R runs per thread in, D decoded items per thread out (one window); returns the total size.

template <class Prim, int R, int D, class T>
__device__ __forceinline__ unsigned int run_length_decode(void* t, const T* run_values,
                                                          const unsigned int* run_lengths,
                                                          T* decoded_items,
                                                          unsigned int from_decoded_offset) {
  T values[R], items[D];
  unsigned int lengths[R], total = 0;
  load_items(run_values, values);
  load_items(run_lengths, lengths);
  Prim(temp<Prim>(t), values, lengths, total).RunLengthDecode(items, from_decoded_offset);
  store_items(items, decoded_items);
  return total;
}

template <class Prim, int R, int D, class T>
__device__ __forceinline__ unsigned int run_length_decode_with_offsets(
    void* t, const T* run_values, const unsigned int* run_lengths, T* decoded_items,
    unsigned int* relative_offsets, unsigned int from_decoded_offset) {
  T values[R], items[D];
  unsigned int lengths[R], offsets[D], total = 0;
  load_items(run_values, values);
  load_items(run_lengths, lengths);
  Prim(temp<Prim>(t), values, lengths, total).RunLengthDecode(items, offsets, from_decoded_offset);
  store_items(items, decoded_items);
  store_items(offsets, relative_offsets);
  return total;
}

// ---- block_histogram --------------------------------------------------------------------------
// counters points at the block's BINS counters (the same pointer in every thread).

template <class Prim>
__device__ __forceinline__ void init_histogram(void* t, unsigned int* counters) {
  Prim(temp<Prim>(t)).InitHistogram(counters);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void histogram(void* t, const T* samples, unsigned int* counters) {
  T v[N];
  load_items(samples, v);
  Prim(temp<Prim>(t)).Histogram(v, counters);
}

template <class Prim, int N, class T>
__device__ __forceinline__ void composite(void* t, const T* samples, unsigned int* counters) {
  T v[N];
  load_items(samples, v);
  Prim(temp<Prim>(t)).Composite(v, counters);
}

// ---- block_radix_rank -------------------------------------------------------------------------
// Ranks N unsigned keys per thread by the digit the extractor (cub::BFEDigitExtractor, made by
// the rendered code: this header comes before CUB's) takes from each key.

template <class Prim, int N, class K, class Extractor>
__device__ __forceinline__ void radix_rank_keys(void* t, const K* keys, int* ranks,
                                                Extractor extractor) {
  K k[N];
  int r[N];
  load_items(keys, k);
  Prim(temp<Prim>(t)).RankKeys(k, r, extractor);
  store_items(r, ranks);
}

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

// Defines the two layout globals the layout query reads back from PTX. SYM is the entry symbol
// prefix; PRIM the CUB primitive type.
#define COOP_LAYOUT(SYM, PRIM)                                                                  \
  extern "C" __device__ const unsigned long long SYM##__temp_bytes = sizeof(PRIM::TempStorage); \
  extern "C" __device__ const unsigned long long SYM##__temp_align = alignof(PRIM::TempStorage);
