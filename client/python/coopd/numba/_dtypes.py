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
    record, a complex number or a Numba struct type), ``numba`` the Numba type, and for user
    types their ``size`` and ``align`` (coopd moves them as opaque bytes)."""

    name: str
    numba: types.Type
    size: int
    align: int

    @property
    def is_user(self) -> bool:
        return self.name == "user"

    @property
    def is_struct(self) -> bool:
        """A user type Numba holds as a struct value (a StructModel type, complex64/128), which
        kernels pass and receive by value; a Record is held by reference."""
        return self.is_user and not isinstance(self.numba, types.Record)

    def user_type(self) -> Optional[Dict[str, int]]:
        return {"size": self.size, "align": self.align} if self.is_user else None

    def accepts_array_of(self, t: types.Type) -> bool:
        """Whether an array of ``t`` may stand for an array of this type."""
        if self.is_struct:
            return t == self.numba
        if self.is_user:
            return isinstance(t, types.Record) and t.size == self.size
        return t == self.numba or t in _ARRAY_ALIASES.get(self.name, ())

    def accepts_value_of(self, t: types.Type) -> bool:
        """Whether a kernel's value of type ``t`` may be passed as one of this type."""
        if self.is_struct:
            return t == self.numba
        if self.is_user:
            return isinstance(t, types.Record) and t.size == self.size
        return isinstance(t, (types.Number, types.Boolean))


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
        struct = _struct(dtype)
        if struct is not None:
            return struct
        raise ValueError(f"{what}: coopd has no value type for Numba's {dtype}; it takes "
                         f"{', '.join(str(t) for t in _BY_NAME.values())}, complex64, "
                         "complex128, a Record or a Numba type with a StructModel")
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


def _holds_pointer(llvm_type: Any) -> bool:
    if getattr(llvm_type, "is_pointer", False) or "ptr" in str(llvm_type) or "*" in str(llvm_type):
        return True
    return any(_holds_pointer(e) for e in getattr(llvm_type, "elements", ()))


def _struct(t: types.Type) -> Optional[DType]:
    """A user type for a Numba type held as a plain struct (its data model a StructModel whose
    value and memory forms are one LLVM struct: complex64/128 and extension types like a
    two-int32 pair); None for anything else. Size and alignment are the CUDA target's."""
    from numba.cuda.descriptor import cuda_target
    context = cuda_target.target_context
    try:
        model = context.data_model_manager[t]
    except Exception:  # no data model registered for the type
        return None
    if not any(c.__name__ == "StructModel" for c in type(model).__mro__):
        return None
    data = model.get_data_type()
    if model.get_value_type() != data or not hasattr(data, "elements") or _holds_pointer(data):
        return None  # a string, a list, an array: references, not plain bytes to move
    return DType("user", t, context.get_abi_sizeof(data), context.get_abi_alignment(data))


def _record(rec: types.Record) -> DType:
    align = numpy_support.as_dtype(rec).alignment
    return DType("user", rec, rec.size, align)
