"""coopd's Python client: what a connection to coopd needs besides gRPC's channel. The files the
client's options name (the bearer token, TLS), the decoding of a failed call into a CoopdError
(coopd's trailing metadata and status details), and starting a daemon on the socket (auto-start).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional

import grpc

from coopd._errors import CoopdError
from coopd._paths import open_own_file, unsafe_dir_reason
from coopd._proto.coop.v1 import coop_pb2

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


def decode_error(e: grpc.RpcError, where: str) -> CoopdError:
    """The CoopdError of a failed call: its code and message, whether coopd itself answered (the
    status-origin trailer), coopd's whole message when it sent one in the status details, and
    the call's request id. ``where`` (the target or the socket) names the daemon that a
    transport UNAVAILABLE could not reach."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    details = (e.details() if hasattr(e, "details") else None) or str(e)
    trailers = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
    from_server = any(k == _STATUS_ORIGIN_KEY and v == _STATUS_ORIGIN_SERVER
                      for k, v in (trailers or ()))
    if code == grpc.StatusCode.UNAVAILABLE and not from_server:
        details = f"coopd is not reachable on {where} (is it running?): {details}"
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


def start_coopd(coopd_binary: Optional[str], socket: str) -> str:
    """Starts ``coopd --socket SOCKET`` for auto-start: "" once started, else why not. The binary
    is ``coopd_binary``, else $COOPD_BIN, else coopd on PATH; it runs detached, logging to
    coopd.log beside the socket."""
    binary = coopd_binary or os.environ.get("COOPD_BIN") or shutil.which("coopd")
    if not binary or not os.access(binary, os.X_OK):
        return "(auto-start: no coopd binary in COOPD_BIN or on PATH)"
    directory = os.path.dirname(socket) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    # A directory or log another user planted is refused: nothing is started or written.
    why = unsafe_dir_reason(directory, owner=os.geteuid(), fix="remove it, or give a socket in "
                            "a directory of your own (COOPD_SOCKET)")
    if why:
        return f"(auto-start: {why})"
    try:
        log = open_own_file(os.path.join(directory, "coopd.log"), os.O_WRONLY | os.O_APPEND)
    except OSError as e:
        return f"(auto-start: {e.strerror})"
    # sh backgrounds the daemon and exits: coopd is reparented to init, in a session of its own,
    # and never left a zombie of this process.
    # As coop::Client's auto-start: idle for 30 min, it stops, unless COOPD_IDLE_EXIT (which it
    # inherits) says otherwise.
    idle = [] if os.environ.get("COOPD_IDLE_EXIT") else ["--idle-exit", "1800"]
    try:
        subprocess.run(["/bin/sh", "-c", '"$@" </dev/null &', "sh", binary, "--socket", socket,
                        *idle], stdout=log, stderr=log, start_new_session=True, check=True)
    finally:
        os.close(log)
    return ""
