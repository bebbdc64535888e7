"""The factory functions of coopd.numba.block and coopd.numba.warp: one per catalogue family."""

from __future__ import annotations

from typing import Any, Dict

from coopd import _families
from coopd.numba._primitive import Primitive, make

_COMMON = """
    dtype: a Numba type (numba.float32), a NumPy dtype (a structured one for a user type) or
        coopd's name ("float32"); complex64, complex128 and Numba types with a StructModel
        are user types too, passed and returned by value in kernels. method, algorithm: as `coopctl catalog` lists them (empty:
        the family's default). op: a builtin's name ("sum", "less", ...), a Python function
        (compiled with numba-cuda to LTO-IR, inlined after linking), or a coopd.UserOperator
        (CUDA C++ source or LTO-IR). arch: "sm_90" (default: $COOPD_ARCH, else the current
        GPU's). client: a coopd.Client (default: coopd.numba.set_client's, else one on the
        default socket). Other keywords are the family's options message (value_dtype,
        radix_bits, bins, with_aggregate, warp_time_slicing, decoded_items_per_thread).

    The same spec in one process returns the same object, fetched once."""


def factories(warp: bool) -> Dict[str, Any]:
    """{name: factory} for coopd.numba.block (or .warp)."""
    return _families.factories(make, _COMMON, warp)


__all__ = ["factories", "Primitive"]
