"""Block-wide primitives (cub::Block*): ``coopd.numba.block.reduce(numba.float32, 128)``."""

from coopd.numba._families import block_factory

reduce = block_factory("block_reduce", "Reduction across the block")
scan = block_factory("block_scan", "Prefix scan across the block")
load = block_factory("block_load", "A tile from global memory into per-thread items")
store = block_factory("block_store", "Per-thread items out to a tile in global memory")
exchange = block_factory("block_exchange", "Rearranges items between arrangements")
shuffle = block_factory("block_shuffle", "Moves items between threads")
radix_sort = block_factory("block_radix_sort", "Radix sort of keys (or pairs)")
merge_sort = block_factory("block_merge_sort", "Merge sort with a comparator")
histogram = block_factory("block_histogram", "Counts samples into bins")
discontinuity = block_factory("block_discontinuity", "Flags heads and tails of runs")
adjacent_difference = block_factory("block_adjacent_difference", "Differences of neighbours")
run_length_decode = block_factory("block_run_length_decode", "Decodes runs into items")
radix_rank = block_factory("block_radix_rank", "Ranks keys by a digit")
topk = block_factory("block_topk", "The k largest or smallest keys (CCCL 3.3)")

__all__ = ["reduce", "scan", "load", "store", "exchange", "shuffle", "radix_sort", "merge_sort",
           "histogram", "discontinuity", "adjacent_difference", "run_length_decode", "radix_rank",
           "topk"]
