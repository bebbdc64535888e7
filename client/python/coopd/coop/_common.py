"""What coopd.coop's block and warp factories share: argument normalization as cuda.coop 1.1.1
does it (dtypes, block shapes; its ``_common`` module's names), operators and ``methods=``."""

from __future__ import annotations

from collections import namedtuple
from enum import IntEnum
from typing import Any, Callable, Optional, Tuple

import numba
import numpy as np
from numba.cuda import types

from coopd.coop._scan_op import ScanOp
from coopd.numba import _dtypes
from coopd.numba._dtypes import DType

dim3 = namedtuple("dim3", ("x", "y", "z"))


class CudaSharedMemConfig(IntEnum):
    """Shared-memory bank sizes (cudaSharedMemConfig), as cuda.coop 1.1.1 names them."""

    BankSizeDefault = 0
    BankSizeFourByte = 1
    BankSizeEightByte = 2

    def __str__(self) -> str:
        return f"cudaSharedMem{self.name}"


def normalize_dim_param(dim: Any) -> dim3:
    """An int or a 2- or 3-tuple as (x, y, z); ValueError for anything else or negatives."""
    if isinstance(dim, dim3):
        return dim
    if isinstance(dim, int) and not isinstance(dim, bool):
        if dim < 0:
            raise ValueError(f"Dimension value must be non-negative; got {dim}")
        return dim3(dim, 1, 1)
    if isinstance(dim, tuple):
        if len(dim) not in (2, 3):
            raise ValueError(f"Tuple dimension must have 2 or 3 elements; got {len(dim)}: "
                             f"{dim}")
        if any(not isinstance(d, int) for d in dim):
            raise ValueError(f"Unsupported dimension type: the elements of {dim} must be ints")
        if any(d < 0 for d in dim):
            raise ValueError(f"Dimension values must be non-negative; got {dim}")
        return dim3(*dim) if len(dim) == 3 else dim3(dim[0], dim[1], 1)
    raise ValueError(f"Unsupported dimension type: {type(dim).__name__} ({dim!r}); give an int, "
                     "a 2- or 3-tuple of ints or a dim3")


def normalize_dtype_param(dtype: Any) -> types.Type:
    """A Numba type from a Numba type, a NumPy dtype or scalar type, ``"np.<name>"`` or a
    Numba type's name (``"int32"``); ValueError for anything else."""
    if isinstance(dtype, types.Type):
        return dtype
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        try:
            return numba.from_dtype(np.dtype(dtype))
        except Exception as e:
            raise ValueError(f"Invalid numpy dtype: no Numba type for {dtype}: {e}") from None
    if isinstance(dtype, str):
        if "." in dtype:
            if not dtype.startswith("np."):
                raise ValueError(f"String with period must start with 'np.' (a NumPy type, "
                                 f"'np.int32'); got {dtype!r}")
            t = getattr(np, dtype[3:], None)
            if not (isinstance(t, type) and issubclass(t, np.generic)):
                raise ValueError(f"Invalid numpy dtype: {dtype!r} names no NumPy scalar type")
            return normalize_dtype_param(t)
        t = getattr(numba, dtype, None)
        if not isinstance(t, types.Type):
            raise ValueError(f"Invalid numba type name: {dtype!r}")
        return t
    raise ValueError(f"Unrecognized dtype format: {dtype!r}; give a Numba type, a NumPy dtype "
                     "or scalar type, 'np.<name>' or a Numba type's name")


def coopd_dtype(numba_type: types.Type, what: str) -> DType:
    """coopd's value type for a normalized dtype: a number, or a user type (a NumPy record, a
    Numba struct type, complex64/128). ValueError for a type coopd cannot hold (one with
    pointers inside, such as strings and lists)."""
    return _dtypes.resolve(numba_type, what)


def check_methods(methods: Optional[dict], what: str) -> None:
    """cuda.coop's ``methods=`` of a user type: only "construct" and "assign", callables.
    coopd moves user-type values as bytes, so these are checked but not called (see
    docs/migrating-from-cuda-coop.md)."""
    for name, fn in (methods or {}).items():
        if name not in ("construct", "assign"):
            raise ValueError(f"Unexpected method {name!r} in {what}'s methods= (construct or "
                             "assign)")
        if not callable(fn):
            raise ValueError(f"{what}: methods[{name!r}] must be a callable; got {fn!r}")


def check_items(items_per_thread: int) -> None:
    if items_per_thread < 1:
        raise ValueError("items_per_thread must be greater than or equal to 1")


def warp_threads(threads_in_warp: int) -> int:
    if threads_in_warp not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"threads_in_warp must be a power of two up to 32; got "
                         f"{threads_in_warp}")
    return threads_in_warp


def python_callable(op: Any, what: str) -> Callable:
    if not callable(op):
        raise ValueError(f"{what} must be a callable; got {op!r}")
    return op


def binary_reduce_op(op: Any, dtype: DType) -> Any:
    """What coopd.numba takes as op= for a reduce's binary_op: on a user type the user's
    function (cuda.coop's pointer form); otherwise a builtin's name for the operators coopd has
    built in, multiplies as a Python function, else the user's function."""
    if dtype.is_user:
        return python_callable(op, "binary_op")
    try:
        return ScanOp(op).coopd_op()
    except ValueError:
        return python_callable(op, "binary_op")
