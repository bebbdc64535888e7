"""One coopd specialization as an object Numba-CUDA kernels call.

A :class:`Primitive` is built from a spec: it gets the artifact from coopd (Numba's calling
convention), declares every entry with ``cuda.declare_device`` (linking the artifact's LTO-IR),
and gives each an intrinsic that checks the kernel's arguments and turns its arrays into the
pointers the entry takes. Kernels reach those as attributes of the object (``r.sum(temp, x)``)
or call the object itself for its first entry (``r(temp, x)``). Intrinsics, not device
functions: numba-cuda compiles a device function for the current GPU, and kernels must also
compile where there is none.
"""

from __future__ import annotations

import hashlib
import itertools
import keyword
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from numba import cuda
from numba.cuda import types
from numba.cuda.core import errors
from numba.cuda.core.imputils import lower_constant
from numba.cuda.cudadecl import Cuda_shared_array
from numba.cuda.extending import (core_models, infer_getattr, intrinsic,
                                  lower_getattr_generic, register_model, typeof_impl)
from numba.cuda.typing.templates import AttributeTemplate

import coopd
from coopd import _families
from coopd.numba import _dtypes, _operators
from coopd.numba._dtypes import DType
from coopd.numba._marshal import Param

__all__ = ["Primitive", "make", "set_client", "get_client", "default_arch"]

_lock = threading.RLock()
_primitives: Dict[Tuple[str, bytes], "Primitive"] = {}  # (socket, spec) -> built object
_linkables: Dict[str, Any] = {}  # sha256 of LTO-IR -> the one cuda.LTOIR holding it
_type_ids = itertools.count()  # Numba interns types by name: one name per object


# ---- the process's client ------------------------------------------------------------------

_clients = _families.ClientHolder("coopd.numba")


def set_client(client: Optional[coopd.Client]) -> None:
    """Use ``client`` for every object built without ``client=`` (None: back to the default,
    a ``coopd.Client()`` on ``$COOPD_SOCKET`` or the default socket, which starts coopd from
    ``$COOPD_BIN`` or PATH when none answers)."""
    _clients.set(client)


def get_client() -> coopd.Client:
    return _clients.get()


def default_arch() -> str:
    """``$COOPD_ARCH``, else the current GPU's (``sm_90`` on an H200). Without a GPU, pass
    ``arch=`` or set ``COOPD_ARCH``."""
    env = os.environ.get("COOPD_ARCH")
    if env:
        return env
    if cuda.is_available():
        major, minor = cuda.get_current_device().compute_capability
        return f"sm_{major}{minor}"
    raise ValueError("coopd.numba: no GPU to take the arch from; pass arch='sm_90' "
                     "(or set COOPD_ARCH)")


def _linkable(data: bytes, name: str) -> Any:
    """One ``cuda.LTOIR`` per distinct content: Numba links each object once, so two primitives
    sharing an operator (or two calls for one spec) never define a symbol twice."""
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        obj = _linkables.get(digest)
        if obj is None:
            obj = cuda.LTOIR(data, name=name)
            _linkables[digest] = obj
        return obj


# ---- entries -------------------------------------------------------------------------------

_DECLARATION = re.compile(r'extern "C" __device__ int (\w+)\((.*)\);')


@dataclass(frozen=True)
class EntryInfo:
    symbol: str
    declaration: str
    description: str
    result: Optional[DType]  # None: no result
    params: Tuple[Param, ...]  # temp_storage first


def _value_type(c_type: str, user: Optional[DType], where: str) -> DType:
    if c_type in _dtypes.C_TYPES:
        return _dtypes.from_name(_dtypes.C_TYPES[c_type])
    if user is not None and c_type.startswith("coop_user_"):
        return user
    raise ValueError(f"{where}: coopd.numba does not know the C type {c_type!r}")


