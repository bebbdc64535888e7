// prelude.cuh: the one include prefix every translation unit coopd renders starts with.
//
// Every rendered unit begins with exactly `#include <coop/device/prelude.cuh>`, so a compile
// worker's automatic precompiled header (NVRTC -pch) built for one family serves every family
// with the same arch and option set. Including all block and warp headers costs about the same
// as including one (the cost is CCCL's common base; see BRIEF.md section 4).
//
// Each family's device helpers live in <coop/device/<family>.cuh> (shared ones in common.cuh);
// this prefix includes them all.
//
// Do not include cub/cub.cuh: its device-wide algorithms need the host and fail under NVRTC.
#pragma once

#include <coop/device/adjacent_difference.cuh>
#include <coop/device/discontinuity.cuh>
#include <coop/device/exchange.cuh>
#include <coop/device/histogram.cuh>
#include <coop/device/load_store.cuh>
#include <coop/device/merge_sort.cuh>
#include <coop/device/radix_rank.cuh>
#include <coop/device/radix_sort.cuh>
#include <coop/device/reduce.cuh>
#include <coop/device/run_length_decode.cuh>
#include <coop/device/scan.cuh>
#include <coop/device/shuffle.cuh>
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
#include <cuda/functional>
#include <cuda/std/functional>
#if __has_include(<cub/block/block_topk.cuh>)  // CCCL 3.3 and newer
#include <coop/device/topk.cuh>
#include <cub/block/block_topk.cuh>
#endif
