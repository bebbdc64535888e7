"""Block-wide factories with cuda.coop 1.1.1's names, positional order and defaults, on
coopd.numba (``coopd.coop.block.make_sum(numba.int32, 128)``).

Each factory returns an :class:`~coopd.coop._invocable.Invocable`; kernels call it with the
temp storage first (a ``uint8`` array of ``temp_storage_bytes``) or without it. The call forms
of each factory are listed in its docstring; docs/migrating-from-cuda-coop.md says which of
1.1.1's forms coopd serves and which raise NotImplementedError.
"""

from __future__ import annotations

from enum import IntEnum, auto
from typing import Any, Optional

import coopd.numba as _cn
from coopd.coop._cccl import cccl_for
from coopd.coop._common import (binary_reduce_op, check_items, check_methods, coopd_dtype,
                                normalize_dim_param, normalize_dtype_param, python_callable)
from coopd.coop._invocable import Const, Form, Invocable
from coopd.coop._scan_op import ScanOp
from coopd.numba import _operators
from numba.cuda import types

__all__ = ["BlockExchangeType", "make_exchange", "make_exclusive_scan", "make_exclusive_sum",
           "make_inclusive_scan", "make_inclusive_sum", "make_load", "make_merge_sort_keys",
           "make_radix_sort_keys", "make_radix_sort_keys_descending", "make_reduce", "make_scan",
           "make_store", "make_sum"]

REDUCE_ALGORITHMS = ("raking_commutative_only", "raking", "warp_reductions")
SCAN_ALGORITHMS = ("raking", "raking_memoize", "warp_scans")
LOAD_STORE_ALGORITHMS = ("direct", "striped", "vectorize", "transpose", "warp_transpose",
                         "warp_transpose_timesliced")


def _make(family: str, dtype: Any, dim: Any, items_per_thread: int, **kw: Any) -> Any:
    # The CCCL of the installed cuda-cccl when coopd serves it (coopd.coop._cccl).
    kw.setdefault("cccl", cccl_for(_cn.get_client()))
    return _cn.make(family, dtype, threads=list(dim), items_per_thread=items_per_thread, **kw)


def _entry(p: Any) -> str:
    return p.names[0]


def _checked(algorithm: str, algorithms: Any, items_per_thread: int, threads_per_block: Any,
             dtype: Any) -> Any:
    """What 1.1.1's reductions and scans check first, in its order: (dim3, Numba type)."""
    if algorithm not in algorithms:
        raise ValueError(f"unsupported algorithm: {algorithm!r} (one of {', '.join(algorithms)})")
    check_items(items_per_thread)
    return normalize_dim_param(threads_per_block), normalize_dtype_param(dtype)


def _value_type(t: Any, methods: Optional[dict], name: str) -> Any:
    """coopd's dtype for a reduction's or scan's Numba type: a number or a user type (a Numba
    struct type, a NumPy record, complex64/128), whose operators cuda.coop writes on pointers:
    ``op(result_ptr, lhs_ptr, rhs_ptr)``."""
    check_methods(methods, name)
    return coopd_dtype(t, name)


# ---- reduce --------------------------------------------------------------------------------

def _reduce(dtype: Any, threads_per_block: Any, items_per_thread: int, binary_op: Any,
            algorithm: str, methods: Optional[dict], name: str) -> Invocable:
    dim, t = _checked(algorithm, REDUCE_ALGORITHMS, items_per_thread, threads_per_block, dtype)
    dt = _value_type(t, methods, name)
    if binary_op is None:
        if dt.is_user:
            raise ValueError(f"{name}: a sum needs a numeric dtype; for {t} use "
                             "block.make_reduce with a binary_op")
        full, partial, op = "sum", "sum_partial", None
    else:
        full, partial, op = "reduce", "reduce_partial", binary_reduce_op(binary_op, dt)
    main = _make("block_reduce", dt, dim, items_per_thread, method=full, op=op,
                 algorithm=algorithm, op_by_pointer=dt.is_user)
    forms = [Form(1, main, _entry(main), (0,))]
    if items_per_thread == 1:
        p = _make("block_reduce", dt, dim, 1, method=partial, op=op, algorithm=algorithm,
                  op_by_pointer=dt.is_user)
        forms.append(Form(2, p, _entry(p), (0, 1)))
    return Invocable(name, forms)


