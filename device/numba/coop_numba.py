#!/usr/bin/env python3
"""Numba-CUDA kernels that call CUB block primitives through coopd.numba.

Each primitive is one line; the kernel calls it with its own arrays:

    block_sum = coop.block.reduce(numba.float32, threads=128)

    @cuda.jit(lto=True)
    def block_sums(x, out):
        s = block_sum(block_sum.temp_storage(), x[cuda.grid(1)])
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

coopd.numba gets the artifact from coopd (Numba's calling convention), declares its entries with
cuda.declare_device and links its LTO-IR; nvJitLink inlines the primitive into the kernel. The
kernels here: BlockReduce sum, BlockScan exclusive sum, BlockRadixSort, BlockLoad/BlockStore,
and BlockMergeSort with a comparator written in Python.

Modes:
  (default)        run the kernels on the GPU and check them against NumPy;
  --compile-only   no GPU needed: compile each kernel for --arch (sm_90) to LTO-IR with Numba and
                   link it with its primitives' LTO-IR into a cubin with nvJitLink (what CI runs);
                   --cubins DIR gets the cubins and numba_op_symbols.txt, the Python operators'
                   symbols (for device/gpu_suite/sass_check.sh).
coopd: the daemon on --socket (default $COOPD_SOCKET, else the default socket); when none
answers, the client starts --coopd (default $COOPD_BIN, else coopd on PATH), unless
COOPD_NO_AUTOSTART is set.
Exit status 0 when everything passed (or was skipped with a message), 1 otherwise.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

try:
    import coopd
except ImportError:  # run from a source tree: the package is in client/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "client", "python"))
    import coopd

import coopd.numba as coop  # noqa: E402 (applies the NumPy 2.5 shim before importing numba)
import numba  # noqa: E402
from numba import cuda  # noqa: E402

THREADS = 128
ITEMS = 4


def reduce_kernel(arch):
    block_sum = coop.block.reduce(numba.float32, THREADS, arch=arch)

    def block_sums(x, out):
        s = block_sum(block_sum.temp_storage(), x[cuda.grid(1)])
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    def run(kernel, rng, blocks):
        x = rng.standard_normal(blocks * THREADS).astype(np.float32)
        out = cuda.to_device(np.full(blocks, np.nan, np.float32))  # poisoned
        kernel[blocks, THREADS](cuda.to_device(x), out)
        want = x.astype(np.float64).reshape(blocks, THREADS).sum(axis=1)
        return np.allclose(out.copy_to_host(), want, rtol=1e-4, atol=1e-4)

    return [block_sum], block_sums, "void(float32[::1], float32[::1])", run


def scan_kernel(arch):
    scan = coop.block.scan(numba.int32, THREADS, ITEMS, method="exclusive_sum", arch=arch)

    def tile_scan(x, out):
        items = cuda.local.array(ITEMS, numba.int32)
        base = cuda.grid(1) * ITEMS
        for i in range(ITEMS):
            items[i] = x[base + i]
        scan(scan.temp_storage(), items, items)
        for i in range(ITEMS):
            out[base + i] = items[i]

    def run(kernel, rng, blocks):
        x = rng.integers(-1000, 1000, blocks * THREADS * ITEMS, dtype=np.int32)
        out = cuda.to_device(np.full(x.size, -0x5A5A5A5A, np.int32))
        kernel[blocks, THREADS](cuda.to_device(x), out)
        tiles = x.reshape(blocks, THREADS * ITEMS)
        want = (np.cumsum(tiles, axis=1) - tiles).reshape(-1)
        return np.array_equal(out.copy_to_host(), want)

    return [scan], tile_scan, "void(int32[::1], int32[::1])", run


def sort_kernel(arch):
    sort = coop.block.radix_sort(numba.uint32, THREADS, ITEMS, arch=arch)

    def tile_sort(x, out):
        keys = cuda.local.array(ITEMS, numba.uint32)
        base = cuda.grid(1) * ITEMS
        for i in range(ITEMS):
            keys[i] = x[base + i]
        sort(sort.temp_storage(), keys, 0, 32)
        for i in range(ITEMS):
            out[base + i] = keys[i]

    def run(kernel, rng, blocks):
        x = rng.integers(0, 2**32, blocks * THREADS * ITEMS, dtype=np.uint32)
        out = cuda.to_device(np.full(x.size, 0xA5A5A5A5, np.uint32))
        kernel[blocks, THREADS](cuda.to_device(x), out)
        want = np.sort(x.reshape(blocks, THREADS * ITEMS), axis=1).reshape(-1)
        return np.array_equal(out.copy_to_host(), want)

    return [sort], tile_sort, "void(uint32[::1], uint32[::1])", run


def load_store_kernel(arch):
    tile_items = THREADS * ITEMS
    load = coop.block.load(numba.float32, THREADS, ITEMS, algorithm="warp_transpose", arch=arch)
    store = coop.block.store(numba.float32, THREADS, ITEMS, algorithm="warp_transpose",
                             arch=arch)

    def scale_tiles(x, out):
        items = cuda.local.array(ITEMS, numba.float32)
        tile = cuda.blockIdx.x * tile_items
        load(load.temp_storage(), x[tile:], items)
        for i in range(ITEMS):
            items[i] = -2 * items[i]  # exact in float32 and float64 alike
        store(store.temp_storage(), out[tile:], items)

    def run(kernel, rng, blocks):
        x = rng.standard_normal(blocks * tile_items).astype(np.float32)
        out = cuda.to_device(np.full(x.size, np.nan, np.float32))
        kernel[blocks, THREADS](cuda.to_device(x), out)
        return np.array_equal(out.copy_to_host(), -2 * x)

    return [load, store], scale_tiles, "void(float32[::1], float32[::1])", run


def descending(a, b):  # the merge sort's comparator, compiled by numba-cuda to LTO-IR
    return a > b


def merge_sort_kernel(arch):
    sort = coop.block.merge_sort(numba.float32, THREADS, ITEMS, op=descending, arch=arch)

    def tile_sort(x, out):
        keys = cuda.local.array(ITEMS, numba.float32)
        base = cuda.grid(1) * ITEMS
        for i in range(ITEMS):
            keys[i] = x[base + i]
        sort(sort.temp_storage(), keys)
        for i in range(ITEMS):
            out[base + i] = keys[i]

    def run(kernel, rng, blocks):
        x = rng.standard_normal(blocks * THREADS * ITEMS).astype(np.float32)
        out = cuda.to_device(np.full(x.size, np.nan, np.float32))
        kernel[blocks, THREADS](cuda.to_device(x), out)
        want = -np.sort(-x.reshape(blocks, THREADS * ITEMS), axis=1).reshape(-1)
        return np.array_equal(out.copy_to_host(), want)

    return [sort], tile_sort, "void(float32[::1], float32[::1])", run


KERNELS = {"numba_reduce_f32": reduce_kernel, "numba_scan_i32": scan_kernel,
           "numba_sort_u32": sort_kernel, "numba_load_store_f32": load_store_kernel,
           "numba_merge_sort_f32": merge_sort_kernel}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--socket", help="coopd's socket (default $COOPD_SOCKET or the default one)")
    p.add_argument("--coopd", help="coopd binary to start when none answers (default $COOPD_BIN)")
    p.add_argument("--compile-only", action="store_true", help="link to cubins, no GPU needed")
    p.add_argument("--arch", default="sm_90", help="--compile-only's target (default sm_90)")
    p.add_argument("--cubins", help="where --compile-only writes the cubins (default: a temp dir)")
    p.add_argument("--blocks", type=int, default=4096)
    p.add_argument("--seed", type=int)
    args = p.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    if not args.compile_only:
        if not cuda.is_available():
            print("SKIP: no GPU (run with --compile-only to link without one)")
            return 0
        print(f"seed {seed}; device {cuda.get_current_device().name}")
    arch = args.arch if args.compile_only else coop.default_arch()
    coop.set_client(coopd.Client(args.socket, coopd_binary=args.coopd, retries=20,
                                 client_name="coopd example device/numba"))
    cubins = args.cubins or tempfile.mkdtemp(prefix="coop_numba_")

    failed = 0
    operators = []
    for name, factory in KERNELS.items():
        try:
            primitives, pyfunc, sig, run = factory(arch)
            operators += [s for p in primitives for s in p.operator_symbols]
            if args.compile_only:
                out = os.path.join(cubins, name + ".cubin")
                cubin = coop.link_to_cubin(pyfunc, sig, arch)
                with open(out, "wb") as f:
                    f.write(cubin)
                print(f"PASS {name}: linked to a {len(cubin)}-byte {arch} cubin ({out})")
            else:
                kernel = cuda.jit(sig, lto=True)(pyfunc)
                ok = run(kernel, rng, args.blocks)
                print(f"{'PASS' if ok else 'FAIL'} {name}: {args.blocks} blocks of {THREADS}")
                failed += not ok
        except Exception as e:  # report and go on to the next kernel
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed += 1
    if args.compile_only:  # for SASS checks: these must be inlined too
        with open(os.path.join(cubins, "numba_op_symbols.txt"), "w") as f:
            f.write("".join(s + "\n" for s in operators))
    print(f"{'FAILED' if failed else 'OK'}: {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
