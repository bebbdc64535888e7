"""Value types: CuTe DSL's numeric classes, NumPy's and coopd's names for them, and the C types
of coopd's declarations."""

from __future__ import annotations

from typing import Any, Dict, Type

import cutlass
import numpy as np

# coopd dtype name -> CuTe DSL numeric class.
BY_NAME: Dict[str, Type[Any]] = {
    "int8": cutlass.Int8, "int16": cutlass.Int16, "int32": cutlass.Int32,
    "int64": cutlass.Int64, "uint8": cutlass.Uint8, "uint16": cutlass.Uint16,
    "uint32": cutlass.Uint32, "uint64": cutlass.Uint64, "float32": cutlass.Float32,
    "float64": cutlass.Float64, "float16": cutlass.Float16, "bfloat16": cutlass.BFloat16,
}

# The C types of coopd's declarations (server/catalog/spec.cc) -> coopd dtype name. bool is
# what flag and comparator results are; CuTe's Boolean is an i1 where clang's bool is an i8 in
# memory but an i1 as a by-value argument, so it is passed as such.
C_TYPES: Dict[str, str] = {
    "signed char": "int8", "short": "int16", "int": "int32", "long long": "int64",
    "unsigned char": "uint8", "unsigned short": "uint16", "unsigned int": "uint32",
    "unsigned long long": "uint64", "float": "float32", "double": "float64",
    "__half": "float16", "__nv_bfloat16": "bfloat16",
}

# CUDA's 16-bit float structs cross a C-convention call as a struct, which CuTe's f16/bf16 are
# not: entries taking or returning one by value are refused (arrays of them are fine).
BY_VALUE_REFUSED = ("float16", "bfloat16")


def resolve(dtype: Any, what: str = "dtype") -> str:
    """coopd's name for a CuTe numeric class (``cutlass.Float32``), a NumPy dtype or scalar
    type, or a coopd name (``"float32"``)."""
    if isinstance(dtype, str):
        if dtype in BY_NAME:
            return dtype
        raise ValueError(f"{what} must be one of {', '.join(BY_NAME)} (or a CuTe or NumPy "
                         f'type); got "{dtype}"')
    for name, cls in BY_NAME.items():
        if dtype is cls:
            return name
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    if np_dtype is not None and np_dtype.fields is None and np_dtype.name in BY_NAME:
        return np_dtype.name
    raise ValueError(f"{what} must be a CuTe numeric type (cutlass.Float32, ...), a NumPy "
                     f"dtype or one of {', '.join(BY_NAME)}; got {dtype!r} (coopd.cute takes "
                     "no user types)")
