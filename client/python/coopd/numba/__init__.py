"""coopd.numba: CUB's block and warp primitives for Numba-CUDA kernels, from coopd.

    import numba
    from numba import cuda
    import coopd.numba as coop

    block_sum = coop.block.reduce(numba.float32, threads=128, method="sum")

    @cuda.jit(lto=True)
    def kernel(x, out):
        temp = block_sum.temp_storage()           # shared memory, sized and aligned by coopd
        s = block_sum(temp, x[cuda.grid(1)])      # or block_sum.sum(temp, ...)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

Each object (:class:`Primitive`) comes from one coopd artifact in Numba's calling convention:
its entries are declared with ``cuda.declare_device`` and linked as LTO-IR (``.files``), and
the kernel passes arrays (shared temp storage, ``cuda.local.array`` items, global tiles) where
the entries take pointers. Operators may be Numba Python functions (``op=lambda a, b: a < b``
is not one: use a ``def``), compiled to LTO-IR and inlined after linking.

``coopd.numba.block`` and ``coopd.numba.warp`` have one factory per family of coopd's
catalogue. Artifacts are fetched once per spec and process; coopd caches them across
processes. :func:`link_to_cubin` compiles a kernel and links it into a cubin without a GPU.

Importing this module imports numba-cuda (``import coopd`` alone does not).
"""

import numpy as _np

# numba-cuda 0.30 refers to np.row_stack, which NumPy 2.5 removed.
if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack

from coopd.numba import block, warp  # noqa: E402
from coopd.numba._dtypes import DType, resolve as resolve_dtype  # noqa: E402
from coopd.numba._link import link_to_cubin  # noqa: E402
from coopd.numba._operators import python_operator  # noqa: E402
from coopd.numba._plan import SharedPlan, plan  # noqa: E402
from coopd.numba._primitive import (Primitive, default_arch, get_client, make,  # noqa: E402
                                    set_client)

__all__ = ["DType", "Primitive", "SharedPlan", "block", "default_arch", "get_client",
           "link_to_cubin", "make", "plan", "python_operator", "resolve_dtype", "set_client",
           "warp"]
