"""A cross-process cache for Numba kernels that link coopd artifacts.

numba-cuda's ``cache=True`` refuses kernels that link files, and coopd.numba's entries always
do (each primitive's LTO-IR). Once nvJitLink has linked a kernel, though, its cubin holds
everything: ``coopd.numba.jit(cache=True)`` stores that cubin and drops the link inputs, keyed
by what went into it.

It is numba-cuda's own cache with three parts replaced:

* the key (:func:`cache_key`): numba-cuda's covers the signature, the bytecode, the closure and
  the device; it leaves out the link inputs, the compile options and the globals the kernel
  reads. This one names the kernel's whole code object, its closure, the globals it reads
  (coopd primitives by artifact key and LTO-IR digest, device functions recursively, constants
  and arrays by value), every ``link=`` input by content, the compile options, the arch the
  cubin is linked for, and the numba-cuda, numba, NVRTC, NVVM, nvJitLink and Python versions;
* what is stored: the kernel with its linked cubins and without its link inputs; before
  storing, every file the compile linked must be one the key named (else :class:`CacheError`);
* the files: one per key, written to a temporary name and renamed into place, with a magic, a
  format version, the key's digest and a checksum; anything that does not check out is a miss.

The location is numba-cuda's (``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the source,
else the user-wide cache directory); the source file's stamp (mtime, size) is part of the key,
and a save removes that function's entries for older stamps.

This leans on numba-cuda internals (``CUDACache``, ``_Kernel``'s and ``CUDACodeLibrary``'s
reduce/rebuild states). They are checked on first use against the numba-cuda series it was
written for (0.30); anything else is a :class:`CacheError`, never a silently uncached kernel.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import pickle
import re
import struct
import sys
import types as pytypes
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import numpy as np
from numba import cuda

from coopd.numba._operators import cc_of

__all__ = ["CacheError", "CacheKey", "cache_key", "jit", "precompile"]

SUPPORTED_NUMBA_CUDA = (0, 30)  # the series whose internals this module was written against
_SCHEMA = "coopd-numba-kernel-v1"
_MAGIC = b"COOPDNBK"
_FORMAT = 1
_HEADER = struct.Struct("<8sI32s32sQ")  # magic, format, sha256(key), sha256(body), len(body)
_SUFFIX = ".coopd.nbk"
# Library modules whose attributes a kernel reads (cuda.threadIdx, numba.int32): fixed by the
# versions in the key, so not walked.
_LIBRARY_ROOTS = {"numba", "numba_cuda", "numpy", "cuda", "math", "cmath", "operator", "coopd",
                  "llvmlite"}
# numba-cuda settings read at compile time that change the code (the rest are resolved into the
# dispatcher's options by cuda.jit, or only log).
_CONFIG = ("CUDA_ENABLE_NRT", "CUDA_DEBUG_POLY", "FORCE_CUDA_CC", "OPT")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class CacheError(RuntimeError):
    """The kernel cannot be cached safely (or this numba-cuda is not one the cache supports)."""


# ---- numba-cuda internals, checked once ----------------------------------------------------

_internals: Optional[Dict[str, Any]] = None


def _numba_internals() -> Dict[str, Any]:
    global _internals
    if _internals is not None:
        return _internals
    import numba_cuda

    version = numba_cuda.__version__
    try:
        series = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        series = ()
    if series != SUPPORTED_NUMBA_CUDA:
        raise CacheError(f"coopd.numba's kernel cache supports numba-cuda "
                         f"{'.'.join(map(str, SUPPORTED_NUMBA_CUDA))}.x; this is {version} "
                         "(use cache=False, or a coopd release for this numba-cuda)")
    try:
        from numba.cuda import codegen, dispatcher, serialize, utils
        from numba.cuda.compiler import ExternFunction
        from numba.cuda.core import caching, config, sigutils
        from numba.cuda.core.compiler_lock import global_compiler_lock
        from numba.cuda.cudadrv import nvrtc, nvvm, runtime
        from numba.cuda.cudadrv.linkable_code import LinkableCode
        from numba.cuda.memory_management.nrt import NRT_LIBRARY
    except ImportError as e:
        raise CacheError(f"coopd.numba's kernel cache: numba-cuda {version} lacks {e.name}") \
            from e
    needed = {
        "dispatcher.CUDACache": getattr(dispatcher, "CUDACache", None),
        "dispatcher.CUDACacheImpl": getattr(dispatcher, "CUDACacheImpl", None),
        "dispatcher._Kernel._rebuild": getattr(getattr(dispatcher, "_Kernel", None),
                                               "_rebuild", None),
        "dispatcher._Kernel._reduce_states": getattr(getattr(dispatcher, "_Kernel", None),
                                                     "_reduce_states", None),
        "dispatcher.get_current_device": getattr(dispatcher, "get_current_device", None),
        "codegen.CUDACodeLibrary._rebuild": getattr(codegen.CUDACodeLibrary, "_rebuild", None),
        "codegen.CUDACodeLibrary._reduce_states": getattr(codegen.CUDACodeLibrary,
                                                          "_reduce_states", None),
        "codegen.CUDACodeLibrary._ensure_cc": getattr(codegen.CUDACodeLibrary, "_ensure_cc",
                                                      None),
        "caching.Cache._load_overload": getattr(caching.Cache, "_load_overload", None),
        "utils.numba_target_override": getattr(utils, "numba_target_override", None),
        "caching.Cache._save_overload": getattr(caching.Cache, "_save_overload", None),
    }
    missing = [name for name, value in needed.items() if value is None]
    if missing:
        raise CacheError(f"coopd.numba's kernel cache: numba-cuda {version} lacks "
                         f"{', '.join(missing)}")
    _internals = dict(dispatcher=dispatcher, codegen=codegen, serialize=serialize, utils=utils,
                      config=config, sigutils=sigutils, lock=global_compiler_lock, nvrtc=nvrtc,
                      nvvm=nvvm, runtime=runtime, LinkableCode=LinkableCode,
                      NRT_LIBRARY=NRT_LIBRARY, ExternFunction=ExternFunction, version=version,
                      package_dir=os.path.dirname(os.path.abspath(numba_cuda.__file__)))
    return _internals


_toolchain: Optional[Tuple[Tuple[str, str], ...]] = None


def _toolchain_components() -> Tuple[Tuple[str, str], ...]:
    """Versions of everything that turns the kernel into a cubin (once per process)."""
    global _toolchain
    if _toolchain is None:
        import numba
        from cuda.bindings import nvjitlink

        nb = _numba_internals()
        _toolchain = (
            ("numba_cuda", nb["version"]),
            ("numba", numba.__version__),
            ("python", sys.implementation.cache_tag or sys.version),
            ("nvrtc", repr(nb["runtime"].get_version())),
            ("nvvm", repr(nb["nvvm"].NVVM().get_version())),
            ("nvjitlink", repr(nvjitlink.version())),
        )
    return _toolchain


# ---- the target ----------------------------------------------------------------------------

def _target_cc(arch: Optional[str]) -> Tuple[int, int, str]:
    """The compute capability numba-cuda links the kernel for: the current GPU's as numba-cuda
    takes it (``sm_90a`` on an H200), else ``arch``, else ``$COOPD_ARCH`` (``sm_90`` and
    ``sm_90a`` are both ``(9, 0, "a")``, as numba-cuda links for the device)."""
    nb = _numba_internals()
    if arch is None and cuda.is_available():
        return tuple(nb["codegen"].CUDACodeLibrary._ensure_cc(None, None))
    arch = arch or os.environ.get("COOPD_ARCH")
    if not arch:
        raise CacheError("coopd.numba kernel cache: no GPU to take the compute capability from; "
                         "pass arch='sm_90' (or set COOPD_ARCH)")
    major, minor = cc_of(arch)
    return (major, minor, "a" if (major, minor) >= (9, 0) else "")


# ---- what the kernel reaches ---------------------------------------------------------------

def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _linkable_data(obj: Any) -> bytes:
    data = obj.data
    return data.encode() if isinstance(data, str) else bytes(data)


class _Walker:
    """Collects a deterministic description of everything a kernel's code can reach (lines in
    ``items``) and the content digests of every link input among it (``links``)."""

    def __init__(self) -> None:
        self.items: List[str] = []
        self.links: Set[str] = set()
        self._seen: Set[int] = set()
        self._nb = _numba_internals()

    # link inputs: LinkableCode objects (cuda.LTOIR, ...) and paths
    def link_input(self, obj: Any, where: str) -> str:
        nb = self._nb
        if obj is nb["NRT_LIBRARY"]:
            return "numba-cuda NRT"  # numba-cuda's own source: fixed by its version
        if isinstance(obj, nb["LinkableCode"]):
            if obj.setup_callback or obj.teardown_callback:
                raise CacheError(f"{where}: the link input {obj.name!r} has setup or teardown "
                                 "callbacks, which a cached kernel would lose; use cache=False")
            if type(obj).__name__ == "CUSource":
                raise CacheError(f"{where}: the link input {obj.name!r} is CUDA C++ source, "
                                 "compiled at link time against headers the key cannot see; "
                                 "link its LTO-IR instead (coopd, or cuda.compile(output="
                                 "'ltoir')), or use cache=False")
            d = _digest(_linkable_data(obj))
            self.links.add(d)
            return f"{type(obj).__name__} {d}"
        if isinstance(obj, (str, os.PathLike)):
            path = os.path.abspath(os.fspath(obj))
            if path.startswith(nb["package_dir"] + os.sep):
                return f"numba-cuda file {os.path.relpath(path, nb['package_dir'])}"
            if path.endswith(".cu"):
                raise CacheError(f"{where}: the link input {path} is CUDA C++ source, compiled "
                                 "at link time against headers the key cannot see; link its "
                                 "LTO-IR instead, or use cache=False")
            try:
                with open(path, "rb") as f:
                    d = _digest(f.read())
            except OSError as e:
                raise CacheError(f"{where}: cannot read the link input {path}: {e}") from e
            self.links.add(d)
            return f"file {os.path.splitext(path)[1]} {d}"
        raise CacheError(f"{where}: coopd.numba cannot key the link input {obj!r} "
                         f"({type(obj).__name__}); use cache=False")

    def options(self, targetoptions: Dict[str, Any], where: str) -> str:
        parts = []
        for name in sorted(targetoptions):
            value = targetoptions[name]
            text: Union[str, List[str]]
            if name == "link":
                text = sorted(self.link_input(v, where) for v in (value or ()))
            elif name == "extensions":
                text = [f"{type(e).__module__}.{type(e).__qualname__}" for e in (value or ())]
            elif isinstance(value, (set, frozenset)):
                text = sorted(map(repr, value))
            else:
                text = repr(value)
            parts.append(f"{name}={text}")
        return "; ".join(parts)

    def function(self, func: Any, where: str) -> None:
        """A Python function: its code object (bytecode, constants, names, nested code, line
        table), its closure and the globals its code names."""
        if id(func) in self._seen:
            self.items.append(f"{where}: (seen)")
            return
        self._seen.add(id(func))
        code = func.__code__
        self.items.append(f"{where}: code {_digest(marshal.dumps(code))}")
        for name, cell in zip(code.co_freevars, func.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                self.items.append(f"{where}: closure {name} empty")
                continue
            self.value(value, f"{where}: closure {name}")
        fglobals = getattr(func, "__globals__", {})
        names = sorted(_code_names(code))
        for name in names:
            if name in fglobals:
                self.value(fglobals[name], f"{where}: global {name}", names)

    def value(self, value: Any, where: str, names: Sequence[str] = ()) -> None:
        from coopd.numba._plan import SharedPlan
        from coopd.numba._primitive import Primitive

        nb = self._nb
        add = self.items.append
        if isinstance(value, Primitive):
            for d in value.link_digests:
                self.links.add(d)
            add(f"{where}: coopd primitive {value.artifact.key} block_threads="
                f"{value.block_threads} ltoir {' '.join(value.link_digests)}")
        elif isinstance(value, SharedPlan):
            add(f"{where}: coopd plan {sorted(value._constants.items())}")
        elif isinstance(value, nb["dispatcher"].CUDADispatcher):
            add(f"{where}: cuda dispatcher options "
                f"{self.options(value.targetoptions, where)}")
            self.function(value.py_func, f"{where} ->")
        elif isinstance(value, nb["LinkableCode"]):
            add(f"{where}: {self.link_input(value, where)}")
        elif value is None or isinstance(value, (bool, int, float, complex, str, bytes,
                                                 np.generic)):
            add(f"{where}: {type(value).__name__} {value!r}")
        elif isinstance(value, np.ndarray):
            add(f"{where}: ndarray {value.dtype.str} {value.dtype.descr} {value.shape} "
                f"{_digest(np.ascontiguousarray(value).tobytes())}")
        elif isinstance(value, np.dtype):
            add(f"{where}: dtype {value.str} {value.descr}")
        elif isinstance(value, (tuple, list, set, frozenset)):
            items = list(value)
            if isinstance(value, (set, frozenset)):
                items = sorted(items, key=repr)
            add(f"{where}: {type(value).__name__} of {len(items)}")
            for i, v in enumerate(items):
                self.value(v, f"{where}[{i}]")
        elif isinstance(value, dict):
            add(f"{where}: dict of {len(value)}")
            for k in sorted(value, key=repr):
                self.value(value[k], f"{where}[{k!r}]")
        elif isinstance(value, pytypes.ModuleType):
            add(f"{where}: module {value.__name__}")
            if value.__name__.split(".")[0] not in _LIBRARY_ROOTS:
                for name in names:  # mod.attr in the kernel: attr is among the code's names
                    if name in getattr(value, "__dict__", {}):
                        self.value(value.__dict__[name], f"{where}.{name}")
        elif isinstance(value, pytypes.FunctionType):
            self.function(value, f"{where} ->")
        elif hasattr(value, "_defn") and isinstance(value._defn, pytypes.FunctionType):
            add(f"{where}: {type(value).__qualname__}")  # @intrinsic and friends
            self.function(value._defn, f"{where} ->")
        elif isinstance(value, type):
            add(f"{where}: class {value.__module__}.{value.__qualname__}")
        elif isinstance(value, nb["ExternFunction"]):
            add(f"{where}: declared device function {value.name} {value.sig}")
        else:
            # numba types and other objects: their type and str() (addresses dropped). Objects
            # whose effect on the code str() does not show are covered only by the source
            # file's stamp, as in numba-cuda's own cache.
            text = _ADDRESS.sub("", str(value))
            add(f"{where}: {type(value).__module__}.{type(value).__qualname__} {text}")


def _code_names(code: pytypes.CodeType) -> Set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _code_names(const)
    return names


# ---- the key -------------------------------------------------------------------------------

@dataclass(frozen=True)
class CacheKey:
    """A kernel's cache key: ``components`` (name, value) in order, ``digest`` the sha256 of
    them, ``links`` the digests of every link input the key names, ``cc`` the target."""
    components: Tuple[Tuple[str, str], ...]
    digest: str
    links: frozenset
    cc: Tuple[int, int, str]

    def explain(self) -> str:
        return "\n".join(f"{name}: {value}" for name, value in self.components)


def _key(dispatcher: Any, sig: Any, cc: Tuple[int, int, str], source_stamp: Any,
         launch_config: Any) -> CacheKey:
    nb = _numba_internals()
    where = getattr(dispatcher.py_func, "__qualname__", "kernel")
    argtypes, _ = nb["sigutils"].normalize_signature(sig)  # kernels return void
    walker = _Walker()
    options = walker.options(dispatcher.targetoptions, where)
    walker.function(dispatcher.py_func, where)
    config = nb["config"]
    components = (
        ("schema", _SCHEMA),
        ("signature", repr(tuple(str(a) for a in argtypes))),
        ("target", f"{cc} {nb['nvrtc'].get_arch_option(*cc)}"),
        *_toolchain_components(),
        ("config", "; ".join(f"{n}={getattr(config, n, None)!r}" for n in _CONFIG)),
        ("options", options),
        ("source_stamp", repr(source_stamp)),
        ("launch_config", repr(launch_config)),
        ("reaches", "\n".join(walker.items)),
    )
    text = "\n".join(f"{n}\0{v}" for n, v in components).encode()
    return CacheKey(components, _digest(text), frozenset(walker.links), cc)


def cache_key(kernel: Any, signature: Any, arch: Optional[str] = None) -> CacheKey:
    """The key under which ``kernel`` (a :func:`jit` dispatcher with ``cache=True``) is cached
    for ``signature``, on the current GPU or for ``arch``. ``.explain()`` prints each part, to
    diagnose a surprising miss."""
    cache = _cache_of(kernel)
    return cache.key(signature, _target_cc(arch))


# ---- the store -----------------------------------------------------------------------------

class _Store:
    """One file per key in the function's cache directory:
    ``<function base>.<stamp digest>.<key digest>.coopd.nbk``. Files are written to a unique
    temporary name and renamed into place, so readers never see half a file and concurrent
    writers of one key leave one whole file. A file that is short, has the wrong magic, format,
    key or checksum, or does not unpickle, is a miss."""

    def __init__(self, path: str, base: str, source_stamp: Any) -> None:
        self.path = path
        self.base = base
        self.stamp = _digest(repr(source_stamp).encode())[:12]

    def file_for(self, digest: str) -> str:
        return os.path.join(self.path, f"{self.base}.{self.stamp}.{digest[:32]}{_SUFFIX}")

    def load(self, digest: str) -> Optional[Any]:
        path = self.file_for(digest)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            return None
        why = self._check(blob, digest)
        if why is None:
            try:
                return pickle.loads(blob[_HEADER.size:])
            except Exception as e:  # noqa: BLE001 - any unreadable entry is a miss
                why = f"does not unpickle ({type(e).__name__}: {e})"
        _debug(f"[coopd cache] {path}: {why}; treated as a miss")
        return None

    @staticmethod
    def _check(blob: bytes, digest: str) -> Optional[str]:
        if len(blob) < _HEADER.size:
            return f"{len(blob)} bytes, shorter than the header"
        magic, fmt, key, body_digest, size = _HEADER.unpack_from(blob)
        if magic != _MAGIC:
            return "not a coopd kernel cache file"
        if fmt != _FORMAT:
            return f"format {fmt}, this coopd reads {_FORMAT}"
        if key != bytes.fromhex(digest):
            return "written for another key"
        body = blob[_HEADER.size:]
        if len(body) != size:
            return f"body is {len(body)} bytes, the header says {size}"
        if hashlib.sha256(body).digest() != body_digest:
            return "checksum mismatch"
        return None

    def save(self, digest: str, body: bytes) -> None:
        path = self.file_for(digest)
        header = _HEADER.pack(_MAGIC, _FORMAT, bytes.fromhex(digest),
                              hashlib.sha256(body).digest(), len(body))
        tmp = f"{path}.tmp.{os.getpid()}.{uuid.uuid4().hex[:12]}"
        try:
            os.makedirs(self.path, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(header)
                f.write(body)
            os.replace(tmp, path)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            warnings.warn(f"coopd.numba: could not write the kernel cache entry {path}: {e}",
                          RuntimeWarning, stacklevel=2)
            return
        self._remove_stale()

    def _entries(self) -> Iterator[Tuple[str, str]]:
        try:
            names = os.listdir(self.path)
        except OSError:
            return
        prefix = self.base + "."
        for name in names:
            if name.startswith(prefix) and name.endswith(_SUFFIX):
                parts = name[len(prefix):-len(_SUFFIX)].split(".")
                if len(parts) == 2:
                    yield name, parts[0]

    def _remove_stale(self) -> None:
        for name, stamp in self._entries():
            if stamp != self.stamp:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.path, name))

    def flush(self) -> None:
        for name, _ in self._entries():
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.path, name))


def _debug(message: str) -> None:
    if _numba_internals()["config"].DEBUG_CACHE:
        print(message)


# ---- numba-cuda's cache, with the key, the payload and the files replaced ------------------

_cache_classes: Optional[Tuple[type, type]] = None


def _classes() -> Tuple[type, type]:
    """LinkedKernelCache and its impl, defined on first use (numba-cuda's classes are checked
    first)."""
    global _cache_classes
    nb = _numba_internals()  # checked on every use: cheap once it has passed
    if _cache_classes is not None:
        return _cache_classes
    dispatcher_mod, codegen = nb["dispatcher"], nb["codegen"]
    # numba-cuda's classes, found at run time (Any to a type checker).
    cache_impl_base: Any = dispatcher_mod.CUDACacheImpl
    cache_base: Any = dispatcher_mod.CUDACache

    class LinkedKernelCacheImpl(cache_impl_base):
        """Stores a kernel as numba-cuda does, except for its code library: the linked cubins
        (one per compute capability it was linked for) and the LLVM IR, without link inputs or
        the unlinked PTX."""

        def reduce(self, kernel: Any) -> Dict[str, Any]:
            state = kernel._reduce_states()
            lib = state["codelibrary"]
            if not lib._cubin_cache:
                raise CacheError(f"{kernel.entry_name}: nothing linked to store (no cubin)")
            view = object.__new__(type(lib))  # the library as it would be with no link inputs
            view.__dict__.update(lib.__dict__)
            view._linking_files = ({nb["NRT_LIBRARY"]} if nb["NRT_LIBRARY"] in lib._linking_files
                                   else set())
            lib_state = view._reduce_states()
            lib_state["ptx_cache"] = {}  # the kernel's PTX before linking: not self-contained
            state["codelibrary"] = lib_state
            return state

        def rebuild(self, target_context: Any, payload: Dict[str, Any]) -> Any:
            state = dict(payload)
            state["codelibrary"] = codegen.CUDACodeLibrary._rebuild(**payload["codelibrary"])
            return dispatcher_mod._Kernel._rebuild(**state)

    class LinkedKernelCache(cache_base):
        """numba-cuda's CUDACache (locator, source stamp, launch-config handling, dispatcher
        stats) with coopd.numba's key, payload and files."""

        _impl_class = LinkedKernelCacheImpl

        def __init__(self, kernel: Any) -> None:
            self._dispatcher = kernel
            super().__init__(kernel.py_func)
            self._stamp = self._impl.locator.get_source_stamp()
            self._cache_file = _Store(self._cache_path, self._impl.filename_base, self._stamp)

        def key(self, sig: Any, cc: Tuple[int, int, str]) -> CacheKey:
            return _key(self._dispatcher, sig, cc, self._stamp, self._launch_config_key)

        def _index_key(self, sig: Any, codegen: Any) -> str:
            return self.key(sig, _target_cc(None)).digest

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            # numba-cuda's refreshes the target context first, which imports and installs every
            # lowering registry (0.3-0.7 s in a fresh process). A rebuilt kernel is launched
            # from its cubin and needs none of them; a compile refreshes the context itself.
            with nb["utils"].numba_target_override():
                return self._load_overload(sig, target_context)

        def _load_overload(self, sig: Any, target_context: Any) -> Any:
            if not self._enabled:
                return None
            key = self.key(sig, _target_cc(None))
            payload = self._cache_file.load(key.digest)
            if payload is None:
                return None
            try:
                return self._impl.rebuild(target_context, payload)
            except Exception as e:  # noqa: BLE001 - an entry that does not rebuild is a miss
                _debug(f"[coopd cache] entry for {key.digest} does not rebuild: {e}")
                return None

        def _save_overload(self, sig: Any, kernel: Any) -> None:
            if not self._enabled:
                return
            cc = _target_cc(None)
            if cc not in kernel._codelibrary._cubin_cache:
                raise CacheError(f"{kernel.entry_name}: no cubin linked for {cc} to store")
            self.store(sig, kernel, self.key(sig, cc))

        def store(self, sig: Any, kernel: Any, key: CacheKey) -> None:
            self._check_links(kernel, key)
            body = nb["serialize"].dumps(self._impl.reduce(kernel))
            self._cache_file.save(key.digest, body)

        def _check_links(self, kernel: Any, key: CacheKey) -> None:
            """Every file the compile linked must be one the key names: a file the walk did not
            find would not invalidate the entry when it changes."""
            where = getattr(self._dispatcher.py_func, "__qualname__", "kernel")
            probe = _Walker()
            for obj in kernel._codelibrary._linking_files:
                before = set(probe.links)
                probe.link_input(obj, where)
                unnamed = probe.links - before - key.links
                if unnamed:
                    name = getattr(obj, "name", None) or str(obj)
                    raise CacheError(
                        f"{where}: cannot cache this kernel: it links {name!r} (sha256 "
                        f"{unnamed.pop()[:16]}...), which coopd.numba did not find among the "
                        "kernel's globals, closure or link=, so a change to it would not be "
                        "seen. Reference the primitive as a global or closure variable of the "
                        "kernel, pass the file in link=, or use cache=False")

    _cache_classes = (LinkedKernelCache, LinkedKernelCacheImpl)
    return _cache_classes


