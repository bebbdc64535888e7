"""Block-wide primitives (cub::Block*): ``coopd.numba.block.reduce(numba.float32, 128)``."""

from coopd.numba._families import factories

globals().update(factories(warp=False))

__all__ = ["reduce", "scan", "load", "store", "exchange", "shuffle", "radix_sort", "merge_sort",
           "histogram", "discontinuity", "adjacent_difference", "run_length_decode", "radix_rank",
           "topk"]
