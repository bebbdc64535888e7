"""Warp-wide primitives (cub::Warp*): ``coopd.numba.warp.reduce(numba.int32, 32)``."""

from coopd.numba._families import warp_factory

reduce = warp_factory("warp_reduce", "Reduction across a logical warp")
scan = warp_factory("warp_scan", "Prefix scan across a logical warp")
load = warp_factory("warp_load", "A tile from global memory into a warp's items")
store = warp_factory("warp_store", "A warp's items out to global memory")
exchange = warp_factory("warp_exchange", "Rearranges a warp's items")
merge_sort = warp_factory("warp_merge_sort", "Merge sort across a logical warp")

__all__ = ["reduce", "scan", "load", "store", "exchange", "merge_sort"]
