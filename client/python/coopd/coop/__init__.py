"""coopd.coop: cuda.coop 1.1.1's API (``cuda.coop._experimental``) on coopd.numba.

    import coopd.coop as coop              # or, after the switch: import cuda.coop._experimental

    block_sum = coop.block.make_sum(numba.int32, 128)

    @cuda.jit(link=block_sum.files)
    def kernel(x, out):
        s = block_sum(x[cuda.threadIdx.x])  # temp storage first is optional
        ...

The factories of ``coopd.coop.block`` and ``coopd.coop.warp`` have cuda.coop 1.1.1's names,
positional order, defaults and errors; their objects have ``files``, ``temp_storage_bytes`` and
``temp_storage_alignment``, and kernels call them in 1.1.1's forms (docs/migrating-from-cuda-
coop.md has the table, and what behaves differently).

The switch, never on by default: :func:`install_alias` makes ``import cuda.coop`` and ``import
cuda.coop._experimental`` give this package (it refuses where a real cuda-cccl's cuda.coop is
importable, unless ``force=True``); ``python -m coopd.coop run -- CMD ...`` runs a program that
cannot be edited with the switch on. :func:`active` says which implementation
``cuda.coop._experimental`` is.

Importing ``coopd.coop`` imports no Numba; ``coopd.coop.block`` and ``coopd.coop.warp`` import
coopd.numba on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from coopd.coop._alias import AliasRefused, active, install_alias, uninstall_alias


class StatefulFunction:
    """A Python operator with state (cuda.coop 1.1.1's block-prefix callbacks): ``op`` (a
    class whose ``__call__(self_ptr, block_aggregate)`` returns the tile's prefix, or such a
    function) is called with a pointer to its state, of Numba type ``dtype``. The block scan
    factories take it as ``prefix_op`` / ``block_prefix_callback_op``; coopd.numba compiles it
    to LTO-IR for block_scan's ``*_prefix`` methods."""

    def __init__(self, op: Any, dtype: Any) -> None:
        self.op = op
        self.dtype = dtype


def __getattr__(name: str) -> Any:
    if name in ("block", "warp"):
        return importlib.import_module(f"coopd.coop.{name}")
    raise AttributeError(f"module 'coopd.coop' has no attribute {name!r}")


__all__ = ["AliasRefused", "StatefulFunction", "active", "block", "install_alias",
           "uninstall_alias", "warp"]
