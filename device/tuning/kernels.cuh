// kernels.cuh: the tuning suite's memory-bound micro-kernels, one template per family.
//
// run.py renders translation units that include this header and instantiate these templates once
// per (dtype size, threads, items per thread, algorithm) as extern "C" kernels, builds them with
// nvcc, checks each one's output and times them. Every kernel handles one tile per block and takes
// its CUB TempStorage from dynamic shared memory (the launch passes the size that the unit's
// `sizes` kernel reports), so tiles past 48 KiB of temp storage (transpose of 512 x 16 x 8 bytes)
// build and run like the others. Values are unsigned integers of the cell's dtype size: the
// algorithms' speed depends on the size, not on the type.
//
// What each kernel does, so that the family's algorithm is what varies:
//   block_load       BlockLoad<alg> a tile, fold the thread's items (acc * 3 + x, order-sensitive),
//                    write one value per thread
//   block_store      items computed from their tile index (two integer ops), BlockStore<alg>
//   block_scan       BlockLoad warp_transpose, BlockScan<alg>::InclusiveSum, BlockStore
//                    warp_transpose (the same load and store for every scan algorithm)
//   block_reduce     vectorized blocked loads (no shared memory), BlockReduce<alg>::Sum, one write
//                    per block
//   block_histogram  vectorized blocked loads of samples < 256, BlockHistogram<alg> into 256
//                    shared counters, then the block's nonzero counters atomically added to one of
//                    kHistogramCopies global histograms (blockIdx.x % copies, to spread contention)
//   warp_load/store  as block_load/store, with kWarpBlockThreads / warp_threads logical warps per
//                    block, each with its own TempStorage and its own tile
#pragma once

#include <cub/block/block_histogram.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_store.cuh>

namespace tuning {

constexpr int kHistogramBins = 256;
constexpr int kHistogramCopies = 256;
constexpr int kWarpBlockThreads = 256;

extern __shared__ __align__(16) unsigned char smem[];

template <class P>
__device__ __forceinline__ typename P::TempStorage& Temp(unsigned char* p) {
  return *reinterpret_cast<typename P::TempStorage*>(p);
}

// Order-sensitive fold: a thread that got the right items in the wrong order writes a wrong value.
template <class T, int N>
__device__ __forceinline__ T Fold(const T (&items)[N]) {
  T acc = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) acc = static_cast<T>(acc * 3u + items[i]);
  return acc;
}

// The value stored at tile index i (run.py's expected_store computes the same).
template <class T>
__device__ __forceinline__ T StoreValue(unsigned int i, unsigned int seed) {
  return static_cast<T>(i + (i >> 8) + seed);
}

template <class T, int THREADS, int ITEMS, cub::BlockLoadAlgorithm ALG>
struct BlockLoadCase {
  using Load = cub::BlockLoad<T, THREADS, ITEMS, ALG>;
  static constexpr unsigned int kSmem = sizeof(typename Load::TempStorage);
  static __device__ __forceinline__ void Run(const T* in, T* out) {
    const unsigned long long tile = static_cast<unsigned long long>(blockIdx.x) * THREADS * ITEMS;
    T items[ITEMS];
    Load(Temp<Load>(smem)).Load(in + tile, items);
    out[static_cast<unsigned long long>(blockIdx.x) * THREADS + threadIdx.x] = Fold(items);
  }
};

template <class T, int THREADS, int ITEMS, cub::BlockStoreAlgorithm ALG>
struct BlockStoreCase {
  using Store = cub::BlockStore<T, THREADS, ITEMS, ALG>;
  static constexpr unsigned int kSmem = sizeof(typename Store::TempStorage);
  static __device__ __forceinline__ void Run(T* out, unsigned int seed) {
    const unsigned long long tile = static_cast<unsigned long long>(blockIdx.x) * THREADS * ITEMS;
    T items[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      // striped stores item i at threadIdx + i * THREADS: give it that element's value, so the
      // output is the same tile for every algorithm
      const unsigned long long j =
          ALG == cub::BLOCK_STORE_STRIPED ? threadIdx.x + i * THREADS : threadIdx.x * ITEMS + i;
      items[i] = StoreValue<T>(static_cast<unsigned int>(tile + j), seed);
    }
    Store(Temp<Store>(smem)).Store(out + tile, items);
  }
};

