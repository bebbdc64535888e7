"""What coopd's frontend modules (coopd.numba, coopd.cute) share: the catalogue's families as
factory names, the catalogue looked up once per daemon, and a spec built from a factory's
arguments. Nothing here imports a frontend."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from google.protobuf import json_format

import coopd
from coopd._proto.coop.v1 import coop_pb2

# (factory name, coopd family, summary), in the catalogue's order.
BLOCK_FAMILIES: Tuple[Tuple[str, str, str], ...] = (
    ("reduce", "block_reduce", "Reduction across the block"),
    ("scan", "block_scan", "Prefix scan across the block"),
    ("load", "block_load", "A tile from global memory into per-thread items"),
    ("store", "block_store", "Per-thread items out to a tile in global memory"),
    ("exchange", "block_exchange", "Rearranges items between arrangements"),
    ("shuffle", "block_shuffle", "Moves items between threads"),
    ("radix_sort", "block_radix_sort", "Radix sort of keys (or pairs)"),
    ("merge_sort", "block_merge_sort", "Merge sort with a comparator"),
    ("histogram", "block_histogram", "Counts samples into bins"),
    ("discontinuity", "block_discontinuity", "Flags heads and tails of runs"),
    ("adjacent_difference", "block_adjacent_difference", "Differences of neighbours"),
    ("run_length_decode", "block_run_length_decode", "Decodes runs into items"),
    ("radix_rank", "block_radix_rank", "Ranks keys by a digit"),
    ("topk", "block_topk", "The k largest or smallest keys (CCCL 3.3)"),
)
WARP_FAMILIES: Tuple[Tuple[str, str, str], ...] = (
    ("reduce", "warp_reduce", "Reduction across a logical warp"),
    ("scan", "warp_scan", "Prefix scan across a logical warp"),
    ("load", "warp_load", "A tile from global memory into a warp's items"),
    ("store", "warp_store", "A warp's items out to global memory"),
    ("exchange", "warp_exchange", "Rearranges a warp's items"),
    ("merge_sort", "warp_merge_sort", "Merge sort across a logical warp"),
)

# Every factory's `cccl` keyword, said once in each factory's docstring.
CCCL_DOC = """

    cccl: the CCCL to compile against when the daemon has several (a name, or a version such
        as "3.5"; coopd.Client.catalog().cccls lists them); default: the daemon's default."""

_lock = threading.Lock()
_catalogs: Dict[str, Dict[str, Any]] = {}  # socket -> family name -> CatalogFamily


def catalog_family(client: coopd.Client, family: str) -> Any:
    """The catalogue's row for ``family`` (fetched once per socket and process)."""
    with _lock:
        families = _catalogs.get(client.socket)
    if families is None:
        families = {f.name: f for f in client.catalog().families}
        with _lock:
            _catalogs[client.socket] = families
    if family not in families:
        raise ValueError(f"family must be one of {', '.join(families)}; got \"{family}\"")
    return families[family]


def method_kind(row: Any, method: Optional[str]) -> str:
    """The operator kind of ``method`` (default: the family's first)."""
    name = method or row.methods[0].name
    return next((m.op_kind for m in row.methods if m.name == name), "")


def family_options(row: Any, family: str, options: Mapping[str, Any]) -> Dict[str, Any]:
    """A factory's extra keywords as the spec's options message (the one the catalogue names
    for the family); keywords for a family without one are an error naming them."""
    if not options:
        return {}
    if not row.family_options:
        raise ValueError(f"{family}: takes no options; got {', '.join(sorted(options))}")
    return {row.family_options: dict(options)}


def to_proto(spec: coopd.Spec, row: Any, family: str) -> coop_pb2.PrimitiveSpec:
    """``spec.to_proto()``, with a bad option named along with the fields the family's options
    message has."""
    try:
        return spec.to_proto()
    except json_format.ParseError as e:
        message = coop_pb2.PrimitiveSpec.DESCRIPTOR.fields_by_name[row.family_options]
        allowed = ", ".join(f.name for f in message.message_type.fields)
        raise ValueError(f"{family}: bad option: {e}; {family} takes {allowed}") from None


def shape_spec(spec: coopd.Spec, row: Any, family: str,
               threads: Union[int, Sequence[int], None], warp_threads: Optional[int],
               cccl: Optional[str] = None) -> None:
    """Sets the block shape (block families) or the logical warp (warp families), and the CCCL
    to compile against (``cccl``: a name or a version; None or empty: the daemon's default)."""
    spec.cccl = cccl or ""
    if row.warp:
        spec.warp_threads = warp_threads or 32
    else:
        if threads is None:
            raise ValueError(f"{family}: threads (the block's shape) is required")
        spec.threads = threads


def block_factory(make: Callable[..., Any], family: str, name: str, summary: str,
                  common: str) -> Callable[..., Any]:
    """A frontend's factory for a block family: ``name(dtype, threads, items_per_thread=1,
    *, method, algorithm, op, prefix_callback, arch, cccl, client, **options)`` calling
    ``make``."""
    def build(dtype: Any, threads: Union[int, Sequence[int]], items_per_thread: int = 1, *,
              method: Optional[str] = None, algorithm: Optional[str] = None, op: Any = None,
              prefix_callback: Optional[coopd.UserOperator] = None, arch: Optional[str] = None,
              cccl: Optional[str] = None, client: Optional[coopd.Client] = None,
              **options: Any) -> Any:
        return make(family, dtype, threads=threads, items_per_thread=items_per_thread,
                    method=method, algorithm=algorithm, op=op, prefix_callback=prefix_callback,
                    arch=arch, cccl=cccl, client=client, options=options)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"{summary}: coopd's {family} for a block of `threads` (x or (x, y, z)), "
                     f"`items_per_thread` items each.\n{common}{CCCL_DOC}")
    return build


