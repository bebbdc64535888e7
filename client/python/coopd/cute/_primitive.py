"""One coopd specialization as an object CuTe DSL kernels call.

A :class:`Primitive` is built from a spec, outside any ``@cute.jit``: it asks coopd for the
artifact as LLVM bitcode in the C calling convention, writes the bitcode to a file (CuTe DSL
links files: ``cute.BitCode(path)``) and declares every entry as a ``cute.ffi`` with that file
attached. In a kernel, ``p.temp_storage(smem)`` reserves the entry's TempStorage with CuTe's
shared-memory allocator and ``p(...)`` / ``p.<entry>(...)`` calls an entry, passing tensors as
their data pointers and numbers as the declared C types. The entries take a generic ``void*``;
CuTe's pointers keep their address space (shared memory is ``!llvm.ptr<3>``), so each pointer
argument is cast to the generic address space (``llvm.addrspacecast``) on the way in. After
CuTe's libNVVM links the bitcode the entry is inlined into the kernel.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm

import grpc

import coopd
from coopd import _families
from coopd._paths import private_dir
from coopd.cute import _dtypes

__all__ = ["Primitive", "make", "set_client", "get_client", "default_arch", "smem_size",
           "factories"]

_lock = threading.RLock()
_primitives: Dict[Tuple[str, bytes], "Primitive"] = {}  # (socket, spec|threads) -> object
_clients = _families.ClientHolder("coopd.cute")


def set_client(client: Optional[coopd.Client]) -> None:
    """Use ``client`` for every object built without ``client=`` (None: back to the default,
    a ``coopd.Client()`` on ``$COOPD_SOCKET`` or the default socket)."""
    _clients.set(client)


def get_client() -> coopd.Client:
    return _clients.get()


def default_arch() -> str:
    """``$COOPD_ARCH``, else the arch CuTe DSL compiles for: ``$CUTE_DSL_ARCH`` as the DSL read
    it at import, else its GPU's (``sm_90a`` on an H200). The primitive must be compiled for the
    kernel's arch: sm_90 bitcode in an sm_90a kernel would not be the same spec."""
    env = os.environ.get("COOPD_ARCH")
    if env:
        return env
    from cutlass.cutlass_dsl import CuTeDSL

    return CuTeDSL._get_dsl().envar.arch


def bitcode_dir() -> str:
    """Where the bitcode files live: ``$COOPD_CUTE_DIR``, else ``$XDG_CACHE_HOME/coopd/cute``,
    else ``~/.cache/coopd/cute``, else ``<tmp>/coopd-cute-<uid>``. Files are named by their
    content, so processes share them. The directory is this user's alone: created 0700, and an
    existing one must be a real directory owned by this user that no one else may write, or
    :class:`coopd.CoopdError` (FAILED_PRECONDITION) says why (docs/security.md, "Other local
    users")."""
    d = os.environ.get("COOPD_CUTE_DIR")
    if not d:
        xdg = os.environ.get("XDG_CACHE_HOME")
        home = os.environ.get("HOME")
        if xdg:
            d = os.path.join(xdg, "coopd", "cute")
        elif home:
            d = os.path.join(home, ".cache", "coopd", "cute")
        else:
            d = os.path.join(tempfile.gettempdir(), f"coopd-cute-{os.getuid()}")
    try:
        return private_dir(d, "COOPD_CUTE_DIR")
    except OSError as e:
        raise coopd.CoopdError(grpc.StatusCode.FAILED_PRECONDITION, f"coopd.cute: {e.strerror}",
                               False) from None


