"""Scan operators as cuda.coop 1.1.1 classifies them (its ``_scan_op`` module's names).

A :class:`ScanOp` is one of three kinds: a sum, an operator CUB knows (multiplies, min, max and
the bitwise ones: libcu++ functors, served by coopd's builtins), or any other callable (the
user's, compiled by coopd.numba). ``op_cpp`` names the libcu++ functor for the first two.
"""

from __future__ import annotations

import operator
from enum import Enum
from typing import Any, Optional

import numpy as np

CUDA_STD_PLUS = "::cuda::std::plus<>"
CUDA_STD_MULTIPLIES = "::cuda::std::multiplies<>"
CUDA_MINIMUM = "::cuda::minimum<>"
CUDA_MAXIMUM = "::cuda::maximum<>"
CUDA_STD_BIT_AND = "::cuda::std::bit_and<>"
CUDA_STD_BIT_OR = "::cuda::std::bit_or<>"
CUDA_STD_BIT_XOR = "::cuda::std::bit_xor<>"


class ScanOpCategory(Enum):
    Sum = "sum"
    Known = "known"
    Callable = "callable"


# Each spelling cuda.coop accepts, mapped to (coopd's builtin name, libcu++ functor).
_SPELLINGS = (
    (("+", "add", "plus", np.add, operator.add), ("sum", CUDA_STD_PLUS)),
    (("*", "mul", "multiplies", np.multiply, operator.mul), ("mul", CUDA_STD_MULTIPLIES)),
    (("min", "minimum", np.minimum), ("min", CUDA_MINIMUM)),
    (("max", "maximum", np.maximum), ("max", CUDA_MAXIMUM)),
    (("&", "bit_and", np.bitwise_and, operator.and_), ("bit_and", CUDA_STD_BIT_AND)),
    (("|", "bit_or", np.bitwise_or, operator.or_), ("bit_or", CUDA_STD_BIT_OR)),
    (("^", "bit_xor", np.bitwise_xor, operator.xor), ("bit_xor", CUDA_STD_BIT_XOR)),
)


def _lookup(op: Any) -> Optional[tuple]:
    for spellings, meaning in _SPELLINGS:
        for s in spellings:
            if type(s) is type(op) and s == op:  # no NumPy ufunc == str comparisons
                return meaning
    return None


def multiplies(a: Any, b: Any) -> Any:
    """multiplies as a Python operator (coopd has no builtin for it)."""
    return a * b


class ScanOp:
    """``op`` classified: ``op_category`` (:class:`ScanOpCategory`), ``op_cpp`` (the libcu++
    functor of a sum or known operator, None for a callable) and ``name`` (coopd's builtin
    name: "sum", "mul", "min", ...; "" for a callable). ValueError for anything that is neither
    a spelling cuda.coop knows nor callable."""

    def __init__(self, op: Any) -> None:
        self.op = op
        meaning = _lookup(op)
        if meaning is not None:
            self.name, self.op_cpp = meaning
            self.op_category = ScanOpCategory.Sum if self.name == "sum" else ScanOpCategory.Known
        elif isinstance(op, str):
            raise ValueError(f"unsupported scan operator: {op!r} (a sum: '+', 'add', 'plus'; "
                             "known: '*', 'mul', 'multiplies', 'min', 'minimum', 'max', "
                             "'maximum', '&', 'bit_and', '|', 'bit_or', '^', 'bit_xor'; or a "
                             "callable)")
        elif callable(op):
            self.name, self.op_cpp = "", None
            self.op_category = ScanOpCategory.Callable
        else:
            raise ValueError(f"unsupported scan operator of type {type(op).__name__}: {op!r} "
                             "(a string, a NumPy ufunc, an operator-module function or a "
                             "callable)")

    @property
    def is_sum(self) -> bool:
        return self.op_category is ScanOpCategory.Sum

    @property
    def is_known(self) -> bool:
        return self.op_category is ScanOpCategory.Known

    @property
    def is_callable(self) -> bool:
        return self.op_category is ScanOpCategory.Callable

    def coopd_op(self) -> Any:
        """What coopd.numba takes as op=: a builtin's name, or a Python function."""
        if self.name == "mul":
            return multiplies
        return self.name or self.op

    def identity(self, numba_type: Any) -> Optional[Any]:
        """The value that leaves any other unchanged under this operator for ``numba_type``
        (what seeds an exclusive scan given no initial value), or None where there is none to
        know (a callable, a user type, a float's bitwise operator)."""
        from numba.cuda import types  # the module imports no Numba until a scan is built

        if self.is_callable or not isinstance(numba_type, (types.Integer, types.Float)):
            return None
        if self.name in ("sum", "bit_or", "bit_xor"):
            return 0 if isinstance(numba_type, types.Integer) or self.name == "sum" else None
        if self.name == "mul":
            return 1
        if isinstance(numba_type, types.Integer):
            info = np.iinfo(np.dtype(str(numba_type)))
            return {"min": info.max, "max": info.min,
                    "bit_and": -1 if numba_type.signed else info.max}[self.name]
        if self.name in ("min", "max"):
            return float("inf") if self.name == "min" else float("-inf")
        return None

    def __repr__(self) -> str:
        shown = self.op if isinstance(self.op, str) else getattr(self.op, "__name__", self.op)
        return f"ScanOp({shown})"
