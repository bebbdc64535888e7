"""coopd: CUB's block- and warp-level primitives as link-ready LTO-IR, compiled once per machine.

    import coopd
    with coopd.Client() as c:
        a = c.specialize(family="block_reduce", dtype="float32", threads=256, arch="sm_90")
        a.entries[0].declaration   # extern "C" __device__ float coop_block_reduce_sum_...(...)
        a.temp_storage_bytes       # shared memory to reserve
        files = a.write("build/")  # LTO-IR to link with nvJitLink / @cuda.jit(link=..., lto=True)

Errors raise coopd.CoopdError (``.code`` is the gRPC code, ``.message`` coopd's message).
"""

from coopd._client import (Artifact, Client, Entry, LinkResult, Part, Plan, PlanRegion,
                           PlanReservation, PlanUse, Spec, UserOperator)
from coopd._errors import CoopdError
from coopd._paths import default_socket_path

__version__ = "0.1.0"
__all__ = ["Artifact", "Client", "CoopdError", "Entry", "LinkResult", "Part", "Plan", "PlanRegion",
           "PlanReservation", "PlanUse", "Spec", "UserOperator", "default_socket_path"]
