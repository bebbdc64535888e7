"""Warp-wide primitives (cub::Warp*): ``coopd.numba.warp.reduce(numba.int32, 32)``."""

from coopd.numba._families import factories

globals().update(factories(warp=True))

__all__ = ["reduce", "scan", "load", "store", "exchange", "merge_sort"]
