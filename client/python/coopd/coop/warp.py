"""Warp-wide factories with cuda.coop 1.1.1's names, positional order and defaults, on
coopd.numba (``coopd.coop.warp.make_sum(numba.int32)``).

Kernels call the returned object with the temp storage first or without it; without it, each
call site gets a row of shared memory per logical warp of a block of up to 1024 threads.
"""

from __future__ import annotations

from typing import Any

import coopd.numba as _cn
from coopd.coop._cccl import cccl_for
from coopd.coop._common import (binary_reduce_op, check_items, check_methods, coopd_dtype,
                                normalize_dtype_param, python_callable, warp_threads)
from coopd.coop._invocable import Form, Invocable

__all__ = ["make_exclusive_sum", "make_merge_sort_keys", "make_reduce", "make_sum"]


def _make(family: str, dtype: Any, threads_in_warp: int, items_per_thread: int = 1,
          **kw: Any) -> Any:
    # The CCCL of the installed cuda-cccl when coopd serves it (coopd.coop._cccl).
    kw.setdefault("cccl", cccl_for(_cn.get_client()))
    return _cn.make(family, dtype, warp_threads=warp_threads(threads_in_warp),
                    items_per_thread=items_per_thread, **kw)


def _single(name: str, family: str, dtype: Any, threads_in_warp: int, op: Any = None,
            **kw: Any) -> Invocable:
    t = normalize_dtype_param(dtype)
    dt = coopd_dtype(t, name)
    if dt.is_user and op is None:
        raise ValueError(f"{name} needs a numeric dtype; for {t} use warp.make_reduce with a "
                         "binary_op written on pointers, op(result_ptr, lhs_ptr, rhs_ptr)")
    if op is not None:
        op = binary_reduce_op(op, dt)
    p = _make(family, dt, threads_in_warp, op=op, op_by_pointer=dt.is_user, **kw)
    return Invocable(name, [Form(1, p, p.names[0], (0,))])


def make_reduce(dtype, binary_op, threads_in_warp=32, methods=None):
    """A reduction across a logical warp with ``binary_op`` (valid in lane 0); on a user type
    written on pointers, ``op(result_ptr, lhs_ptr, rhs_ptr)``.

    In kernels: ``r(item)`` (optional temp storage first); returns the reduction."""
    check_methods(methods, "warp.make_reduce")
    return _single("warp.make_reduce", "warp_reduce", dtype, threads_in_warp, method="reduce",
                   op=binary_op)


def make_sum(dtype, threads_in_warp=32):
    """A sum across a logical warp (valid in lane 0). In kernels: ``r(item)``."""
    return _single("warp.make_sum", "warp_reduce", dtype, threads_in_warp, method="sum")


def make_exclusive_sum(dtype, threads_in_warp=32):
    """An exclusive prefix sum across a logical warp. In kernels: ``out = s(item)``."""
    return _single("warp.make_exclusive_sum", "warp_scan", dtype, threads_in_warp,
                   method="exclusive_sum")


def make_merge_sort_keys(dtype, items_per_thread, compare_op, threads_in_warp=32, methods=None):
    """Sorts a logical warp's keys with ``compare_op``. In kernels: ``sort(keys)``."""
    name = "warp.make_merge_sort_keys"
    check_items(items_per_thread)
    check_methods(methods, name)
    dt = coopd_dtype(normalize_dtype_param(dtype), name)
    p = _make("warp_merge_sort", dt, threads_in_warp, items_per_thread, method="sort",
              op=python_callable(compare_op, "compare_op"), op_by_pointer=dt.is_user)
    return Invocable(name, [Form(1, p, p.names[0], (0,))])
