"""coopd's Python client: specs in, link-ready artifacts out.

A thin layer over the gRPC stubs generated from proto/coop/v1/coop.proto (coopd/_proto/): specs
are dataclasses, artifacts are frozen dataclasses that keep the full message in ``.proto``, and
every failure is a :class:`coopd.CoopdError` carrying the gRPC code and coopd's message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import grpc
from google.protobuf import json_format

from coopd._errors import CoopdError
from coopd._paths import (default_socket_path, open_own_file, parse_owner, unsafe_dir_reason,
                          unsafe_socket_reason)
from coopd._proto.coop.v1 import coop_pb2, coop_pb2_grpc

__all__ = ["Spec", "UserOperator", "Entry", "Part", "Artifact", "LinkResult", "Client", "PlanUse",
           "PlanReservation", "PlanRegion", "Plan"]

# coopd marks every status it produces itself with this trailing metadata; a status without it
# came from the transport (no daemon on the socket, connection lost).
_STATUS_ORIGIN_KEY = "coopd-status"
# The trailing metadata that carries the call's request id (server/rpc/grpc_service.h).
_REQUEST_ID_KEY = "x-request-id"
_STATUS_ORIGIN_SERVER = "server"
# Asks coopd for the whole message of an error whose status message it bounds; it comes in the
# status details (a coop.v1.StatusDetails holding a coop.v1.ErrorDetail).
_ERROR_DETAILS_METADATA = (("coopd-error-details", "full"),)
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_DETAIL_TYPE_URL = "type.googleapis.com/coop.v1.ErrorDetail"

_ORIGINS = {
    coop_pb2.ORIGIN_COMPILED: "compiled",
    coop_pb2.ORIGIN_MEMORY: "memory",
    coop_pb2.ORIGIN_DISK: "disk",
    coop_pb2.ORIGIN_REMOTE: "remote",
}

_ABIS = {"": coop_pb2.CALLING_CONVENTION_UNSPECIFIED, "c": coop_pb2.CALLING_CONVENTION_C,
         "numba": coop_pb2.CALLING_CONVENTION_NUMBA}

# Artifact formats: NVRTC's LTO-IR (link with nvJitLink) and clang's LLVM bitcode (link as a
# bitcode library, e.g. CuTe DSL's cute.BitCode).
_FORMATS = {"ltoir": coop_pb2.FORMAT_LTOIR, "bitcode": coop_pb2.FORMAT_BITCODE}


def _formats(formats: Union[str, Sequence[str]]) -> List[coop_pb2.Format]:
    names = [formats] if isinstance(formats, str) else list(formats)
    for name in names:
        if name not in _FORMATS:
            raise ValueError(f"formats: each must be one of {', '.join(_FORMATS)}; got {name!r}")
    return [_FORMATS[n] for n in names]


def _large_bytes(a: coop_pb2.Artifact) -> int:
    return (len(a.ltoir) + len(a.source) + len(a.compile_log) + len(a.bitcode.data) +
            len(a.bitcode.compile_log) +
            sum(len(i.ltoir) + len(i.bitcode) for i in a.link_inputs))


def _held(a: coop_pb2.Artifact) -> List[coop_pb2.HeldArtifact]:
    out = []
    for f in a.formats:
        bitcode = f == coop_pb2.FORMAT_BITCODE
        # holds_metadata: _fill restores the metadata a digest-only reply leaves out too.
        out.append(coop_pb2.HeldArtifact(format=f, key=a.bitcode.key if bitcode else a.key,
                                         digest=a.bitcode.digest if bitcode else a.digest,
                                         holds_metadata=True))
    return out


def _fill(held: coop_pb2.Artifact, reply: coop_pb2.Artifact) -> bool:
    """Fills what a digest-only ``reply`` left out (the bytes, and what the key fixes: entries,
    specs, toolchain) from ``held``; False (reply unchanged) when it does not describe the same
    artifact."""
    if (reply.key != held.key or reply.digest != held.digest or
            reply.bitcode.key != held.bitcode.key or
            reply.bitcode.digest != held.bitcode.digest or
            len(reply.link_inputs) != len(held.link_inputs) or
            len(reply.parts) != len(held.parts)):
        return False
    reply.ltoir = held.ltoir
    reply.source = held.source
    reply.compile_log = held.compile_log
    if held.HasField("bitcode"):
        reply.bitcode.data = held.bitcode.data
        reply.bitcode.compile_log = held.bitcode.compile_log
    for mine, theirs in zip(reply.link_inputs, held.link_inputs):
        mine.ltoir = theirs.ltoir
        mine.bitcode = theirs.bitcode
    # What the key fixes, also left out of a digest-only reply.
    del reply.entries[:]
    reply.entries.extend(held.entries)
    for field in ("spec", "toolchain"):
        if held.HasField(field):
            getattr(reply, field).CopyFrom(getattr(held, field))
    reply.type_definitions = held.type_definitions
    for mine, theirs in zip(reply.parts, held.parts):
        del mine.entries[:]
        mine.entries.extend(theirs.entries)
        mine.spec.CopyFrom(theirs.spec)
    reply.bytes_omitted = False
    return True


# A request's key in _ArtifactCache: its deterministic serialization. Named outside the class,
# whose `bytes` property would otherwise stand for the builtin in its own signatures.
_RequestKey = bytes


class _ArtifactCache:
    """The artifacts a Client received, by request (its deterministic bytes without ``client``
    and ``have``), for digest-only replies. At most ``max_entries`` artifacts and ``max_bytes``
    of their LTO-IR, bitcode, source and logs; least recently used first out; an artifact larger
    than the budget is not kept. Either limit 0 turns it off. Thread-safe."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: "OrderedDict[_RequestKey, coop_pb2.Artifact]" = OrderedDict()
        self._bytes = 0

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0

    @property
    def entries(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def bytes(self) -> int:
        with self._lock:
            return self._bytes

    @staticmethod
    def key(req: Any) -> _RequestKey:
        bare = type(req)()
        bare.CopyFrom(req)
        bare.ClearField("client")
        bare.ClearField("have")
        return bare.SerializeToString(deterministic=True)

    def find(self, key: _RequestKey) -> Optional[coop_pb2.Artifact]:
        with self._lock:
            held = self._entries.get(key)
            if held is not None:
                self._entries.move_to_end(key)
            return held

    def store(self, key: _RequestKey, artifact: coop_pb2.Artifact) -> None:
        if not self.enabled or artifact.bytes_omitted or not artifact.formats:
            return
        for f in artifact.formats:
            if not (artifact.bitcode.digest if f == coop_pb2.FORMAT_BITCODE else artifact.digest):
                return
        size = _large_bytes(artifact)
        if size > self.max_bytes:
            return
        held = coop_pb2.Artifact()
        held.CopyFrom(artifact)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= _large_bytes(old)
            while self._entries and (len(self._entries) >= self.max_entries or
                                     self._bytes + size > self.max_bytes):
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= _large_bytes(evicted)
            self._entries[key] = held
            self._bytes += size


@dataclass
class UserOperator:
    """A frontend's own operator: CUDA C++ ``source`` defining ``name``, or ``ltoir`` defining
    ``extern "C" name`` (exactly one). See ``coopctl catalog`` for each operator kind's
    signature."""

    name: str
    source: str = ""
    ltoir: bytes = b""
    operand_dtypes: Sequence[str] = ()
    result_dtype: str = ""
    stateful: bool = False
    # op(a, b) == op(b, a): lets block_reduce's algorithm "auto" consider raking_commutative_only
    # (docs/tuning.md). Not part of the key.
    commutative: bool = False
    # An LTO-IR operator taking ``(result_ptr, a_ptr, b_ptr)`` (after the state pointer, if
    # stateful) instead of values: what Numba compiles for records and struct types, and what
    # an LTO-IR operator on a user type must take.
    by_pointer: bool = False

    def to_proto(self) -> coop_pb2.UserOperator:
        return coop_pb2.UserOperator(name=self.name, source=self.source, ltoir=self.ltoir,
                                     operand_dtypes=list(self.operand_dtypes),
                                     result_dtype=self.result_dtype, stateful=self.stateful,
                                     commutative=self.commutative, by_pointer=self.by_pointer)


@dataclass
class Spec:
    """One primitive specialization, as ``coopctl specialize`` takes it.

    ``threads`` is the block shape (an int, or up to three ints x, y, z). Fields left empty take
    coopd's documented defaults (``coopctl catalog``). ``options`` holds the family's options
    message by its name in the proto, e.g. ``{"radix_sort": {"value_dtype": "uint32"}}`` or
    ``{"histogram": {"bins": 256}}``; ``user_type`` is ``{"size": 12, "align": 4}`` with
    ``dtype="user"``.
    """

    family: str
    dtype: str = ""
    threads: Union[int, Sequence[int]] = 0
    arch: str = ""
    method: str = ""
    items_per_thread: int = 0
    algorithm: str = ""
    op: str = ""
    user_op: Optional[UserOperator] = None
    warp_threads: int = 0
    abi: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    user_type: Optional[Mapping[str, int]] = None
    prefix_callback: Optional[UserOperator] = None

    def to_proto(self) -> coop_pb2.PrimitiveSpec:
        if self.abi not in _ABIS:
            raise ValueError(f'spec: abi must be one of "c", "numba" (or empty); got "{self.abi}"')
        p = coop_pb2.PrimitiveSpec(family=self.family, method=self.method, dtype=self.dtype,
                                   items_per_thread=self.items_per_thread,
                                   algorithm=self.algorithm, warp_threads=self.warp_threads,
                                   arch=self.arch, calling_convention=_ABIS[self.abi])
        dims = [self.threads] if isinstance(self.threads, int) else list(self.threads)
        if len(dims) > 3:
            raise ValueError(f"spec: threads takes at most 3 dimensions, got {len(dims)}")
        if any(d != 0 for d in dims):
            dims += [1] * (3 - len(dims))
            p.block.x, p.block.y, p.block.z = dims
        if self.user_op is not None:
            p.op.user.CopyFrom(self.user_op.to_proto())
        elif self.op:
            p.op.builtin = self.op
        if self.prefix_callback is not None:
            p.prefix_callback.CopyFrom(self.prefix_callback.to_proto())
        if self.user_type is not None:
            json_format.ParseDict(dict(self.user_type), p.user_type)
        if self.options:
            json_format.ParseDict({k: dict(v) for k, v in self.options.items()}, p)
        return p


@dataclass(frozen=True)
class Entry:
    symbol: str  # the extern "C" function to call
    declaration: str  # its exact C declaration
    description: str  # which thread holds what, what the arguments mean


@dataclass(frozen=True)
class Part:
    """One spec of an artifact (a bundle has several)."""

    family: str
    entries: Tuple[Entry, ...]
    temp_storage_bytes: int
    temp_storage_align: int
    spec: coop_pb2.PrimitiveSpec  # resolved, with every default filled in


@dataclass(frozen=True)
class Artifact:
    """A link-ready specialization.

    Link ``ltoir`` and every ``link_inputs`` entry (user operators' LTO-IR) into the kernel with
    nvJitLink (``-lto``); reserve ``temp_storage_bytes`` of shared memory aligned to
    ``temp_storage_align`` per instance; call ``entries`` as their declarations say.
    ``write(directory)`` writes them as files, ready for ``@cuda.jit(link=..., lto=True)``.
    Asked for with ``formats="bitcode"`` (or both), ``bitcode`` and ``bitcode_link_inputs`` are
    the same code as LLVM bitcode from clang, with the same entries and temp storage; ``key`` and
    ``origin`` then describe the LTO-IR when there is one, else the bitcode.
    """

    key: str
    origin: str  # "compiled", "memory", "disk" or "remote"
    arch: str
    ltoir: bytes
    entries: Tuple[Entry, ...]
    parts: Tuple[Part, ...]
    temp_storage_bytes: int  # the first part's
    temp_storage_align: int
    link_inputs: Tuple[bytes, ...]
    type_definitions: str
    compile_ms: float
    proto: coop_pb2.Artifact  # everything else (toolchain, source, compile log, ...)
    bitcode: bytes = b""  # empty unless asked for
    bitcode_key: str = ""
    bitcode_link_inputs: Tuple[bytes, ...] = ()

    @staticmethod
    def from_proto(a: coop_pb2.Artifact) -> "Artifact":
        def entries(es: Any) -> Tuple[Entry, ...]:
            return tuple(Entry(e.symbol, e.declaration, e.description) for e in es)

        parts = tuple(Part(p.spec.family, entries(p.entries), p.temp_storage.bytes,
                           p.temp_storage.align, p.spec) for p in a.parts)
        first = parts[0] if parts else None
        return Artifact(key=a.key, origin=_ORIGINS.get(a.origin, "unspecified"), arch=a.arch,
                        ltoir=a.ltoir, entries=entries(a.entries), parts=parts,
                        temp_storage_bytes=first.temp_storage_bytes if first else 0,
                        temp_storage_align=first.temp_storage_align if first else 0,
                        link_inputs=tuple(li.ltoir for li in a.link_inputs),
                        type_definitions=a.type_definitions, compile_ms=a.compile_ms, proto=a,
                        bitcode=a.bitcode.data, bitcode_key=a.bitcode.key,
                        bitcode_link_inputs=tuple(li.bitcode for li in a.link_inputs
                                                  if li.bitcode))

    @property
    def algorithm_choice(self) -> Optional[coop_pb2.AlgorithmChoice]:
        """For a single spec that asked for algorithm "auto": what coopd chose and why (the
        tuning table's cell or the fallback rule, docs/tuning.md); None otherwise. Bundles:
        each part's ``spec`` is resolved, and ``proto.parts[i].algorithm_choice`` says."""
        return self.proto.algorithm_choice if self.proto.HasField("algorithm_choice") else None

    @property
    def stem(self) -> str:
        """The file name stem coopctl uses: the first entry's symbol (one part), else
        ``coop_bundle_<key prefix>``."""
        if len(self.parts) == 1 and self.parts[0].entries:
            return self.parts[0].entries[0].symbol
        return "coop_bundle_" + self.key[:16]

    def header(self) -> str:
        """A C header with the type definitions, each part's temp-storage size and alignment
        as macros, and every entry's declaration (what ``coopctl --out`` writes)."""
        guard = f"COOP_{self.key[:16]}_H"
        h = [f"// Generated by coopd's Python client from artifact {self.key} ({self.arch})",
             f"#ifndef {guard}", f"#define {guard}", self.type_definitions]
        if any("__half" in e.declaration or "__nv_bfloat16" in e.declaration for e in self.entries):
            h += ["#include <cuda_bf16.h>", "#include <cuda_fp16.h>"]
        for p in self.parts:
            base = p.entries[0].symbol if p.entries else ""
            h += [f"// {p.family}: temp storage {p.temp_storage_bytes} bytes, aligned to "
                  f"{p.temp_storage_align}",
                  f"#define {base}_TEMP_STORAGE_BYTES {p.temp_storage_bytes}",
                  f"#define {base}_TEMP_STORAGE_ALIGN {p.temp_storage_align}"]
            for e in p.entries:
                h += [f"// {e.description}", e.declaration]
        h += ["#endif", ""]
        return "\n".join(h)

    def write(self, directory: str) -> List[str]:
        """Writes ``<stem>.ltoir`` and ``<stem>.op<N>.ltoir`` per user operator (when the
        artifact holds LTO-IR), ``<stem>.bc`` and ``<stem>.op<N>.bc`` (when it holds bitcode),
        and ``<stem>.h`` into ``directory`` (created). Returns the module paths: the files to
        link, LTO-IR first."""
        os.makedirs(directory, exist_ok=True)
        files: List[str] = []
        blobs: List[bytes] = []
        for ext, main, ops in ((".ltoir", self.ltoir, self.link_inputs),
                               (".bc", self.bitcode, self.bitcode_link_inputs)):
            if not main:
                continue
            files.append(os.path.join(directory, self.stem + ext))
            blobs.append(main)
            for n, op in enumerate(ops):
                files.append(os.path.join(directory, f"{self.stem}.op{n}{ext}"))
                blobs.append(op)
        for path, data in zip(files, blobs):
            with open(path, "wb") as f:
                f.write(data)
        with open(os.path.join(directory, self.stem + ".h"), "w", encoding="utf-8") as f:
            f.write(self.header())
        return files


@dataclass(frozen=True)
class LinkResult:
    cubin: bytes
    key: str
    origin: str
    link_ms: float
    options: Tuple[str, ...]


def _read_option_file(path: str, what: str, secret: bool) -> bytes:
    """The bytes of a file an option names; with ``secret``, refused when others may access it,
    its group may write it, or another user than this one or root owns it (the daemon's rule for
    its own secrets)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            mode = f"{st.st_mode & 0o7777:04o}"
            why = None
            if secret and st.st_mode & 0o007:
                why = (f"others may access it (mode {mode}), and it holds a secret: chmod 600 "
                       "(or 640 for a group)")
            elif secret and st.st_mode & 0o020:
                why = f"mode {mode} lets its group write it; chmod 640 (or 600)"
            elif secret and st.st_uid not in (os.geteuid(), 0):
                why = (f"owned by uid {st.st_uid}, who may rewrite it; it must be owned by this "
                       f"user ({os.geteuid()}) or root: chown it")
            if why:
                raise CoopdError(grpc.StatusCode.INVALID_ARGUMENT, f"{what} {path!r}: {why}",
                                 False)
            return f.read()
    except OSError as e:
        raise CoopdError(grpc.StatusCode.INVALID_ARGUMENT,
                         f"{what} {path!r}: cannot read: {e.strerror}", False) from None


def _read_token(path: str) -> str:
    """A token file's token: its first line that is neither empty nor a # comment."""
    text = _read_option_file(path, "token_file (COOPD_TOKEN_FILE)", secret=True)
    for line in text.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    raise CoopdError(grpc.StatusCode.INVALID_ARGUMENT,
                     f"token_file (COOPD_TOKEN_FILE) {path!r}: holds no token (its first line that "
                     "is not empty or a # comment)", False)


class Client:
    """A connection to coopd on its Unix socket. Thread-safe; cheap to keep for a process.

    Args:
        socket: the socket path (default: ``coopd.default_socket_path()``).
        timeout: seconds one call may take in all, retries included (a first compile of a
            specialization takes a few seconds).
        retries: how many times a call that got UNAVAILABLE (no daemon yet, daemon restarting,
            "retry") is tried again, with exponential backoff from ``backoff`` seconds.
        client_name: sent with requests, for coopd's logs.
        autostart: when no daemon answers on the socket, start one (``coopd --socket PATH
            --idle-exit 1800``: it stops after 30 idle minutes, unless ``COOPD_IDLE_EXIT`` is
            set; detached, logging to coopd.log beside the socket) and wait for it within the call's
            deadline. Off when ``COOPD_NO_AUTOSTART`` is set (to anything but "0"). Several
            processes may start one at once: exactly one daemon wins the socket.
        coopd_binary: the daemon to start; default ``$COOPD_BIN``, else ``coopd`` on PATH.
        target: a gRPC target instead of the socket, for replicas started with ``coopd --listen``
            (``"dns:///coopd.farm:7070"``: every address of the name; ``"ipv4:10.0.0.1:7070,
            10.0.0.2:7070"``); calls are spread over the addresses by gRPC's ``round_robin``.
            No auto-start. Default ``$COOPD_TARGET``, else the socket.
        full_errors: ask coopd for the whole message of errors whose status message it bounds
            (a compiler log of megabytes): ``CoopdError.details``. The channel then accepts
            metadata of up to 64 MiB.
        token_file: a file holding a bearer token for coopd's ``--tokens-file`` (its first line
            that is neither empty nor a ``#`` comment), sent with every call, on the target and
            on the socket alike; others may not read it (mode 0600 or 0640), no one but its
            owner may write it, and its owner is this user or root. Default
            ``$COOPD_TOKEN_FILE``.
        socket_owner: before every call on the socket (and before auto-start) the client checks
            that the socket is owned by this process's effective uid (or root) and that its
            directory is owned by that uid (or root) and writable by no one else; otherwise the call raises
            :class:`CoopdError` (FAILED_PRECONDITION) and nothing is sent. A coopd shared on
            purpose (``--socket-group``) runs as another user: name that user here (a name or a
            uid). Default ``$COOPD_SOCKET_OWNER``.
        tls_ca, tls_cert, tls_key: TLS for ``target`` connections, PEM files: the CA that
            signed coopd's certificate (None: the system's roots), and this client's
            certificate and key for a coopd that requires them (``--tls-client-ca``). TLS is on
            when any is given. Defaults ``$COOPD_TLS_CA``, ``$COOPD_TLS_CERT``,
            ``$COOPD_TLS_KEY``. A problem with any of these files raises :class:`CoopdError`
            (INVALID_ARGUMENT) naming it (docs/security.md).
        artifact_cache_entries, artifact_cache_bytes: digest-only hits. The client keeps the
            artifacts ``specialize`` and ``bundle`` returned (at most this many, and this many
            bytes of LTO-IR, bitcode, source and logs in all; least recently used first out) and
            sends their digests with a repeated request, so coopd answers a hit with the
            metadata alone; the client fills the bytes back in, so artifacts are always
            complete. Either 0 turns it off.
    """

    def __init__(self, socket: Optional[str] = None, *, timeout: float = 120.0, retries: int = 5,
                 backoff: float = 0.05, client_name: str = "coopd-python", autostart: bool = True,
                 coopd_binary: Optional[str] = None, target: Optional[str] = None,
                 full_errors: bool = False, token_file: Optional[str] = None,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, artifact_cache_entries: int = 256,
                 artifact_cache_bytes: int = 64 << 20, socket_owner: Optional[str] = None) -> None:
        self.socket = socket or default_socket_path()
        try:
            self._socket_owner = parse_owner(socket_owner or os.environ.get("COOPD_SOCKET_OWNER"))
        except ValueError as e:
            raise CoopdError(grpc.StatusCode.INVALID_ARGUMENT, str(e), False) from None
        self._artifacts = _ArtifactCache(artifact_cache_entries, artifact_cache_bytes)
        target = target or os.environ.get("COOPD_TARGET") or None
        self.target = target
        self.autostart = autostart and not target
        self.coopd_binary = coopd_binary
        self._autostart_lock = threading.Lock()
        self._autostart_tried = False  # one attempt per client
        self._autostarted = False  # that attempt started a daemon
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.client_name = client_name
        self.full_errors = full_errors
        options: List[Tuple[str, Any]] = [("grpc.max_receive_message_length", 256 << 20),
                                          ("grpc.max_send_message_length", 64 << 20)]
        if target:
            options.append(("grpc.lb_policy_name", "round_robin"))
        if full_errors:
            options.append(("grpc.max_metadata_size", 64 << 20))
        # Sent with every call next to "coopd-client" (_metadata): the error-details request
        # and the bearer token.
        self._fixed_metadata: Tuple[Tuple[str, str], ...] = (
            _ERROR_DETAILS_METADATA if full_errors else ())
        token_file = token_file or os.environ.get("COOPD_TOKEN_FILE") or None
        if token_file:
            self._fixed_metadata += (("authorization", "Bearer " + _read_token(token_file)),)
        tls = [tls_ca or os.environ.get("COOPD_TLS_CA") or None,
               tls_cert or os.environ.get("COOPD_TLS_CERT") or None,
               tls_key or os.environ.get("COOPD_TLS_KEY") or None]
        if target and any(tls):
            if (tls[1] is None) != (tls[2] is None):
                raise CoopdError(grpc.StatusCode.INVALID_ARGUMENT,
                                 "tls_cert and tls_key (COOPD_TLS_CERT, COOPD_TLS_KEY) go together; "
                                 "one of them is missing", False)
            names = ("tls_ca (COOPD_TLS_CA)", "tls_cert (COOPD_TLS_CERT)", "tls_key (COOPD_TLS_KEY)")
            ca, cert, key = (_read_option_file(p, n, secret=n.startswith("tls_key")) if p else None
                             for p, n in zip(tls, names))
            credentials = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                       certificate_chain=cert)
            self._channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(target or "unix:" + self.socket,
                                                  options=options)
        self._stub = coop_pb2_grpc.CoopStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- calls -------------------------------------------------------------------------------

    def specialize(self, spec: Optional[Spec] = None, *,
                   formats: Union[str, Sequence[str]] = "ltoir", **fields: Any) -> Artifact:
        """One specialization: ``specialize(Spec(...))`` or ``specialize(family=..., ...)``.
        ``formats``: "ltoir" (default), "bitcode" (LLVM bitcode from clang, which the daemon's
        machine must have: else FAILED_PRECONDITION naming the package), or both as a list."""
        req = coop_pb2.SpecializeRequest(spec=_spec(spec, fields).to_proto(),
                                         client=self.client_name, formats=_formats(formats))
        return Artifact.from_proto(self._specialize_cached("Specialize", req))

    def bundle(self, specs: Sequence[Spec], *,
               formats: Union[str, Sequence[str]] = "ltoir") -> Artifact:
        """Several specs in one LTO-IR (and/or one bitcode module) and one round trip; each
        keeps its own entries and temp storage (``Artifact.parts``)."""
        req = coop_pb2.SpecializeBundleRequest(specs=[s.to_proto() for s in specs],
                                               client=self.client_name, formats=_formats(formats))
        return Artifact.from_proto(self._specialize_cached("SpecializeBundle", req))

    def _specialize_cached(self, method: str, req: Any) -> coop_pb2.Artifact:
        # Digest-only hits (coop.v1.SpecializeRequest.have): send the digests of the artifact
        # held for this request; fill a digest-only reply's bytes back in; keep whole replies.
        key = self._artifacts.key(req) if self._artifacts.enabled else None
        held = self._artifacts.find(key) if key is not None else None
        if held is not None:
            req.have.extend(_held(held))
        artifact = self._call(method, req).artifact
        if artifact.bytes_omitted:
            if held is not None and _fill(held, artifact):
                return artifact
            del req.have[:]  # not the artifact held (coopd would not do this): ask again
            return self._call(method, req).artifact
        if key is not None:
            self._artifacts.store(key, artifact)
        return artifact

    @property
    def artifact_cache(self) -> "_ArtifactCache":
        """The client's in-process artifact cache (``entries``, ``bytes``)."""
        return self._artifacts

    def link(self, arch: str, *, ltoir: Sequence[bytes] = (), ptx: Sequence[Union[str, bytes]] = (),
             artifacts: Sequence[Union[str, Artifact]] = (), options: Sequence[str] = (),
             keep_unused_variables: bool = False) -> LinkResult:
        """Links kernel modules (LTO-IR and/or PTX) with cached artifacts (by key, or the
        Artifact itself) into a cubin for ``arch``."""
        req = coop_pb2.LinkRequest(arch=arch, options=list(options),
                                   keep_unused_variables=keep_unused_variables,
                                   client=self.client_name)
        for i, data in enumerate(ltoir):
            req.modules.add(kind=coop_pb2.LinkModule.KIND_LTOIR, name=f"module{i}.ltoir", data=data)
        for i, text in enumerate(ptx):
            req.modules.add(kind=coop_pb2.LinkModule.KIND_PTX, name=f"module{i}.ptx",
                            data=text.encode() if isinstance(text, str) else text)
        req.artifact_keys.extend(a.key if isinstance(a, Artifact) else a for a in artifacts)
        r = self._call("Link", req)
        return LinkResult(r.cubin, r.key, _ORIGINS.get(r.origin, "unspecified"), r.link_ms,
                          tuple(r.options))

    def plan(self, uses: Sequence[Union[PlanUse, Sequence[Any]]], reservations: Union[
            Mapping[str, Sequence[int]], Sequence[Union[PlanReservation, Sequence[Any]]]] = (),
             *, base_offset: int = 0) -> Plan:
        """Lays out one kernel's dynamic shared memory (docs/plan.md).

        ``uses``: :class:`PlanUse` objects or tuples ``(name, need[, first[, last[, count]]])``,
        where ``need`` is a :class:`Spec`, a ``(bytes, align)`` pair or an object with
        ``temp_storage_bytes``/``temp_storage_align``. ``reservations``: the frontend's own
        regions, live throughout, as ``{name: (bytes, align)}`` or :class:`PlanReservation`
        objects. ``base_offset``: bytes at the start that the frontend keeps for itself.
        """
        req = coop_pb2.PlanRequest(uses=[_plan_use(u).to_proto() for u in uses],
                                   reservations=[r.to_proto()
                                                 for r in _plan_reservations(reservations)],
                                   base_offset=base_offset, client=self.client_name)
        return Plan.from_proto(self._call("Plan", req))

    def catalog(self) -> coop_pb2.CatalogResponse:
        """Every family, method, algorithm, dtype, operator and arch this daemon accepts."""
        return self._call("Catalog", coop_pb2.CatalogRequest())

    def stats(self) -> coop_pb2.Stats:
        return self._call("GetStats", coop_pb2.GetStatsRequest())

    def explain(self, spec: Optional[Spec] = None, *, format: str = "ltoir",
                **fields: Any) -> coop_pb2.ExplainResponse:
        """The cache key's components for one format ("ltoir" or "bitcode": each has its own
        key); on a miss, how stored keys for the request differ."""
        req = coop_pb2.SpecializeRequest(spec=_spec(spec, fields).to_proto(),
                                         client=self.client_name, formats=_formats(format))
        return self._call("Explain", req)

    def stop(self) -> None:
        """Asks coopd to stop as SIGTERM would: it refuses new calls, lets those in flight finish
        (--shutdown-grace), removes its socket and exits (what ``coopctl stop`` does, without the
        wait). Needs the admin role when tokens are on. Never starts a daemon, never retries:
        CoopdError UNAVAILABLE when none answers, PERMISSION_DENIED without the role."""
        self._check_socket()
        stop = self._channel.unary_unary("/coop.v1.Lifecycle/Stop",
                                         request_serializer=lambda _: b"",
                                         response_deserializer=lambda raw: raw)
        try:
            stop(None, timeout=self.timeout, metadata=self._metadata())
        except grpc.RpcError as e:
            raise self._error(e) from None

    # -- transport ---------------------------------------------------------------------------

    def _metadata(self) -> Tuple[Tuple[str, str], ...]:
        # "coopd-client": who this is, for coopd's per-client limits on the Unix socket (which
        # tells coopd nothing about its peer); printable ASCII, as metadata must be.
        name = "".join(c if " " <= c <= "~" else "?" for c in self.client_name[:48])
        return (("coopd-client", f"{name}/{os.getpid()}"),) + self._fixed_metadata

    def _call(self, method: str, request: Any) -> Any:
        deadline = time.monotonic() + self.timeout
        delay = self.backoff
        attempt = 0
        started = False
        why_not = ""
        while True:
            self._check_socket()
            remaining = deadline - time.monotonic()
            try:
                return getattr(self._stub, method)(
                    request, timeout=max(remaining, 0.001), metadata=self._metadata())
            except grpc.RpcError as e:
                error = self._error(e)
            attempt += 1
            if error.code == grpc.StatusCode.UNAVAILABLE and not error.from_server and not started:
                started = True
                why_not = self._autostart()
            if why_not and not error.from_server:
                error = CoopdError(error.code, f"{error.message} {why_not}", False)
            remaining = deadline - time.monotonic()
            # A daemon this client started gets the whole deadline to come up.
            out_of_retries = attempt > self.retries and not (started and self._autostarted)
            if error.code != grpc.StatusCode.UNAVAILABLE or out_of_retries or remaining <= delay:
                raise error
            time.sleep(delay)
            delay = min(delay * 2, 0.5 if started and self._autostarted else 2.0)

    def _check_socket(self) -> None:
        """On the Unix socket, raises FAILED_PRECONDITION when the socket or its directory is not
        this user's (unsafe_socket_reason): checked before every call, so that gRPC's connect,
        which comes next, reaches the socket checked. The token never goes to another user."""
        if self.target:
            return
        why = unsafe_socket_reason(self.socket, os.geteuid(), self._socket_owner)
        if why:
            raise CoopdError(grpc.StatusCode.FAILED_PRECONDITION,
                             f'{why} (docs/security.md, "Other local users")', False)

    def _autostart(self) -> str:
        """Starts coopd if allowed; "" when started (now or earlier), else why not."""
        if not self.autostart:
            return ""
        off = os.environ.get("COOPD_NO_AUTOSTART", "")
        if off and off != "0":
            return "(auto-start is off: COOPD_NO_AUTOSTART is set)"
        with self._autostart_lock:
            if self._autostart_tried:
                return ""
            self._autostart_tried = True
            binary = self.coopd_binary or os.environ.get("COOPD_BIN") or shutil.which("coopd")
            if not binary or not os.access(binary, os.X_OK):
                return "(auto-start: no coopd binary in COOPD_BIN or on PATH)"
            directory = os.path.dirname(self.socket) or "."
            os.makedirs(directory, mode=0o700, exist_ok=True)
            # A directory or log another user planted is refused: nothing is started or written.
            why = unsafe_dir_reason(directory, owner=os.geteuid(), fix="remove it, or give a "
                                    "socket in a directory of your own (COOPD_SOCKET)")
            if why:
                return f"(auto-start: {why})"
            try:
                log = open_own_file(os.path.join(directory, "coopd.log"),
                                    os.O_WRONLY | os.O_APPEND)
            except OSError as e:
                return f"(auto-start: {e.strerror})"
            # sh backgrounds the daemon and exits: coopd is reparented to init, in a session of
            # its own, and never left a zombie of this process.
            # As coop::Client's auto-start: idle for 30 min, it stops, unless COOPD_IDLE_EXIT
            # (which it inherits) says otherwise.
            idle = [] if os.environ.get("COOPD_IDLE_EXIT") else ["--idle-exit", "1800"]
            try:
                subprocess.run(["/bin/sh", "-c", '"$@" </dev/null &', "sh", binary, "--socket",
                                self.socket, *idle], stdout=log, stderr=log,
                               start_new_session=True, check=True)
            finally:
                os.close(log)
            self._autostarted = True
            return ""

    def _error(self, e: grpc.RpcError) -> CoopdError:
        code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
        details = (e.details() if hasattr(e, "details") else None) or str(e)
        trailers = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
        from_server = any(k == _STATUS_ORIGIN_KEY and v == _STATUS_ORIGIN_SERVER
                          for k, v in (trailers or ()))
        if code == grpc.StatusCode.UNAVAILABLE and not from_server:
            details = (f"coopd is not reachable on {self.target or self.socket} (is it running?): "
                       f"{details}")
        whole = ""
        for k, v in trailers or ():
            if k != _STATUS_DETAILS_KEY:
                continue
            status = coop_pb2.StatusDetails()
            try:
                status.ParseFromString(v)
            except Exception:  # a malformed detail is ignored, never raised over the error
                continue
            for any_detail in status.details:
                if any_detail.type_url == _ERROR_DETAIL_TYPE_URL:
                    detail = coop_pb2.ErrorDetail()
                    detail.ParseFromString(any_detail.value)
                    whole = detail.message.decode("utf-8", errors="replace")
        request_id = next((v for k, v in trailers or () if k == _REQUEST_ID_KEY), "")
        return CoopdError(code, details, from_server, whole, request_id)