def make_reduce(dtype, threads_per_block, binary_op, items_per_thread=1,
                algorithm="warp_reductions", methods=None):
    """A block-wide reduction with ``binary_op`` (valid in thread 0).

    In kernels: ``r(item)``, ``r(item, num_valid)`` (items_per_thread == 1) or ``r(items)``,
    each with an optional temp storage array first; returns the reduction."""
    return _reduce(dtype, threads_per_block, items_per_thread, binary_op, algorithm, methods,
                   "block.make_reduce")


def make_sum(dtype, threads_per_block, items_per_thread=1, algorithm="warp_reductions",
             methods=None):
    """A block-wide sum (valid in thread 0); call forms as :func:`make_reduce`'s."""
    return _reduce(dtype, threads_per_block, items_per_thread, None, algorithm, methods,
                   "block.make_sum")


# ---- scan ----------------------------------------------------------------------------------

def make_scan(dtype, threads_per_block, items_per_thread, initial_value=None, mode="exclusive",
              scan_op="+", block_prefix_callback_op=None, algorithm="raking", methods=None):
    """A block-wide prefix scan, ``mode`` "exclusive" or "inclusive", with ``scan_op`` ("+",
    "max", np.minimum, a Python function, ...). On a user type ``scan_op`` is written on
    pointers, ``op(result_ptr, lhs_ptr, rhs_ptr)``, as in cuda.coop.

    In kernels (optional temp storage first): items_per_thread == 1: ``out = s(item)`` and, for
    exclusive scans with an operator, ``out = s(item, initial_value)``; items_per_thread > 1:
    ``s(items_in, items_out)`` and, with an operator, ``s(items_in, items_out,
    initial_value)``. With ``block_prefix_callback_op`` (a :class:`coopd.coop.StatefulFunction`)
    the kernel passes its state last, an array of one: ``out = s(item, state)`` or
    ``s(items_in, items_out, state)``. An exclusive scan given no initial value is CUB's
    unseeded one (thread 0's output is undefined), or is seeded with the operator's identity
    where it has one."""
    name = "block.make_scan"
    dim, t = _checked(algorithm, SCAN_ALGORITHMS, items_per_thread, threads_per_block, dtype)
    if mode not in ("exclusive", "inclusive"):
        raise ValueError(f"unsupported mode: {mode!r} (exclusive or inclusive)")
    op = ScanOp(scan_op)
    prefix = block_prefix_callback_op
    if initial_value is not None and op.is_sum:
        raise ValueError("initial_value is not supported for inclusive and exclusive sums")
    if initial_value is not None and items_per_thread == 1 and mode == "inclusive":
        raise ValueError("initial_value is not supported for inclusive scans with "
                         "items_per_thread == 1")
    if (initial_value is not None and items_per_thread == 1 and mode == "exclusive"
            and prefix is not None):
        raise ValueError("initial_value is not supported for exclusive scans with "
                         "items_per_thread == 1 and a block prefix callback operator")
    if initial_value is not None and prefix is not None:
        raise ValueError("initial_value does not combine with a block prefix callback "
                         "operator: the callback gives each tile's prefix")
    if items_per_thread > 1 and prefix is None and initial_value is None:
        try:
            t.cast_python_value(0)
        except (TypeError, NotImplementedError) as e:
            raise ValueError("initial_value is required for both inclusive and exclusive "
                             "scans when items_per_thread > 1 and no block prefix callback "
                             f"operator has been supplied (no default of 0 for {t}: {e})") from e
    dt = _value_type(t, methods, name)
    if dt.is_user and not op.is_callable:
        raise ValueError(f"{name}: scan_op {op!r} needs a numeric dtype; on {t} give a "
                         "callable written on pointers, op(result_ptr, lhs_ptr, rhs_ptr)")
    one = items_per_thread == 1
    io = (0,) if one else (0, 1)  # the kernel's item (or in and out arrays)
    cop = op.coopd_op()

    def prim(method: str, op_arg: Any = None, **kw: Any) -> Any:
        return _make("block_scan", dt, dim, items_per_thread, method=method, op=op_arg,
                     algorithm=algorithm, op_by_pointer=dt.is_user, **kw)

    if prefix is not None:
        callback = _prefix_callback(prefix, dt, name)
        method = f"{mode}_sum_prefix" if op.is_sum else f"{mode}_scan_prefix"
        p = prim(method, None if op.is_sum else cop, prefix_callback=callback)
        return Invocable(name, [Form(len(io) + 1, p, _entry(p), io + (len(io),))])
    if op.is_sum:
        p = prim(f"{mode}_sum")
        return Invocable(name, [Form(len(io), p, _entry(p), io)])
    if mode == "inclusive":
        p = prim("inclusive_scan", cop)
        forms = [Form(len(io), p, _entry(p), io)]
        if not one:
            q = prim("inclusive_scan_init", cop)
            forms.append(Form(3, q, _entry(q), (0, 1, 2)))
        return Invocable(name, forms)
    p = prim("exclusive_scan", cop)
    seeded = Form(len(io) + 1, p, _entry(p), io + (len(io),))
    identity = op.identity(dt.numba)
    if identity is None:
        u = prim("exclusive_scan_unseeded", cop)
        unseeded = Form(len(io), u, _entry(u), io)
    else:
        unseeded = Form(len(io), p, _entry(p), io + (Const(identity, dt.numba),))
    return Invocable(name, [seeded, unseeded])


