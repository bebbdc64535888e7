"""coopd's Python client: shared-memory planning (Client.plan, docs/plan.md). A kernel's uses and
reservations in (PlanUse, PlanReservation), their regions in its dynamic shared memory out
(PlanRegion, Plan).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from coopd._proto.coop.v1 import coop_pb2
from coopd._spec import Spec

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