def _cache_of(kernel: Any) -> Any:
    cache_class, _ = _classes()
    cache = getattr(kernel, "_cache", None)
    if not isinstance(cache, cache_class):
        raise CacheError(f"{kernel!r} was not made by coopd.numba.jit(cache=True)")
    return cache


# ---- the decorator -------------------------------------------------------------------------

def jit(func_or_sig: Any = None, *, cache: bool = False, **options: Any) -> Any:
    """``numba.cuda.jit`` for kernels that call coopd.numba primitives, with ``cache=True``
    caching the linked kernel across processes (see the module's docstring for the key, the
    location and the checks). Every other argument is ``cuda.jit``'s; ``lto`` defaults to True
    (coopd artifacts are LTO-IR). Signatures given here compile (or load) at once, as with
    ``cuda.jit``::

        @coopd.numba.jit(cache=True)
        def kernel(x, out):
            ...

    ``kernel.stats.cache_hits`` / ``cache_misses`` count, per signature, what came from disk.
    """
    options.setdefault("lto", True)
    if not cache:
        return cuda.jit(func_or_sig, **options)
    if options.get("device"):
        raise ValueError("coopd.numba.jit: cache=True is for kernels; a device function is "
                         "compiled into (and keyed by) each kernel that calls it")
    _classes()  # numba-cuda checked before anything compiles

    def decorate(func: Callable, signatures: Sequence[Any] = ()) -> Any:
        kernel = cuda.jit(func, **options)
        _enable(kernel)
        for sig in signatures:
            kernel.compile(sig)
        if signatures:
            kernel.disable_compile()
        return kernel

    nb = _numba_internals()
    if nb["sigutils"].is_signature(func_or_sig):
        return lambda func: decorate(func, [func_or_sig])
    if isinstance(func_or_sig, list):
        return lambda func: decorate(func, func_or_sig)
    if func_or_sig is None:
        return decorate
    return decorate(func_or_sig)


