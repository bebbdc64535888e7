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

}  // namespace device
}  // namespace coop

// Defines the two layout globals the layout query reads back from PTX. SYM is the entry symbol
// prefix; PRIM the CUB primitive type.
#define COOP_LAYOUT(SYM, PRIM)                                                                  \
  extern "C" __device__ const unsigned long long SYM##__temp_bytes = sizeof(PRIM::TempStorage); \
  extern "C" __device__ const unsigned long long SYM##__temp_align = alignof(PRIM::TempStorage);
