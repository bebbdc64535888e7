// bench_kernels.cuh: the memory-bound kernels gpu_suite times, written once and built twice.
//
// Native build (nvcc, in gpu_suite.cu): the BENCH_* macros call CUB directly, so CUB is
// compiled into the kernel whole.
// Linked build (NVRTC -dlto at run time, then nvJitLink -lto with the coopd artifacts): the
// harness prepends the artifacts' declarations and defines COOP_LINKED plus, per primitive,
// COOP_<NAME>_SYM (the entry symbol) and COOP_<NAME>_BYTES (its TempStorage size).
//
// Both builds reserve temp storage the same way (raw shared bytes, 16-byte aligned) and use the
// same launch configuration, so the only difference is how the primitive reached the kernel.
// The specs here must match the bench_* cases in make_artifacts.sh.
#pragma once

#define BENCH_REDUCE_THREADS 256
#define BENCH_REDUCE_ITEMS 16
#define BENCH_SCAN_THREADS 128
#define BENCH_SCAN_ITEMS 8
#define BENCH_COPY_THREADS 128
#define BENCH_COPY_ITEMS 16
#define BENCH_SORT_THREADS 128
#define BENCH_SORT_ITEMS 4

#if defined(COOP_LINKED)

#define BENCH_REDUCE(t, items) COOP_REDUCE_SYM(t, items)
#define BENCH_SCAN_LOAD(t, src, items) COOP_SCAN_LOAD_SYM(t, src, items)
#define BENCH_SCAN(t, items) COOP_SCAN_SYM(t, items, items)
#define BENCH_SCAN_STORE(t, dst, items) COOP_SCAN_STORE_SYM(t, dst, items)
#define BENCH_COPY_LOAD(t, src, items) COOP_COPY_LOAD_SYM(t, src, items)
#define BENCH_COPY_STORE(t, dst, items) COOP_COPY_STORE_SYM(t, dst, items)
#if defined(COOP_SORT_SYM)
#define BENCH_HAVE_SORT 1
#define BENCH_SORT(t, keys) COOP_SORT_SYM(t, keys, 0, 32)
#endif

#else  // native

#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

namespace bench_native {
using Reduce = cub::BlockReduce<float, BENCH_REDUCE_THREADS, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
using ScanLoad =
    cub::BlockLoad<int, BENCH_SCAN_THREADS, BENCH_SCAN_ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
using Scan = cub::BlockScan<int, BENCH_SCAN_THREADS, cub::BLOCK_SCAN_WARP_SCANS>;
using ScanStore =
    cub::BlockStore<int, BENCH_SCAN_THREADS, BENCH_SCAN_ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
using CopyLoad =
    cub::BlockLoad<int, BENCH_COPY_THREADS, BENCH_COPY_ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
using CopyStore =
    cub::BlockStore<int, BENCH_COPY_THREADS, BENCH_COPY_ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
using Sort = cub::BlockRadixSort<unsigned int, BENCH_SORT_THREADS, BENCH_SORT_ITEMS>;
template <class P>
__device__ __forceinline__ typename P::TempStorage& temp(unsigned char* p) {
  return *reinterpret_cast<typename P::TempStorage*>(p);
}
}  // namespace bench_native

#define COOP_REDUCE_BYTES sizeof(bench_native::Reduce::TempStorage)
#define COOP_SCAN_LOAD_BYTES sizeof(bench_native::ScanLoad::TempStorage)
#define COOP_SCAN_BYTES sizeof(bench_native::Scan::TempStorage)
#define COOP_SCAN_STORE_BYTES sizeof(bench_native::ScanStore::TempStorage)
#define COOP_COPY_LOAD_BYTES sizeof(bench_native::CopyLoad::TempStorage)
#define COOP_COPY_STORE_BYTES sizeof(bench_native::CopyStore::TempStorage)
#define COOP_SORT_BYTES sizeof(bench_native::Sort::TempStorage)

#define BENCH_REDUCE(t, items) \
  bench_native::Reduce(bench_native::temp<bench_native::Reduce>(t)).Sum(items)
#define BENCH_SCAN_LOAD(t, src, items) \
  bench_native::ScanLoad(bench_native::temp<bench_native::ScanLoad>(t)).Load(src, items)
#define BENCH_SCAN(t, items) \
  bench_native::Scan(bench_native::temp<bench_native::Scan>(t)).ExclusiveSum(items, items)