def _enable(kernel: Any) -> None:
    cache_class, _ = _classes()
    null_cache = _numba_internals()["dispatcher"].NullCache
    if not isinstance(getattr(kernel, "_cache", None), null_cache):
        raise CacheError(f"{kernel!r}: numba-cuda's dispatcher has no _cache to replace")
    # The dispatcher's own enable_caching() installs numba-cuda's CUDACache the same way.
    kernel._cache = cache_class(kernel)


# ---- filling the cache without a GPU -------------------------------------------------------

@contextlib.contextmanager
def _target(cc: Tuple[int, int, str]) -> Iterator[None]:
    """numba-cuda asks the current device for its compute capability twice while it builds a
    kernel (for the NVVM target, and for the PTX of the unlinked kernel); answer with ``cc``.
    Held under numba-cuda's global compiler lock, which every compile takes, so no other
    compile sees it."""
    nb = _numba_internals()
    dispatcher_mod, library = nb["dispatcher"], nb["codegen"].CUDACodeLibrary

    class _Target:
        compute_capability = cc[:2]

    real_device, real_ensure = dispatcher_mod.get_current_device, library._ensure_cc
    dispatcher_mod.get_current_device = lambda: _Target
    library._ensure_cc = lambda self, given: given if given is not None else cc
    try:
        yield
    finally:
        dispatcher_mod.get_current_device, library._ensure_cc = real_device, real_ensure


def precompile(kernel: Any, signature: Any, arch: Optional[str] = None) -> bytes:
    """Compiles and links ``kernel`` (made by ``coopd.numba.jit(cache=True)``) for
    ``signature`` and ``arch`` (default: the current GPU's, else ``$COOPD_ARCH``) with
    numba-cuda and nvJitLink, with no GPU, and stores it in the kernel's cache: a later process
    on a GPU of that arch loads it instead of compiling. Returns the cubin."""
    cache = _cache_of(kernel)
    nb = _numba_internals()
    cc = _target_cc(arch)
    argtypes, _ = nb["sigutils"].normalize_signature(signature)
    with nb["lock"], _target(cc):
        compiled = nb["dispatcher"]._Kernel(kernel.py_func, argtypes, **kernel.targetoptions)
        cubin = compiled._codelibrary.get_cubin(cc=cc)
    cache.store(signature, compiled, cache.key(signature, cc))
    return bytes(getattr(cubin, "code", cubin))
