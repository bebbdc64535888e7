"""What a kernel passes, turned into what coopd's entries take.

coopd's entries take pointers: to the temp storage, to per-thread item arrays, to tiles in
global memory and, in Numba's calling convention, to float16/bfloat16/user-type values
(``const T&``). Numba passes arrays as structs. Each parameter kind here has a check, run while
Numba types the kernel (a TypingError names the entry, the parameter, what it takes and what it
got), and a conversion, run while it lowers the call: an array's data pointer, a value stored
to a stack slot, a number converted to the declared type.

These run inside the typing and lowering of one intrinsic per entry (``_primitive.py``), so a
kernel compiles with no GPU and needs no device functions of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from numba.cuda import cgutils, nvvmutils, types
from numba.cuda.core import errors

from coopd.numba._dtypes import DType


@dataclass(frozen=True)
class Param:
    """One parameter of an entry after ``result``.

    kind: "temp" (void* temp_storage), "array" (T* / const T*), "state" (void*, operator
    state), "ref" (const T&: a float16, bfloat16 or user-type value: a struct value is stored
    to a stack slot, a record passes its own address), "scalar" (T by value).
    """

    name: str
    kind: str
    dtype: Optional[DType] = None
    writes: bool = False  # "array": the entry writes through it

    @property
    def value_type(self) -> DType:
        """The dtype of a "ref" or "scalar" parameter (_primitive.py gives them one)."""
        if self.dtype is None:
            raise TypeError(f"{self.name}: a {self.kind} parameter without a value type")
        return self.dtype

    def declared_type(self) -> types.Type:
        return self.value_type.numba if self.kind == "scalar" else types.voidptr

    def check(self, where: str, arg: types.Type, warp_threads: int) -> None:
        """Raises TypingError unless ``arg`` can be passed for this parameter."""
        check = {"temp": _check_temp, "array": _check_array, "state": _check_array,
                 "ref": _check_ref, "scalar": _check_scalar}[self.kind]
        check(self, f"{where}: {self.name}", arg, warp_threads)

    def convert(self, context: Any, builder: Any, arg: types.Type, value: Any,
                warp_threads: int) -> Any:
        """The LLVM value the entry takes for ``value`` of type ``arg``."""
        voidptr = context.get_value_type(types.voidptr)
        if self.kind == "scalar":
            return context.cast(builder, value, arg, self.value_type.numba)
        if isinstance(arg, types.Array):
            ary = context.make_array(arg)(context, builder, value)
            ptr = builder.bitcast(ary.data, voidptr)
            if self.kind == "temp" and arg.ndim == 2:  # the calling logical warp's row
                row = builder.mul(_logical_warp(builder, warp_threads),
                                  builder.extract_value(ary.strides, 0))
                ptr = builder.gep(ptr, [row])
            return ptr
        if isinstance(arg, (types.CPointer, types.RawPointer, types.Record)):
            return builder.bitcast(value, voidptr)  # a record value is a pointer to its bytes
        # "ref" of a number: the entry reads it through a pointer to a stack slot.
        slot = cgutils.alloca_once_value(builder, context.cast(builder, value, arg,
                                                               self.value_type.numba))
        return builder.bitcast(slot, voidptr)


def _logical_warp(builder: Any, warp_threads: int) -> Any:
    """(linear thread id) / warp_threads, as intp: x fastest, as CUB numbers threads."""
    tid = [builder.zext(nvvmutils.call_sreg(builder, f"tid.{d}"), cgutils.intp_t) for d in "xyz"]
    ntid = [builder.zext(nvvmutils.call_sreg(builder, f"ntid.{d}"), cgutils.intp_t) for d in "xy"]
    linear = builder.add(builder.mul(builder.add(builder.mul(tid[2], ntid[1]), tid[1]), ntid[0]),
                         tid[0])
    return builder.udiv(linear, cgutils.intp_t(warp_threads))


def _describe(t: types.Type) -> str:
    if isinstance(t, types.Array):
        return f"an array of {t.dtype} ({t.ndim}-D, layout {t.layout})"
    return f"{t}"


def _wanted(dtype: Optional[DType]) -> str:
    if dtype is None:
        return "any type"
    if dtype.is_struct:
        return f"{dtype.numba} values"
    return f"records of {dtype.size} bytes" if dtype.is_user else str(dtype.numba)


def _check_temp(p: Param, where: str, arg: types.Type, warp_threads: int) -> None:
    if isinstance(arg, (types.CPointer, types.RawPointer)):
        return
    if isinstance(arg, types.Array) and arg.layout == "C" and (
            arg.ndim == 1 or (warp_threads and arg.ndim == 2)):
        return
    rows = " (or 2-D, a row per logical warp)" if warp_threads else ""
    raise errors.TypingError(f"{where} takes a C-contiguous 1-D array{rows}, such as the "
                             f"object's temp_storage() or a cuda.shared.array, or a pointer; "
                             f"got {_describe(arg)}")


def _check_array(p: Param, where: str, arg: types.Type, warp_threads: int) -> None:
    if isinstance(arg, types.Array):
        if arg.layout != "C":
            raise errors.TypingError(f"{where} takes a C-contiguous array; got {_describe(arg)}")
        if p.dtype is not None and not p.dtype.accepts_array_of(arg.dtype):
            raise errors.TypingError(f"{where} takes an array of {_wanted(p.dtype)}; got "
                                     f"{_describe(arg)}")
        if p.writes and not arg.mutable:
            raise errors.TypingError(f"{where} is written, but the array is read-only")
        return
    if isinstance(arg, types.CPointer):
        if p.dtype is not None and not p.dtype.accepts_array_of(arg.dtype):
            raise errors.TypingError(f"{where} takes a pointer to {_wanted(p.dtype)}; got {arg}")
        return
    if isinstance(arg, types.RawPointer):
        return
    raise errors.TypingError(f"{where} takes an array of {_wanted(p.dtype)} (e.g. a "
                             f"cuda.local.array) or a pointer; got {_describe(arg)}")


def _check_ref(p: Param, where: str, arg: types.Type, warp_threads: int) -> None:
    dtype = p.value_type
    if dtype.is_user:
        if dtype.accepts_value_of(arg):
            return
        if isinstance(arg, types.Array) and dtype.accepts_array_of(arg.dtype):
            return
        wanted = f"a {dtype.numba} value" if dtype.is_struct else \
            f"a record of {dtype.size} bytes (e.g. items[0])"
        raise errors.TypingError(f"{where} takes {wanted}; got {_describe(arg)}")
    if not isinstance(arg, (types.Number, types.Boolean)):
        raise errors.TypingError(f"{where} takes a number (passed as {dtype.numba}); got "
                                 f"{_describe(arg)}")


def _check_scalar(p: Param, where: str, arg: types.Type, warp_threads: int) -> None:
    if not isinstance(arg, (types.Number, types.Boolean)):
        raise errors.TypingError(f"{where} takes a number ({p.value_type.numba}); got "
                                 f"{_describe(arg)}")
