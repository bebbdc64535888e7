#!/usr/bin/env python3
"""The tuning suite (issue 18): measures every algorithm of every `auto` family on the GPU and
writes JSON cells in the tuning table's schema (docs/tuning.md, "The tuning suite").

usage: run.py --run-id r1 --out DIR [--families a,b] [--dtype-sizes 1,2] [--threads 64,128]
              [--items 1,2] [--cells FILE] [--bytes N] [--repeats 15] [--jobs 16]
              [--dry-run [--nvrtc-check N]] [--self-test]

For each cell (family, dtype size, threads, items per thread) it instantiates kernels.cuh's kernel
once per algorithm (the eligible ones and the information-only ones, families.py), renders the
instantiations into translation units of --per-tu kernels, builds them with nvcc -cubin in
--jobs processes, then per cell: checks every kernel's output against a reference (a wrong
kernel fails the run: exit status 1), warms each one up, and times --repeats launches of each,
interleaved in a fresh shuffled order every round, over --bytes of data per launch. The cell
records each algorithm's median, min and max GB/s and `choice`, the fastest eligible one.
Writes DIR/<run-id>.json; prints a line per cell.

--dry-run renders the sources and the plan without a GPU; --nvrtc-check N also compiles the
first N units with NVRTC (PTX for compute_90: a syntax and instantiation check that needs no
nvcc). --self-test runs the correctness checks against deliberately wrong results on the GPU
and fails unless every one is caught (check_selftest in tests/device/tuning does the same on
the CPU).
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checks  # noqa: E402
from families import (FAMILIES, WARP_BLOCK_THREADS, dump_json, family, grid_cells,  # noqa: E402
                      measured_algorithms)

UTYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
KIND_PARAMS = {
    "load": "const void* in, void* out",
    "scan": "const void* in, void* out",
    "reduce": "const void* in, void* out",
    "store": "void* out, unsigned int seed",
    "histogram": "const void* in, unsigned int* histograms",
}
KIND_ARGS = {
    "load": "static_cast<const T*>(in), static_cast<T*>(out)",
    "scan": "static_cast<const T*>(in), static_cast<T*>(out)",
    "reduce": "static_cast<const T*>(in), static_cast<T*>(out)",
    "store": "static_cast<T*>(out), seed",
    "histogram": "static_cast<const T*>(in), histograms",
}


class Kernel:
    """One instantiation: a cell's algorithm."""

    def __init__(self, fam, s, t, n, alg):
        self.family, self.dtype_size, self.threads, self.items, self.alg = fam, s, t, n, alg
        self.name = "%s_s%d_t%d_n%d_%s" % (fam, s, t, n, alg)
        f = FAMILIES[fam]
        self.kind = f["kind"]
        self.block = WARP_BLOCK_THREADS if f["warp"] else t
        self.tile_items = self.block * n  # elements a block handles
        self.tile_bytes = self.tile_items * s

    def source(self):
        f = FAMILIES[self.family]
        case = "tuning::%s<%s, %d, %d, %s%s>" % (f["case"], UTYPE[self.dtype_size], self.threads,
                                                  self.items, f["enum"], self.alg.upper())
        return ('extern "C" __global__ void __launch_bounds__(%d) %s(%s) {\n'
                "  using C = %s;\n  using T = %s;\n  C::Run(%s);\n}\n" %
                (self.block, self.name, KIND_PARAMS[self.kind], case, UTYPE[self.dtype_size],
                 KIND_ARGS[self.kind])), case


class Cell:
    def __init__(self, fam, s, t, n):
        self.family, self.dtype_size, self.threads, self.items = fam, s, t, n
        self.kernels = [Kernel(fam, s, t, n, a) for a in measured_algorithms(fam, t)]

    def key(self):
        return (self.family, self.dtype_size, self.threads, self.items)


