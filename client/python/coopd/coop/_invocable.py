"""The object a cuda.coop-style factory returns, and how kernels call it.

An :class:`Invocable` holds one or more coopd.numba :class:`~coopd.numba.Primitive` objects
and a list of call forms (:class:`Form`). A form says how many arguments the kernel passes after
the optional temp storage, and how they map onto one entry of one primitive: which argument goes
to which parameter, and which parameters get constants instead (radix sort's bit range, an
exclusive scan's seed). A kernel may pass temp storage first (a ``uint8`` array or a pointer)
or leave it out; without it, the call site gets shared memory of its own, as the primitive's
``temp_storage()`` makes it.

Dispatch lives in Numba's typing, as coopd.numba's does: the object's Numba type picks the form
from the argument count and whether the first argument is temp storage, and each form is one
intrinsic that calls the primitive's intrinsics while lowering. No device function is compiled,
so kernels compile where there is no GPU.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple, Union

from numba.cuda import types
from numba.cuda.core import errors
from numba.cuda.core.imputils import lower_constant
from numba.cuda.extending import (core_models, infer_getattr, intrinsic,
                                  lower_getattr_generic, register_model, typeof_impl)
from numba.cuda.typing.templates import AttributeTemplate

from coopd.numba._primitive import Primitive

_type_ids = itertools.count()


@dataclass(frozen=True)
class Const:
    """A parameter the form fills in itself: ``value`` as Numba type ``numba_type``."""

    value: Any
    numba_type: types.Type


@dataclass
class Form:
    """One in-kernel call form: ``nargs`` arguments after the optional temp storage, passed to
    ``primitive``'s entry ``entry`` as ``args`` says (an int: that argument; a Const: a
    constant)."""

    nargs: int
    primitive: Primitive
    entry: str
    args: Sequence[Union[int, Const]]
    _intrinsics: Dict[bool, Any] = field(default_factory=dict)

    def intrinsic(self, explicit_temp: bool, where: str) -> Any:
        """The intrinsic for this form, with (``explicit_temp``) or without temp storage."""
        if explicit_temp not in self._intrinsics:
            self._intrinsics[explicit_temp] = _form_intrinsic(self, explicit_temp, where)
        return self._intrinsics[explicit_temp]


def _is_temp_storage(t: types.Type) -> bool:
    if isinstance(t, types.Array):
        return t.dtype == types.uint8
    return isinstance(t, (types.CPointer, types.RawPointer))


def _form_intrinsic(form: Form, explicit_temp: bool, where: str) -> Any:
    p = form.primitive
    offset = 1 if explicit_temp else 0

    def define(typingctx: Any, args: Tuple[types.Type, ...]) -> Any:
        temp_call = None
        if explicit_temp:
            temp_type = args[0]
        else:
            temp_fnty = typingctx.resolve_value_type(p.temp_storage)
            temp_sig = typingctx.resolve_function_type(temp_fnty, (), {})
            temp_call = (temp_fnty, temp_sig)
            temp_type = temp_sig.return_type
        entry_types: List[types.Type] = [temp_type]
        for a in form.args:
            entry_types.append(a.numba_type if isinstance(a, Const) else args[offset + a])
        entry_fnty = typingctx.resolve_value_type(getattr(p, form.entry))
        entry_sig = typingctx.resolve_function_type(entry_fnty, tuple(entry_types), {})
        if entry_sig is None:
            raise errors.TypingError(f"{where}: coopd's {p.family} {form.entry} does not take "
                                     f"({', '.join(str(t) for t in entry_types)})")

        def codegen(context: Any, builder: Any, sig: Any, values: Any) -> Any:
            if temp_call is None:
                temp = values[0]
            else:
                temp = context.get_function(*temp_call)(builder, [])
            converted = [temp]
            for a in form.args:
                if isinstance(a, Const):
                    converted.append(context.get_constant(a.numba_type, a.value))
                else:
                    converted.append(values[offset + a])
            return context.get_function(entry_fnty, entry_sig)(builder, converted)

        return entry_sig.return_type(*args), codegen

    names = [f"a{i}" for i in range(form.nargs + offset)]
    env: Dict[str, Any] = {"_define": define}
    source = (f"def coop_call(typingctx, {', '.join(names)}):\n"
              f"    return _define(typingctx, ({', '.join(names)}{',' if names else ''}))\n")
    exec(compile(source, f"<coopd.coop {where}>", "exec"), env)
    return intrinsic(env["coop_call"])


class Invocable:
    """What a ``coopd.coop`` factory returns (cuda.coop 1.1.1's object of the same name).

    Python side: ``files`` (the LTO-IR to link: ``@cuda.jit(link=obj.files)``; they are
    ``cuda.LTOIR`` objects, which Numba links once however often they are named),
    ``temp_storage_bytes``, ``temp_storage_alignment`` (the most any of its call forms needs),
    ``primitives`` (the coopd.numba objects behind it). In kernels: call it with or without
    temp storage first, in the forms the factory documents.
    """

    def __init__(self, name: str, forms: Sequence[Form]) -> None:
        self.name = name
        self.forms = list(forms)
        prims: List[Primitive] = []
        for f in self.forms:
            if all(f.primitive is not q for q in prims):
                prims.append(f.primitive)
        self.primitives: Tuple[Primitive, ...] = tuple(prims)
        files: List[Any] = []
        for q in prims:
            files.extend(x for x in q.files if all(x is not y for y in files))
        self._files = files
        self._temp_storage_bytes = max((q.temp_storage_bytes for q in prims), default=0)
        self._temp_storage_alignment = max((q.temp_storage_align for q in prims), default=1)
        for f in self.forms:  # now: Numba's contexts take in intrinsics as a compile starts
            f.intrinsic(True, name)
            f.intrinsic(False, name)
        self._numba_type = InvocableType(self)

    @property
    def files(self) -> List[Any]:
        return list(self._files)

    @property
    def temp_storage_bytes(self) -> int:
        return self._temp_storage_bytes

    @property
    def temp_storage_alignment(self) -> int:
        return self._temp_storage_alignment

    def __call__(self, *args: Any) -> Any:
        raise RuntimeError(f"{self.name} is called from inside a numba.cuda.jit kernel, not "
                           "from Python")

    def __repr__(self) -> str:
        return (f"<coopd.coop {self.name}: {len(self.forms)} call forms; temp storage "
                f"{self.temp_storage_bytes} bytes, align {self.temp_storage_alignment}>")

    def _candidates(self, args: Sequence[types.Type]) -> List[Tuple[Form, bool]]:
        """The forms a call with ``args`` may mean, in the order to try them: temp storage
        first where the first argument can be temp storage, then without."""
        out = [(f, True) for f in self.forms
               if len(args) == f.nargs + 1 and _is_temp_storage(args[0])]
        out += [(f, False) for f in self.forms if len(args) == f.nargs]
        if not out:
            counts = sorted({f.nargs for f in self.forms})
            raise errors.TypingError(
                f"{self.name} takes {' or '.join(str(n) for n in counts)} arguments (after an "
                f"optional uint8 temp storage array); got {len(args)}: "
                f"({', '.join(str(a) for a in args)})")
        return out


class InvocableType(types.Callable):
    """Numba's type for one Invocable: a call picks the form and types it as that form's
    intrinsic."""

    def __init__(self, invocable: Invocable) -> None:
        self.invocable = invocable
        self._typed: Dict[Tuple[types.Type, ...], Any] = {}  # args -> the form's function type
        super().__init__(name=f"coopd.coop.Invocable({invocable.name}, #{next(_type_ids)})")

    def get_call_type(self, context: Any, args: Any, kws: Any) -> Any:
        if kws:
            raise errors.TypingError(f"{self.invocable.name} takes positional arguments only")
        candidates = self.invocable._candidates(args)
        for i, (form, explicit) in enumerate(candidates):
            fnty = context.resolve_value_type(form.intrinsic(explicit, self.invocable.name))
            try:
                sig = fnty.get_call_type(context, tuple(args), {})
            except errors.TypingError:
                if i + 1 == len(candidates):
                    raise
                continue  # a uint8 array may be items rather than temp storage: try the next
            if sig is not None:
                self._typed[tuple(sig.args)] = fnty
                return sig
        return None

    def get_call_signatures(self) -> Any:
        return (), True

    def get_impl_key(self, sig: Any) -> Any:
        return self._typed[tuple(sig.args)].get_impl_key(sig)


register_model(InvocableType)(core_models.OpaqueModel)


@typeof_impl.register(Invocable)
def _typeof_invocable(value: Invocable, context: Any) -> InvocableType:
    return value._numba_type


@lower_constant(InvocableType)
def _lower_invocable_constant(context, builder, ty, pyval):
    return context.get_dummy_value()


_CONSTANTS = ("temp_storage_bytes", "temp_storage_alignment")


@infer_getattr
class _InvocableAttributes(AttributeTemplate):
    key = InvocableType

    def generic_resolve(self, ty: InvocableType, attr: str) -> Any:
        if attr in _CONSTANTS:  # compile-time constants in kernels too
            return types.IntegerLiteral(getattr(ty.invocable, attr))
        return None


@lower_getattr_generic(InvocableType)
def _lower_invocable_attribute(context, builder, ty, value, attr):
    return context.get_constant(types.intp, getattr(ty.invocable, attr))
