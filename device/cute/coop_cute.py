#!/usr/bin/env python3
"""CuTe DSL kernels calling coopd primitives through coopd.cute, compiled to cubins.

Four kernels, each a few lines on top of coopd.cute:
  cute_reduce_f32      BlockReduce sum, 256 threads x 16 float32 (float4 loads), one sum per tile
  cute_scan_i32        BlockLoad (warp_transpose) -> BlockScan exclusive_sum -> BlockStore
  cute_sort_u32        BlockRadixSort of 128 x 4 uint32 keys per tile (blocked, uint4 in and out)
  cute_load_store_i32  BlockLoad (warp_transpose) -> BlockStore (warp_transpose), 128 x 16 int32

CuTe DSL 4.8.1 compiles them with no GPU (CUTE_DSL_ARCH=sm_90a). This script writes each
kernel's cubin and a manifest (manifest.json: kernel symbol, grid, block, dynamic shared memory,
parameters with dtypes and sizes, what to check) into --out, for device/cute/run_cubins.py to
launch with CuPy on a GPU machine where CuTe DSL is not installed. Sizes are static (the layouts
are compile-time constants, so each kernel's parameters are plain pointers).

usage: coop_cute.py --out DIR [--socket PATH] [--coopd BIN] [--only NAME,...] [--no-inline NAME]
  --no-inline NAME  declares NAME's entries noinline (a deliberately broken build: the SASS
                    check must fail it)
"""

import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

import coopd  # noqa: E402
import coopd.cute as coop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu_suite"))
from sass_check import read_elf  # noqa: E402

REDUCE_BLOCKS = 1 << 16  # 65536 tiles of 4096 floats: 1 GiB, gpu_suite's bench_reduce size
BLOCKS = 4096


def gptr(dtype):
    return make_ptr(dtype, 16, cute.AddressSpace.gmem, assumed_align=16)


