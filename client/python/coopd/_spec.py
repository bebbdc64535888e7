"""coopd's Python client: the request side. A primitive specialization (Spec), a frontend's own
operator (UserOperator), the artifact formats a request may ask for, and their conversion to the
coop.v1 messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from google.protobuf import json_format

from coopd._proto.coop.v1 import coop_pb2

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
    ``dtype="user"``. ``cccl`` names the CCCL to compile against when the daemon has several
    (``Client.catalog().cccls``): a name ("toolkit", "default", or one the daemon configured) or
    a version ("3.5.0", or a prefix such as "3.5" naming one); empty: the daemon's default. Every
    spec of a bundle or plan names the same one.
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
    cccl: str = ""

    def to_proto(self) -> coop_pb2.PrimitiveSpec:
        if self.abi not in _ABIS:
            raise ValueError(f'spec: abi must be one of "c", "numba" (or empty); got "{self.abi}"')
        p = coop_pb2.PrimitiveSpec(family=self.family, method=self.method, dtype=self.dtype,
                                   items_per_thread=self.items_per_thread,
                                   algorithm=self.algorithm, warp_threads=self.warp_threads,
                                   arch=self.arch, calling_convention=_ABIS[self.abi],
                                   cccl=self.cccl or "")
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


def _spec(spec: Optional[Spec], fields: Dict[str, Any]) -> Spec:
    if spec is not None and fields:
        raise TypeError("give a Spec or keyword fields, not both")
    return spec if spec is not None else Spec(**fields)
