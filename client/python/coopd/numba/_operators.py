"""User operators written as Numba Python functions, compiled to LTO-IR for coopd.

``def less(a, b): return a < b`` becomes ``extern "C" __device__ bool <name>(T, T)`` through
numba-cuda's ``cuda.compile(..., device=True, abi="c", output="ltoir")``, and is sent to coopd
as the operator's LTO-IR: coopd links it with the primitive, and nvJitLink inlines it into the
kernel.

On user types (Numba struct types, complex64/128) the operator takes pointers
(``UserOperator.by_pointer``): ``void <name>(T* result, const T* a, const T* b)``, or
``bool <name>(const T* a, const T* b)`` for comparators. A function written that way
(``pointer_form``: cuda.coop's ``op(result_ptr, lhs_ptr, rhs_ptr)``) is compiled as it is; one
written on values (``op(a, b)`` returning the result) is called from a small wrapper of that
form.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from numba import cuda
from numba.cuda import types

import coopd
from coopd.numba._dtypes import DType


def _numba_cuda_version() -> Tuple[int, ...]:
    try:
        import numba_cuda
        return tuple(int(x) for x in re.findall(r"\d+", numba_cuda.__version__)[:2])
    except (ImportError, AttributeError):
        return (0, 0)


# A C-ABI function returning boolean is returned as i8 (what CUDA C++ declares for bool).
# numba-cuda before 0.30 returns the i1 itself, which NVVM rejects ("parse value doesn't match
# function result type 'i8'"); returning uint8 there gives the same i8 of 0 or 1.
_BOOL_RESULT = types.boolean if _numba_cuda_version() >= (0, 30) else types.uint8

# Operator kinds (coopctl catalog): what an operator of each kind returns, given T.
_RESULTS = {"binary": None, "difference": None, "comparator": _BOOL_RESULT,
            "flag": _BOOL_RESULT}

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


def _device_function(func: Callable, t: types.Type, cc: Tuple[int, int]) -> Any:
    """``func`` as a Numba device function, compiled for (t, t) and ``cc`` ahead of its first
    call: numba-cuda compiles a device function called from another for the current GPU, and
    operators must also compile where there is none."""
    from numba.cuda.compiler import compile_cuda
    device = cuda.jit(device=True)(func)
    args = (t, t)
    cres = compile_cuda(func, None, args, nvvm_options={"opt": 3}, cc=cc, forceinline=True)
    device.overloads[args] = cres
    cres.target_context.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
    return device


def _pointer_wrapper(func: Callable, t: types.Type, returns_bool: bool,
                     cc: Tuple[int, int]) -> Callable:
    """``func`` written on values, called through the pointer form."""
    device = _device_function(func, t, cc)
    if returns_bool:
        def by_pointer_predicate(a, b):
            return device(a[0], b[0])
        return by_pointer_predicate

    def by_pointer(result, a, b):
        result[0] = device(a[0], b[0])
    return by_pointer


def python_operator(func: Callable, kind: str, dtype: DType, arch: str, where: str,
                    pointer_form: bool = False) -> coopd.UserOperator:
    """Compiles ``func`` as an operator of ``kind`` over ``dtype`` for ``arch`` (once per
    process for each function, kind, dtype, arch and form). ``pointer_form``: on a user type,
    ``func`` already takes pointers (``op(result_ptr, a_ptr, b_ptr)``, or ``op(a_ptr, b_ptr)``
    for comparators); otherwise it takes and returns values."""
    if kind not in _RESULTS:
        raise ValueError(f"{where}: this method takes no operator (op kind {kind!r})")
    if dtype.name in ("float16", "bfloat16") or (dtype.is_user and not dtype.is_struct):
        # Numba passes float16 as a 16-bit scalar, where coopd's operator declaration takes
        # CUDA's struct by value (the call would not be inlined); a Record's fields cannot be
        # reached through a pointer in numba-cuda's lowering.
        raise ValueError(f"{where}: a Python operator takes int8..uint64, float32, float64, "
                         f"complex or Numba struct-type values; for {dtype.numba} give CUDA C++ "
                         "source (coopd.UserOperator(name=..., source=...))")
    t = dtype.numba
    returns_bool = _RESULTS[kind] is not None
    by_pointer = dtype.is_user
    if by_pointer:
        ptr = types.CPointer(t)
        signature = _BOOL_RESULT(ptr, ptr) if returns_bool else types.void(ptr, ptr, ptr)
    else:
        signature = (_RESULTS[kind] or t)(t, t)
    form = "pointer" if pointer_form else "value"
    wrapped = by_pointer and not pointer_form
    shown = f"{(_RESULTS[kind] or t)}({t}, {t})" if wrapped else signature
    return _compiled_operator(
        (func, kind, t, arch, form), func, signature, form, arch,
        (lambda: _pointer_wrapper(func, t, returns_bool, cc_of(arch))) if wrapped else None,
        f"{where}: the Python operator {func.__name__} does not compile as {shown}",
        by_pointer=by_pointer)


def _compiled_operator(key: Tuple[Any, ...], func: Callable, signature: Any, tag: str, arch: str,
                       wrap: Optional[Callable[[], Callable]], failure: str,
                       by_pointer: bool = False) -> coopd.UserOperator:
    """``func`` (or what ``wrap`` makes of it) compiled once per process and ``key`` to LTO-IR
    at ``signature``, under a symbol of its own; ValueError starting with ``failure`` when it
    does not compile."""
    with _lock:
        op = _compiled.get(key)
        if op is None:
            name = symbol_for(func, (signature, tag), arch)
            try:
                ltoir, _ = cuda.compile(wrap() if wrap else func, signature, device=True,
                                        abi="c", output="ltoir", cc=cc_of(arch),
                                        abi_info={"abi_name": name})
            except Exception as e:
                raise ValueError(f"{failure}: {e}") from e
            data = bytes(ltoir.data) if hasattr(ltoir, "data") else bytes(ltoir)
            op = coopd.UserOperator(name=name, ltoir=data, by_pointer=by_pointer)
            _compiled[key] = op
        return op


def python_prefix_callback(func: Callable, state_type: types.Type, dtype: DType, arch: str,
                           where: str) -> coopd.UserOperator:
    """Compiles a Python block-prefix callback for block_scan's ``*_prefix`` methods:
    ``func(state_ptr, block_aggregate)`` returns the tile's prefix, ``state_ptr`` pointing at a
    value of Numba type ``state_type`` (cuda.coop's StatefulFunction). It becomes coopd's
    ``T name(void* state, T block_aggregate)``; kernels pass the state as an array of one
    ``state_type`` (``cuda.local.array(1, state_type)``)."""
    if dtype.is_user or dtype.name in ("float16", "bfloat16"):
        raise ValueError(f"{where}: a Python prefix callback takes int8..uint64, float32 or "
                         f"float64 aggregates; for {dtype.numba} give CUDA C++ source "
                         "(coopd.UserOperator(name=..., source=...))")
    if not isinstance(state_type, types.Type):
        raise ValueError(f"{where}: the prefix callback's state type must be a Numba type; got "
                         f"{state_type!r}")
    t = dtype.numba
    signature = t(types.CPointer(state_type), t)
    return _compiled_operator(
        (func, "prefix", t, state_type, arch), func, signature, "prefix", arch, None,
        f"{where}: the prefix callback {func.__name__} does not compile as {signature}")
