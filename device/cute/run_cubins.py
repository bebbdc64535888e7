#!/usr/bin/env python3
"""Runs the CuTe DSL cubins device/cute/coop_cute.py compiled, on a GPU machine with CuPy.

CuTe DSL is not installed where the GPU is, so its kernels travel as cubins with a manifest
(manifest.json: kernel symbol, grid, block, dynamic shared memory, parameters, what to check).
For each kernel this loads the cubin (cupy.RawModule), fills its inputs with fresh random data
(seed printed; --seed repeats a run), poisons its outputs, launches it and checks the outputs
against NumPy. Then it times the CuTe reduce kernel against gpu_suite's native reduce kernel
(bench_reduce of device/gpu_suite/bench_kernels.cuh: CUB compiled in by nvcc, the same tile of
256 x 16 floats read as float4) over the same 1 GiB, interleaved, median of --reps, both as a
percentage of the measured device-to-device copy bandwidth (bytes read + written).

Kernels launched with another block than their primitives were built for (manifest "expect"):
"trap" (built with coopd.cute's launch check) must stop at its trap, launched in a child
process (a trap ends the CUDA context); "unchecked" (the same kernel without the check) runs,
and its check reports the wrong copy it makes, which is expected.

Lines starting with RESULT:
  RESULT check <kernel> PASS|FAIL <detail>
  RESULT copy <ms> <GB/s>
  RESULT bench reduce <cute ms> <native ms> <cute/native bandwidth> <cute GB/s> <native GB/s>
               <cute % of copy> <native % of copy>
usage: run_cubins.py CUBIN_DIR [--seed N] [--reps N] [--json PATH] [--bench-kernels PATH]
Exit status 1 when a check fails (timings never fail it); 0 with "SKIP" without a GPU.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_KERNELS = os.path.join(HERE, "..", "gpu_suite", "bench_kernels.cuh")


def random_input(rng, dtype, n, check):
    if dtype == "float32":
        return rng.uniform(-1, 1, n).astype(np.float32)
    if check.startswith("tile_exclusive_sum"):  # small values: no overflow in a tile's sum
        return rng.integers(-16, 16, n, dtype=np.int32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def check(kernel, x, y):
    """(ok, detail) for output y of input x."""
    tile = kernel["tile"]
    kind = kernel["check"]
    if kind == "tile_sum":
        tiles = x.reshape(-1, tile).astype(np.float64)
        want = tiles.sum(axis=1)
        bound = 1e-5 * np.abs(tiles).sum(axis=1) + 1e-6  # float32 accumulation
        err = np.abs(y.astype(np.float64) - want)
        bad = int((err > bound).sum())
        return bad == 0, f"{bad} of {len(want)} tile sums off (max error {err.max():.3g})"
    if kind == "tile_exclusive_sum":
        tiles = x.reshape(-1, tile)
        want = (np.cumsum(tiles, axis=1, dtype=np.int64) - tiles).astype(np.int32).reshape(-1)
    elif kind == "tile_exclusive_sum_plus_total":
        tiles = x.reshape(-1, tile).astype(np.int64)
        scanned = np.cumsum(tiles, axis=1) - tiles + tiles.sum(axis=1, keepdims=True)
        want = scanned.astype(np.int32).reshape(-1)
    elif kind == "tile_sort":
        want = np.sort(x.reshape(-1, tile), axis=1).reshape(-1)
    elif kind == "copy":
        want = x
    else:
        return False, f"unknown check {kind!r}"
    bad = int((y != want).sum())
    return bad == 0, f"{bad} of {len(want)} items differ"


def native_reduce(cp, build, bench_kernels):
    """gpu_suite's bench_reduce, built natively by nvcc into a cubin, and its block size."""
    src = os.path.join(build, "native.cu")
    with open(src, "w") as f:
        f.write(f'#include "{os.path.abspath(bench_kernels)}"\n')
    cubin = os.path.join(build, "native.cubin")
    subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-cubin", "-o", cubin, src],
                   check=True)
    return cp.RawModule(path=cubin).get_function("bench_reduce")


def median_ms(cp, launch, reps):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def launch_in_child(cubins, name):
    """In a child process: launches kernel `name` as its manifest says and synchronizes;
    exits 0 (printing the error) when the launch failed, 1 when it ran to completion."""
    import cupy as cp
    with open(os.path.join(cubins, "manifest.json")) as f:
        k = next(k for k in json.load(f)["kernels"] if k["name"] == name)
    fn = cp.RawModule(path=os.path.join(cubins, k["cubin"])).get_function(k["symbol"])
    src_p, dst_p = k["params"]
    d_x = cp.zeros(src_p["elements"], dtype=src_p["dtype"])
    d_y = cp.zeros(dst_p["elements"], dtype=dst_p["dtype"])
    try:
        fn(tuple(k["grid"]), tuple(k["block"]), (d_x, d_y), shared_mem=k["smem"])
        cp.cuda.Device().synchronize()
    except Exception as e:  # the trap: an unspecified launch failure
        print(f"{type(e).__name__}: {e}")
        return 0
    print("the launch ran to completion")
    return 1