def parse_entry(entry: coopd.Entry, user: Optional[DType]) -> EntryInfo:
    """Reads a Numba-convention declaration:
    ``int sym(R* result, void* temp_storage, T* a, const T* b, const T& c, T d, void* state)``."""
    m = _DECLARATION.fullmatch(entry.declaration)
    if not m:
        raise ValueError(f"not a Numba-convention declaration: {entry.declaration}")
    where = entry.symbol
    parsed = [tuple(p.strip().rsplit(" ", 1)) for p in m.group(2).split(",")]
    if len(parsed) < 2 or parsed[1] != ("void*", "temp_storage"):
        raise ValueError(f"{where}: expected void* temp_storage second: {entry.declaration}")
    result_base = parsed[0][0][:-1].strip()
    if result_base == "void":
        result = None
    elif user is not None and not user.is_struct and result_base.startswith("coop_user_"):
        # A struct type comes back through the result pointer; a Record cannot.
        raise ValueError(f"{where}: this entry returns a {user.size}-byte user type by value, "
                         "which Numba cannot receive as a Record; declare the type as a Numba "
                         "StructModel type, or use a method that writes an array (e.g. "
                         "block_shuffle up/down instead of offset/rotate)")
    else:
        result = _value_type(result_base, user, where)
    params = [Param("temp_storage", "temp")]
    for c_type, name in parsed[2:]:
        if c_type == "void*":
            params.append(Param(name, "state"))
        elif c_type.endswith("&"):
            params.append(Param(name, "ref", _value_type(c_type[len("const "):-1], user, where)))
        elif c_type.endswith("*"):
            const = c_type.startswith("const ")
            base = c_type[len("const ") if const else 0:-1]
            params.append(Param(name, "array", _value_type(base, user, where), not const))
        else:
            params.append(Param(name, "scalar", _value_type(c_type, user, where)))
    return EntryInfo(entry.symbol, entry.declaration, entry.description, result, tuple(params))


def _entry_intrinsic(info: EntryInfo, extern: Any, pyname: str, warp_threads: int) -> Any:
    """The kernel-side callable of one entry: an intrinsic with the entry's parameters (keyword
    names included) that checks each argument while Numba types the kernel and, lowering,
    converts them (arrays to data pointers, values to the declared types) and calls the
    declared entry."""
    where = f"{pyname} ({info.symbol})"
    declared = (info.result.numba if info.result else types.void)(
        *[p.declared_type() for p in info.params])

    def define(typingctx: Any, args: Tuple[types.Type, ...]) -> Any:
        for p, arg in zip(info.params, args):
            p.check(where, arg, warp_threads)
        fnty = typingctx.resolve_value_type(extern)
        call = typingctx.resolve_function_type(fnty, declared.args, {})  # records its impl key

        def codegen(context: Any, builder: Any, sig: Any, values: Any) -> Any:
            converted = [p.convert(context, builder, t, v, warp_threads)
                         for p, t, v in zip(info.params, sig.args, values)]
            return context.get_function(fnty, call)(builder, converted)

        return declared.return_type(*args), codegen

    names = [p.name + "_" if keyword.iskeyword(p.name) else p.name for p in info.params]
    env: Dict[str, Any] = {"_define": define}
    source = (f"def {pyname}(typingctx, {', '.join(names)}):\n"
              f"    return _define(typingctx, ({', '.join(names)},))\n")
    exec(compile(source, f"<coopd.numba {info.symbol}>", "exec"), env)
    fn = env[pyname]
    fn.__doc__ = f"{info.description}\n\n{info.declaration}"
    return intrinsic(fn)


def _temp_storage_intrinsic(shape: Tuple[int, ...], align: int, name: str) -> Any:
    """``temp_storage()`` in a kernel: a fresh ``cuda.shared.array(shape, uint8,
    alignment=align)`` at each call site, made by Numba's own shared-array lowering."""
    literal = [types.IntegerLiteral(n) for n in shape]
    shape_type = literal[0] if len(shape) == 1 else types.Tuple(literal)
    array_args = (shape_type, types.NumberClass(types.uint8), types.IntegerLiteral(align))

    fnty = types.Function(Cuda_shared_array)

    def temp_storage(typingctx):
        inner = typingctx.resolve_function_type(fnty, array_args, {})

        def codegen(context, builder, sig, values):
            impl = context.get_function(fnty, inner)
            return impl(builder, [context.get_dummy_value()] * len(array_args))

        return inner.return_type(), codegen

    temp_storage.__doc__ = f"shared memory for {name}: uint8{list(shape)}, aligned to {align}"
    return intrinsic(temp_storage)


# ---- the object ----------------------------------------------------------------------------

