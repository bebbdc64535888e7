// families.h: the family descriptions defined in this folder, one accessor each. Only
// registry.cc lists them; everything else finds a family through Families() (family.h).
#pragma once

#include "server/catalog/family.h"

namespace coopd::families {

const Family& BlockReduce();  // reduce.cc
const Family& WarpReduce();
const Family& BlockScan();  // scan.cc
const Family& WarpScan();
const Family& BlockLoad();  // load_store.cc
const Family& BlockStore();
const Family& WarpLoad();
const Family& WarpStore();
const Family& BlockExchange();  // exchange.cc
const Family& WarpExchange();
const Family& BlockShuffle();        // block_shuffle.cc
const Family& BlockRadixSort();      // sort.cc
const Family& BlockMergeSort();      //
const Family& WarpMergeSort();       //
const Family& BlockHistogram();      // block_histogram.cc
const Family& BlockDiscontinuity();  // neighbours.cc
const Family& BlockAdjacentDifference();
const Family& BlockRunLengthDecode();  // block_run_length_decode.cc
const Family& BlockRadixRank();        // block_radix_rank.cc
const Family& BlockTopK();             // block_topk.cc

}  // namespace coopd::families

namespace coopd::families {

// block threads * items_per_thread <= 65535: BlockRadixRank counts digits in 16 bits and
// static_asserts it; radix sort and the sort histogram rank with it (block_radix_rank.cc).
inline constexpr uint64_t kMaxRadixRankTile = 65535;
absl::Status CheckRadixRankTile(const SpecContext& c, const coop::v1::PrimitiveSpec& out);

}  // namespace coopd::families
