"""coopd.cute: CUB's block and warp primitives for CuTe DSL kernels, from coopd.

    import cutlass, cutlass.cute as cute
    import coopd.cute as coop

    block_sum = coop.block.reduce(cutlass.Float32, 256, 16)   # outside the jit: fetches bitcode

    @cute.kernel
    def kernel(...):
        smem = cutlass.utils.SmemAllocator()
        temp = block_sum.temp_storage(smem)          # shared memory, sized and aligned by coopd
        items = cute.make_rmem_tensor(cute.make_layout(16), cutlass.Float32)
        ...
        total = block_sum(temp, items)               # or block_sum.sum(temp, items)

Each object (:class:`Primitive`) comes from one coopd artifact, as LLVM bitcode from clang in
the C calling convention, for CuTe DSL's arch (sm_90a on an H100/H200). Its entries are
``cute.ffi`` declarations with the bitcode file attached (``.ffi``, ``.files``); calling them
passes tensors as data pointers cast to generic ``void*`` (CuTe keeps the shared-memory
address space; the entries take generic pointers) and numbers as the declared types. CuTe's
libNVVM links the bitcode and inlines the entry.

``coopd.cute.block`` and ``coopd.cute.warp`` have one factory per family of coopd's catalogue.
Artifacts are fetched once per spec and process; coopd caches them across processes.
:func:`smem_size` totals the dynamic shared memory several primitives need; :func:`plan` lays
them (and the kernel's own buffers) out in one allocation with coopd's Plan RPC, letting uses
that do not overlap in time share bytes.

Importing this module imports CuTe DSL (``import coopd`` alone does not); without it, the import
fails with an ImportError that names the ``cute`` extra.
"""

from coopd._extras import require_extra

require_extra("coopd.cute", "cute", ("numpy", "cutlass", "cutlass.cute"))

from coopd.cute import block, warp  # noqa: E402
from coopd.cute._dtypes import resolve as resolve_dtype  # noqa: E402
from coopd.cute._primitive import (Entry, Primitive, bitcode_dir, default_arch,  # noqa: E402
                                   get_client, make, set_client, smem_size)
from coopd.cute._plan import SharedPlan, plan  # noqa: E402

__all__ = ["Entry", "Primitive", "SharedPlan", "bitcode_dir", "block", "default_arch",
           "get_client", "make", "plan", "resolve_dtype", "set_client", "smem_size", "warp"]
