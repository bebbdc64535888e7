"""What coopd.coop's block and warp factories share: argument normalization as cuda.coop 1.1.1
does it (dtypes, block shapes), its scan operators, and the errors for what coopd lacks."""

from __future__ import annotations

import operator
from collections import namedtuple
from typing import Any, Callable, Optional, Tuple

import numba
import numpy as np
from numba.cuda import types

from coopd.numba import _dtypes
from coopd.numba._dtypes import DType

ISSUE = "coopd issue 29"

dim3 = namedtuple("dim3", ("x", "y", "z"))


def missing(what: str, feature: str) -> NotImplementedError:
    """The error for a cuda.coop 1.1.1 feature coopd does not serve yet."""
    return NotImplementedError(f"coopd.coop: {what} needs {feature}, which coopd does not have "
                               f"yet ({ISSUE}); cuda.coop 1.1.1 supports it")


def normalize_dim(dim: Any) -> dim3:
    """An int or a 2- or 3-tuple as (x, y, z); ValueError for anything else or negatives."""
    if isinstance(dim, dim3):
        return dim
    if isinstance(dim, int):
        if dim < 0:
            raise ValueError(f"threads_per_block must not be negative; got {dim}")
        return dim3(dim, 1, 1)
    if isinstance(dim, tuple):
        if len(dim) not in (2, 3):
            raise ValueError(f"threads_per_block as a tuple has 2 or 3 elements; got {len(dim)}")
        if any(d < 0 for d in dim):
            raise ValueError(f"threads_per_block must not be negative; got {dim}")
        return dim3(*dim) if len(dim) == 3 else dim3(dim[0], dim[1], 1)
    raise ValueError(f"threads_per_block must be an int or a 2- or 3-tuple; got {type(dim)}")


def normalize_dtype(dtype: Any) -> types.Type:
    """A Numba type from a Numba type, a NumPy dtype or scalar type, ``"np.<name>"`` or a
    Numba type's name (``"int32"``); ValueError for anything else."""
    if isinstance(dtype, types.Type):
        return dtype
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        try:
            return numba.from_dtype(np.dtype(dtype))
        except Exception as e:
            raise ValueError(f"no Numba type for the NumPy dtype {dtype}: {e}") from None
    if isinstance(dtype, str):
        if "." in dtype:
            name = dtype[3:] if dtype.startswith("np.") else None
            if name is None or not hasattr(np, name):
                raise ValueError(f"a dtype string with a period names a NumPy type as "
                                 f"'np.<name>'; got {dtype!r}")
            return normalize_dtype(getattr(np, name))
        t = getattr(numba, dtype, None)
        if not isinstance(t, types.Type):
            raise ValueError(f"no Numba type named {dtype!r}")
        return t
    raise ValueError(f"dtype must be a Numba type, a NumPy dtype or a type name; got {dtype!r}")


def coopd_dtype(numba_type: types.Type, what: str) -> DType:
    """coopd's value type for a normalized dtype, or NotImplementedError naming what coopd
    lacks (complex numbers, Numba StructModel types)."""
    if isinstance(numba_type, types.Complex):
        raise missing(f"{what} of {numba_type}", "complex64/complex128 value types in "
                      "coopd.numba")
    if isinstance(numba_type, types.Record):
        return _dtypes.resolve(numba_type, what)
    try:
        return _dtypes.resolve(numba_type, what)
    except ValueError:
        raise missing(f"{what} of {numba_type}", "user-defined Numba types (StructModel) in "
                      "coopd.numba") from None


def check_no_methods(methods: Optional[dict], what: str) -> None:
    if methods:
        raise missing(f"{what} with methods= (construct/assign)", "user-defined types with "
                      "construct/assign methods")


def check_items(items_per_thread: int) -> None:
    if items_per_thread < 1:
        raise ValueError("items_per_thread must be greater than or equal to 1")


def warp_threads(threads_in_warp: int) -> int:
    if threads_in_warp not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"threads_in_warp must be a power of two up to 32; got "
                         f"{threads_in_warp}")
    return threads_in_warp


def multiplies(a: Any, b: Any) -> Any:
    return a * b


# cuda.coop's scan operators: sums, the operators it knows (coopd builtins, or multiplies as a
# Python operator), anything else callable is the user's.
_SUM = ("+", "add", "plus", np.add, operator.add)
_KNOWN = {
    "mul": "mul", "multiplies": "mul", "*": "mul", np.multiply: "mul", operator.mul: "mul",
    "min": "min", "minimum": "min", np.minimum: "min",
    "max": "max", "maximum": "max", np.maximum: "max",
    "bit_and": "bit_and", "&": "bit_and", np.bitwise_and: "bit_and", operator.and_: "bit_and",
    "bit_or": "bit_or", "|": "bit_or", np.bitwise_or: "bit_or", operator.or_: "bit_or",
    "bit_xor": "bit_xor", "^": "bit_xor", np.bitwise_xor: "bit_xor", operator.xor: "bit_xor",
}


def _in(op: Any, choices: Any) -> bool:
    try:
        return op in choices
    except TypeError:  # unhashable callables
        return False


class ScanOperator:
    """A scan operator as cuda.coop 1.1.1 classifies it: ``kind`` is "sum", "known" or
    "callable"; ``name`` the known operator's name ("mul", "max", ...)."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.name = ""
        if isinstance(op, str) or callable(op):
            if _in(op, _SUM):
                self.kind = "sum"
            elif _in(op, _KNOWN):
                self.kind, self.name = "known", _KNOWN[op]
            elif isinstance(op, str):
                raise ValueError(f"unsupported scan operator: {op!r}")
            else:
                self.kind = "callable"
        else:
            raise ValueError(f"unsupported scan operator type: {type(op)}")

    def coopd_op(self) -> Any:
        """What coopd.numba takes as op=: a builtin's name or a Python function."""
        if self.kind == "sum":
            return "sum"
        if self.kind == "known":
            return multiplies if self.name == "mul" else self.name
        return self.op

    def identity(self, dtype: DType) -> Optional[Any]:
        """The value that leaves any other unchanged (what seeds an exclusive scan given no
        initial value), or None when there is none to know (a user's operator)."""
        if self.kind == "sum" or self.name in ("bit_or", "bit_xor"):
            return 0
        if self.name == "mul":
            return 1
        t = dtype.numba
        if isinstance(t, types.Integer):
            info = np.iinfo(np.dtype(str(t)))
            return {"min": info.max, "max": info.min, "bit_and": -1 if t.signed else info.max}[
                self.name]
        if isinstance(t, types.Float) and self.name in ("min", "max"):
            return float("inf") if self.name == "min" else float("-inf")
        return None


def python_callable(op: Any, what: str) -> Callable:
    if not callable(op):
        raise ValueError(f"{what} must be a callable; got {op!r}")
    return op


def binary_reduce_op(op: Any) -> Any:
    """What coopd.numba takes as op= for a reduce's binary_op: a builtin's name for the
    operators coopd has built in, multiplies as a Python function, else the user's function."""
    if _in(op, _SUM):
        return "sum"
    if _in(op, _KNOWN):
        return multiplies if _KNOWN[op] == "mul" else _KNOWN[op]
    return python_callable(op, "binary_op")