#define BENCH_SCAN_STORE(t, dst, items) \
  bench_native::ScanStore(bench_native::temp<bench_native::ScanStore>(t)).Store(dst, items)
#define BENCH_COPY_LOAD(t, src, items) \
  bench_native::CopyLoad(bench_native::temp<bench_native::CopyLoad>(t)).Load(src, items)
#define BENCH_COPY_STORE(t, dst, items) \
  bench_native::CopyStore(bench_native::temp<bench_native::CopyStore>(t)).Store(dst, items)
#define BENCH_HAVE_SORT 1
#define BENCH_SORT(t, keys) \
  bench_native::Sort(bench_native::temp<bench_native::Sort>(t)).Sort(keys, 0, 32)

#endif

// One tile of BENCH_REDUCE_THREADS * BENCH_REDUCE_ITEMS floats per block, read as float4
// (striped, coalesced); thread 0 writes the tile's sum.
extern "C" __global__ void bench_reduce(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ __align__(16) unsigned char temp[COOP_REDUCE_BYTES];
  const float4* src =
      reinterpret_cast<const float4*>(in) +
      static_cast<unsigned long long>(blockIdx.x) * (BENCH_REDUCE_THREADS * BENCH_REDUCE_ITEMS / 4);
  float items[BENCH_REDUCE_ITEMS];
#pragma unroll
  for (int j = 0; j < BENCH_REDUCE_ITEMS / 4; ++j) {
    const float4 v = src[j * BENCH_REDUCE_THREADS + threadIdx.x];
    items[4 * j] = v.x;
    items[4 * j + 1] = v.y;
    items[4 * j + 2] = v.z;
    items[4 * j + 3] = v.w;
  }
  const float sum = BENCH_REDUCE(temp, items);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

// Tile-wise exclusive prefix sum: BlockLoad (warp_transpose) -> BlockScan (warp_scans) ->
// BlockStore (warp_transpose).
extern "C" __global__ void bench_scan(const int* __restrict__ in, int* __restrict__ out) {
  __shared__ __align__(16) unsigned char t_load[COOP_SCAN_LOAD_BYTES];
  __shared__ __align__(16) unsigned char t_scan[COOP_SCAN_BYTES];
  __shared__ __align__(16) unsigned char t_store[COOP_SCAN_STORE_BYTES];
  const unsigned long long tile =
      static_cast<unsigned long long>(blockIdx.x) * (BENCH_SCAN_THREADS * BENCH_SCAN_ITEMS);
  int items[BENCH_SCAN_ITEMS];
  BENCH_SCAN_LOAD(t_load, in + tile, items);
  BENCH_SCAN(t_scan, items);
  BENCH_SCAN_STORE(t_store, out + tile, items);
}

// Tile copy through registers: BlockLoad (warp_transpose) -> BlockStore (warp_transpose).
extern "C" __global__ void bench_copy(const int* __restrict__ in, int* __restrict__ out) {
  __shared__ __align__(16) unsigned char t_load[COOP_COPY_LOAD_BYTES];
  __shared__ __align__(16) unsigned char t_store[COOP_COPY_STORE_BYTES];
  const unsigned long long tile =
      static_cast<unsigned long long>(blockIdx.x) * (BENCH_COPY_THREADS * BENCH_COPY_ITEMS);
  int items[BENCH_COPY_ITEMS];
  BENCH_COPY_LOAD(t_load, in + tile, items);
  BENCH_COPY_STORE(t_store, out + tile, items);
}

#if defined(BENCH_HAVE_SORT)
// Tile-wise key sort: each thread reads its 4 blocked keys as one uint4, BlockRadixSort sorts the
// tile (blocked arrangement), each thread writes its 4 keys back as one uint4.
extern "C" __global__ void bench_sort(const unsigned int* __restrict__ in,
                                      unsigned int* __restrict__ out) {
  __shared__ __align__(16) unsigned char temp[COOP_SORT_BYTES];
  const unsigned long long i =
      static_cast<unsigned long long>(blockIdx.x) * BENCH_SORT_THREADS + threadIdx.x;
  const uint4 v = reinterpret_cast<const uint4*>(in)[i];
  unsigned int keys[BENCH_SORT_ITEMS] = {v.x, v.y, v.z, v.w};
  BENCH_SORT(temp, keys);
  reinterpret_cast<uint4*>(out)[i] = make_uint4(keys[0], keys[1], keys[2], keys[3]);
}
#endif