def _bitcode_file(data: bytes, stem: str) -> str:
    """A file holding ``data``, named by its digest. A file already there is used only when it
    holds exactly ``data`` (read back and compared, through an O_NOFOLLOW open of a regular file
    of this user's); otherwise it is replaced. Written atomically: a temporary file in the same
    directory, renamed over the name."""
    path = os.path.join(bitcode_dir(), f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}.bc")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd >= 0:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if (stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
                    and st.st_size == len(data) and f.read() == data):
                return path
    tmp_fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(tmp_fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # atomic: a reader sees the whole file or none
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# ---- entries -------------------------------------------------------------------------------

class GenericPointer:
    """The type of a ``T*`` parameter in a ``cute.ffi`` prototype: LLVM's generic pointer
    (``!llvm.ptr``), built when the DSL asks for it (inside a ``@cute.jit``, where an MLIR
    context exists)."""

    def __get_mlir_types__(self) -> List[ir.Type]:
        return [llvm.PointerType.get(0)]

    def __repr__(self) -> str:
        return "void*"


_GENERIC = GenericPointer()
_DECLARATION = re.compile(r'extern "C" __device__ (.+?) (\w+)\((.*)\);')


@dataclass(frozen=True)
class Param:
    name: str
    c_type: str
    numeric: Optional[Type[Any]]  # None: a pointer


@dataclass(frozen=True)
class EntryInfo:
    symbol: str
    declaration: str
    description: str
    result: Optional[Type[Any]]  # None: void
    params: Tuple[Param, ...]


def _numeric(c_type: str, where: str) -> Type[Any]:
    if c_type == "bool":
        return cutlass.Boolean
    name = _dtypes.C_TYPES.get(c_type)
    if name is None:
        raise ValueError(f"{where}: coopd.cute does not know the C type {c_type!r}")
    if name in _dtypes.BY_VALUE_REFUSED:
        raise ValueError(f"{where}: passes a {name} by value, which a CuTe DSL call cannot "
                         f"(CUDA's {c_type} is a struct); coopd.cute takes {name} only where "
                         "entries take arrays of it")
    return _dtypes.BY_NAME[name]


def parse_entry(entry: coopd.Entry) -> EntryInfo:
    """Reads a C-convention declaration: ``R sym(void* temp_storage, const T* a, T b, ...)``."""
    m = _DECLARATION.fullmatch(entry.declaration)
    if not m:
        raise ValueError(f"not a C-convention declaration: {entry.declaration}")
    where = entry.symbol
    result = None if m.group(1) == "void" else _numeric(m.group(1), where)
    params = []
    for p in m.group(3).split(","):
        c_type, name = p.strip().rsplit(" ", 1)
        params.append(Param(name, c_type, None if c_type.endswith("*") else
                            _numeric(c_type, f"{where}: {name}")))
    return EntryInfo(entry.symbol, entry.declaration, entry.description, result, tuple(params))


def _add_link_libraries(paths: Sequence[str]) -> None:
    """Adds bitcode files to the ``link-libraries`` of the module being traced, as ``cute.ffi``
    does for its own source: user operators' bitcode, which the entries call and no prototype
    names."""
    op = ir.InsertionPoint.current.block.owner
    while op is not None and op.name not in ("builtin.module", "gpu.module"):
        op = op.parent
    if op is None:
        raise RuntimeError("coopd.cute: no module to link the operators' bitcode into")
    owner = op.regions[0].blocks[0].owner
    sources = set()
    if "link-libraries" in owner.attributes:
        sources = {x.value for x in owner.attributes["link-libraries"]}
    sources.update(paths)
    owner.attributes["link-libraries"] = ir.ArrayAttr.get(
        [ir.StringAttr.get(x) for x in sorted(sources)])


def _element_type(c_type: str) -> Optional[Type[Any]]:
    """CuTe's numeric type for the elements a ``T*`` / ``const T*`` parameter points at (None
    for ``void*``)."""
    base = c_type.replace("const ", "").rstrip("*").strip()
    name = _dtypes.C_TYPES.get(base)
    return None if name is None else _dtypes.BY_NAME[name]


class Entry:
    """One entry as a kernel calls it: checks the argument count, passes tensors as their data
    pointers (``tensor.iterator``) and pointers as they are (both cast to generic), converts
    numbers to the declared types, calls the ``cute.ffi`` and returns its result as the
    declared CuTe type (None for void).

    Values instead of tensors, as CuTe kernels compute them: a ``cute.TensorSSA`` where the
    entry takes a pointer is stored to a fresh register tensor first; trailing output pointers
    (``T*``, not ``const``) may be left out, and fresh register tensors of ``items`` elements
    take the results. Such fresh tensors the entry writes (the left-out outputs, then the
    values passed for ``T*`` parameters, which the entry rewrites in place) are returned: one
    alone, several as a tuple, after the entry's own result when it has one."""

    def __init__(self, info: EntryInfo, ffi: Any, name: str, operator_files: Sequence[str],
                 items: int = 1):
        self.info = info
        self.ffi = ffi
        self.name = name
        self.items = items
        self._operator_files = tuple(operator_files)
        self.__doc__ = f"{info.description}\n\n{info.declaration}"

    def _where(self) -> str:
        return f"{self.name} ({self.info.symbol})"

    def _fresh(self, p: Param, value: Any = None) -> Any:
        """A register tensor for parameter ``p``: holding ``value`` (a TensorSSA), or empty
        with ``items`` elements of p's type."""
        element = _element_type(p.c_type)
        if value is not None:
            if element is not None and value.dtype is not element:
                raise TypeError(f"{self._where()}: {p.name} takes {p.c_type}; got a TensorSSA "
                                f"of {value.dtype.__name__}")
            t = cute.make_rmem_tensor(value.shape, value.dtype)
            t.store(value)
            return t
        return cute.make_rmem_tensor(cute.make_layout(self.items), element)

    def __call__(self, *args: Any) -> Any:
        params = self.info.params
        missing = params[len(args):]
        if len(args) > len(params) or any(
                p.numeric is not None or p.c_type.startswith("const ") or
                _element_type(p.c_type) is None for p in missing):
            raise TypeError(f"{self._where()} takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}); got {len(args)}")
        converted, outputs, rewritten = [], [], []
        for p, a in zip(params, list(args) + [None] * len(missing)):
            if p.numeric is None:
                if a is None:  # a left-out output
                    a = self._fresh(p)
                    outputs.append(a)
                elif isinstance(a, cute.TensorSSA):
                    a = self._fresh(p, a)
                    if not p.c_type.startswith("const "):
                        rewritten.append(a)
                if isinstance(a, cute.Tensor):
                    a = a.iterator
                if not isinstance(a, cute.Pointer):
                    raise TypeError(f"{self._where()}: {p.name} takes a CuTe tensor, TensorSSA "
                                    f"or pointer ({p.c_type}); got {type(a).__name__}")
                converted.append(a)
            else:
                converted.append(p.numeric(a))
        result = self.ffi(*converted)
        if self._operator_files:
            _add_link_libraries(self._operator_files)
        fresh = outputs + rewritten
        if self.info.result is not None:
            value = self.info.result(result)
            return (value, *fresh) if fresh else value
        if not fresh:
            return None
        return fresh[0] if len(fresh) == 1 else tuple(fresh)

    def __repr__(self) -> str:
        return f"<coopd.cute entry {self.name}: {self.info.declaration}>"


# ---- the object ----------------------------------------------------------------------------

def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def launch_check_default() -> bool:
    """Whether objects built without ``launch_check=`` check the launch shape:
    ``$COOPD_CUTE_LAUNCH_CHECK`` ("1" on, "0" off), else on in coopd.cute's debug mode
    (``$COOPD_CUTE_DEBUG=1``), else off."""
    value = os.environ.get("COOPD_CUTE_LAUNCH_CHECK", "")
    if value in ("0", "1"):
        return value == "1"
    if value:
        raise ValueError(f'COOPD_CUTE_LAUNCH_CHECK must be "0" or "1", got {value!r}')
    return os.environ.get("COOPD_CUTE_DEBUG", "") == "1"


def launch_check_ptx(shape: Optional[Tuple[int, int, int]], most_threads: int) -> str:
    """The PTX that traps unless the block is ``shape`` (block families: the exact shape CUB
    was specialized for), or, without one, unless it has at most ``most_threads`` threads (warp
    families: the rows temp_storage() lays out)."""
    body = ".reg .pred bad; .reg .u32 n, m;"
    if shape is not None:
        for axis, want in zip("xyz", shape):
            body += f" mov.u32 n, %ntid.{axis}; setp.ne.u32 bad, n, {int(want)}; @bad trap;"
    else:
        body += (" mov.u32 n, %ntid.x; mov.u32 m, %ntid.y; mul.lo.u32 n, n, m;"
                 " mov.u32 m, %ntid.z; mul.lo.u32 n, n, m;"
                 f" setp.gt.u32 bad, n, {int(most_threads)}; @bad trap;")
    return "{ " + body + " }"


class Primitive(_families.EntryAttributes):
    """A coopd specialization ready for CuTe DSL kernels.

    Attributes (Python side):
        spec, resolved: the spec sent and the resolved spec coopd returned.
        artifact: the :class:`coopd.Artifact` (bitcode, entries, key, origin, ...).
        files: the bitcode files the entries link (the primitive's, then user operators').
        ffi: {entry name: the ``cute.ffi`` declaring it, with ``source=cute.BitCode(files[0])``};
            callable in kernels with generic pointers and the declared numeric types.
        temp_storage_bytes, temp_storage_align: what one instance needs (per logical warp for
            warp primitives); smem_bytes: what temp_storage() reserves, padding included.
        entries, names (each entry's kernel-side name), operator_symbols, items_per_thread,
        dtype (coopd's name), numeric (CuTe's class), family, method, arch.

    In kernels: ``p.temp_storage(smem)`` with a ``cutlass.utils.SmemAllocator`` returns a
    shared-memory pointer to the temp storage (warp primitives: the calling logical warp's row of
    one row per warp of the block); ``p.<name>(temp, ...)`` (``p(...)`` for the first entry)
    calls an entry with CuTe tensors (register fragments, global tiles) or pointers where it
    takes pointers and numbers where it takes values.
    """

    _frontend = "coopd.cute"

    def __init__(self, spec: coopd.Spec, artifact: coopd.Artifact, dtype: str,
                 block_threads: int, block_shape: Optional[Tuple[int, int, int]] = None,
                 launch_check: bool = False) -> None:
        if not artifact.bitcode:
            raise ValueError(f"coopd.cute: artifact {artifact.key[:16]} holds no bitcode")
        part = self._take_artifact(spec, artifact)
        self.temp_storage_align = max(1, self.temp_storage_align)
        self.dtype = dtype
        self.numeric = _dtypes.BY_NAME[dtype]
        self.block_threads = block_threads
        self.block_shape = block_shape
        self.launch_check = launch_check
        stem = artifact.stem
        self.files = [_bitcode_file(artifact.bitcode, stem)] + [
            _bitcode_file(op, f"{stem}.op{i}")
            for i, op in enumerate(artifact.bitcode_link_inputs)]
        if self.warp_threads:
            self._row = _round_up(max(1, self.temp_storage_bytes), self.temp_storage_align)
            self._rows = -(-block_threads // self.warp_threads)
        else:
            self._row, self._rows = max(1, self.temp_storage_bytes), 1
        self.smem_bytes = self._row * self._rows
        self.ffi: Dict[str, Any] = {}
        self._callables: Dict[str, Entry] = {}
        names = _families.entry_names(self.method, [e.symbol for e in part.entries])
        for e, name in zip(part.entries, names):
            info = parse_entry(e)
            self.ffi[name] = cute.ffi(
                name=info.symbol,
                params_types=[_GENERIC if p.numeric is None else p.numeric
                              for p in info.params],
                return_type=info.result, source=cute.BitCode(self.files[0]))
            self._callables[name] = Entry(info, self.ffi[name], name, self.files[1:],
                                          max(1, self.items_per_thread or 1))
        self.names: Tuple[str, ...] = tuple(names)

    def temp_storage(self, smem: Any) -> Any:
        """In a kernel: this primitive's temp storage from ``smem`` (a
        ``cutlass.utils.SmemAllocator``), as a shared-memory pointer. Warp primitives: one row
        per logical warp of a block of ``block_threads``; the pointer is the calling thread's
        warp's row (threads numbered x fastest, as CUB does).

        With the launch check (``launch_check``), it first traps unless the block has the
        shape this object was built for (warp primitives: at most ``block_threads`` threads),
        so a launch with another shape stops with an error instead of corrupting shared memory
        or computing garbage."""
        if self.launch_check:
            self.check_launch()
        base = smem.allocate(self.smem_bytes, byte_alignment=self.temp_storage_align)
        if not self.warp_threads:
            return base
        tx, ty, tz = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_dim()
        warp = ((tz * by + ty) * bx + tx) // self.warp_threads
        return base + warp * self._row

    def check_launch(self) -> None:
        """In a kernel: the launch check (see temp_storage), whether or not it is on."""
        llvm.inline_asm(None, [], launch_check_ptx(self.block_shape, self.block_threads), "",
                        has_side_effects=True)

    def __call__(self, *args: Any) -> Any:
        return self._callables[self.names[0]](*args)

    def _dtype_name(self) -> str:
        return self.dtype


def smem_size(*primitives: Primitive, extra: int = 0) -> int:
    """Dynamic shared memory enough for one ``temp_storage`` of each primitive plus ``extra``
    bytes, whatever order the allocator places them in (each padded by its alignment): pass it
    as ``launch(smem=...)`` where the launch must name its size (a cubin launched by another
    runtime)."""
    return extra + sum(p.smem_bytes + p.temp_storage_align - 1 for p in primitives)


# ---- building ------------------------------------------------------------------------------

OpArg = Union[None, str, coopd.UserOperator]


def make(family: str, dtype: Any, *, threads: Union[int, Sequence[int], None] = None,
         warp_threads: Optional[int] = None, items_per_thread: int = 1,
         method: Optional[str] = None, algorithm: Optional[str] = None, op: OpArg = None,
         prefix_callback: Optional[coopd.UserOperator] = None, arch: Optional[str] = None,
         cccl: Optional[str] = None, client: Optional[coopd.Client] = None,
         block_threads: Optional[int] = None, launch_check: Optional[bool] = None,
         options: Optional[Mapping[str, Any]] = None) -> Primitive:
    """Builds (or returns the one already built in this process for the same spec) the
    Primitive for a coopd spec, as bitcode for ``arch`` (default: :func:`default_arch`).
    ``launch_check`` (default: :func:`launch_check_default`): temp_storage() traps when the
    kernel's block is not the one the object was built for."""
    opts = dict(options or {})
    # The factories hand every keyword they do not name to `options`: this one is coopd.cute's.
    if launch_check is None:
        launch_check = opts.pop("launch_check", None)
    if launch_check is None:
        launch_check = launch_check_default()
    launch_check = bool(launch_check)
    client = client or get_client()
    arch = arch or default_arch()
    dt = _dtypes.resolve(dtype)
    row = _families.catalog_family(client, family)
    if opts.get("value_dtype") is not None:
        opts["value_dtype"] = _dtypes.resolve(opts["value_dtype"], f"{family}: value_dtype")
    spec = coopd.Spec(family=family, dtype=dt, arch=arch, method=method or "",
                      items_per_thread=items_per_thread, algorithm=algorithm or "", abi="c",
                      options=_families.family_options(row, family, opts),
                      prefix_callback=prefix_callback)
    _families.shape_spec(spec, row, family, threads, warp_threads, cccl)
    if isinstance(op, str):
        spec.op = op
    elif isinstance(op, coopd.UserOperator):
        spec.user_op = op
    elif op is not None:
        raise ValueError(f"{family}: op must be a builtin's name or a coopd.UserOperator with "
                         f"CUDA C++ source (CuTe kernels link bitcode: Python and LTO-IR "
                         f"operators cannot be used); got {op!r}")
    request = _families.to_proto(spec, row, family)
    shape: Optional[Tuple[int, int, int]] = None
    if threads is not None and not row.warp:
        dims = ([threads] if isinstance(threads, int) else list(threads)) + [1, 1]
        shape = (int(dims[0]), int(dims[1]), int(dims[2]))
        threads_total = shape[0] * shape[1] * shape[2]
    else:
        threads_total = block_threads or 1024
    key = (client.socket, request.SerializeToString(deterministic=True) +
           b"|%d|%d" % (threads_total, launch_check))
    with _lock:
        built = _primitives.get(key)
        if built is None:
            built = Primitive(spec, client.specialize(spec, formats="bitcode"), dt, threads_total,
                              shape, launch_check)
            _primitives[key] = built
        return built


_COMMON = """
    dtype: a CuTe numeric type (cutlass.Float32), a NumPy dtype or coopd's name ("float32").
        method, algorithm: as `coopctl catalog` lists them (empty: the family's default). op: a
        builtin's name ("sum", "less", ...) or a coopd.UserOperator with CUDA C++ source
        (compiled by clang with the primitive, linked as bitcode, inlined). arch: "sm_90a"
        (default: $COOPD_ARCH, else CuTe DSL's arch). client: a coopd.Client (default:
        coopd.cute.set_client's, else one on the default socket). launch_check: trap when the
        kernel's block shape is not the one built for (default: $COOPD_CUTE_LAUNCH_CHECK, else
        on with $COOPD_CUTE_DEBUG=1). Other keywords are the family's options message
        (value_dtype, radix_bits, bins, with_aggregate, ...).

    The same spec in one process returns the same object, fetched once."""


def factories(warp: bool) -> Dict[str, Any]:
    """{name: factory} for coopd.cute.block (or .warp)."""
    return _families.factories(make, _COMMON, warp)
