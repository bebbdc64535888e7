#!/usr/bin/env python3
"""The radix-sort gap (issue 17 item 4), on the GPU machine: is the linked BlockRadixSort kernel's
1.7-1.8% over nvcc's native one coopd's doing, or NVRTC's?

usage: run.py WRAPPER.ltoir SYMBOL [--rounds N] [--keys LOG2]
Builds three cubins of the same kernel (sort_kernel.cuh) for sm_90:
  nvcc-native   CUB compiled in by nvcc -O3 (as the GPU suite's native kernels are)
  nvrtc-native  CUB compiled in by NVRTC, whole program: no coopd, no LTO
  linked        the kernel's LTO-IR linked with coopd's artifact by nvJitLink -lto
then checks that each sorts every tile, times them interleaved (rounds in a shuffled order, each
round 20 launches after 2 warm-ups, on 2^LOG2 keys), and prints the median ms per launch with the
spread, the ratios, and the SASS of each (instruction counts, and whether two are identical).
Needs nvcc, g++, cuobjdump, CuPy and an sm_90 GPU. WRAPPER.ltoir comes from coopd:
  coopctl specialize block_radix_sort --method sort --dtype uint32 --threads 128 --items 4 \\
      --arch sm_90 --out DIR
"""
import argparse
import collections
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*cmd):
    subprocess.run(cmd, check=True)


def sass(cubin):
    text = subprocess.run(["cuobjdump", "-sass", cubin], check=True, capture_output=True,
                          text=True).stdout
    lines = []
    for line in text.splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m:
            lines.append(re.sub(r"\s+", " ", m.group(1)).strip())
    return lines


def opcodes(lines):
    c = collections.Counter()
    for ins in lines:
        op = re.sub(r"^@!?U?P\w+\s+", "", ins).split(" ")[0].split(".")[0]
        c[op] += 1
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wrapper")
    ap.add_argument("symbol")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--keys", type=int, default=27)
    a = ap.parse_args()
    import cupy as cp

    work = tempfile.mkdtemp(prefix="radix-gap-")
    tool = os.path.join(work, "cubins")
    sh("g++", "-O2", "-std=c++17", "-o", tool, os.path.join(HERE, "cubins.cc"),
       "-I/usr/local/cuda/include", "-L/usr/local/cuda/lib64", "-lnvrtc", "-lnvJitLink",
       "-Wl,-rpath,/usr/local/cuda/lib64")
    header = os.path.join(HERE, "sort_kernel.cuh")
    src = os.path.join(work, "sort.cu")
    with open(src, "w") as f:
        f.write('#include "%s"\n' % header)
    cubins = {
        "nvcc-native": os.path.join(work, "nvcc.cubin"),
        "nvrtc-native": os.path.join(work, "nvrtc.cubin"),
        "linked": os.path.join(work, "linked.cubin"),
    }
    sh("nvcc", "-cubin", "-std=c++17", "-O3", "-arch=sm_90", "-lineinfo", "-o",
       cubins["nvcc-native"], src)
    sh(tool, "nvrtc-native", header, cubins["nvrtc-native"])
    sh(tool, "linked", header, a.wrapper, a.symbol, cubins["linked"])

    print("== SASS (cuobjdump -sass)")
    code = {name: sass(path) for name, path in cubins.items()}
    for name, lines in code.items():
        ops = opcodes(lines)
        mix = ", ".join("%s %d" % (k, ops[k]) for k in
                        ("S2R", "S2UR", "IMAD", "LOP3", "SHF", "LDS", "STS", "BAR", "LDG", "STG"))
        print("%-13s %4d instructions; %s" % (name, len(lines), mix))
    for x, y in (("nvrtc-native", "linked"), ("nvcc-native", "nvrtc-native")):
        same = code[x] == code[y]
        diff = sum(1 for p, q in zip(code[x], code[y]) if p != q) + abs(len(code[x]) - len(code[y]))
        print("%s vs %s: %s" % (x, y, "identical instruction for instruction" if same else
                                "%d of %d instructions differ" % (diff, max(len(code[x]), len(code[y])))))
    ox, oy = opcodes(code["nvcc-native"]), opcodes(code["nvrtc-native"])
    print("opcodes nvcc-native vs nvrtc-native that differ: " + ", ".join(
        "%s %d/%d" % (k, ox[k], oy[k]) for k in sorted(set(ox) | set(oy)) if ox[k] != oy[k]))

    n = 1 << a.keys
    tile = 128 * 4
    grid = n // tile
    rng = cp.random.default_rng(1)
    keys = rng.integers(0, 2**32, size=n, dtype=cp.uint64).astype(cp.uint32)
    out = cp.empty_like(keys)
    want = cp.sort(keys.reshape(grid, tile), axis=1).reshape(n)
    fns = {}
    print("== correctness (%d tiles of %d keys)" % (grid, tile))
    for name, path in cubins.items():
        fns[name] = cp.RawModule(path=path).get_function("bench_sort")
        out.fill(0)
        fns[name]((grid,), (128,), (keys, out))
        cp.cuda.Device().synchronize()
        ok = bool(cp.array_equal(out, want))
        print("%-13s %s" % (name, "every tile sorted" if ok else "WRONG"))
        if not ok:
            return 1

    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = {name: [] for name in cubins}
    order = list(cubins)
    for r in range(a.rounds):
        random.Random(r).shuffle(order)
        for name in order:
            for _ in range(2):
                fns[name]((grid,), (128,), (keys, out))
            start.record()
            for _ in range(20):
                fns[name]((grid,), (128,), (keys, out))
            stop.record()
            stop.synchronize()
            times[name].append(cp.cuda.get_elapsed_time(start, stop) / 20)
    print("== timing: median ms per launch over %d interleaved rounds (min-max), %d keys" %
          (a.rounds, n))
    med = {k: statistics.median(v) for k, v in times.items()}
    for name in cubins:
        v = times[name]
        print("%-13s %.4f (%.4f-%.4f)  %.0f GB/s" % (name, med[name], min(v), max(v),
                                                   2 * 4 * n / med[name] / 1e6))
    print("linked / nvrtc-native = %.4f" % (med["linked"] / med["nvrtc-native"]))
    print("linked / nvcc-native  = %.4f" % (med["linked"] / med["nvcc-native"]))
    print("nvrtc-native / nvcc-native = %.4f" % (med["nvrtc-native"] / med["nvcc-native"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
