"""User operators written as Numba Python functions, compiled to LTO-IR for coopd.

``def less(a, b): return a < b`` becomes ``extern "C" __device__ bool <name>(T, T)`` through
numba-cuda's ``cuda.compile(..., device=True, abi="c", output="ltoir")``, and is sent to coopd
as the operator's LTO-IR: coopd links it with the primitive, and nvJitLink inlines it into the
kernel.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Any, Callable, Dict, Tuple

from numba import cuda
from numba.cuda import types

import coopd
from coopd.numba._dtypes import DType

# Operator kinds (coopctl catalog): what an operator of each kind returns, given T.
_RESULTS = {"binary": None, "difference": None, "comparator": types.boolean,
            "flag": types.boolean}

_lock = threading.Lock()
_compiled: Dict[Tuple[Any, ...], coopd.UserOperator] = {}


def cc_of(arch: str) -> Tuple[int, int]:
    """(9, 0) for "sm_90" (and "sm_90a")."""
    m = re.fullmatch(r"sm_(\d+)(\d)a?", arch)
    if not m:
        raise ValueError(f'arch must look like "sm_90"; got "{arch}"')
    return int(m.group(1)), int(m.group(2))


def symbol_for(func: Callable, signature: Any, arch: str) -> str:
    """A C name for the compiled operator, distinct for distinct functions and signatures (two
    operators linked into one kernel must not share a symbol). coopd keeps ``coop_`` for its own
    symbols, so these start with ``coopd_py_``."""
    code = getattr(func, "__code__", None)
    identity = repr((getattr(func, "__module__", ""), getattr(func, "__qualname__", ""),
                     code.co_code if code else b"", repr(code.co_consts) if code else "",
                     str(signature), arch))
    name = re.sub(r"\W", "_", getattr(func, "__name__", "op"))[:40]
    return f"coopd_py_{name}_{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


def python_operator(func: Callable, kind: str, dtype: DType, arch: str,
                    where: str) -> coopd.UserOperator:
    """Compiles ``func`` as an operator of ``kind`` over ``dtype`` for ``arch`` (once per
    process for each function, kind, dtype and arch)."""
    if kind not in _RESULTS:
        raise ValueError(f"{where}: this method takes no operator (op kind {kind!r})")
    if dtype.name in ("float16", "bfloat16") or dtype.is_user:
        # Numba passes float16 as a 16-bit scalar and records by reference, where coopd's operator
        # declaration takes CUDA's struct by value: the call would not be inlined.
        raise ValueError(f"{where}: a Python operator takes int8..uint64, float32 or float64 "
                         f"values; for {dtype.name} give CUDA C++ source "
                         "(coopd.UserOperator(name=..., source=...))")
    t = dtype.numba
    result = _RESULTS[kind] or t
    signature = result(t, t)
    key = (func, kind, dtype.name, arch)
    with _lock:
        op = _compiled.get(key)
        if op is None:
            name = symbol_for(func, signature, arch)
            try:
                ltoir, _ = cuda.compile(func, signature, device=True, abi="c", output="ltoir",
                                        cc=cc_of(arch), abi_info={"abi_name": name})
            except Exception as e:
                raise ValueError(f"{where}: the Python operator {func.__name__} does not "
                                 f"compile as {signature}: {e}") from e
            data = bytes(ltoir.data) if hasattr(ltoir, "data") else bytes(ltoir)
            op = coopd.UserOperator(name=name, ltoir=data)
            _compiled[key] = op
        return op
