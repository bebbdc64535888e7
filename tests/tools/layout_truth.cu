// layout_truth: prints sizeof/alignof of CUB TempStorage types as nvcc (the host compiler pass)
// sees them. Integration tests compare coopd's reported temp_storage against this table, so
// the expected values come from the compiler, never from numbers typed into a test.
//
// Output, one spec per line:
//   family method dtype bx by bz items algorithm warp_threads bytes align options
// ("-" for fields that do not apply). options: comma-separated key=value of the other spec
// fields the row needs (op, user_type, and options as MESSAGE.FIELD, e.g. radix_sort.radix_bits),
// or "-".
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cub/block/block_adjacent_difference.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_run_length_decode.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_shuffle.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_exchange.cuh>
#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_merge_sort.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cub/warp/warp_store.cuh>

template <class Storage>
void Row(const char* family, const char* method, const char* dtype, int bx, int by, int bz,
         int items, const char* algorithm, int warp_threads, const char* options = "-") {
  std::printf("%s %s %s %d %d %d %d %s %d %zu %zu %s\n", family, method, dtype, bx, by, bz, items,
              algorithm, warp_threads, sizeof(Storage), alignof(Storage), options);
}

#define REDUCE(T, NAME, BX, BY, BZ, ALG, ALGNAME, ITEMS)                                           \
  Row<cub::BlockReduce<T, BX, cub::ALG, BY, BZ>::TempStorage>("block_reduce", "sum", NAME, BX, BY, \
                                                              BZ, ITEMS, ALGNAME, 0)
#define SCAN(T, NAME, BX, BY, BZ, ALG, ALGNAME, ITEMS, METHOD)                                  \
  Row<cub::BlockScan<T, BX, cub::ALG, BY, BZ>::TempStorage>("block_scan", METHOD, NAME, BX, BY, \
                                                            BZ, ITEMS, ALGNAME, 0)
#define WARP(T, NAME, W) \
  Row<cub::WarpReduce<T, W>::TempStorage>("warp_reduce", "sum", NAME, 0, 0, 0, 1, "-", W)

#define LOAD(T, NAME, BX, BY, BZ, ITEMS, ALG, ALGNAME)                                             \
  Row<cub::BlockLoad<T, BX, ITEMS, cub::ALG, BY, BZ>::TempStorage>("block_load", "load", NAME, BX, \
                                                                   BY, BZ, ITEMS, ALGNAME, 0)
#define STORE(T, NAME, BX, BY, BZ, ITEMS, ALG, ALGNAME)                                           \
  Row<cub::BlockStore<T, BX, ITEMS, cub::ALG, BY, BZ>::TempStorage>("block_store", "store", NAME, \
                                                                    BX, BY, BZ, ITEMS, ALGNAME, 0)
// BlockRadixSort with CUB's defaults between RADIX_BITS and the block dims.
#define RADIX(K, V, BX, BY, BZ, ITEMS, BITS)                                   \
  cub::BlockRadixSort<K, BX, ITEMS, V, BITS, true, cub::BLOCK_SCAN_WARP_SCANS, \
                      cudaSharedMemBankSizeFourByte, BY, BZ>::TempStorage

#define WSCAN(T, NAME, W) \
  Row<cub::WarpScan<T, W>::TempStorage>("warp_scan", "inclusive_sum", NAME, 0, 0, 0, 1, "-", W)

// User types as coopd renders them: opaque structs of a size and an alignment.
struct alignas(4) U12 {
  unsigned char bytes[12];
};
struct alignas(16) U32A16 {
  unsigned char bytes[32];
};

