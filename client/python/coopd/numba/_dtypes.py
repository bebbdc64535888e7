"""Value types: Numba's, NumPy's and coopd's names for them, and the C types of declarations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np
from numba.cuda import types
from numba.cuda.np import numpy_support

# coopd dtype name -> Numba type (the order of coopd's catalogue).
_BY_NAME: Dict[str, types.Type] = {
    "int8": types.int8, "int16": types.int16, "int32": types.int32, "int64": types.int64,
    "uint8": types.uint8, "uint16": types.uint16, "uint32": types.uint32, "uint64": types.uint64,
    "float32": types.float32, "float64": types.float64, "float16": types.float16,
    "bfloat16": types.bfloat16,
}

# The C types of coopd's declarations (server/catalog/spec.cc) -> coopd dtype name.
C_TYPES: Dict[str, str] = {
    "signed char": "int8", "short": "int16", "int": "int32", "long long": "int64",
    "unsigned char": "uint8", "unsigned short": "uint16", "unsigned int": "uint32",
    "unsigned long long": "uint64", "float": "float32", "double": "float64",
    "__half": "float16", "__nv_bfloat16": "bfloat16",
}

# Arrays that may hold a dtype's values: NumPy has no bfloat16, so its bits travel as 16-bit
# integers as well.
_ARRAY_ALIASES: Dict[str, tuple] = {"bfloat16": (types.uint16, types.int16)}


@dataclass(frozen=True)
class DType:
    """A value type as coopd and Numba see it: ``name`` is coopd's ("float32", or "user" for a
    record), ``numba`` the Numba type (a ``Record`` for user types), and for user types the
    record's ``size`` and ``align``."""

    name: str
    numba: types.Type
    size: int
    align: int

    @property
    def is_user(self) -> bool:
        return self.name == "user"

    def user_type(self) -> Optional[Dict[str, int]]:
        return {"size": self.size, "align": self.align} if self.is_user else None

    def accepts_array_of(self, t: types.Type) -> bool:
        """Whether an array of ``t`` may stand for an array of this type."""
        if self.is_user:
            return isinstance(t, types.Record) and t.size == self.size
        return t == self.numba or t in _ARRAY_ALIASES.get(self.name, ())


def resolve(dtype: Any, what: str = "dtype") -> DType:
    """A Numba type (``numba.float32``), NumPy dtype or scalar type (``np.float32``, a structured
    dtype for user types), Numba Record, or coopd's name (``"float32"``)."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        if dtype in _BY_NAME:
            return from_name(dtype)
        raise ValueError(f"{what} must be one of {', '.join(_BY_NAME)} (or a Numba/NumPy type); "
                         f'got "{dtype}"')
    if isinstance(dtype, types.Record):
        return _record(dtype)
    if isinstance(dtype, types.Type):
        for name, t in _BY_NAME.items():
            if t == dtype:
                return DType(name, t, t.bitwidth // 8, t.bitwidth // 8)
        raise ValueError(f"{what}: coopd has no value type for Numba's {dtype}; it takes "
                         f"{', '.join(str(t) for t in _BY_NAME.values())} or a Record")
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"{what} must be a Numba type, a NumPy dtype or one of "
                         f"{', '.join(_BY_NAME)}; got {dtype!r}") from None
    if np_dtype.fields is not None:
        return _record(numpy_support.from_dtype(np_dtype))
    return resolve(numpy_support.from_dtype(np_dtype), what)


def from_name(name: str) -> DType:
    t = _BY_NAME[name]
    return DType(name, t, t.bitwidth // 8, t.bitwidth // 8)


def _record(rec: types.Record) -> DType:
    align = numpy_support.as_dtype(rec).alignment
    return DType("user", rec, rec.size, align)
