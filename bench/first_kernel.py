#!/usr/bin/env python3
"""Time to the first linked kernel in a fresh Python process: coopd (a cache hit) against
NVIDIA's cuda.coop (PyPI cuda-cccl 1.1.1), for BlockReduce sum, BlockScan exclusive sum and
BlockRadixSort keys, on the same machine, measured side by side in one run. A third variant,
"coopd (hit, cached kernel)", also loads the linked kernel from coopd.numba's cross-process
kernel cache (coopd.numba.jit(cache=True)) instead of compiling it with Numba.

Each sample is a new `python3` process (this script with --child) that imports Numba and the
frontend, gets the primitive, compiles the kernel, links it, launches it once and checks the
result against NumPy. The parent times the whole process from spawn to the checked result; the
child reports its phases:

  imports   numba.cuda and the frontend module (coopd.numba, or cuda.coop)
  artifact  the primitive object (coopd: one Specialize hit over the socket; cuda.coop: NVRTC)
  compile   Numba compiles the kernel to LTO-IR (kernel.compile(signature)); for the cached
            variant, kernel.compile(signature) loading the linked kernel from the kernel cache
  link      nvJitLink links the kernel and the primitive into a cubin (get_cufunc); none when
            the kernel came from the cache
  launch    the first launch, synchronized, and the copy back

Ratios are printed for the whole process (spawn to checked result) and for the time after the
imports (from the end of the imports to the checked result: the first kernel once numba.cuda
and the frontend are imported).

Usage (a GPU is needed: cuda.coop's make_* asks for the current device even to compile):
  python3 bench/first_kernel.py [--runs 5] [--json OUT]
coopd must be reachable (COOPD_SOCKET or the default socket; COOPD_BIN to start one); the parent
warms it with one untimed child per kernel, so every timed coopd child is a cache hit. The
cached variant's kernel cache lives in a temporary NUMBA_CACHE_DIR of this run, warmed by one
untimed child per kernel (which compiles and stores the kernel); a timed child that does not
load its kernel from it is reported as a failure.
cuda.coop is imported from `cuda.coop._experimental` (1.1.1's location). Samples alternate
between the frontends so drift on a shared machine hits both alike. Exit status 1 when a kernel's
result is wrong; timings never fail it.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KERNELS = ("reduce", "scan", "radix_sort")
FRONTENDS = ("coopd", "coopd-cached", "cuda.coop")
LABELS = {"coopd": "coopd (hit)", "coopd-cached": "coopd (hit, cached kernel)",
          "cuda.coop": "cuda.coop"}
THREADS, ITEMS, BLOCKS = 128, 4, 64
LINK_ONLY = False
STAGE = "run"  # --link-only, coopd-cached: "store" (precompile, no GPU) or "load"


def child(frontend: str, kernel: str) -> dict:
    phases = {}
    t = time.perf_counter()
    import numpy as np

    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 with NumPy 2.5
        np.row_stack = np.vstack
    import numba
    from numba import cuda

    coopd_side = frontend != "cuda.coop"
    if coopd_side:
        import coopd.numba as coop
    else:
        from cuda.coop import _experimental as coop
    phases["imports"] = time.perf_counter() - t
    imports_done = time.time()

    t = time.perf_counter()
    dtype = numba.uint32 if kernel == "radix_sort" else numba.int32
    if coopd_side:
        if kernel == "reduce":
            prim = coop.block.reduce(dtype, THREADS, ITEMS, method="sum")
        elif kernel == "scan":
            prim = coop.block.scan(dtype, THREADS, ITEMS, method="exclusive_sum")
        else:
            prim = coop.block.radix_sort(dtype, THREADS, ITEMS)
        link = []
    else:
        if kernel == "reduce":
            prim = coop.block.make_sum(dtype, THREADS, items_per_thread=ITEMS)
        elif kernel == "scan":
            prim = coop.block.make_exclusive_sum(dtype, THREADS, ITEMS)
        else:
            prim = coop.block.make_radix_sort_keys(dtype, THREADS, ITEMS)
        link = prim.files
    temp_bytes = prim.temp_storage_bytes
    phases["artifact"] = time.perf_counter() - t

    tile = THREADS * ITEMS

    # The same kernel body for both frontends: temp storage in shared memory, items in a
    # per-thread local array, one primitive call.
    if kernel == "reduce":

        def body(inp, out):
            temp = cuda.shared.array(temp_bytes, numba.uint8, alignment=16)
            items = cuda.local.array(ITEMS, numba.int32)
            base = cuda.blockIdx.x * tile + cuda.threadIdx.x * ITEMS
            for i in range(ITEMS):
                items[i] = inp[base + i]
            s = prim(temp, items)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s

        sig = (numba.int32[::1], numba.int32[::1])
    else:
        item_t = numba.uint32 if kernel == "radix_sort" else numba.int32

        def body(inp, out):
            temp = cuda.shared.array(temp_bytes, numba.uint8, alignment=16)
            items = cuda.local.array(ITEMS, item_t)
            base = cuda.blockIdx.x * tile + cuda.threadIdx.x * ITEMS
            for i in range(ITEMS):
                items[i] = inp[base + i]
            if kernel == "scan":
                prim(temp, items, items)
            elif coopd_side:  # coopd's entry takes the bit range; cuda.coop has both overloads
                prim(temp, items, 0, 32)
            else:
                prim(temp, items)
            for i in range(ITEMS):
                out[base + i] = items[i]

        sig = (item_t[::1], item_t[::1])

    cached = frontend == "coopd-cached"
    if LINK_ONLY:  # no GPU: check the coopd side compiles and links (CI)
        if not cached:
            cubin = coop.link_to_cubin(body, sig)
            return {"frontend": frontend, "kernel": kernel, "ok": len(cubin) > 0,
                    "cubin_bytes": len(cubin)}
        kern = coop.jit(cache=True)(body)
        if STAGE == "store":  # what the warm-up child stores, linked here without a GPU
            cubin = coop.precompile(kern, sig, arch="sm_90")
            return {"frontend": frontend, "kernel": kernel, "ok": len(cubin) > 0,
                    "cubin_bytes": len(cubin)}
        lib = kern.compile(sig)._codelibrary  # a fresh process: must come from the cache
        hits = sum(kern.stats.cache_hits.values())
        return {"frontend": frontend, "kernel": kernel, "ok": hits == 1, "cache_hits": hits,
                "cubin_bytes": sum(len(c.code) for c in lib._cubin_cache.values())}

    # kernel.compile(sig) compiles and binds, linking on the way: time the link (get_cubin,
    # less the NVVM pass to LTO-IR it triggers) apart from the rest of Numba's compile.
    from numba.cuda import codegen

    spent = {"cubin": 0.0, "ltoir": 0.0, "depth": 0}

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            spent["depth"] += name == "cubin"
            try:
                return fn(*a, **k)
            finally:
                spent["depth"] -= name == "cubin"
                if name == "cubin" or spent["depth"] > 0:  # NVVM inside the link only
                    spent[name] += time.perf_counter() - t0
        return wrapper

    codegen.CUDACodeLibrary.get_cubin = timed("cubin", codegen.CUDACodeLibrary.get_cubin)
    codegen.CUDACodeLibrary.get_ltoir = timed("ltoir", codegen.CUDACodeLibrary.get_ltoir)
    t = time.perf_counter()
    if cached:
        kern = coop.jit(cache=True)(body)
    elif link:
        kern = cuda.jit(link=link, lto=True)(body)
    else:
        kern = cuda.jit(lto=True)(body)
    kern.compile(sig)
    total = time.perf_counter() - t
    phases["link"] = spent["cubin"] - spent["ltoir"]
    phases["compile"] = total - phases["link"]

    t = time.perf_counter()
    rng = np.random.default_rng(7)
    n = BLOCKS * tile
    if kernel == "radix_sort":
        host = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    else:
        host = rng.integers(-1000, 1000, n).astype(np.int32)
    d_in = cuda.to_device(host)
    d_out = cuda.device_array(BLOCKS if kernel == "reduce" else n, dtype=host.dtype)
    kern[BLOCKS, THREADS](d_in, d_out)
    got = d_out.copy_to_host()
    phases["launch"] = time.perf_counter() - t

    tiles = host.reshape(BLOCKS, tile)
    if kernel == "reduce":
        want = tiles.sum(axis=1, dtype=np.int64).astype(np.int32)
    elif kernel == "scan":
        want = (np.cumsum(tiles, axis=1, dtype=np.int64) - tiles).astype(np.int32).reshape(-1)
    else:
        want = np.sort(tiles, axis=1).reshape(-1)
    ok = bool(np.array_equal(got, want))
    hits = sum(kern.stats.cache_hits.values()) if cached else None
    return {"frontend": frontend, "kernel": kernel, "phases": phases, "ok": ok,
            "temp_storage_bytes": int(temp_bytes), "cache_hits": hits,
            "imports_done": imports_done, "done": time.time()}


def run_child(frontend: str, kernel: str, env: dict, *extra: str) -> dict:
    start = time.time()
    p = subprocess.run([sys.executable, __file__, *extra, "--child", frontend, kernel],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return {"frontend": frontend, "kernel": kernel, "ok": False,
                "error": (p.stderr or p.stdout).strip()[-2000:]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if "done" in r:
        r["total"] = r["done"] - start
        r["after_imports"] = r["done"] - r["imports_done"]
    return r


def link_only(kernels: list, frontends: tuple, env: dict) -> int:
    """No GPU: the coopd kernels link to sm_90 cubins; the cached variant's kernels are stored
    by one process and loaded, without compiling, by a second."""
    ok = True
    for k in kernels:
        if "coopd" in frontends:
            r = child("coopd", k)
            print(f"{k}: {'linked' if r['ok'] else 'FAILED'} ({r['cubin_bytes']} bytes)")
            ok &= r["ok"]
        if "coopd-cached" in frontends:
            for stage in ("store", "load"):
                r = run_child("coopd-cached", k, env, "--link-only", "--stage", stage)
                what = "stored in the kernel cache" if stage == "store" else \
                    "loaded by a fresh process from the kernel cache"
                detail = r.get("error") or f"{r['cubin_bytes']} bytes"
                print(f"{k} (cached kernel): {what if r['ok'] else 'FAILED'} ({detail})")
                ok &= bool(r["ok"])
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per frontend and kernel")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--frontends", default=",".join(FRONTENDS))
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--link-only", action="store_true",
                    help="no GPU: compile and link the coopd kernels to sm_90 cubins, store "
                         "the cached variant's and load them in a fresh process, and stop")
    ap.add_argument("--child", nargs=2, metavar=("FRONTEND", "KERNEL"), help=argparse.SUPPRESS)
    ap.add_argument("--stage", choices=("store", "load"), default="load",
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    global LINK_ONLY, STAGE
    LINK_ONLY, STAGE = args.link_only, args.stage
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0

    kernels = args.kernels.split(",")
    frontends = tuple(f for f in FRONTENDS if f in args.frontends.split(","))
    # The cached variant's kernel cache: this run's own, so its warm-up is the only writer.
    cache_dir = tempfile.mkdtemp(prefix="first-kernel-numba-cache-")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    try:
        if args.link_only:
            return link_only(kernels, frontends, env)
        return measure(kernels, frontends, args.runs, args.json, env)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def measure(kernels: list, frontends: tuple, runs: int, json_out: str, env: dict) -> int:
    samples, failed = [], False
    # Warm-up, untimed: coopd's artifact cache (one child per kernel, so every timed coopd child
    # is a hit) and the kernel cache of the cached variant (its child compiles and stores).
    for f in (f for f in ("coopd", "coopd-cached") if f in frontends):
        for k in kernels:
            w = run_child(f, k, env)
            if not w.get("ok"):
                print(f"warm-up of {LABELS[f]} {k} failed: {w.get('error', 'wrong result')}")
                failed = True
    for run in range(runs):
        for k in kernels:
            order = frontends if run % 2 == 0 else frontends[::-1]
            for f in order:
                r = run_child(f, k, env)
                if f == "coopd-cached" and r.get("ok") and r.get("cache_hits") != 1:
                    r["ok"] = False
                    r["error"] = "the kernel was compiled, not loaded from the kernel cache"
                samples.append(r)
                if not r.get("ok"):
                    failed = True
                    print(f"{LABELS[f]} {k}: FAILED {r.get('error', 'wrong result')}")
    if json_out:
        with open(json_out, "w") as out:
            json.dump(samples, out, indent=1)

    phases = ("imports", "artifact", "compile", "link", "launch")
    print(f"\nmedian of {runs} fresh processes each, seconds "
          f"({THREADS} threads x {ITEMS} items, {BLOCKS} blocks); after imports: from the end "
          "of the imports to the checked result")
    width = max(len(LABELS[f]) for f in frontends)
    print(f"{'kernel':<11} {'frontend':<{width}} {'total':>7} {'after imports':>13} " +
          " ".join(f"{p:>8}" for p in phases))
    for k in kernels:
        med = {}
        for f in frontends:
            rs = [r for r in samples if r["frontend"] == f and r["kernel"] == k and r.get("ok")]
            if not rs:
                print(f"{k:<11} {LABELS[f]:<{width}} (no successful sample)")
                continue
            med[f] = (statistics.median(r["total"] for r in rs),
                      statistics.median(r["after_imports"] for r in rs))
            cols = " ".join(f"{statistics.median(r['phases'][p] for r in rs):8.3f}"
                            for p in phases)
            print(f"{k:<11} {LABELS[f]:<{width}} {med[f][0]:7.3f} {med[f][1]:13.3f} {cols}")
        for f in ("coopd", "coopd-cached"):
            if "cuda.coop" in med and f in med:
                print(f"{k:<11} cuda.coop / {LABELS[f]}: "
                      f"whole process {med['cuda.coop'][0] / med[f][0]:.2f}x, "
                      f"after imports {med['cuda.coop'][1] / med[f][1]:.2f}x")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
