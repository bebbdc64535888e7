// radix_rank.cuh: the device helpers rendered block_radix_rank entries call.
#pragma once

#include <coop/device/common.cuh>

namespace coop {
namespace device {

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

}  // namespace device
}  // namespace coop
