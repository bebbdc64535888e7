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

Kernels themselves are cached across processes by ``@coopd.numba.jit(cache=True)`` (numba-cuda's
``cache=True`` refuses kernels that link files): the linked cubin is stored, keyed by the
kernel's code, what it reads, every linked LTO-IR, the options, the arch and the toolchain
(:mod:`coopd.numba._cache`, :func:`cache_key`); :func:`precompile` fills that cache without a
GPU.

Importing this module imports numba-cuda (``import coopd`` alone does not); without it, the
import fails with an ImportError that names the ``numba`` extra.
"""

from coopd._extras import require_extra

require_extra("coopd.numba", "numba", ("numpy", "numba_cuda", "numba.cuda"))

import numpy as _np  # noqa: E402

# numba-cuda 0.30 refers to np.row_stack, which NumPy 2.5 removed.
if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack

from coopd.numba import block, warp  # noqa: E402
from coopd.numba._cache import CacheError, CacheKey, cache_key, jit, precompile  # noqa: E402
from coopd.numba._dtypes import DType, resolve as resolve_dtype  # noqa: E402
from coopd.numba._link import link_to_cubin  # noqa: E402
from coopd.numba._operators import python_operator  # noqa: E402
from coopd.numba._plan import SharedPlan, plan  # noqa: E402
from coopd.numba._primitive import (Primitive, default_arch, get_client, make,  # noqa: E402
                                    set_client)

__all__ = ["CacheError", "CacheKey", "DType", "Primitive", "SharedPlan", "block", "cache_key",
           "default_arch", "get_client", "jit", "link_to_cubin", "make", "plan", "precompile",
           "python_operator", "resolve_dtype", "set_client", "warp"]