def plan_cells(a):
    cells = []
    if a.cells:
        with open(a.cells) as f:
            for c in json.load(f)["cells"]:
                family(c["family"])
                cells.append(Cell(c["family"], c["dtype_size"], c["threads"],
                                  c["items_per_thread"]))
        return cells
    fams = a.families.split(",") if a.families else list(FAMILIES)
    pick = lambda v: None if not v else {int(x) for x in v.split(",")}  # noqa: E731
    sizes, threads, items = pick(a.dtype_sizes), pick(a.threads), pick(a.items)
    for fam in fams:
        family(fam)
        for s, t, n in grid_cells(fam):
            if sizes and s not in sizes or threads and t not in threads or items and n not in items:
                continue
            cells.append(Cell(fam, s, t, n))
    return cells


def render_units(kernels, per_tu, src_dir):
    """Translation units of per_tu kernels each, plus a `<unit>_sizes` kernel per unit that
    writes each kernel's dynamic shared memory (its TempStorage size) in order."""
    units = []
    for u in range(0, len(kernels), per_tu):
        ks = kernels[u:u + per_tu]
        name = "unit%03d" % (u // per_tu)
        body = ['#include "%s"\n' % os.path.join(HERE, "kernels.cuh")]
        cases = []
        for k in ks:
            text, case = k.source()
            body.append(text)
            cases.append(case)
        body.append('extern "C" __global__ void %s_sizes(unsigned int* out) {\n' % name)
        for i, case in enumerate(cases):
            body.append("  out[%d] = %s::kSmem;\n" % (i, case))
        body.append("}\n")
        path = os.path.join(src_dir, name + ".cu")
        with open(path, "w") as f:
            f.write("".join(body))
        units.append((name, path, ks))
    return units


def build_units(units, build_dir, jobs):
    def one(unit):
        name, path, _ = unit
        cubin = os.path.join(build_dir, name + ".cubin")
        cmd = ["nvcc", "-cubin", "-std=c++17", "-O3", "-arch=sm_90", "-o", cubin, path]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("nvcc failed on %s:\n%s" % (path, p.stderr[-4000:]))
        return cubin

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        cubins = list(ex.map(one, units))
    print("built %d units (%d kernels) in %.1f s with %d jobs" %
          (len(units), sum(len(u[2]) for u in units), time.time() - t0, jobs), flush=True)
    return cubins


def nvrtc_check(units, count):
    """Compile the first `count` units with NVRTC to PTX (no nvcc needed)."""
    from cuda.bindings import nvrtc
    inc = ["-I/usr/local/cuda/include/cccl", "-I/usr/local/cuda/include"]
    for name, path, ks in units[:count]:
        src = open(path).read().encode()
        err, prog = nvrtc.nvrtcCreateProgram(src, path.encode(), 0, [], [])
        opts = [b"-arch=compute_90", b"-std=c++17"] + [x.encode() for x in inc]
        t0 = time.time()
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        err, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        nvrtc.nvrtcDestroyProgram(prog)
        if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            print("nvrtc-check: %s FAILED\n%s" % (path, log.decode(errors="replace")[-6000:]))
            return False
        print("nvrtc-check: %s ok (%d kernels, %.1f s)" % (name, len(ks), time.time() - t0),
              flush=True)
    return True


def git_describe():
    if os.environ.get("TUNING_COMMIT"):  # the suite was copied out of its checkout
        return os.environ["TUNING_COMMIT"]
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


class Gpu:
    """Buffers, module loading, launches and the checks, on CuPy."""

    def __init__(self, nbytes, check_bytes):
        import cupy as cp
        self.cp = cp
        self.nbytes, self.check_bytes = nbytes, check_bytes
        self.fill = cp.ElementwiseKernel(
            "uint32 seed, uint32 mask", "uint32 y",
            "unsigned int x = (unsigned int)i * 0x9E3779B9u + seed; x ^= x >> 16; "
            "x *= 0x85EBCA6Bu; x ^= x >> 13; x *= 0xC2B2AE35u; x ^= x >> 16; y = x & mask;",
            "tuning_fill")
        self.inp = cp.empty(nbytes, dtype=cp.uint8)
        self.samples16 = cp.empty(nbytes, dtype=cp.uint8)  # uint16 samples < 256
        self.out = cp.empty(nbytes, dtype=cp.uint8)
        self.histograms = cp.zeros(256 * 256, dtype=cp.uint32)
        self.refill(1)
        self.start, self.stop = cp.cuda.Event(), cp.cuda.Event()
        self.funcs = {}
        self.smem = {}
        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        self.device_name = name.decode() if isinstance(name, bytes) else name

    def refill(self, seed, upto=None):
        cp = self.cp
        n = (upto or self.nbytes) // 4
        self.fill(cp.uint32(seed), cp.uint32(0xFFFFFFFF), self.inp[:n * 4].view(cp.uint32))
        self.fill(cp.uint32(seed + 7), cp.uint32(0x00FF00FF),
                  self.samples16[:n * 4].view(cp.uint32))

    def load(self, units, cubins):
        cp = self.cp
        for (name, _, ks), cubin in zip(units, cubins):
            mod = cp.RawModule(path=cubin)
            sizes = cp.zeros(len(ks), dtype=cp.uint32)
            mod.get_function(name + "_sizes")((1,), (1,), (sizes,))
            for k, smem in zip(ks, cp.asnumpy(sizes).tolist()):
                fn = mod.get_function(k.name)
                if smem > 48 * 1024:
                    set_max_dynamic_smem(fn, smem)
                self.funcs[k.name], self.smem[k.name] = fn, int(smem)
            self.funcs["_mod_" + name] = mod  # keep the module alive

    def dtype(self, s):
        cp = self.cp
        return {1: cp.uint8, 2: cp.uint16, 4: cp.uint32, 8: cp.uint64}[s]

    def source(self, k):
        return self.samples16 if k.kind == "histogram" and k.dtype_size == 2 else self.inp

    def launch(self, k, grid, seed=12345):
        cp = self.cp
        if k.kind == "store":
            args = (self.out, cp.uint32(seed))
        elif k.kind == "histogram":
            args = (self.source(k), self.histograms)
        else:
            args = (self.inp, self.out)
        self.funcs[k.name]((grid,), (k.block,), args, shared_mem=self.smem[k.name])

    def grid(self, k):
        return self.nbytes // k.tile_bytes

    def moved_bytes(self, k):
        """The tile bytes a launch moves (docs/tuning.md): read for load/reduce/histogram,
        written for store, read + written for scan."""
        return self.grid(k) * k.tile_bytes * (2 if k.kind == "scan" else 1)

    def check(self, k, seed):
        """Launch k on the first check_bytes of fresh random data; compare with the reference."""
        cp = self.cp
        grid = max(1, min(self.grid(k), self.check_bytes // k.tile_bytes))
        n = grid * k.tile_items
        self.refill(seed, upto=((grid * k.tile_bytes + 3) // 4) * 4)
        self.out[:grid * k.tile_bytes].fill(0xA5)  # poison: an unwritten output shows
        self.histograms.fill(0)
        self.launch(k, grid, seed)
        cp.cuda.Device().synchronize()
        t = self.dtype(k.dtype_size)
        src = self.source(k)[:n * k.dtype_size].view(t)
        result = self.result(k, grid)
        return checks.check(cp, k.kind, k.alg, result, src, k.block, k.threads if FAMILIES[
            k.family]["warp"] else k.block, k.items, seed, t)

    def result(self, k, grid):
        cp = self.cp
        t = self.dtype(k.dtype_size)
        if k.kind == "histogram":
            return self.histograms
        count = {"load": grid * k.block, "store": grid * k.tile_items,
                 "scan": grid * k.tile_items, "reduce": grid}[k.kind]
        return self.out[:count * k.dtype_size].view(t)

    def time_cell(self, cell, repeats, warmup, rng):
        cp = self.cp
        ks = cell.kernels
        for k in ks:
            for _ in range(warmup):
                self.launch(k, self.grid(k))
        cp.cuda.Device().synchronize()
        ms = {k.name: [] for k in ks}
        order = list(ks)
        for _ in range(repeats):
            rng.shuffle(order)
            for k in order:
                self.start.record()
                self.launch(k, self.grid(k))
                self.stop.record()
                self.stop.synchronize()
                ms[k.name].append(cp.cuda.get_elapsed_time(self.start, self.stop))
        return ms


def set_max_dynamic_smem(fn, nbytes):
    """Allow a kernel more than 48 KiB of dynamic shared memory (CuPy's RawKernel attribute for
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)."""
    fn.max_dynamic_shared_size_bytes = nbytes


def summarize(ms, moved):
    gbps = [moved / (t * 1e6) for t in ms]
    return {"median_gbps": round(statistics.median(gbps), 1), "min_gbps": round(min(gbps), 1),
            "max_gbps": round(max(gbps), 1), "n": len(gbps),
            "median_ms": round(statistics.median(ms), 5)}


def cell_record(cell, measured):
    f = FAMILIES[cell.family]
    elig = [k.alg for k in cell.kernels if k.alg in f["eligible"]]
    choice = max(elig, key=lambda a: measured[a]["median_gbps"])
    return {"family": cell.family, "method": f["method"], "dtype_size": cell.dtype_size,
            "threads": cell.threads, "items_per_thread": cell.items, "choice": choice,
            "baseline": f["baseline"],
            "measured": {a: measured[a] for a in elig},
            "info": {k.alg: measured[k.alg] for k in cell.kernels if k.alg not in elig}}


def self_test(gpu, cells, units, cubins):
    """Every check must catch a deliberately wrong result: one flipped output element, and the
    striped kernel's output judged as blocked (load and store)."""
    cp = gpu.cp
    gpu.load(units, cubins)
    failures = 0
    for cell in cells:
        k = cell.kernels[0]
        ok, why = gpu.check(k, seed=99)
        if not ok:
            print("self-test: %s: the right result was rejected: %s" % (k.name, why))
            failures += 1
            continue
        grid = max(1, min(gpu.grid(k), gpu.check_bytes // k.tile_bytes))
        res = gpu.result(k, grid)
        res[res.size // 2] += 1  # one wrong element
        t = gpu.dtype(k.dtype_size)
        n = grid * k.tile_items
        src = gpu.source(k)[:n * k.dtype_size].view(t)
        group = k.threads if FAMILIES[k.family]["warp"] else k.block
        ok, why = checks.check(cp, k.kind, k.alg, res, src, k.block, group, k.items, 99, t)
        print("self-test: %s with one wrong element: %s" % (k.name, "caught: " + why if not ok
                                                             else "NOT CAUGHT"))
        failures += ok
        striped = [x for x in cell.kernels if x.alg == "striped"]
        if striped and k.kind == "load" and cell.items > 1:
            s = striped[0]
            gpu.check(s, seed=98)  # leaves the striped kernel's output in gpu.out
            res = gpu.result(s, grid)
            src = gpu.source(s)[:n * s.dtype_size].view(t)
            ok, why = checks.check(cp, s.kind, "direct", res, src, s.block, group, s.items, 98, t)
            print("self-test: %s judged as blocked: %s" % (s.name, "caught: " + why if not ok
                                                           else "NOT CAUGHT"))
            failures += ok
    return failures == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run-id", default="dry")
    ap.add_argument("--out", default=None, help="folder for <run-id>.json")
    ap.add_argument("--families")
    ap.add_argument("--dtype-sizes")
    ap.add_argument("--threads")
    ap.add_argument("--items")
    ap.add_argument("--cells", help="a JSON file {\"cells\": [{family, dtype_size, threads, "
                    "items_per_thread}]} to measure instead of the grid")
    ap.add_argument("--bytes", type=int, default=1 << 30, help="data per launch (default 1 GiB)")
    ap.add_argument("--check-bytes", type=int, default=32 << 20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1, help="the interleaving order's seed")
    ap.add_argument("--per-tu", type=int, default=24)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--work", help="build folder (default: a temporary one)")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--nvrtc-check", type=int, default=0, metavar="N")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.repeats < 1 or a.bytes < 1 << 20:
        ap.error("--repeats must be >= 1 and --bytes >= 1 MiB")

    try:
        cells = plan_cells(a)
    except ValueError as e:
        ap.error(str(e))
    if not cells:
        ap.error("no cells selected: --families/--dtype-sizes/--threads/--items pick from the "
                 "contract's grid (families.py); use --cells for other shapes")
    kernels = [k for c in cells for k in c.kernels]
    work = a.work or tempfile.mkdtemp(prefix="tuning-")
    os.makedirs(work, exist_ok=True)
    units = render_units(kernels, a.per_tu, work)
    print("plan: %d cells, %d kernels, %d units in %s" % (len(cells), len(kernels), len(units),
                                                          work), flush=True)
    if a.dry_run:
        for c in cells[:3]:
            print("  %s S=%d T=%d N=%d: %s" % (c.family, c.dtype_size, c.threads, c.items,
                                              ", ".join(k.alg for k in c.kernels)))
        if a.nvrtc_check and not nvrtc_check(units, a.nvrtc_check):
            return 1
        return 0

    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    cubins = build_units(units, work, a.jobs)
    gpu = Gpu(a.bytes, a.check_bytes)
    if a.self_test:
        ok = self_test(gpu, cells, units, cubins)
        print("self-test: %s" % ("PASS" if ok else "FAIL"))
        return 0 if ok else 1
    gpu.load(units, cubins)
    rng = random.Random(a.seed)
    records, wrong = [], []
    t0 = time.time()
    for i, cell in enumerate(cells):
        for k in cell.kernels:
            ok, why = gpu.check(k, seed=1000 + i)
            if not ok:
                wrong.append("%s: %s" % (k.name, why))
                print("WRONG %s: %s" % (k.name, why), flush=True)
        ms = gpu.time_cell(cell, a.repeats, a.warmup, rng)
        measured = {k.alg: summarize(ms[k.name], gpu.moved_bytes(k)) for k in cell.kernels}
        rec = cell_record(cell, measured)
        records.append(rec)
        base = rec["measured"][rec["baseline"]]["median_gbps"]
        best = rec["measured"][rec["choice"]]["median_gbps"]
        print("cell %s S=%d T=%d N=%d: %s %.0f GB/s, baseline %s %.0f (x%.2f) [%.0fs]" %
              (cell.family, cell.dtype_size, cell.threads, cell.items, rec["choice"], best,
               rec["baseline"], base, best / base, time.time() - t0), flush=True)
    doc = {
        "run": a.run_id,
        "started": started,
        "command": "device/tuning/run.py " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
        "commit": git_describe(),
        "device": gpu.device_name,
        "toolchain": toolchain(),
        "bytes_per_launch": a.bytes,
        "repeats": a.repeats,
        "warmup": a.warmup,
        "seed": a.seed,
        "wrong": wrong,
        "cells": records,
    }
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, a.run_id + ".json")
        with open(path, "w") as f:
            dump_json(doc, f)
        print("wrote %s (%d cells, %.0f s)" % (path, len(records), time.time() - t0))
    if wrong:
        print("FAIL: %d kernels gave wrong results" % len(wrong))
        return 1
    return 0


def toolchain():
    cuda = "CUDA ?"
    try:
        v = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
        m = re.search(r"release ([0-9.]+), (V[0-9.]+)", v)
        if m:
            cuda = "CUDA %s (nvcc %s)" % m.groups()
    except OSError:
        pass
    ver = "?"
    hdr = "/usr/local/cuda/include/cccl/cuda/std/__cccl/version.h"
    if os.path.exists(hdr):
        for line in open(hdr):
            if line.startswith("#define CCCL_VERSION "):
                n = int(line.split()[2])
                ver = "%d.%d.%d" % (n // 1000000, n // 1000 % 1000, n % 1000)
    return "%s, CCCL %s, nvcc -O3 -arch=sm_90" % (cuda, ver)


if __name__ == "__main__":
    sys.exit(main())