def reduce_kernel(nb):
    T, I = 256, 16
    block_sum = coop.block.reduce(cutlass.Float32, T, I)
    smem_bytes = coop.smem_size(block_sum)

    @cute.kernel
    def cute_reduce(src: cute.Pointer, dst: cute.Pointer):
        tid, _, _ = cute.arch.thread_idx()
        tile, _, _ = cute.arch.block_idx()
        # Thread t of a tile holds floats 4(jT + t) .. 4(jT + t) + 3 for j < I/4 (float4 loads).
        x = cute.make_tensor(src, cute.make_layout((4, T, I // 4, nb), stride=(1, 4, 4 * T, T * I)))
        out = cute.make_tensor(dst, cute.make_layout(nb))
        smem = cutlass.memory.SmemAllocator()
        temp = block_sum.temp_storage(smem)
        items = cute.make_rmem_tensor(cute.make_layout((4, I // 4)), cutlass.Float32)
        cute.autovec_copy(x[None, tid, None, tile], items)
        total = block_sum(temp, items)
        if tid == 0:
            out[tile] = total

    @cute.jit
    def host(src: cute.Pointer, dst: cute.Pointer):
        cute_reduce(src, dst).launch(grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes)

    n = nb * T * I
    return host, [block_sum], dict(
        grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes, check="tile_sum", tile=T * I,
        params=[dict(name="src", dtype="float32", elements=n, role="in"),
                dict(name="dst", dtype="float32", elements=nb, role="out")])


def scan_kernel(nb, values=False):
    """BlockLoad, BlockScan exclusive_sum and BlockStore over 128 x 8 int32 tiles. `values`:
    the scan takes the loaded items as a value (a TensorSSA) and returns its result in a fresh
    tensor, the way CuTe kernels compute."""
    T, I = 128, 8
    load = coop.block.load(cutlass.Int32, T, I, algorithm="warp_transpose")
    scan = coop.block.scan(cutlass.Int32, T, I, method="exclusive_sum")
    store = coop.block.store(cutlass.Int32, T, I, algorithm="warp_transpose")
    smem_bytes = coop.smem_size(load, scan, store)

    @cute.kernel
    def cute_scan(src: cute.Pointer, dst: cute.Pointer):
        tile, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        items = cute.make_rmem_tensor(cute.make_layout(I), cutlass.Int32)
        load(load.temp_storage(smem), src + tile * (T * I), items)
        if cutlass.const_expr(values):
            scanned = scan(scan.temp_storage(smem), items.load())
            store(store.temp_storage(smem), dst + tile * (T * I), scanned)
        else:
            scan(scan.temp_storage(smem), items, items)
            store(store.temp_storage(smem), dst + tile * (T * I), items)

    @cute.jit
    def host(src: cute.Pointer, dst: cute.Pointer):
        cute_scan(src, dst).launch(grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes)

    n = nb * T * I
    return host, [load, scan, store], dict(
        grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes, check="tile_exclusive_sum",
        tile=T * I, params=[dict(name="src", dtype="int32", elements=n, role="in"),
                            dict(name="dst", dtype="int32", elements=n, role="out")])


def planned_kernel(nb):
    """Load, reduce, scan and store over 128 x 8 int32 tiles in one planned allocation
    (coop.plan): the four temp storages share bytes (each use a step of its own, with the
    barrier the reuse needs), and a reservation carries the tile's total from thread 0 to all.
    Each item becomes its exclusive prefix sum plus the tile's total."""
    T, I = 128, 8
    load = coop.block.load(cutlass.Int32, T, I, algorithm="warp_transpose")
    reduce = coop.block.reduce(cutlass.Int32, T, I)
    scan = coop.block.scan(cutlass.Int32, T, I, method="exclusive_sum")
    store = coop.block.store(cutlass.Int32, T, I, algorithm="warp_transpose")
    shared = coop.plan([("load", load, 0, 0), ("reduce", reduce, 1, 1), ("scan", scan, 2, 2),
                        ("store", store, 3, 3)], {"total": (4, 4)})
    smem_bytes = shared.dynamic_shared_bytes + shared.base_align

    @cute.kernel
    def cute_planned(src: cute.Pointer, dst: cute.Pointer):
        tile, _, _ = cute.arch.block_idx()
        tid, _, _ = cute.arch.thread_idx()
        base = shared.storage(cutlass.memory.SmemAllocator())
        total = shared.tensor("total", base, cutlass.Int32, 1)
        items = cute.make_rmem_tensor(cute.make_layout(I), cutlass.Int32)
        load(shared.temp_storage("load", base), src + tile * (T * I), items)
        tile_sum = reduce(shared.temp_storage("reduce", base, sync=True), items)
        if tid == 0:
            total[0] = tile_sum
        # The barrier before the scan also publishes thread 0's total.
        scanned = scan(shared.temp_storage("scan", base, sync=True), items.load())
        for i in cutlass.range_constexpr(I):
            scanned[i] = scanned[i] + total[0]
        store(shared.temp_storage("store", base, sync=True), dst + tile * (T * I), scanned)

    @cute.jit
    def host(src: cute.Pointer, dst: cute.Pointer):
        cute_planned(src, dst).launch(grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes)

    n = nb * T * I
    return host, [load, reduce, scan, store], dict(
        grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes, check="tile_exclusive_sum_plus_total",
        tile=T * I, params=[dict(name="src", dtype="int32", elements=n, role="in"),
                            dict(name="dst", dtype="int32", elements=n, role="out")])


def sort_kernel(nb):
    T, I = 128, 4
    sort = coop.block.radix_sort(cutlass.Uint32, T, I)
    smem_bytes = coop.smem_size(sort)

    @cute.kernel
    def cute_sort(src: cute.Pointer, dst: cute.Pointer):
        tid, _, _ = cute.arch.thread_idx()
        tile, _, _ = cute.arch.block_idx()
        # Blocked: thread t holds keys 4t .. 4t + 3 of its tile (one uint4 in, one out).
        x = cute.make_tensor(src, cute.make_layout((I, T, nb), stride=(1, I, T * I)))
        y = cute.make_tensor(dst, cute.make_layout((I, T, nb), stride=(1, I, T * I)))
        smem = cutlass.memory.SmemAllocator()
        keys = cute.make_rmem_tensor(cute.make_layout(I), cutlass.Uint32)
        cute.autovec_copy(x[None, tid, tile], keys)
        sort(sort.temp_storage(smem), keys, 0, 32)
        cute.autovec_copy(keys, y[None, tid, tile])

    @cute.jit
    def host(src: cute.Pointer, dst: cute.Pointer):
        cute_sort(src, dst).launch(grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes)

    n = nb * T * I
    return host, [sort], dict(
        grid=[nb, 1, 1], block=[T, 1, 1], smem=smem_bytes, check="tile_sort", tile=T * I,
        params=[dict(name="src", dtype="uint32", elements=n, role="in"),
                dict(name="dst", dtype="uint32", elements=n, role="out")])


def load_store_kernel(nb, launch_check=False, launch_threads=None):
    """Copies 128 x 16 tiles through block_load and block_store. `launch_threads` launches the
    kernel with that many threads instead of the 128 the primitives were built for (a bug the
    launch check, `launch_check`, catches)."""
    T, I = 128, 16
    L = launch_threads or T
    load = coop.block.load(cutlass.Int32, T, I, algorithm="warp_transpose",
                           launch_check=launch_check)
    store = coop.block.store(cutlass.Int32, T, I, algorithm="warp_transpose",
                             launch_check=launch_check)
    smem_bytes = coop.smem_size(load, store)

    @cute.kernel
    def cute_load_store(src: cute.Pointer, dst: cute.Pointer):
        tile, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        items = cute.make_rmem_tensor(cute.make_layout(I), cutlass.Int32)
        load(load.temp_storage(smem), src + tile * (T * I), items)
        store(store.temp_storage(smem), dst + tile * (T * I), items)

    @cute.jit
    def host(src: cute.Pointer, dst: cute.Pointer):
        cute_load_store(src, dst).launch(grid=[nb, 1, 1], block=[L, 1, 1], smem=smem_bytes)

    n = nb * T * I
    info = dict(grid=[nb, 1, 1], block=[L, 1, 1], smem=smem_bytes, check="copy", tile=T * I,
                params=[dict(name="src", dtype="int32", elements=n, role="in"),
                        dict(name="dst", dtype="int32", elements=n, role="out")])
    if L != T:  # run_cubins.py expects the launch check's trap, or an unchecked wrong result
        info["expect"] = "trap" if launch_check else "unchecked"
    return host, [load, store], info


def launch_check_kernels(launch_check):
    """The load/store kernel launched with 64 threads while its primitives are built for 128:
    with coopd.cute's launch check it must trap; without it, it runs and copies wrongly."""
    return lambda nb: load_store_kernel(nb, launch_check=launch_check, launch_threads=64)


KERNELS = {
    "cute_reduce_f32": (reduce_kernel, REDUCE_BLOCKS, cutlass.Float32),
    "cute_scan_i32": (scan_kernel, BLOCKS, cutlass.Int32),
    "cute_scan_values_i32": (lambda nb: scan_kernel(nb, values=True), BLOCKS, cutlass.Int32),
    "cute_sort_u32": (sort_kernel, BLOCKS, cutlass.Uint32),
    "cute_load_store_i32": (load_store_kernel, BLOCKS, cutlass.Int32),
    "cute_planned_i32": (planned_kernel, BLOCKS, cutlass.Int32),
    "cute_wrong_block_checked_i32": (launch_check_kernels(True), BLOCKS, cutlass.Int32),
    "cute_wrong_block_unchecked_i32": (launch_check_kernels(False), BLOCKS, cutlass.Int32),
}


def kernel_symbol(cubin):
    """The one kernel (CUDA entry function) a cubin defines."""
    _, symbols = read_elf(cubin)
    entries = [s.name for s in symbols if s.is_entry]
    if len(entries) != 1:
        raise ValueError(f"{cubin}: expected one kernel, found {entries}")
    return entries[0]


def compile_kernel(name, out, no_inline=False):
    """Compiles kernel `name` to out/<name>.cubin; returns its manifest entry."""
    build, nb, dtype = KERNELS[name]
    host, primitives, info = build(nb)
    if no_inline:
        for p in primitives:
            for f in p.ffi.values():
                f.inline = False
    with tempfile.TemporaryDirectory(prefix="coop-cute-") as dump:
        compiled = cute.compile(host, gptr(dtype), gptr(dtype),
                                options=f"--keep-cubin --dump-dir={dump}")
        cubin = compiled.artifacts.CUBIN
        if not isinstance(cubin, bytes):
            raise RuntimeError(f"{name}: CuTe DSL kept no cubin ({cubin!r})")
    path = os.path.join(out, name + ".cubin")
    with open(path, "wb") as f:
        f.write(cubin)
    info.update(name=name, cubin=name + ".cubin", symbol=kernel_symbol(path),
                primitives=[dict(family=p.family, method=p.method, dtype=p.dtype,
                                 symbols=[e.symbol for e in p.entries],
                                 temp_storage_bytes=p.temp_storage_bytes,
                                 temp_storage_align=p.temp_storage_align) for p in primitives])
    return info


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="where the cubins and manifest.json go")
    p.add_argument("--socket", help="coopd's socket (default $COOPD_SOCKET or the default one)")
    p.add_argument("--coopd", help="coopd binary to start when none answers (default $COOPD_BIN)")
    p.add_argument("--only", help="comma-separated kernel names (default: all)")
    p.add_argument("--no-inline", action="append", default=[],
                   help="declare this kernel's entries noinline (a broken build, for tests)")
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(KERNELS)
    for n in names + args.no_inline:
        if n not in KERNELS:
            p.error(f"kernel must be one of {', '.join(KERNELS)}; got {n!r}")
    coop.set_client(coopd.Client(args.socket, coopd_binary=args.coopd, retries=20,
                                 client_name="coop_cute example"))
    os.makedirs(args.out, exist_ok=True)
    manifest = dict(arch=coop.default_arch(), cutlass_dsl=cutlass.__version__, kernels=[])
    for name in names:
        manifest["kernels"].append(compile_kernel(name, args.out, name in args.no_inline))
        print(f"PASS {name}: {manifest['kernels'][-1]['symbol']}", flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"coop_cute: {len(names)} kernels compiled to {args.out}")


if __name__ == "__main__":
    main()
