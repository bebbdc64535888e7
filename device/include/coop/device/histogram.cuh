// histogram.cuh: the device helpers rendered block_histogram entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

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

}  // namespace device
}  // namespace coop
