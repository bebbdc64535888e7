"""coopd's Python client: specs in, link-ready artifacts out.

A thin layer over the gRPC stubs generated from proto/coop/v1/coop.proto (coopd/_proto/): specs
are dataclasses, artifacts are frozen dataclasses that keep the full message in ``.proto``, and
every failure is a :class:`coopd.CoopdError` carrying the gRPC code and coopd's message.

This module holds the Client; the values it takes and returns live beside it, each by concern:
coopd._spec (Spec, UserOperator), coopd._artifact (Entry, Part, Artifact, LinkResult),
coopd._plan (PlanUse, PlanReservation, PlanRegion, Plan), coopd._artifact_cache (digest-only
hits) and coopd._connection (token and TLS files, error decoding, auto-start). Every name they
had here is still importable from here.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

import grpc

from coopd._artifact import _ORIGINS, Artifact, Entry, LinkResult, Part
from coopd._artifact_cache import _ArtifactCache, _fill, _held
from coopd._connection import (_ERROR_DETAILS_METADATA, _read_option_file, _read_token,
                               decode_error, start_coopd)
from coopd._errors import CoopdError
from coopd._paths import default_socket_path, parse_owner, unsafe_socket_reason
from coopd._plan import Plan, PlanRegion, PlanReservation, PlanUse, _plan_reservations, _plan_use
from coopd._proto.coop.v1 import coop_pb2, coop_pb2_grpc
from coopd._spec import Spec, UserOperator, _formats, _spec

# The rest of what this module defined before it was split, still importable from here.
from coopd._artifact_cache import _large_bytes, _RequestKey  # noqa: F401
from coopd._connection import (_ERROR_DETAIL_TYPE_URL, _REQUEST_ID_KEY,  # noqa: F401
                               _STATUS_DETAILS_KEY, _STATUS_ORIGIN_KEY, _STATUS_ORIGIN_SERVER)
from coopd._plan import Need  # noqa: F401
from coopd._spec import _ABIS, _FORMATS  # noqa: F401

__all__ = ["Spec", "UserOperator", "Entry", "Part", "Artifact", "LinkResult", "Client", "PlanUse",
           "PlanReservation", "PlanRegion", "Plan"]


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

    def catalog(self, cccl: Optional[str] = None) -> coop_pb2.CatalogResponse:
        """Every family, method, algorithm, dtype, operator and arch this daemon accepts, and
        every CCCL it compiles against (``cccls``, the default first). ``cccl`` (a name or a
        version, as ``Spec.cccl``; default: the daemon's default) is the CCCL whose families'
        ``available`` and ``requires`` the answer describes (its ``cccl`` field names it)."""
        return self._call("Catalog", coop_pb2.CatalogRequest(cccl=cccl or ""))

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
            why_not = start_coopd(self.coopd_binary, self.socket)
            self._autostarted = not why_not
            return why_not

    def _error(self, e: grpc.RpcError) -> CoopdError:
        return decode_error(e, self.target or self.socket)
