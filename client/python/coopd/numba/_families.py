"""The factory functions of coopd.numba.block and coopd.numba.warp: one per catalogue family."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import coopd
from coopd.numba._primitive import OpArg, Primitive, make

_COMMON = """
    dtype: a Numba type (numba.float32), a NumPy dtype (a structured one for a user type) or
        coopd's name ("float32"). method, algorithm: as `coopctl catalog` lists them (empty:
        the family's default). op: a builtin's name ("sum", "less", ...), a Python function
        (compiled with numba-cuda to LTO-IR, inlined after linking), or a coopd.UserOperator
        (CUDA C++ source or LTO-IR). arch: "sm_90" (default: $COOPD_ARCH, else the current
        GPU's). client: a coopd.Client (default: coopd.numba.set_client's, else one on the
        default socket). Other keywords are the family's options message (value_dtype,
        radix_bits, bins, with_aggregate, warp_time_slicing, decoded_items_per_thread).

    The same spec in one process returns the same object, fetched once."""


def block_factory(family: str, summary: str) -> Callable[..., Primitive]:
    def build(dtype: Any, threads: Union[int, Sequence[int]], items_per_thread: int = 1, *,
              method: Optional[str] = None, algorithm: Optional[str] = None, op: OpArg = None,
              prefix_callback: Optional[coopd.UserOperator] = None, arch: Optional[str] = None,
              client: Optional[coopd.Client] = None, **options: Any) -> Primitive:
        return make(family, dtype, threads=threads, items_per_thread=items_per_thread,
                    method=method, algorithm=algorithm, op=op, prefix_callback=prefix_callback,
                    arch=arch, client=client, options=options)

    build.__name__ = build.__qualname__ = family[len("block_"):]
    build.__doc__ = (f"{summary}: coopd's {family} for a block of `threads` (x or (x, y, z)), "
                     f"`items_per_thread` items each.\n{_COMMON}")
    return build


def warp_factory(family: str, summary: str) -> Callable[..., Primitive]:
    def build(dtype: Any, warp_threads: int = 32, items_per_thread: int = 1, *,
              method: Optional[str] = None, algorithm: Optional[str] = None, op: OpArg = None,
              block_threads: Optional[int] = None, arch: Optional[str] = None,
              client: Optional[coopd.Client] = None, **options: Any) -> Primitive:
        return make(family, dtype, warp_threads=warp_threads, items_per_thread=items_per_thread,
                    method=method, algorithm=algorithm, op=op, block_threads=block_threads,
                    arch=arch, client=client, options=options)

    build.__name__ = build.__qualname__ = family[len("warp_"):]
    build.__doc__ = (f"{summary}: coopd's {family} for logical warps of `warp_threads` lanes, "
                     f"`items_per_thread` items each. Its temp storage is per logical warp; "
                     f"temp_storage() in a kernel reserves a row for each warp of a block of "
                     f"`block_threads` (default 1024).\n{_COMMON}")
    return build