int main() {
  // User types (dtype "user"): the families that move values without looking inside them.
  Row<cub::BlockLoad<U12, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>::TempStorage>(
      "block_load", "load", "user", 128, 1, 1, 4, "warp_transpose", 0, "user_type=12x4");
  Row<cub::BlockStore<U32A16, 32, 2, cub::BLOCK_STORE_TRANSPOSE, 2>::TempStorage>(
      "block_store", "store", "user", 32, 2, 1, 2, "transpose", 0, "user_type=32x16");
  Row<cub::BlockExchange<U12, 64, 3>::TempStorage>("block_exchange", "striped_to_blocked", "user",
                                                   64, 1, 1, 3, "-", 0, "user_type=12x4");
  Row<cub::BlockShuffle<U32A16, 96>::TempStorage>("block_shuffle", "up", "user", 96, 1, 1, 2, "-",
                                                  0, "user_type=32x16");
  // block_reduce: every dtype with the default algorithm, every algorithm, 1D/2D/3D blocks.
  REDUCE(float, "float32", 256, 1, 1, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions", 1);
  REDUCE(double, "float64", 256, 1, 1, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions", 1);
  REDUCE(int8_t, "int8", 128, 1, 1, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions", 4);
  REDUCE(int16_t, "int16", 128, 1, 1, BLOCK_REDUCE_RAKING, "raking", 1);
  REDUCE(int32_t, "int32", 512, 1, 1, BLOCK_REDUCE_RAKING, "raking", 2);
  REDUCE(long long, "int64", 96, 1, 1, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
         "raking_commutative_only", 1);
  REDUCE(uint8_t, "uint8", 64, 1, 1, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
         "raking_commutative_only", 8);
  REDUCE(uint16_t, "uint16", 1024, 1, 1, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions", 1);
  REDUCE(uint32_t, "uint32", 32, 1, 1, BLOCK_REDUCE_RAKING, "raking", 1);
  REDUCE(unsigned long long, "uint64", 256, 1, 1, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions",
         1);
  REDUCE(float, "float32", 16, 16, 1, BLOCK_REDUCE_RAKING, "raking", 1);
  REDUCE(float, "float32", 8, 8, 4, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions", 3);
  REDUCE(double, "float64", 33, 3, 1, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
         "raking_commutative_only", 1);
  // block_scan: the three algorithms, odd shapes, several dtypes.
  SCAN(int32_t, "int32", 256, 1, 1, BLOCK_SCAN_RAKING, "raking", 1, "inclusive_sum");
  SCAN(int32_t, "int32", 128, 1, 1, BLOCK_SCAN_RAKING_MEMOIZE, "raking_memoize", 4,
       "exclusive_sum");
  SCAN(float, "float32", 256, 1, 1, BLOCK_SCAN_WARP_SCANS, "warp_scans", 1, "inclusive_sum");
  SCAN(double, "float64", 16, 8, 2, BLOCK_SCAN_WARP_SCANS, "warp_scans", 2, "exclusive_sum");
  SCAN(uint64_t, "uint64", 100, 1, 1, BLOCK_SCAN_RAKING, "raking", 1, "inclusive_sum");
  SCAN(int8_t, "int8", 64, 2, 1, BLOCK_SCAN_RAKING_MEMOIZE, "raking_memoize", 1, "exclusive_sum");
  // warp_reduce: every logical warp size.
  WARP(float, "float32", 1);
  WARP(float, "float32", 2);
  WARP(int32_t, "int32", 4);
  WARP(double, "float64", 8);
  WARP(int64_t, "int64", 16);
  WARP(float, "float32", 32);
  WARP(uint8_t, "uint8", 32);
  // block_load / block_store: every algorithm, several shapes and dtypes.
  LOAD(float, "float32", 128, 1, 1, 4, BLOCK_LOAD_DIRECT, "direct");
  LOAD(int16_t, "int16", 128, 1, 1, 16, BLOCK_LOAD_STRIPED, "striped");
  LOAD(int32_t, "int32", 256, 1, 1, 4, BLOCK_LOAD_VECTORIZE, "vectorize");
  LOAD(double, "float64", 96, 1, 1, 3, BLOCK_LOAD_TRANSPOSE, "transpose");
  LOAD(uint8_t, "uint8", 128, 1, 1, 16, BLOCK_LOAD_WARP_TRANSPOSE, "warp_transpose");
  LOAD(float, "float32", 32, 4, 2, 8, BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED,
       "warp_transpose_timesliced");
  STORE(float, "float32", 128, 1, 1, 4, BLOCK_STORE_DIRECT, "direct");
  STORE(int64_t, "int64", 64, 1, 1, 2, BLOCK_STORE_STRIPED, "striped");
  STORE(uint32_t, "uint32", 256, 1, 1, 4, BLOCK_STORE_VECTORIZE, "vectorize");
  STORE(int8_t, "int8", 100, 1, 1, 7, BLOCK_STORE_TRANSPOSE, "transpose");
  STORE(uint16_t, "uint16", 64, 2, 1, 16, BLOCK_STORE_WARP_TRANSPOSE, "warp_transpose");
  STORE(double, "float64", 256, 1, 1, 8, BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED,
        "warp_transpose_timesliced");
  // block_exchange (without warp time slicing; the table has no column for it).
  Row<cub::BlockExchange<float, 128, 4>::TempStorage>("block_exchange", "striped_to_blocked",
                                                      "float32", 128, 1, 1, 4, "-", 0);
  Row<cub::BlockExchange<int64_t, 64, 2, false, 2>::TempStorage>(
      "block_exchange", "blocked_to_striped", "int64", 64, 2, 1, 2, "-", 0);
  Row<cub::BlockExchange<uint8_t, 96, 16>::TempStorage>("block_exchange", "warp_striped_to_blocked",
                                                        "uint8", 96, 1, 1, 16, "-", 0);
  Row<cub::BlockExchange<int16_t, 32, 5, false, 3>::TempStorage>(
      "block_exchange", "scatter_to_striped_flagged", "int16", 32, 3, 1, 5, "-", 0);
  Row<cub::BlockExchange<uint32_t, 16, 4, false, 2, 2>::TempStorage>(
      "block_exchange", "scatter_to_blocked", "uint32", 16, 2, 2, 4, "-", 0);
  // block_shuffle: the layout does not depend on the method or items per thread.
  Row<cub::BlockShuffle<float, 128>::TempStorage>("block_shuffle", "offset", "float32", 128, 1, 1,
                                                  1, "-", 0);
  Row<cub::BlockShuffle<double, 16, 4, 2>::TempStorage>("block_shuffle", "up", "float64", 16, 4, 2,
                                                        4, "-", 0);
  Row<cub::BlockShuffle<int8_t, 100>::TempStorage>("block_shuffle", "down", "int8", 100, 1, 1, 2,
                                                   "-", 0);
  // float16 / bfloat16.
  REDUCE(__half, "float16", 256, 1, 1, BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions", 1);
  REDUCE(__nv_bfloat16, "bfloat16", 64, 2, 1, BLOCK_REDUCE_RAKING, "raking", 4);
  SCAN(__half, "float16", 128, 1, 1, BLOCK_SCAN_WARP_SCANS, "warp_scans", 2, "inclusive_sum");
  SCAN(__nv_bfloat16, "bfloat16", 96, 1, 1, BLOCK_SCAN_RAKING, "raking", 1, "exclusive_sum");
  WARP(__half, "float16", 16);
  LOAD(__nv_bfloat16, "bfloat16", 128, 1, 1, 8, BLOCK_LOAD_WARP_TRANSPOSE, "warp_transpose");
  // warp_scan: every logical warp size.
  WSCAN(int32_t, "int32", 1);
  WSCAN(float, "float32", 2);
  WSCAN(double, "float64", 4);
  WSCAN(int64_t, "int64", 8);
  WSCAN(uint16_t, "uint16", 16);
  WSCAN(float, "float32", 32);
  // block_radix_sort: keys only and pairs, several radix widths, 1D/2D/3D blocks.
  Row<RADIX(uint32_t, cub::NullType, 128, 1, 1, 4, 4)>("block_radix_sort", "sort", "uint32", 128, 1,
                                                       1, 4, "-", 0, "radix_sort.radix_bits=4");
  Row<RADIX(float, int32_t, 64, 1, 1, 8, 4)>("block_radix_sort", "sort_descending", "float32", 64,
                                             1, 1, 8, "-", 0, "radix_sort.value_dtype=int32");
  Row<RADIX(int64_t, cub::NullType, 32, 4, 2, 4, 8)>("block_radix_sort", "sort_blocked_to_striped",
                                                     "int64", 32, 4, 2, 4, "-", 0,
                                                     "radix_sort.radix_bits=8");
  Row<RADIX(uint8_t, double, 16, 6, 1, 2, 5)>(
      "block_radix_sort", "sort", "uint8", 16, 6, 1, 2, "-", 0,
      "radix_sort.value_dtype=float64,radix_sort.radix_bits=5");
  Row<RADIX(double, uint16_t, 96, 1, 1, 3, 1)>(
      "block_radix_sort", "sort", "float64", 96, 1, 1, 3, "-", 0,
      "radix_sort.value_dtype=uint16,radix_sort.radix_bits=1");
  // block_merge_sort (power-of-two blocks) and warp_merge_sort.
  Row<cub::BlockMergeSort<int32_t, 128, 4>::TempStorage>("block_merge_sort", "sort", "int32", 128,
                                                         1, 1, 4, "-", 0, "op=less");
  Row<cub::BlockMergeSort<double, 64, 2, uint16_t, 2>::TempStorage>(
      "block_merge_sort", "stable_sort", "float64", 64, 2, 1, 2, "-", 0,
      "op=greater,merge_sort.value_dtype=uint16");
  Row<cub::BlockMergeSort<int8_t, 16, 3, int64_t, 4, 2>::TempStorage>(
      "block_merge_sort", "sort_guarded", "int8", 16, 4, 2, 3, "-", 0,
      "op=less,merge_sort.value_dtype=int64");
  Row<cub::WarpMergeSort<int32_t, 4, 32>::TempStorage>("warp_merge_sort", "sort", "int32", 0, 0, 0,
                                                       4, "-", 32, "op=less");
  Row<cub::WarpMergeSort<uint64_t, 2, 16, float>::TempStorage>(
      "warp_merge_sort", "stable_sort", "uint64", 0, 0, 0, 2, "-", 16,
      "op=greater,merge_sort.value_dtype=float32");
  Row<cub::WarpMergeSort<float, 1, 8>::TempStorage>("warp_merge_sort", "sort_guarded", "float32", 0,
                                                    0, 0, 1, "-", 8, "op=less");
  // block_histogram: both algorithms, 1D/2D/3D blocks, several bin counts.
  Row<cub::BlockHistogram<uint8_t, 128, 4, 256>::TempStorage>(
      "block_histogram", "histogram", "uint8", 128, 1, 1, 4, "sort", 0, "histogram.bins=256");
  Row<cub::BlockHistogram<uint16_t, 64, 2, 100, cub::BLOCK_HISTO_ATOMIC>::TempStorage>(
      "block_histogram", "composite", "uint16", 64, 1, 1, 2, "atomic", 0, "histogram.bins=100");
  Row<cub::BlockHistogram<uint64_t, 32, 1, 7, cub::BLOCK_HISTO_SORT, 2>::TempStorage>(
      "block_histogram", "histogram", "uint64", 32, 2, 1, 1, "sort", 0, "histogram.bins=7");
  Row<cub::BlockHistogram<uint32_t, 16, 8, 32, cub::BLOCK_HISTO_SORT, 4, 2>::TempStorage>(
      "block_histogram", "init_histogram", "uint32", 16, 4, 2, 8, "sort", 0, "histogram.bins=32");
  Row<cub::BlockHistogram<uint8_t, 96, 3, 1>::TempStorage>(
      "block_histogram", "composite", "uint8", 96, 1, 1, 3, "sort", 0, "histogram.bins=1");
  // block_discontinuity / block_adjacent_difference: the layout depends on T and the block only.
  Row<cub::BlockDiscontinuity<int32_t, 128>::TempStorage>(
      "block_discontinuity", "flag_heads", "int32", 128, 1, 1, 4, "-", 0, "op=not_equal");
  Row<cub::BlockDiscontinuity<double, 32, 4>::TempStorage>(
      "block_discontinuity", "flag_heads_and_tails", "float64", 32, 4, 1, 2, "-", 0, "op=equal");
  Row<cub::BlockDiscontinuity<uint8_t, 8, 8, 2>::TempStorage>("block_discontinuity",
                                                              "flag_tails_with_successor", "uint8",
                                                              8, 8, 2, 1, "-", 0, "op=not_equal");
  Row<cub::BlockAdjacentDifference<float, 256>::TempStorage>("block_adjacent_difference",
                                                             "subtract_left", "float32", 256, 1, 1,
                                                             4, "-", 0, "op=difference");
  Row<cub::BlockAdjacentDifference<int64_t, 16, 6>::TempStorage>("block_adjacent_difference",
                                                                 "subtract_right_partial", "int64",
                                                                 16, 6, 1, 3, "-", 0, "op=sum");
  Row<cub::BlockAdjacentDifference<uint16_t, 4, 4, 4>::TempStorage>(
      "block_adjacent_difference", "subtract_left_with_predecessor", "uint16", 4, 4, 4, 2, "-", 0,
      "op=difference");
  // block_run_length_decode: items = runs per thread; the decoded window is an option.
  Row<cub::BlockRunLengthDecode<uint64_t, 128, 2, 4>::TempStorage>(
      "block_run_length_decode", "decode", "uint64", 128, 1, 1, 2, "-", 0,
      "run_length_decode.decoded_items_per_thread=4");
  Row<cub::BlockRunLengthDecode<float, 32, 3, 8, uint32_t, 4>::TempStorage>(
      "block_run_length_decode", "decode_with_offsets", "float32", 32, 4, 1, 3, "-", 0,
      "run_length_decode.decoded_items_per_thread=8");
  Row<cub::BlockRunLengthDecode<int8_t, 8, 1, 1, uint32_t, 2, 2>::TempStorage>(
      "block_run_length_decode", "decode", "int8", 8, 2, 2, 1, "-", 0,
      "run_length_decode.decoded_items_per_thread=1");
  // warp_load / warp_store / warp_exchange: every algorithm, several logical warp sizes.
  Row<cub::WarpLoad<float, 4, cub::WARP_LOAD_DIRECT>::TempStorage>("warp_load", "load", "float32",
                                                                   0, 0, 0, 4, "direct", 32);
  Row<cub::WarpLoad<int64_t, 8, cub::WARP_LOAD_TRANSPOSE, 16>::TempStorage>(
      "warp_load", "load_guarded", "int64", 0, 0, 0, 8, "transpose", 16);
  Row<cub::WarpLoad<uint8_t, 16, cub::WARP_LOAD_VECTORIZE, 8>::TempStorage>(
      "warp_load", "load", "uint8", 0, 0, 0, 16, "vectorize", 8);
  Row<cub::WarpStore<double, 2, cub::WARP_STORE_TRANSPOSE>::TempStorage>(
      "warp_store", "store", "float64", 0, 0, 0, 2, "transpose", 32);
  Row<cub::WarpStore<int16_t, 3, cub::WARP_STORE_STRIPED, 4>::TempStorage>(
      "warp_store", "store_guarded", "int16", 0, 0, 0, 3, "striped", 4);
  Row<cub::WarpExchange<int32_t, 4, 32>::TempStorage>("warp_exchange", "blocked_to_striped",
                                                      "int32", 0, 0, 0, 4, "smem", 32);
  Row<cub::WarpExchange<float, 8, 8, cub::WARP_EXCHANGE_SHUFFLE>::TempStorage>(
      "warp_exchange", "striped_to_blocked", "float32", 0, 0, 0, 8, "shuffle", 8);
  Row<cub::WarpExchange<uint64_t, 3, 16>::TempStorage>("warp_exchange", "scatter_to_striped",
                                                       "uint64", 0, 0, 0, 3, "smem", 16);
  // block_radix_rank: both directions, several digit widths, 1D/2D/3D blocks.
  Row<cub::BlockRadixRank<128, 4, false>::TempStorage>(
      "block_radix_rank", "rank_keys", "uint32", 128, 1, 1, 4, "-", 0, "radix_rank.radix_bits=4");
  Row<cub::BlockRadixRank<32, 8, true, true, cub::BLOCK_SCAN_WARP_SCANS,
                          cudaSharedMemBankSizeFourByte, 4>::TempStorage>(
      "block_radix_rank", "rank_keys_descending", "uint8", 32, 4, 1, 2, "-", 0,
      "radix_rank.radix_bits=8");
  Row<cub::BlockRadixRank<8, 1, false, true, cub::BLOCK_SCAN_WARP_SCANS,
                          cudaSharedMemBankSizeFourByte, 4, 2>::TempStorage>(
      "block_radix_rank", "rank_keys", "uint64", 8, 4, 2, 3, "-", 0, "radix_rank.radix_bits=1");
  return 0;
}