def check_trap(cubins, k):
    """(ok, detail): the launch of `k` (its block differs from its primitives') stops at the
    launch check's trap, in a child process (a trap ends the CUDA context). A launch the driver
    refuses (a bad argument) does not count: the trap must be what stopped it."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), cubins, "--launch-in-child",
                        k["name"]], capture_output=True, text=True, timeout=300)
    said = ((r.stdout.strip() or r.stderr.strip()).splitlines() or ["(nothing)"])[-1]
    trapped = r.returncode == 0 and ("LAUNCH_FAILED" in said or "launch failure" in said
                                     or "ILLEGAL_INSTRUCTION" in said)
    block = "x".join(map(str, k["block"]))
    return trapped, f"launched with block {block}: {said}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cubins")
    p.add_argument("--launch-in-child", help=argparse.SUPPRESS)  # check_trap's child
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--json", help="write the results here too")
    p.add_argument("--bench-kernels", default=BENCH_KERNELS,
                   help="gpu_suite's bench_kernels.cuh (default: the one beside this script)")
    args = p.parse_args()
    if args.launch_in_child:
        return launch_in_child(args.cubins, args.launch_in_child)
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, no driver or no GPU
        print(f"run_cubins: SKIP: no GPU through CuPy ({e})")
        return 0
    with open(os.path.join(args.cubins, "manifest.json")) as f:
        manifest = json.load(f)
    seed = args.seed if args.seed is not None else int(time.time())
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"run_cubins: {props['name'].decode()}, CuPy {cp.__version__}, seed {seed}, "
          f"cubins from CuTe DSL {manifest['cutlass_dsl']} for {manifest['arch']}")
    rng = np.random.default_rng(seed)
    results = dict(seed=seed, gpu=props["name"].decode(), checks={}, bench={})
    failed = False
    reduce_run = None
    for k in manifest["kernels"]:
        if k.get("expect") == "trap":
            ok, detail = check_trap(args.cubins, k)
            failed |= not ok
            results["checks"][k["name"]] = dict(ok=ok, detail=detail)
            print(f"RESULT check {k['name']} {'PASS' if ok else 'FAIL'} {detail}", flush=True)
            continue
        fn = cp.RawModule(path=os.path.join(args.cubins, k["cubin"])).get_function(k["symbol"])
        src_p, dst_p = k["params"]
        x = random_input(rng, src_p["dtype"], src_p["elements"], k["check"])
        d_x = cp.asarray(x)
        d_y = cp.full(dst_p["elements"], 0x7F, dtype=dst_p["dtype"])  # poisoned
        launch = (lambda fn=fn, k=k, d_x=d_x, d_y=d_y:
                  fn(tuple(k["grid"]), tuple(k["block"]), (d_x, d_y), shared_mem=k["smem"]))
        launch()
        cp.cuda.Device().synchronize()
        ok, detail = check(k, x, cp.asnumpy(d_y))
        if k.get("expect") == "unchecked":  # no launch check: it runs, and copies wrongly
            ok, detail = not ok, f"ran with block {k['block']} unchecked: {detail}"
        failed |= not ok
        results["checks"][k["name"]] = dict(ok=ok, detail=detail)
        print(f"RESULT check {k['name']} {'PASS' if ok else 'FAIL'} {detail}", flush=True)
        if k["check"] == "tile_sum":
            reduce_run = (k, x, d_x, d_y, launch)
        else:
            del d_x, d_y

    if reduce_run is not None:
        k, x, d_x, d_y, cute_launch = reduce_run
        nbytes = x.nbytes + d_y.nbytes
        dst = cp.empty_like(d_x)
        copy = lambda: dst.data.copy_from_device_async(d_x.data, x.nbytes)  # noqa: E731
        for _ in range(3):
            copy()
        copy_ms = median_ms(cp, copy, args.reps)
        copy_gbs = 2 * x.nbytes / copy_ms / 1e6
        del dst
        print(f"RESULT copy {copy_ms:.4f} {copy_gbs:.0f}", flush=True)
        with tempfile.TemporaryDirectory(prefix="cute-native-") as build:
            native = native_reduce(cp, build, args.bench_kernels)
        d_n = cp.full_like(d_y, 0x7F)
        native_launch = lambda: native(tuple(k["grid"]), tuple(k["block"]),  # noqa: E731
                                       (d_x, d_n))
        native_launch()
        cp.cuda.Device().synchronize()
        ok, detail = check(k, x, cp.asnumpy(d_n))
        failed |= not ok
        print(f"RESULT check native_bench_reduce {'PASS' if ok else 'FAIL'} {detail}")
        for _ in range(3):
            cute_launch()
            native_launch()
        cute_t, native_t = [], []
        for _ in range(args.reps):  # interleaved, so clocks and temperature hit both alike
            cute_t.append(median_ms(cp, cute_launch, 1))
            native_t.append(median_ms(cp, native_launch, 1))
        cute_ms, native_ms = float(np.median(cute_t)), float(np.median(native_t))
        cute_gbs, native_gbs = nbytes / cute_ms / 1e6, nbytes / native_ms / 1e6
        ratio = cute_gbs / native_gbs
        print(f"RESULT bench reduce {cute_ms:.4f} {native_ms:.4f} {ratio:.4f} {cute_gbs:.0f} "
              f"{native_gbs:.0f} {100 * cute_gbs / copy_gbs:.1f} {100 * native_gbs / copy_gbs:.1f}")
        print(f"reduce over {x.nbytes / 2**30:.0f} GiB: CuTe {cute_ms:.3f} ms "
              f"({cute_gbs:.0f} GB/s, {100 * cute_gbs / copy_gbs:.1f}% of copy), native CUB "
              f"{native_ms:.3f} ms ({native_gbs:.0f} GB/s, {100 * native_gbs / copy_gbs:.1f}% "
              f"of copy); CuTe reaches {100 * ratio:.1f}% of native "
              f"({'meets' if ratio >= 0.95 else 'BELOW'} the 95% target)")
        results["bench"] = dict(copy_ms=copy_ms, copy_gbs=copy_gbs, cute_ms=cute_ms,
                                native_ms=native_ms, cute_gbs=cute_gbs, native_gbs=native_gbs,
                                ratio=ratio, reps=args.reps, bytes=nbytes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("run_cubins: " + ("FAILED" if failed else "all checks pass"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