def warp_factory(make: Callable[..., Any], family: str, name: str, summary: str,
                 common: str) -> Callable[..., Any]:
    """A frontend's factory for a warp family: ``name(dtype, warp_threads=32,
    items_per_thread=1, *, method, algorithm, op, block_threads, arch, cccl, client,
    **options)``."""
    def build(dtype: Any, warp_threads: int = 32, items_per_thread: int = 1, *,
              method: Optional[str] = None, algorithm: Optional[str] = None, op: Any = None,
              block_threads: Optional[int] = None, arch: Optional[str] = None,
              cccl: Optional[str] = None, client: Optional[coopd.Client] = None,
              **options: Any) -> Any:
        return make(family, dtype, warp_threads=warp_threads, items_per_thread=items_per_thread,
                    method=method, algorithm=algorithm, op=op, block_threads=block_threads,
                    arch=arch, cccl=cccl, client=client, options=options)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"{summary}: coopd's {family} for logical warps of `warp_threads` lanes, "
                     f"`items_per_thread` items each. Its temp storage is per logical warp; "
                     f"temp_storage() in a kernel reserves a row for each warp of a block of "
                     f"`block_threads` (default 1024).\n{common}{CCCL_DOC}")
    return build


class ClientHolder:
    """A frontend module's default client: the one ``set_client`` gave, else a
    ``coopd.Client(client_name=name)`` on ``$COOPD_SOCKET`` or the default socket (which starts
    coopd from ``$COOPD_BIN`` or PATH when none answers), made on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._client: Optional[coopd.Client] = None

    def set(self, client: Optional[coopd.Client]) -> None:
        with self._lock:
            self._client = client

    def get(self) -> coopd.Client:
        with self._lock:
            if self._client is None:
                self._client = coopd.Client(client_name=self._name)
            return self._client


def entry_names(method: str, symbols: Sequence[str]) -> Tuple[str, ...]:
    """Each entry's name in kernels: the method, plus what its symbol adds to the shortest
    symbol (``_aggregate`` for scans with it)."""
    base = min(symbols, key=len)
    return tuple(method + s[len(base):] for s in symbols)


def factories(make: Callable[..., Any], common: str, warp: bool) -> Dict[str, Callable[..., Any]]:
    """{factory name: factory} for the block (or warp) families, each calling ``make``; a
    frontend module's ``block``/``warp`` namespace."""
    table, factory = ((WARP_FAMILIES, warp_factory) if warp else (BLOCK_FAMILIES, block_factory))
    return {name: factory(make, family, name, summary, common) for name, family, summary in table}


class EntryAttributes:
    """What a frontend's primitive objects share: entries as attributes (``p.sum``), from the
    dict ``_callables`` (entry name -> callable, plus ``temp_storage``), and the repr.
    Subclasses set ``family``, ``method``, ``arch``, ``names``, ``temp_storage_bytes``,
    ``temp_storage_align`` and ``_frontend``, and say their dtype's name in ``_dtype_name``."""

    _frontend = "coopd"

    def _take_artifact(self, spec: coopd.Spec, artifact: coopd.Artifact) -> Any:
        """Sets what every frontend's object says of its one-spec artifact (spec, artifact,
        resolved, family, method, arch, items_per_thread, temp storage, warp_threads, entries,
        operator_symbols) and returns its part."""
        if len(artifact.parts) != 1:
            raise ValueError(f"{self._frontend} takes single-spec artifacts, not bundles")
        part = artifact.parts[0]
        self.spec = spec
        self.artifact = artifact
        self.resolved = part.spec
        self.family = part.family
        self.method = part.spec.method
        self.arch = artifact.arch
        self.items_per_thread = part.spec.items_per_thread or 1
        self.temp_storage_bytes = part.temp_storage_bytes
        self.temp_storage_align = part.temp_storage_align
        self.warp_threads = part.spec.warp_threads if self.family.startswith("warp_") else 0
        self.entries = part.entries
        # The functions the entries call in link_inputs (user operators), for SASS checks.
        self.operator_symbols = tuple(li.symbol for li in artifact.proto.link_inputs)
        return part

    def _dtype_name(self) -> str:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        callables = self.__dict__.get("_callables", {})
        if name in callables:
            return callables[name]
        raise AttributeError(f"{self.__dict__.get('family')} {self.__dict__.get('method')} has "
                             f"no {name!r}; its entries are "
                             f"{', '.join(self.__dict__.get('names', ()))} (and temp_storage)")

    def __repr__(self) -> str:
        return (f"<{self._frontend} {self.family} {self.method} {self._dtype_name()} "
                f"{self.arch}: {', '.join(self.names)}; temp storage "
                f"{self.temp_storage_bytes} bytes, align {self.temp_storage_align}>")
