"""coopd's Python client: digest-only hits. The artifacts a Client received, kept by request, whose
digests a repeated request sends (coop.v1.SpecializeRequest.have), and the filling of a
digest-only reply's bytes back in from the artifact held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, List, Optional

from coopd._proto.coop.v1 import coop_pb2

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
