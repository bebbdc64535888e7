#!/usr/bin/env python3
"""Numba-CUDA kernels that call CUB block primitives from coopd artifacts.

The recipe a Numba frontend follows:

1. Get artifacts from coopd with Numba's calling convention, e.g.
       coopctl specialize block_reduce --method sum --dtype float32 --threads 128 \
           --abi numba --arch sm_90 --json --out DIR
   The JSON names each entry's symbol and exact C declaration and the TempStorage size and
   alignment; DIR gets the LTO-IR. (This script runs coopctl itself with --coopctl, or reads
   artifacts made earlier by device/gpu_check/make_artifacts.sh with --artifacts.)
2. Declare each entry with cuda.declare_device, linking the LTO-IR:
   `int sym(R* result, void* temp_storage, args...)` is Numba's own ABI: declare it as
   `R(CPointer(uint8), args...)`, or `void(CPointer(uint8), args...)` for an entry without a
   result (it takes `void* result` and ignores it).
3. Reserve the temp storage in the kernel: cuda.shared.array(bytes, uint8, alignment=align), and
   pass pointers (to it and to per-thread cuda.local.array items) with the `ptr` intrinsic below.
4. Compile the kernel with lto=True: nvJitLink links the kernel's LTO-IR with the artifact's and
   inlines the primitive.

Modes:
  (default)        run the kernels on the GPU and check them against NumPy;
  --compile-only   no GPU needed: compile each kernel for sm_90 to LTO-IR with Numba and link it
                   with the artifact to a cubin with nvJitLink (what CI runs).
Exit status 0 when everything passed (or was skipped with a message), 1 otherwise.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# numba-cuda 0.30 still refers to np.row_stack, which NumPy 2.5 removed.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402
from numba.cuda.extending import intrinsic  # noqa: E402

ARCH = "sm_90"
THREADS = 128
ITEMS = 4

# name -> coopctl specialize arguments (Numba calling convention)
SPECS = {
    "numba_reduce_f32": ["block_reduce", "--method", "sum", "--dtype", "float32",
                         "--threads", str(THREADS)],
    "numba_scan_i32": ["block_scan", "--method", "exclusive_sum", "--dtype", "int32",
                       "--threads", str(THREADS), "--items", str(ITEMS)],
    "numba_sort_u32": ["block_radix_sort", "--method", "sort", "--dtype", "uint32",
                       "--threads", str(THREADS), "--items", str(ITEMS)],
}


@intrinsic
def ptr(typingctx, arr):
    """The data pointer of a (shared, local or global) array, as CPointer(dtype)."""
    sig = types.CPointer(arr.dtype)(arr)

    def codegen(context, builder, signature, args):
        return context.make_array(arr)(context, builder, args[0]).data

    return sig, codegen


class Artifact:
    def __init__(self, reply, ltoir_path):
        part = reply["parts"][0]
        self.symbol = part["entries"][0]["symbol"]
        self.declaration = part["entries"][0]["declaration"]
        self.temp_bytes = part["temp_storage"]["bytes"]
        self.temp_align = part["temp_storage"]["align"]
        self.ltoir = ltoir_path


def fetch(name, args):
    """Returns the Artifact for `name`, or None (with a message) when it cannot be had."""
    if args.coopctl:
        out = os.path.join(args.workdir, name)
        cmd = [args.coopctl] + (["--socket", args.socket] if args.socket else [])
        cmd += ["specialize"] + SPECS[name] + ["--abi", "numba", "--arch", ARCH, "--json",
                                               "--out", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 and "family must be one of" in r.stderr:
            print(f"SKIP {name}: not in this coopd's catalogue yet: {r.stderr.strip()}")
            return None
        if r.returncode != 0:
            raise RuntimeError(f"coopctl: {r.stderr.strip()}")
        reply = json.loads(r.stdout)
        ltoir = next(f for f in reply["files"] if f.endswith(".ltoir"))
        return Artifact(reply, ltoir)
    js = os.path.join(args.artifacts, name + ".json")
    if not os.path.exists(js):
        print(f"SKIP {name}: no artifact in {args.artifacts} (not in this coopd's catalogue?)")
        return None
    with open(js) as f:
        return Artifact(json.load(f), os.path.join(args.artifacts, name + ".ltoir"))


# ---- kernels: each factory returns (python function, signature, launch + check) ----------------

def reduce_kernel(a):
    block_sum = cuda.declare_device(a.symbol, "float32(CPointer(uint8), float32)", link=[a.ltoir])
    nbytes, align = a.temp_bytes, max(8, a.temp_align)  # numba wants a multiple of 8

    def block_sums(x, out):
        temp = cuda.shared.array(nbytes, dtype=np.uint8, alignment=align)
        s = block_sum(ptr(temp), x[cuda.grid(1)])
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    def run(kernel, rng, blocks):
        x = rng.standard_normal(blocks * THREADS).astype(np.float32)
        out = cuda.to_device(np.full(blocks, np.nan, np.float32))  # poisoned
        kernel[blocks, THREADS](cuda.to_device(x), out)
        want = x.astype(np.float64).reshape(blocks, THREADS).sum(axis=1)
        return np.allclose(out.copy_to_host(), want, rtol=1e-4, atol=1e-4)

    return block_sums, "void(float32[::1], float32[::1])", run


def scan_kernel(a):
    # No result: `int sym(void* result, void* temp_storage, const int* input, int* output)`.
    scan = cuda.declare_device(a.symbol, "void(CPointer(uint8), CPointer(int32), CPointer(int32))",
                               link=[a.ltoir])
    nbytes, align = a.temp_bytes, max(8, a.temp_align)  # numba wants a multiple of 8

    def tile_scan(x, out):
        temp = cuda.shared.array(nbytes, dtype=np.uint8, alignment=align)
        items = cuda.local.array(ITEMS, dtype=np.int32)
        base = cuda.grid(1) * ITEMS
        for i in range(ITEMS):
            items[i] = x[base + i]
        scan(ptr(temp), ptr(items), ptr(items))
        for i in range(ITEMS):
            out[base + i] = items[i]

    def run(kernel, rng, blocks):
        x = rng.integers(-1000, 1000, blocks * THREADS * ITEMS, dtype=np.int32)
        out = cuda.to_device(np.full(x.size, -0x5A5A5A5A, np.int32))
        kernel[blocks, THREADS](cuda.to_device(x), out)
        tiles = x.reshape(blocks, THREADS * ITEMS)
        want = (np.cumsum(tiles, axis=1) - tiles).reshape(-1)
        return np.array_equal(out.copy_to_host(), want)

    return tile_scan, "void(int32[::1], int32[::1])", run


def sort_kernel(a):
    sort = cuda.declare_device(a.symbol, "void(CPointer(uint8), CPointer(uint32), int32, int32)",
                               link=[a.ltoir])
    nbytes, align = a.temp_bytes, max(8, a.temp_align)  # numba wants a multiple of 8

    def tile_sort(x, out):
        temp = cuda.shared.array(nbytes, dtype=np.uint8, alignment=align)
        keys = cuda.local.array(ITEMS, dtype=np.uint32)
        base = cuda.grid(1) * ITEMS
        for i in range(ITEMS):
            keys[i] = x[base + i]
        sort(ptr(temp), ptr(keys), 0, 32)
        for i in range(ITEMS):
            out[base + i] = keys[i]

    def run(kernel, rng, blocks):
        x = rng.integers(0, 2**32, blocks * THREADS * ITEMS, dtype=np.uint32)
        out = cuda.to_device(np.full(x.size, 0xA5A5A5A5, np.uint32))
        kernel[blocks, THREADS](cuda.to_device(x), out)
        want = np.sort(x.reshape(blocks, THREADS * ITEMS), axis=1).reshape(-1)
        return np.array_equal(out.copy_to_host(), want)

    return tile_sort, "void(uint32[::1], uint32[::1])", run


KERNELS = {"numba_reduce_f32": reduce_kernel, "numba_scan_i32": scan_kernel,
           "numba_sort_u32": sort_kernel}


def link_cubin(pyfunc, sig, out_path):
    """Compiles pyfunc for sm_90 to LTO-IR and links it with its declared artifacts: no GPU."""
    from cuda.bindings import nvjitlink
    codes, _ = cuda.compile_all(pyfunc, sig, device=False, cc=(9, 0), output="ltoir",
                                abi="numba")
    handle = nvjitlink.create(3, ["-arch=sm_90", "-lto", "-optimize-unused-variables"])
    try:
        for i, code in enumerate(codes):
            data = bytes(code.data) if hasattr(code, "data") else bytes(code)
            nvjitlink.add_data(handle, nvjitlink.InputType.LTOIR, data, len(data), f"m{i}")
        try:
            nvjitlink.complete(handle)
        except Exception as e:
            size = nvjitlink.get_error_log_size(handle)
            log = bytearray(size)
            nvjitlink.get_error_log(handle, log)
            raise RuntimeError(f"nvJitLink: {e}: {log.decode(errors='replace')}") from e
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
    finally:
        nvjitlink.destroy(handle)
    with open(out_path, "wb") as f:
        f.write(cubin)
    return len(codes), len(cubin)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--artifacts", help="directory made by make_artifacts.sh")
    src.add_argument("--coopctl", help="coopctl binary: fetch the artifacts from a running coopd")
    p.add_argument("--socket", help="coopd socket for --coopctl")
    p.add_argument("--compile-only", action="store_true", help="link to cubins, no GPU needed")
    p.add_argument("--cubins", help="where --compile-only writes the cubins (default: a temp dir)")
    p.add_argument("--blocks", type=int, default=4096)
    p.add_argument("--seed", type=int)
    args = p.parse_args()
    args.workdir = tempfile.mkdtemp(prefix="coop_numba_")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    if not args.compile_only:
        if not cuda.is_available():
            print("SKIP: no GPU (run with --compile-only to link without one)")
            return 0
        print(f"seed {seed}; device {cuda.get_current_device().name}")

    failed = 0
    for name, factory in KERNELS.items():
        try:
            a = fetch(name, args)
            if a is None:
                continue
            pyfunc, sig, run = factory(a)
            if args.compile_only:
                out = os.path.join(args.cubins or args.workdir, name + ".cubin")
                n, size = link_cubin(pyfunc, sig, out)
                print(f"PASS {name}: {n} LTO-IR modules linked to a {size}-byte sm_90 cubin ({out})")
            else:
                kernel = cuda.jit(sig, lto=True)(pyfunc)
                ok = run(kernel, rng, args.blocks)
                print(f"{'PASS' if ok else 'FAIL'} {name}: {args.blocks} blocks of {THREADS}")
                failed += not ok
        except Exception as e:  # report and go on to the next kernel
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed += 1
    print(f"{'FAILED' if failed else 'OK'}: {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