def _prefix_callback(prefix: Any, dt: Any, name: str) -> Any:
    """A StatefulFunction (its ``op`` a class whose ``__call__(self_ptr, block_aggregate)``
    returns the tile's prefix, its ``dtype`` the state's Numba type) compiled for coopd."""
    fn = getattr(prefix, "op", None)
    state = getattr(prefix, "dtype", None)
    if fn is None or state is None:
        raise ValueError(f"{name}: block_prefix_callback_op must be a StatefulFunction(op, "
                         f"dtype); got {prefix!r}")
    call = getattr(fn, "__call__", fn) if isinstance(fn, type) else fn
    return _operators.python_prefix_callback(call, state, dt, _cn.default_arch(),
                                             f"{name} block_prefix_callback_op")


def make_exclusive_sum(dtype, threads_per_block, items_per_thread, prefix_op=None,
                       algorithm="raking", methods=None):
    """A block-wide exclusive prefix sum; call forms as :func:`make_scan`'s."""
    return make_scan(dtype, threads_per_block, items_per_thread, mode="exclusive", scan_op="+",
                     block_prefix_callback_op=prefix_op, algorithm=algorithm, methods=methods)


def make_inclusive_sum(dtype, threads_per_block, items_per_thread, prefix_op=None,
                       algorithm="raking", methods=None):
    """A block-wide inclusive prefix sum; call forms as :func:`make_scan`'s."""
    return make_scan(dtype, threads_per_block, items_per_thread, mode="inclusive", scan_op="+",
                     block_prefix_callback_op=prefix_op, algorithm=algorithm, methods=methods)


def make_exclusive_scan(dtype, threads_per_block, scan_op, items_per_thread, initial_value=None,
                        prefix_op=None, algorithm="raking", methods=None):
    """A block-wide exclusive prefix scan with ``scan_op``; call forms as :func:`make_scan`'s."""
    return make_scan(dtype, threads_per_block, items_per_thread, initial_value=initial_value,
                     mode="exclusive", scan_op=scan_op, block_prefix_callback_op=prefix_op,
                     algorithm=algorithm, methods=methods)


def make_inclusive_scan(dtype, threads_per_block, scan_op, items_per_thread, initial_value=None,
                        prefix_op=None, algorithm="raking", methods=None):
    """A block-wide inclusive prefix scan with ``scan_op``; call forms as :func:`make_scan`'s."""
    return make_scan(dtype, threads_per_block, items_per_thread, initial_value=initial_value,
                     mode="inclusive", scan_op=scan_op, block_prefix_callback_op=prefix_op,
                     algorithm=algorithm, methods=methods)


# ---- load and store ------------------------------------------------------------------------

def _load_store(family: str, dtype: Any, threads_per_block: Any, items_per_thread: int,
                algorithm: str, name: str) -> Invocable:
    if algorithm not in LOAD_STORE_ALGORITHMS:
        raise KeyError(algorithm)  # cuda.coop 1.1.1 looks the algorithm up in a dict
    dim = normalize_dim_param(threads_per_block)
    dt = coopd_dtype(normalize_dtype_param(dtype), name)
    p = _make(family, dt, dim, items_per_thread, algorithm=algorithm)
    return Invocable(name, [Form(2, p, _entry(p), (0, 1))])


