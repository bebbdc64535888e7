"""The one exception type coopd's client raises."""

from __future__ import annotations

import grpc


class CoopdError(Exception):
    """A failed coopd call.

    Attributes:
        code: the gRPC status code (``grpc.StatusCode.INVALID_ARGUMENT`` for a bad request,
            ``UNAVAILABLE`` for "retry" or an unreachable daemon, ``DEADLINE_EXCEEDED`` for a
            compile timeout, ``RESOURCE_EXHAUSTED`` for limits or a full disk, ...).
        message: coopd's message (``block_reduce: items_per_thread must be 1..64, got 0``),
            whole: compiler and linker logs included.
        from_server: True when the daemon itself answered with this status; False when the
            transport failed (no daemon on the socket, connection lost).
        details: coopd bounds status messages (they travel in gRPC's metadata): when a message
            was longer (a compiler log of megabytes), ``message`` holds its first lines and how
            many bytes were left out, and a client made with ``full_errors=True`` gets the
            whole message here. Otherwise "".
        request_id: the id coopd gave the call (its ``x-request-id`` trailer); coopd's log lines
            about the call carry it. "" when coopd did not answer.
    """

    def __init__(self, code: grpc.StatusCode, message: str, from_server: bool,
                 details: str = "", request_id: str = "") -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.from_server = from_server
        self.details = details
        self.request_id = request_id

    @property
    def full_message(self) -> str:
        """The whole message: ``details`` when set, else ``message``."""
        return self.details or self.message