template <class T, int THREADS, int ITEMS, cub::BlockScanAlgorithm ALG>
struct BlockScanCase {
  using Load = cub::BlockLoad<T, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<T, THREADS, ALG>;
  using Store = cub::BlockStore<T, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  union Storage {
    typename Load::TempStorage load;
    typename Scan::TempStorage scan;
    typename Store::TempStorage store;
  };
  static constexpr unsigned int kSmem = sizeof(Storage);
  static __device__ __forceinline__ void Run(const T* in, T* out) {
    Storage& s = *reinterpret_cast<Storage*>(smem);
    const unsigned long long tile = static_cast<unsigned long long>(blockIdx.x) * THREADS * ITEMS;
    T items[ITEMS];
    Load(s.load).Load(in + tile, items);
    __syncthreads();
    Scan(s.scan).InclusiveSum(items, items);
    __syncthreads();
    Store(s.store).Store(out + tile, items);
  }
};

template <class T, int THREADS, int ITEMS, cub::BlockReduceAlgorithm ALG>
struct BlockReduceCase {
  using Reduce = cub::BlockReduce<T, THREADS, ALG>;
  static constexpr unsigned int kSmem = sizeof(typename Reduce::TempStorage);
  static __device__ __forceinline__ void Run(const T* in, T* out) {
    const unsigned long long tile = static_cast<unsigned long long>(blockIdx.x) * THREADS * ITEMS;
    T items[ITEMS];
    // CUB's public overload takes a non-const pointer; it only reads through it.
    cub::LoadDirectBlockedVectorized(threadIdx.x, const_cast<T*>(in + tile), items);
    const T sum = Reduce(Temp<Reduce>(smem)).Sum(items);
    if (threadIdx.x == 0) out[blockIdx.x] = sum;
  }
};

template <class T, int THREADS, int ITEMS, cub::BlockHistogramAlgorithm ALG>
struct BlockHistogramCase {
  using Histogram = cub::BlockHistogram<T, THREADS, ITEMS, kHistogramBins, ALG>;
  // The block's counters first, then the primitive's temp storage (16-byte aligned).
  static constexpr unsigned int kCounters = kHistogramBins * sizeof(unsigned int);
  static constexpr unsigned int kSmem = kCounters + sizeof(typename Histogram::TempStorage);
  static __device__ __forceinline__ void Run(const T* in, unsigned int* histograms) {
    unsigned int* counters = reinterpret_cast<unsigned int*>(smem);
    const unsigned long long tile = static_cast<unsigned long long>(blockIdx.x) * THREADS * ITEMS;
    T items[ITEMS];
    // CUB's public overload takes a non-const pointer; it only reads through it.
    cub::LoadDirectBlockedVectorized(threadIdx.x, const_cast<T*>(in + tile), items);
    Histogram(Temp<Histogram>(smem + kCounters)).Histogram(items, counters);
    __syncthreads();
    unsigned int* global = histograms + (blockIdx.x % kHistogramCopies) * kHistogramBins;
    for (int b = threadIdx.x; b < kHistogramBins; b += THREADS) {
      const unsigned int c = counters[b];
      if (c != 0) atomicAdd(global + b, c);
    }
  }
};

template <class T, int WARP, int ITEMS, cub::WarpLoadAlgorithm ALG>
struct WarpLoadCase {
  using Load = cub::WarpLoad<T, ITEMS, ALG, WARP>;
  static constexpr unsigned int kSmem =
      (kWarpBlockThreads / WARP) * sizeof(typename Load::TempStorage);
  static __device__ __forceinline__ void Run(const T* in, T* out) {
    auto* temp = reinterpret_cast<typename Load::TempStorage*>(smem);
    const int warp = threadIdx.x / WARP;
    const unsigned long long tile =
        (static_cast<unsigned long long>(blockIdx.x) * kWarpBlockThreads + warp * WARP) * ITEMS;
    T items[ITEMS];
    Load(temp[warp]).Load(in + tile, items);
    out[static_cast<unsigned long long>(blockIdx.x) * kWarpBlockThreads + threadIdx.x] =
        Fold(items);
  }
};

template <class T, int WARP, int ITEMS, cub::WarpStoreAlgorithm ALG>
struct WarpStoreCase {
  using Store = cub::WarpStore<T, ITEMS, ALG, WARP>;
  static constexpr unsigned int kSmem =
      (kWarpBlockThreads / WARP) * sizeof(typename Store::TempStorage);
  static __device__ __forceinline__ void Run(T* out, unsigned int seed) {
    auto* temp = reinterpret_cast<typename Store::TempStorage*>(smem);
    const int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    const unsigned long long tile =
        (static_cast<unsigned long long>(blockIdx.x) * kWarpBlockThreads + warp * WARP) * ITEMS;
    T items[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const unsigned long long j =
          ALG == cub::WARP_STORE_STRIPED ? lane + i * WARP : lane * ITEMS + i;
      items[i] = StoreValue<T>(static_cast<unsigned int>(tile + j), seed);
    }
    Store(temp[warp]).Store(out + tile, items);
  }
};

}  // namespace tuning