# -- shared-memory planning -------------------------------------------------------------------

# What a use needs: a Spec (coopd resolves its temp storage), a (bytes, align) pair, or any object
# with ``temp_storage_bytes`` and ``temp_storage_align`` (an Artifact, a frontend's primitive).
Need = Any


@dataclass
class PlanUse:
    """One primitive of a kernel (or any other temp-storage user) for :meth:`Client.plan`.

    ``need`` is a :class:`Spec`, a ``(bytes, align)`` pair, or an object with
    ``temp_storage_bytes`` and ``temp_storage_align``. ``first``/``last`` are the inclusive span
    of the caller's program points during which the temp storage is in use (``last`` defaults to
    ``first``); uses whose spans do not overlap may share bytes. ``count`` instances (e.g. one
    per logical warp) are laid out ``stride`` apart.
    """

    name: str
    need: Need
    first: int = 0
    last: Optional[int] = None
    count: int = 1

    def to_proto(self) -> coop_pb2.PlanUse:
        u = coop_pb2.PlanUse(name=self.name, first=self.first,
                             last=self.first if self.last is None else self.last, count=self.count)
        need = self.need
        if isinstance(need, Spec):
            u.spec.CopyFrom(need.to_proto())
        elif isinstance(need, coop_pb2.PrimitiveSpec):
            u.spec.CopyFrom(need)
        elif hasattr(need, "temp_storage_bytes") and hasattr(need, "temp_storage_align"):
            u.temp_storage.bytes = int(need.temp_storage_bytes)
            u.temp_storage.align = int(need.temp_storage_align)
        elif isinstance(need, (tuple, list)) and len(need) == 2:
            u.temp_storage.bytes, u.temp_storage.align = (int(v) for v in need)
        else:
            raise TypeError(f'plan: use "{self.name}" needs a coopd.Spec, a (bytes, align) pair '
                            f"or an object with temp_storage_bytes and temp_storage_align; got "
                            f"{type(need).__name__}")
        return u


