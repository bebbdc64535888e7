"""coopd.numba.plan: one shared-memory region for every primitive a kernel uses, laid out by
coopd's Plan RPC (docs/plan.md), usable inside Numba kernels.

    reduce = coop.block.reduce(numba.float32, 128, 4)
    scan = coop.block.scan(numba.float32, 128, 4, method="exclusive_sum")
    plan = coop.plan([("reduce", reduce, 0, 0), ("scan", scan, 1, 1)])

    @cuda.jit(lto=True)
    def kernel(...):
        smem = plan.storage()                  # uint8[plan.dynamic_shared_bytes], aligned
        total = reduce(smem[plan.reduce:], items)
        cuda.syncthreads()                     # the two uses share bytes: a barrier between
        scan(smem[plan.scan:], items, items)

In kernels, ``plan.<name>`` is the region's offset (a compile-time constant) for every use or
reservation whose name is a Python identifier, and ``plan.storage()`` is a static
``cuda.shared.array`` of the plan's total bytes aligned to its base alignment. Launches that
prefer dynamic shared memory take ``plan.dynamic_shared_bytes`` and slice
``cuda.shared.array(0, numba.uint8)`` the same way.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from numba.cuda import types
from numba.cuda.core import errors
from numba.cuda.core.imputils import lower_constant
from numba.cuda.extending import (core_models, infer_getattr, lower_getattr_generic,
                                  register_model, typeof_impl)
from numba.cuda.typing.templates import AttributeTemplate

import coopd
from coopd.numba._primitive import _temp_storage_intrinsic, get_client

_type_ids = itertools.count()


class SharedPlan:
    """A :class:`coopd.Plan` for Numba kernels (see the module's docstring).

    Python side: ``plan`` (the :class:`coopd.Plan`), ``dynamic_shared_bytes``, ``base_align``,
    ``offsets`` (by name) and ``plan["name"]`` (the :class:`coopd.PlanRegion`)."""

    def __init__(self, plan: coopd.Plan) -> None:
        self.plan = plan
        self.dynamic_shared_bytes = plan.dynamic_shared_bytes
        self.base_align = plan.base_align
        self.offsets: Dict[str, int] = plan.offsets
        self._constants = {n: o for n, o in self.offsets.items() if n.isidentifier()}
        self._constants["dynamic_shared_bytes"] = self.dynamic_shared_bytes
        self._constants["base_align"] = self.base_align
        self._storage = _temp_storage_intrinsic((max(1, self.dynamic_shared_bytes),),
                                                max(8, self.base_align), "a coopd plan")
        self._numba_type = SharedPlanType(self)

    def __getitem__(self, name: str) -> coopd.PlanRegion:
        return self.plan[name]

    def __getattr__(self, name: str) -> Any:
        if name == "storage":
            return self.__dict__["_storage"]
        offsets = self.__dict__.get("offsets", {})
        if name in offsets:
            return offsets[name]
        raise AttributeError(f"the plan has no region {name!r}; it has {', '.join(offsets)}")

    def __repr__(self) -> str:
        regions = ", ".join(f"{n}@{o}" for n, o in self.offsets.items())
        return (f"<coopd.numba plan: {self.dynamic_shared_bytes} bytes aligned to "
                f"{self.base_align}: {regions}>")


def plan(uses: Sequence[Any], reservations: Union[Mapping[str, Sequence[int]], Sequence[Any]] = (),
         *, base_offset: int = 0, client: Optional[coopd.Client] = None) -> SharedPlan:
    """Lays out the kernel's uses (tuples ``(name, need[, first[, last[, count]]])`` whose need
    is a coopd.numba primitive, a :class:`coopd.Spec` or ``(bytes, align)``; see
    :meth:`coopd.Client.plan`) and reservations in one shared-memory region. Uses whose
    lifetimes ``[first, last]`` do not overlap may share bytes: the kernel must put a
    ``cuda.syncthreads()`` between them."""
    c = client or get_client()
    return SharedPlan(c.plan(uses, reservations, base_offset=base_offset))


class SharedPlanType(types.Dummy):
    """Numba's type for one SharedPlan: attributes are its offsets and ``storage``."""

    def __init__(self, shared_plan: SharedPlan) -> None:
        self.shared_plan = shared_plan
        super().__init__(name=f"coopd.numba.SharedPlan(#{next(_type_ids)})")


register_model(SharedPlanType)(core_models.OpaqueModel)


@typeof_impl.register(SharedPlan)
def _typeof_plan(value: SharedPlan, context: Any) -> SharedPlanType:
    return value._numba_type


@infer_getattr
class _PlanAttributes(AttributeTemplate):
    key = SharedPlanType

    def generic_resolve(self, ty: SharedPlanType, attr: str) -> Any:
        p = ty.shared_plan
        if attr in p._constants:
            return types.IntegerLiteral(p._constants[attr])
        if attr == "storage":
            return self.context.resolve_value_type(p._storage)
        if attr.startswith("__"):
            return None
        raise errors.TypingError(f"the plan has no attribute {attr!r} in kernels; it has "
                                 f"storage and {', '.join(p._constants)}")


@lower_getattr_generic(SharedPlanType)
def _lower_plan_attribute(context, builder, ty, value, attr):
    constants = ty.shared_plan._constants
    if attr in constants:
        return context.get_constant(types.intp, constants[attr])
    return context.get_dummy_value()


@lower_constant(SharedPlanType)
def _lower_plan_constant(context, builder, ty, pyval):
    return context.get_dummy_value()