class Primitive(_families.EntryAttributes):
    """A coopd specialization ready for Numba-CUDA kernels.

    Attributes (Python side):
        spec: the :class:`coopd.Spec` sent; resolved: the resolved spec coopd returned.
        artifact: the :class:`coopd.Artifact` (LTO-IR, entries, key, origin, ...).
        files: the LTO-IR to link, as ``cuda.LTOIR`` objects: ``@cuda.jit(link=p.files,
            lto=True)``. The declared entries link them already, so ``lto=True`` is what a
            kernel needs; ``files`` is for explicit ``link=`` lists and for ``cuda.compile``.
        temp_storage_bytes, temp_storage_align: shared memory one instance needs (per logical
            warp for warp primitives).
        entries: the artifact's entries; names: the kernel-side name of each.
        operator_symbols: the user operators' functions the entries call (after LTO, inlined).
        link_digests: sha256 of each file's LTO-IR (what cached kernels are keyed by).
        items_per_thread, dtype (coopd's DType), method, family, arch, block_threads.

    In kernels: ``p.<name>(temp_storage, ...)`` for each entry (``p(...)`` for the first), the
    arguments as the entry's declaration has them: arrays (``cuda.shared.array``,
    ``cuda.local.array``, slices of global arrays) or pointers where it takes pointers, numbers
    where it takes values. ``p.temp_storage()`` returns the shared memory the primitive needs
    (warp primitives: a row per logical warp of the block; pass the whole array and each warp
    takes its row). ``p.temp_storage_bytes``, ``p.temp_storage_align``, ``p.items_per_thread``
    are compile-time constants there too.
    """

    _frontend = "coopd.numba"

    def __init__(self, spec: coopd.Spec, artifact: coopd.Artifact, dtype: DType,
                 block_threads: int) -> None:
        part = self._take_artifact(spec, artifact)
        self.dtype = dtype
        self.block_threads = block_threads
        stem = artifact.stem
        self.files = [_linkable(artifact.ltoir, stem)] + [
            _linkable(op, f"{stem}.op{i}") for i, op in enumerate(artifact.link_inputs)]
        # sha256 of each file's LTO-IR: what coopd.numba.jit(cache=True) keys kernels by.
        self.link_digests = tuple(hashlib.sha256(data).hexdigest()
                                  for data in (artifact.ltoir, *artifact.link_inputs))
        user = dtype if dtype.is_user else None
        self._callables: Dict[str, Any] = {}
        self.names: Tuple[str, ...] = ()
        names = []
        for e, name in zip(part.entries,
                           _families.entry_names(self.method, [e.symbol for e in part.entries])):
            info = parse_entry(e, user)
            signature = (info.result.numba if info.result else types.void)(
                *[p.declared_type() for p in info.params])
            extern = cuda.declare_device(e.symbol, signature, link=self.files)
            self._callables[name] = _entry_intrinsic(info, extern, name, self.warp_threads)
            names.append(name)
        self.names = tuple(names)
        self._callables["temp_storage"] = self._temp_storage_function(block_threads)
        self._constants = {"temp_storage_bytes": self.temp_storage_bytes,
                           "temp_storage_align": self.temp_storage_align,
                           "items_per_thread": self.items_per_thread}
        self._numba_type = PrimitiveType(self)

    def _temp_storage_function(self, block_threads: int) -> Any:
        nbytes = max(1, self.temp_storage_bytes)
        align = max(8, self.temp_storage_align)  # Numba takes multiples of the pointer size
        if self.warp_threads:
            stride = -(-nbytes // self.temp_storage_align) * self.temp_storage_align
            shape: Tuple[int, ...] = (-(-block_threads // self.warp_threads), stride)
        else:
            shape = (nbytes,)
        return _temp_storage_intrinsic(shape, align, f"{self.family} {self.method}")

    def _dtype_name(self) -> str:
        return self.dtype.name

    def write(self, directory: str) -> List[str]:
        """Writes the artifact's LTO-IR files and header into ``directory``."""
        return self.artifact.write(directory)


class PrimitiveType(types.Callable):
    """Numba's type for one Primitive: calling it calls its first entry; attributes resolve to
    its entries, ``temp_storage`` and its compile-time constants."""

    def __init__(self, primitive: Primitive) -> None:
        self.primitive = primitive
        self._first: Any = None  # the first entry's function type, once typed
        super().__init__(name=f"coopd.numba.Primitive({primitive.artifact.key[:16]}, "
                              f"#{next(_type_ids)})")

    def _first_entry(self, context: Any) -> Any:
        if self._first is None:
            p = self.primitive
            self._first = context.resolve_value_type(p._callables[p.names[0]])
        return self._first

    def get_call_type(self, context: Any, args: Any, kws: Any) -> Any:
        return self._first_entry(context).get_call_type(context, args, kws)

    def get_call_signatures(self) -> Any:
        return self._first.get_call_signatures() if self._first else ((), False)

    def get_impl_key(self, sig: Any) -> Any:
        return self._first.get_impl_key(sig)


register_model(PrimitiveType)(core_models.OpaqueModel)


@typeof_impl.register(Primitive)
def _typeof_primitive(value: Primitive, context: Any) -> PrimitiveType:
    return value._numba_type


@infer_getattr
class _PrimitiveAttributes(AttributeTemplate):
    key = PrimitiveType

    def generic_resolve(self, ty: PrimitiveType, attr: str) -> Any:
        p = ty.primitive
        if attr in p._constants:
            return types.IntegerLiteral(p._constants[attr])
        if attr in p._callables:
            return self.context.resolve_value_type(p._callables[attr])
        if attr.startswith("__"):  # __call__ and friends: Numba's own protocol
            return None
        raise errors.TypingError(f"{p.family} {p.method} has no attribute {attr!r} in kernels; "
                                 f"it has {', '.join(p.names)}, temp_storage, "
                                 f"{', '.join(p._constants)}")


@lower_getattr_generic(PrimitiveType)
def _lower_primitive_attribute(context, builder, ty, value, attr):
    constants = ty.primitive._constants
    if attr in constants:
        return context.get_constant(types.intp, constants[attr])
    return context.get_dummy_value()


@lower_constant(PrimitiveType)
def _lower_primitive_constant(context, builder, ty, pyval):
    return context.get_dummy_value()


# ---- building ------------------------------------------------------------------------------

OpArg = Union[None, str, Callable, coopd.UserOperator]


def make(family: str, dtype: Any, *, threads: Union[int, Sequence[int], None] = None,
         warp_threads: Optional[int] = None, items_per_thread: int = 1,
         method: Optional[str] = None, algorithm: Optional[str] = None, op: OpArg = None,
         prefix_callback: Optional[coopd.UserOperator] = None, arch: Optional[str] = None,
         cccl: Optional[str] = None, client: Optional[coopd.Client] = None,
         block_threads: Optional[int] = None,
         options: Optional[Mapping[str, Any]] = None, op_by_pointer: bool = False) -> Primitive:
    """Builds (or returns the one already built in this process for the same spec) the
    Primitive for a coopd spec. ``options`` are the family's options message fields
    (``coopctl catalog``: value_dtype, radix_bits, bins, with_aggregate, ...). A Python ``op``
    on a user type (a Numba struct type, complex64/128) takes and returns values, unless
    ``op_by_pointer``: then it is written as cuda.coop writes them, ``op(result_ptr, a_ptr,
    b_ptr)`` (``op(a_ptr, b_ptr)`` returning bool for comparators)."""
    client = client or get_client()
    arch = arch or default_arch()
    dt = _dtypes.resolve(dtype)
    row = _families.catalog_family(client, family)
    where = family
    method = method or ""
    opts = dict(options or {})
    for k in ("value_dtype",):
        if k in opts and opts[k] is not None and not isinstance(opts[k], str):
            opts[k] = _dtypes.resolve(opts[k], f"{family}: value_dtype").name
    spec = coopd.Spec(family=family, dtype=dt.name, arch=arch, method=method,
                      items_per_thread=items_per_thread, algorithm=algorithm or "", abi="numba",
                      user_type=dt.user_type(),
                      options=_families.family_options(row, family, opts),
                      prefix_callback=prefix_callback)
    _families.shape_spec(spec, row, family, threads, warp_threads, cccl)
    if op is not None:
        kind = _families.method_kind(row, method)
        if isinstance(op, str):
            spec.op = op
        elif isinstance(op, coopd.UserOperator):
            spec.user_op = op
        elif callable(op):
            spec.user_op = _operators.python_operator(op, kind, dt, arch,
                                                      f"{where} {method or row.methods[0].name}",
                                                      pointer_form=op_by_pointer)
        else:
            raise ValueError(f"{where}: op must be a builtin's name, a Python function or a "
                             f"coopd.UserOperator; got {op!r}")
    request = _families.to_proto(spec, row, family)
    threads_total = block_threads or 1024
    key = (client.socket, request.SerializeToString(deterministic=True) + b"|%d" % threads_total)
    # Held while building, so one spec is fetched and declared once however many threads ask.
    with _lock:
        built = _primitives.get(key)
        if built is None:
            built = Primitive(spec, client.specialize(spec), dt, threads_total)
            _primitives[key] = built
        return built
