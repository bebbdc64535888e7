// common.cuh: what every family's device helpers share: the TempStorage cast, register
// copies of item arrays, and the layout globals macro.
//
// The renderer (server/catalog/render.cc, with each family's entry plan from
// server/catalog/families/) emits, per entry point, an `extern "C" __device__` function
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

}  // namespace device
}  // namespace coop

// A comma inside a macro argument (the helper macros' extra parameter lists).
#define COOP_COMMA ,

// Defines the two layout globals the layout query reads back from PTX. SYM is the entry symbol
// prefix; PRIM the CUB primitive type.
#define COOP_LAYOUT(SYM, PRIM)                                                                  \
  extern "C" __device__ const unsigned long long SYM##__temp_bytes = sizeof(PRIM::TempStorage); \
  extern "C" __device__ const unsigned long long SYM##__temp_align = alignof(PRIM::TempStorage);