@dataclass
class PlanReservation:
    """A region the frontend lays out itself, live for the whole kernel."""

    name: str
    bytes: int
    align: int
    count: int = 1

    def to_proto(self) -> coop_pb2.PlanReservation:
        return coop_pb2.PlanReservation(name=self.name, bytes=self.bytes, align=self.align,
                                        count=self.count)


@dataclass(frozen=True)
class PlanRegion:
    """Where a use or reservation goes: ``offset`` bytes from the start of the dynamic shared
    memory (a multiple of ``align``), ``bytes`` in all, instance i at ``offset + i * stride``."""

    name: str
    offset: int
    bytes: int
    align: int
    padding: int  # alignment padding below it
    count: int
    stride: int
    first: int  # uses: the lifetime; reservations: 0
    last: int
    artifact_key: str  # uses given by Spec: the artifact whose temp storage this is

    @staticmethod
    def from_proto(r: coop_pb2.PlanRegion) -> "PlanRegion":
        return PlanRegion(r.name, r.offset, r.bytes, r.align, r.padding, r.count, r.stride,
                          r.first, r.last, r.artifact_key)


@dataclass(frozen=True)
class Plan:
    """A kernel's dynamic shared memory: launch with ``dynamic_shared_bytes``, from a base
    aligned to ``base_align``; ``plan["name"]`` is the region of a use or reservation."""

    uses: Tuple[PlanRegion, ...]  # request order
    reservations: Tuple[PlanRegion, ...]  # request order
    dynamic_shared_bytes: int
    base_align: int
    reserved_bytes: int  # base_offset plus the reservations: the total is never less
    no_reuse_bytes: int  # every region end to end: the total is never more
    proto: coop_pb2.PlanResponse

    @staticmethod
    def from_proto(p: coop_pb2.PlanResponse) -> "Plan":
        return Plan(uses=tuple(PlanRegion.from_proto(r) for r in p.uses),
                    reservations=tuple(PlanRegion.from_proto(r) for r in p.reservations),
                    dynamic_shared_bytes=p.dynamic_shared_bytes, base_align=p.base_align,
                    reserved_bytes=p.reserved_bytes, no_reuse_bytes=p.no_reuse_bytes, proto=p)

    def __getitem__(self, name: str) -> PlanRegion:
        for r in self.uses + self.reservations:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def offsets(self) -> Dict[str, int]:
        """Every region's offset, by name."""
        return {r.name: r.offset for r in self.uses + self.reservations}


def _plan_use(u: Union[PlanUse, Sequence[Any]]) -> PlanUse:
    return u if isinstance(u, PlanUse) else PlanUse(*u)


def _plan_reservations(reservations: Union[Mapping[str, Sequence[int]],
                                           Sequence[Union[PlanReservation, Sequence[Any]]]]
                       ) -> List[PlanReservation]:
    if isinstance(reservations, Mapping):
        return [PlanReservation(name, *size) for name, size in reservations.items()]
    return [r if isinstance(r, PlanReservation) else PlanReservation(*r) for r in reservations]


def _spec(spec: Optional[Spec], fields: Dict[str, Any]) -> Spec:
    if spec is not None and fields:
        raise TypeError("give a Spec or keyword fields, not both")
    return spec if spec is not None else Spec(**fields)