def make_load(dtype, threads_per_block, items_per_thread=1, algorithm="direct"):
    """Loads a tile from global memory into each thread's items.

    In kernels: ``load(src, items)`` (optional temp storage first); ``src`` is the block's
    tile (an array or a slice of one)."""
    return _load_store("block_load", dtype, threads_per_block, items_per_thread, algorithm,
                       "block.make_load")


def make_store(dtype, threads_per_block, items_per_thread=1, algorithm="direct"):
    """Stores each thread's items to a tile in global memory.

    In kernels: ``store(dst, items)`` (optional temp storage first)."""
    return _load_store("block_store", dtype, threads_per_block, items_per_thread, algorithm,
                       "block.make_store")


# ---- exchange ------------------------------------------------------------------------------

class BlockExchangeType(IntEnum):
    """The exchange make_exchange performs (cuda.coop 1.1.1 has StripedToBlocked only)."""

    StripedToBlocked = auto()


def make_exchange(block_exchange_type, dtype, threads_per_block, items_per_thread,
                  warp_time_slicing=False, methods=None):
    """Rearranges a striped arrangement of the block's items into a blocked one.

    In kernels: ``exchange(items)`` in place or ``exchange(items_in, items_out)`` (optional
    temp storage first)."""
    name = "block.make_exchange"
    try:
        kind = BlockExchangeType(block_exchange_type)
    except ValueError:
        raise ValueError(f"block_exchange_type must be a BlockExchangeType; got "
                         f"{block_exchange_type!r}") from None
    if kind != BlockExchangeType.StripedToBlocked:
        raise ValueError(f"block_exchange_type must be StripedToBlocked; got {kind!r}")
    check_items(items_per_thread)
    dim = normalize_dim_param(threads_per_block)
    t = normalize_dtype_param(dtype)
    check_methods(methods, name)
    dt = coopd_dtype(t, name)
    options = {"warp_time_slicing": True} if warp_time_slicing else {}
    p = _make("block_exchange", dt, dim, items_per_thread, method="striped_to_blocked",
              options=options)
    return Invocable(name, [Form(1, p, _entry(p), (0, 0)), Form(2, p, _entry(p), (0, 1))])


# ---- sorts ---------------------------------------------------------------------------------

def make_merge_sort_keys(dtype, threads_per_block, items_per_thread, compare_op, methods=None):
    """Sorts the block's keys with ``compare_op`` (a Python function ``a < b``; on a user
    type, complex64/128 included, written on pointers: ``a[0].real < b[0].real``).

    In kernels: ``sort(keys)`` (optional temp storage first)."""
    name = "block.make_merge_sort_keys"
    dim = normalize_dim_param(threads_per_block)
    t = normalize_dtype_param(dtype)
    check_methods(methods, name)
    dt = coopd_dtype(t, name)
    p = _make("block_merge_sort", dt, dim, items_per_thread, method="sort",
              op=python_callable(compare_op, "compare_op"), op_by_pointer=dt.is_user)
    return Invocable(name, [Form(1, p, _entry(p), (0,))])


def _radix_sort(dtype: Any, threads_per_block: Any, items_per_thread: int, descending: bool,
                name: str) -> Invocable:
    dim = normalize_dim_param(threads_per_block)
    dt = coopd_dtype(normalize_dtype_param(dtype), name)
    method = "sort_descending" if descending else "sort"
    p = _make("block_radix_sort", dt, dim, items_per_thread, method=method)
    bits = (Const(0, types.int32), Const(dt.size * 8, types.int32))
    return Invocable(name, [Form(1, p, _entry(p), (0,) + bits),
                            Form(3, p, _entry(p), (0, 1, 2))])


def make_radix_sort_keys(dtype, threads_per_block, items_per_thread):
    """Sorts the block's keys in ascending order.

    In kernels: ``sort(keys)`` or ``sort(keys, begin_bit, end_bit)`` (optional temp storage
    first)."""
    return _radix_sort(dtype, threads_per_block, items_per_thread, False,
                       "block.make_radix_sort_keys")


def make_radix_sort_keys_descending(dtype, threads_per_block, items_per_thread):
    """Sorts the block's keys in descending order; call forms as make_radix_sort_keys's."""
    return _radix_sort(dtype, threads_per_block, items_per_thread, True,
                       "block.make_radix_sort_keys_descending")
