// sort_kernel.cuh: the GPU suite's timed radix-sort tile kernel
// (device/gpu_suite/bench_kernels.cuh, bench_sort), standalone. Each thread reads its 4 blocked
// keys as one uint4, BlockRadixSort sorts the 128 x 4 tile on all 32 bits, each thread writes its 4
// keys back as one uint4.
//   COOP_LINKED defined: the sort is coopd's entry (COOP_SORT_SYM), linked from its LTO-IR;
//   otherwise CUB is compiled into the kernel.
#pragma once

#if defined(COOP_LINKED)
extern "C" __device__ void COOP_SORT_SYM(void* temp_storage, unsigned int* keys, int begin_bit,
                                         int end_bit);
#define SORT_TEMP_BYTES 4640
#define SORT_TILE(t, keys) COOP_SORT_SYM(t, keys, 0, 32)
#else
#include <cub/block/block_radix_sort.cuh>
using SortPrim = cub::BlockRadixSort<unsigned int, 128, 4>;
#define SORT_TEMP_BYTES sizeof(SortPrim::TempStorage)
#define SORT_TILE(t, keys) SortPrim(*reinterpret_cast<SortPrim::TempStorage*>(t)).Sort(keys)
#endif

extern "C" __global__ void bench_sort(const unsigned int* __restrict__ in,
                                      unsigned int* __restrict__ out) {
  __shared__ __align__(16) unsigned char temp[SORT_TEMP_BYTES];
  const unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * 128 + threadIdx.x;
  const uint4 v = reinterpret_cast<const uint4*>(in)[i];
  unsigned int keys[4] = {v.x, v.y, v.z, v.w};
  SORT_TILE(temp, keys);
  reinterpret_cast<uint4*>(out)[i] = make_uint4(keys[0], keys[1], keys[2], keys[3]);
}
