"""Block-wide primitives (cub::Block*): ``coopd.cute.block.reduce(cutlass.Float32, 256)``."""

from coopd.cute._primitive import factories

globals().update(factories(warp=False))

__all__ = ["reduce", "scan", "load", "store", "exchange", "shuffle", "radix_sort", "merge_sort",
           "histogram", "discontinuity", "adjacent_difference", "run_length_decode", "radix_rank",
           "topk"]
