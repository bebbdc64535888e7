// shuffle.cuh: the device helpers rendered block_shuffle entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

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
