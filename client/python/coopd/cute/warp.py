"""Warp-wide primitives (cub::Warp*): ``coopd.cute.warp.reduce(cutlass.Int32, 32)``."""

from coopd.cute._primitive import factories

globals().update(factories(warp=True))

__all__ = ["reduce", "scan", "load", "store", "exchange", "merge_sort"]
