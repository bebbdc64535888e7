"""coopd.cute.plan: one shared-memory allocation for every primitive and buffer a CuTe kernel
uses, laid out by coopd's Plan RPC (docs/plan.md).

    reduce = coop.block.reduce(cutlass.Float32, 128, 4)
    scan = coop.block.scan(cutlass.Float32, 128, 4, method="exclusive_sum")
    shared = coop.plan([("reduce", reduce, 0, 0), ("scan", scan, 1, 1)],
                       {"tile": (128 * 4 * 4, 16)})

    @cute.kernel
    def kernel(...):
        base = shared.storage(cutlass.memory.SmemAllocator())   # one allocation
        total = reduce(shared.temp_storage("reduce", base), items)
        # scan's bytes may be reduce's: sync=True puts the barrier the reuse needs first
        scan(shared.temp_storage("scan", base, sync=True), items, items)
        tile = shared.tensor("tile", base, cutlass.Float32, 512)  # a reservation as a tensor

The barrier rule: two uses whose lifetimes ``[first, last]`` do not overlap may be given the
same bytes, so every thread must be done with the earlier one before any thread starts on the
later one. Put a ``cute.arch.barrier()`` between them, or ask ``temp_storage(..., sync=True)``
for the later one. Reservations live for the whole kernel and share bytes with nothing.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import cutlass.cute as cute

import coopd
from coopd.cute._primitive import Primitive, get_client

__all__ = ["SharedPlan", "plan"]


class SharedPlan:
    """A :class:`coopd.Plan` for CuTe kernels (see the module's docstring).

    Python side: ``plan`` (the :class:`coopd.Plan`), ``dynamic_shared_bytes``, ``base_align``,
    ``offsets`` (by name), ``plan["name"]`` (the :class:`coopd.PlanRegion`) and ``plan.<name>``
    (a region's offset). In kernels: :meth:`storage`, :meth:`temp_storage`, :meth:`tensor`.
    """

    def __init__(self, plan: coopd.Plan, primitives: Mapping[str, Primitive]) -> None:
        self.plan = plan
        self.dynamic_shared_bytes = plan.dynamic_shared_bytes
        self.base_align = plan.base_align
        self.offsets: Dict[str, int] = plan.offsets
        self._primitives = dict(primitives)

    def __getitem__(self, name: str) -> coopd.PlanRegion:
        return self.plan[name]

    def __getattr__(self, name: str) -> Any:
        offsets = self.__dict__.get("offsets", {})
        if name in offsets:
            return offsets[name]
        raise AttributeError(f"the plan has no region {name!r}; it has {', '.join(offsets)}")

    def _region(self, name: str) -> coopd.PlanRegion:
        try:
            return self.plan[name]
        except KeyError:
            raise KeyError(f"the plan has no region {name!r}; it has "
                           f"{', '.join(self.offsets)}") from None

    def storage(self, smem: Any) -> Any:
        """In a kernel: the plan's one allocation from ``smem`` (a
        ``cutlass.utils.SmemAllocator``), ``dynamic_shared_bytes`` aligned to ``base_align``, as
        a shared-memory byte pointer: the base every region is an offset from."""
        return smem.allocate(max(1, self.dynamic_shared_bytes), byte_alignment=self.base_align)

    def temp_storage(self, name: str, base: Any, *, sync: bool = False) -> Any:
        """In a kernel: use ``name``'s temp storage in the allocation at ``base``, as a
        shared-memory pointer to pass to the primitive's entries. For a warp primitive (a row
        per logical warp), the calling thread's warp's row. ``sync``: a block-wide barrier
        first, for a use that may share bytes with an earlier one (the barrier rule). The
        primitive's own launch check, if it has one, runs here too."""
        region = self._region(name)
        if sync:
            cute.arch.barrier()
        p = self._primitives.get(name)
        if p is not None and p.launch_check:
            p.check_launch()
        ptr = base + region.offset
        if p is None or not p.warp_threads or region.count <= 1:
            return ptr
        tx, ty, tz = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_dim()
        warp = ((tz * by + ty) * bx + tx) // p.warp_threads
        return ptr + warp * region.stride

    def tensor(self, name: str, base: Any, dtype: Any, n: Union[int, Tuple[int, ...]],
               instance: Any = 0) -> Any:
        """In a kernel: ``n`` elements of ``dtype`` (a CuTe numeric type) at region ``name``
        (instance ``instance`` of a counted one) in the allocation at ``base``, as a CuTe
        tensor: the seed's ``reserve``. ValueError (while tracing) when they do not fit the
        region or its alignment does not suit the type."""
        region = self._region(name)
        count = 1
        for d in (n if isinstance(n, tuple) else (n,)):
            count *= int(d)
        size = count * dtype.width // 8
        per_instance = region.stride if region.count > 1 else region.bytes
        if size > per_instance:
            raise ValueError(f"plan: {count} {dtype.__name__} ({size} bytes) do not fit region "
                             f"{name!r} ({per_instance} bytes)")
        if region.align % max(1, dtype.width // 8):
            raise ValueError(f"plan: region {name!r} is aligned to {region.align}, too little "
                             f"for {dtype.__name__}")
        ptr = cute.recast_ptr(base + region.offset + instance * region.stride, dtype=dtype)
        return cute.make_tensor(ptr, cute.make_layout(n))

    def __repr__(self) -> str:
        regions = ", ".join(f"{n}@{o}" for n, o in self.offsets.items())
        return (f"<coopd.cute plan: {self.dynamic_shared_bytes} bytes aligned to "
                f"{self.base_align}: {regions}>")


def plan(uses: Sequence[Any], reservations: Union[Mapping[str, Sequence[int]], Sequence[Any]] = (),
         *, base_offset: int = 0, client: Optional[coopd.Client] = None) -> SharedPlan:
    """Lays out a CuTe kernel's uses (tuples ``(name, need[, first[, last[, count]]])`` whose
    need is a coopd.cute primitive, a :class:`coopd.Spec` or ``(bytes, align)``; see
    :meth:`coopd.Client.plan`) and reservations (``{name: (bytes, align[, count])}``, the
    kernel's own buffers) in one shared-memory allocation. A warp primitive takes a row per
    logical warp of its ``block_threads``. Uses whose lifetimes ``[first, last]`` do not
    overlap may share bytes: see the barrier rule in the module's docstring."""
    c = client or get_client()
    primitives: Dict[str, Primitive] = {}
    converted = []
    for use in uses:
        u = use if isinstance(use, coopd.PlanUse) else coopd.PlanUse(*use)
        if isinstance(u.need, Primitive):
            p = u.need
            primitives[u.name] = p
            if p.warp_threads:  # a row per logical warp, as temp_storage() lays them out
                u = coopd.PlanUse(u.name, (p._row, p.temp_storage_align), u.first, u.last,
                                  max(u.count, p._rows))
        converted.append(u)
    return SharedPlan(c.plan(converted, reservations, base_offset=base_offset), primitives)
