#!/usr/bin/env python3
"""Does `auto`'s choice hold for coopd's own artifacts? (issue 18). The tuning suite (run.py)
timed nvcc-compiled kernels with CUB compiled in; coopd serves NVRTC LTO-IR that a frontend links
with nvJitLink. This times the suite's micro-kernels with the primitive taken from coopd's
artifacts instead.

usage: linked_check.py ARTIFACTS_DIR [--out FILE.json] [--table sm_90.json] [--native]
                       [--bytes N] [--repeats 15] [--warmup 2] [--seed 1] [--jobs N]
                       [--work DIR] [--dry-run] [--self-test]

ARTIFACTS_DIR holds linked_artifacts.py's manifest.json and LTO-IR files. Per cell it renders one
translation unit with one kernel per artifact: kernels.cuh's kernel for the family, but calling
the artifact's extern "C" entry (declared from the artifact's own declaration) with its temp
storage in dynamic shared memory of the artifact's size (alignment at most 16, checked); compiles
it with NVRTC (-dlto -rdc=true -arch=sm_90) and links it with the cell's artifacts by nvJitLink
-lto into one cubin. On the GPU (CuPy) it checks every kernel's output against the reference
(checks.py; a wrong result fails the run, exit status 1), then times them interleaved: --repeats
rounds in a fresh shuffled order, one launch of each per round over --bytes of data, median with
min/max. --native adds the suite's own nvcc kernels for the same cells to the same rounds.
Per cell it prints and records auto's choice and reason, the linked best, auto/best and
auto/default (throughput ratios: auto/best 0.98 is 2% slower than the best) and the table's figures.

--dry-run builds every cubin and stops (no GPU needed). --self-test checks each cell's first
kernel on the GPU, then plants a wrong result (one element changed) and fails unless the check
catches it.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import random
import shlex
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402
from families import FAMILIES, WARP_BLOCK_THREADS, dump_json  # noqa: E402

DEFAULT_TABLE = os.path.join(HERE, "..", "..", "server", "catalog", "tuning", "sm_90.json")
HISTOGRAM_COUNTERS_BYTES = 256 * 4  # kernels.cuh's kCounters


class LinkedKernel(run.Kernel):
    """A suite kernel whose primitive is a coopd artifact's entry."""

    def __init__(self, art):
        super().__init__(art["family"], art["dtype_size"], art["threads"],
                         art["items_per_thread"], art["algorithm"])
        self.art = art
        self.name = "linked_" + self.name
        if art["temp_align"] > 16:
            raise ValueError("%s: temp_align must be <= 16 (the kernel's shared memory is "
                             "16-byte aligned), got %d" % (art["symbol"], art["temp_align"]))

    def smem_expr(self):
        """Dynamic shared memory the kernel needs, as a C++ constant expression."""
        b, al = self.art["temp_bytes"], self.art["temp_align"]
        if FAMILIES[self.family]["warp"]:
            stride = (b + al - 1) // al * al
            return "%du" % (WARP_BLOCK_THREADS // self.threads * stride)
        if self.kind == "histogram":
            return "%du" % (HISTOGRAM_COUNTERS_BYTES + b)
        if self.kind == "scan":
            io = self.name + "_io"
            return ("smax(smax(sizeof(%s::Load::TempStorage), sizeof(%s::Store::TempStorage)), "
                    "%du)" % (io, io, b))
        return "%du" % max(b, 1)

    def source(self):
        a, T, B, N = self.art, run.UTYPE[self.dtype_size], self.block, self.items
        sym = a["symbol"]
        tile = "static_cast<unsigned long long>(blockIdx.x) * %d * %d" % (B, N)
        pre = [a["declaration"]]
        params = run.KIND_PARAMS[self.kind]
        body = ["  using T = %s;" % T]
        if self.kind in ("load", "scan", "reduce"):
            body.append("  const T* in = static_cast<const T*>(in_);")
            body.append("  T* out = static_cast<T*>(out_);")
        if self.kind == "store":
            body.append("  T* out = static_cast<T*>(out_);")
        if self.kind == "histogram":
            body.append("  const T* in = static_cast<const T*>(in_);")
        params = params.replace("void* in", "void* in_").replace("void* out", "void* out_")
        if FAMILIES[self.family]["warp"]:
            W = self.threads
            stride = (a["temp_bytes"] + a["temp_align"] - 1) // a["temp_align"] * a["temp_align"]
            body.append("  const int warp = threadIdx.x / %d, lane = threadIdx.x %% %d;" % (W, W))
            body.append("  const unsigned long long tile = (static_cast<unsigned long long>("
                        "blockIdx.x) * %d + warp * %d) * %d;" % (B, W, N))
            body.append("  void* temp = tuning::smem + warp * %d;" % stride)
            idx = "lane"
        else:
            body.append("  const unsigned long long tile = %s;" % tile)
            off = HISTOGRAM_COUNTERS_BYTES if self.kind == "histogram" else 0
            body.append("  void* temp = tuning::smem + %d;" % off)
            idx = "threadIdx.x"
        body.append("  T items[%d];" % N)
        if self.kind == "load":
            body.append("  %s(temp, in + tile, items);" % sym)
            body.append("  out[static_cast<unsigned long long>(blockIdx.x) * %d + threadIdx.x] = "
                        "tuning::Fold(items);" % B)
        elif self.kind == "store":
            body.append("#pragma unroll\n  for (int i = 0; i < %d; ++i) items[i] = "
                        "tuning::StoreValue<T>(static_cast<unsigned int>(tile + %s * %d + i), "
                        "seed);" % (N, idx, N))
            body.append("  %s(temp, out + tile, items);" % sym)
        elif self.kind == "scan":
            io = self.name + "_io"
            pre.append("struct %s {\n  using Load = cub::BlockLoad<%s, %d, %d, "
                       "cub::BLOCK_LOAD_WARP_TRANSPOSE>;\n  using Store = cub::BlockStore<%s, %d, "
                       "%d, cub::BLOCK_STORE_WARP_TRANSPOSE>;\n};" % (io, T, B, N, T, B, N))
            body.append("  T sums[%d];" % N)
            body.append("  %s::Load(*reinterpret_cast<%s::Load::TempStorage*>(tuning::smem))"
                        ".Load(in + tile, items);" % (io, io))
            body.append("  __syncthreads();")
            if "* input" in a["declaration"]:
                body.append("  %s(temp, items, sums);" % sym)
            else:  # one item per thread: the entry takes and returns the value
                body.append("  sums[0] = %s(temp, items[0]);" % sym)
            body.append("  __syncthreads();")
            body.append("  %s::Store(*reinterpret_cast<%s::Store::TempStorage*>(tuning::smem))"
                        ".Store(out + tile, sums);" % (io, io))
        elif self.kind == "reduce":
            body.append("  cub::LoadDirectBlockedVectorized(threadIdx.x, const_cast<T*>(in + tile),"
                        " items);")
            body.append("  const T sum = %s(temp, items%s);" % (
                sym, "" if "* input" in a["declaration"] else "[0]"))
            body.append("  if (threadIdx.x == 0) out[blockIdx.x] = sum;")
        elif self.kind == "histogram":
            body.append("  unsigned int* counters = reinterpret_cast<unsigned int*>(tuning::smem);")
            body.append("  cub::LoadDirectBlockedVectorized(threadIdx.x, const_cast<T*>(in + tile),"
                        " items);")
            body.append("  %s(temp, items, counters);" % sym)
            body.append("  __syncthreads();")
            body.append("  unsigned int* global = histograms + (blockIdx.x %% %d) * 256;" % 256)
            body.append("  for (int b = threadIdx.x; b < 256; b += %d) {\n    const unsigned int "
                        "c = counters[b];\n    if (c != 0) atomicAdd(global + b, c);\n  }" % B)
        return "\n".join(pre) + '\nextern "C" __global__ void __launch_bounds__(%d) %s(%s) {\n' % (
            B, self.name, params) + "\n".join(body) + "\n}\n"


def render_cell(cell, kernels, work):
    text = ['#include "%s"\n' % os.path.join(HERE, "kernels.cuh"),
            "__host__ __device__ constexpr unsigned int smax(unsigned int a, unsigned int b) {\n"
            "  return a > b ? a : b;\n}\n"]
    text += [k.source() for k in kernels]
    text.append('extern "C" __global__ void %s_sizes(unsigned int* out) {\n' % cell)
    text += ["  out[%d] = %s;\n" % (i, k.smem_expr()) for i, k in enumerate(kernels)]
    text.append("}\n")
    path = os.path.join(work, cell + ".cu")
    with open(path, "w") as f:
        f.write("".join(text))
    return path


def build_cell(job):
    """NVRTC the cell's unit to LTO-IR, nvJitLink it with the artifacts; returns cubin path."""
    from cuda.bindings import nvjitlink, nvrtc
    cell, src_path, ltoirs, work = job
    src = open(src_path, "rb").read()
    err, prog = nvrtc.nvrtcCreateProgram(src, src_path.encode(), 0, [], [])
    opts = [b"-arch=sm_90", b"-std=c++17", b"-dlto", b"-rdc=true",
            b"-I/usr/local/cuda/include/cccl", b"-I/usr/local/cuda/include"]
    t0 = time.time()
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    err, n = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * n
    nvrtc.nvrtcGetProgramLog(prog, log)
    if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError("nvrtc failed on %s:\n%s" % (
            src_path, log.decode(errors="replace")[-6000:]))
    err, n = nvrtc.nvrtcGetLTOIRSize(prog)
    kernel_ir = b" " * n
    nvrtc.nvrtcGetLTOIR(prog, kernel_ir)
    nvrtc.nvrtcDestroyProgram(prog)
    t1 = time.time()
    h = nvjitlink.create(2, ["-lto", "-arch=sm_90"])
    try:
        nvjitlink.add_data(h, nvjitlink.InputType.LTOIR, kernel_ir, len(kernel_ir), cell)
        for path in ltoirs:
            data = open(path, "rb").read()
            nvjitlink.add_data(h, nvjitlink.InputType.LTOIR, data, len(data),
                               os.path.basename(path))
        try:
            nvjitlink.complete(h)
        except nvjitlink.nvJitLinkError as e:
            size = nvjitlink.get_error_log_size(h)
            buf = bytearray(size)
            nvjitlink.get_error_log(h, buf)
            raise RuntimeError("nvJitLink failed on %s: %s\n%s" % (cell, e, buf.decode(
                errors="replace")))
        size = nvjitlink.get_linked_cubin_size(h)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(h, cubin)
    finally:
        nvjitlink.destroy(h)
    out = os.path.join(work, cell + ".cubin")
    with open(out, "wb") as f:
        f.write(cubin)
    return out, round(t1 - t0, 2), round(time.time() - t1, 2)


class Plan:
    """The manifest grouped by cell: the concrete artifacts (one kernel each) and auto's."""

    def __init__(self, adir):
        with open(os.path.join(adir, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.cells = {}
        for art in self.manifest["artifacts"]:
            c = self.cells.setdefault(art["cell"], {"auto": None, "arts": []})
            art = dict(art, ltoir=os.path.join(adir, art["ltoir"]))
            if art["requested"] == "auto":
                c["auto"] = art
            else:
                c["arts"].append(art)
        for name, c in self.cells.items():
            if c["auto"] is None:
                raise ValueError("manifest: cell %s has no auto artifact" % name)
            same = [x for x in c["arts"] if x["algorithm"] == c["auto"]["algorithm"]]
            if len(same) != 1:
                raise ValueError("manifest: cell %s: auto chose %r, which has no artifact of its "
                                 "own" % (name, c["auto"]["algorithm"]))
            # auto resolves before the key: the same cache entry and the same bytes
            c["auto_same_entry"] = (same[0]["key"] == c["auto"]["key"] and open(
                same[0]["ltoir"], "rb").read() == open(c["auto"]["ltoir"], "rb").read())
            c["kernels"] = [LinkedKernel(x) for x in c["arts"]]


def table_cells(path):
    with open(path) as f:
        t = json.load(f)
    return t.get("version", "?"), {"%s_s%d_t%d_n%d" % (c["family"], c["dtype_size"], c["threads"],
                                                       c["items_per_thread"]): c
                                   for c in t["cells"]}


class TimedCell:
    def __init__(self, kernels):
        self.kernels = kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("artifacts")
    ap.add_argument("--out")
    ap.add_argument("--table", default=DEFAULT_TABLE)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--bytes", type=int, default=1 << 30)
    ap.add_argument("--check-bytes", type=int, default=32 << 20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--work")
    ap.add_argument("--cubins", help="use DIR/<cell>.cubin from an earlier --dry-run --work DIR "
                    "instead of building")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.repeats < 15 and not (a.dry_run or a.self_test):
        ap.error("--repeats must be >= 15, got %d" % a.repeats)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    plan = Plan(a.artifacts)
    version, table = table_cells(a.table)
    work = a.work or __import__("tempfile").mkdtemp(prefix="linked-")
    os.makedirs(work, exist_ok=True)
    jobs = []
    for name, c in plan.cells.items():
        src = render_cell(name, c["kernels"], work)
        jobs.append((name, src, [k.art["ltoir"] for k in c["kernels"]], work))
    t0 = time.time()
    if a.cubins:
        built = {name: (os.path.join(a.cubins, name + ".cubin"), 0.0, 0.0) for name in plan.cells}
    else:
        with concurrent.futures.ProcessPoolExecutor(max(1, min(a.jobs, len(jobs)))) as ex:
            built = dict(zip(plan.cells, ex.map(build_cell, jobs)))
    for name, (cubin, nvrtc_s, link_s) in built.items():
        print("built %s: nvrtc %.2f s, nvJitLink %.2f s, %d bytes" % (
            name, nvrtc_s, link_s, os.path.getsize(cubin)), flush=True)
    from cuda.bindings import nvjitlink, nvrtc
    linker = "NVRTC %d.%d, nvJitLink %d.%d%s" % (nvrtc.nvrtcVersion()[1:] + nvjitlink.version() + (
        " (prebuilt cubins from %s)" % a.cubins if a.cubins else "",))
    print("built %d cubins in %.1f s (%s)" % (len(built), time.time() - t0, linker), flush=True)
    native = {}
    if a.native:
        ncells = [run.Cell(c["kernels"][0].family, c["kernels"][0].dtype_size,
                           c["kernels"][0].threads, c["kernels"][0].items)
                  for c in plan.cells.values()]
        for nc, c in zip(ncells, plan.cells.values()):
            algs = {k.alg for k in c["kernels"]}
            nc.kernels = [k for k in nc.kernels if k.alg in algs]
        nkernels = [k for nc in ncells for k in nc.kernels]
        units = run.render_units(nkernels, 4, work)
        ncubins = run.build_units(units, work, a.jobs)
        native = {name: nc for name, nc in zip(plan.cells, ncells)}
    if a.dry_run:
        return 0

    gpu = run.Gpu(a.bytes, a.check_bytes)
    # run.py's units are (name, source, kernels) with a <name>_sizes kernel: so are the cells'
    lunits = [(name, src, plan.cells[name]["kernels"]) for name, src, _, _ in jobs]
    lcubins = [built[name][0] for name, _, _ in lunits]
    if a.self_test:
        ok = run.self_test(gpu, [TimedCell(u[2]) for u in lunits], lunits, lcubins)
        print("self-test: %s" % ("PASS" if ok else "FAIL"))
        return 0 if ok else 1
    gpu.load(lunits, lcubins)
    if a.native:
        gpu.load(units, ncubins)

    rng = random.Random(a.seed)
    records, wrong = [], []
    t0 = time.time()
    for i, (name, c) in enumerate(plan.cells.items()):
        ks = list(c["kernels"]) + (native[name].kernels if a.native else [])
        for k in ks:
            ok, why = gpu.check(k, seed=2000 + i)
            if not ok:
                wrong.append("%s: %s" % (k.name, why))
                print("WRONG %s: %s" % (k.name, why), flush=True)
        ms = gpu.time_cell(TimedCell(ks), a.repeats, a.warmup, rng)
        linked = {k.alg: run.summarize(ms[k.name], gpu.moved_bytes(k)) for k in c["kernels"]}
        nat = ({k.alg: run.summarize(ms[k.name], gpu.moved_bytes(k))
                for k in native[name].kernels} if a.native else {})
        fam = c["kernels"][0].family
        base = FAMILIES[fam]["baseline"]
        auto = c["auto"]["algorithm"]
        best = max(linked, key=lambda x: linked[x]["median_gbps"])
        g = lambda d, x: d[x]["median_gbps"]  # noqa: E731
        tc = table.get(name)
        rec = {"cell": name, "family": fam, "dtype_size": c["kernels"][0].dtype_size,
               "threads": c["kernels"][0].threads, "items_per_thread": c["kernels"][0].items,
               "auto": auto, "reason": c["auto"]["reason"], "auto_same_entry": c["auto_same_entry"],
               "default": base, "linked_best": best,
               "auto_over_best": round(g(linked, auto) / g(linked, best), 4),
               "auto_over_default": round(g(linked, auto) / g(linked, base), 4),
               "linked": linked,
               "artifacts": {k.alg: {"symbol": k.art["symbol"], "key": k.art["key"],
                                     "temp_bytes": k.art["temp_bytes"],
                                     "temp_align": k.art["temp_align"]} for k in c["kernels"]}}
        if tc:
            tm = tc["measured"]
            rec["table"] = {"choice": tc["choice"], "run": tc.get("run"),
                            "gbps": {x: tm[x]["median_gbps"] for x in tm},
                            "auto_over_default": round(g(tm, tc["choice"]) / g(tm, base), 4)}
        if nat:
            nbest = max(nat, key=lambda x: nat[x]["median_gbps"])
            rec["native"] = nat
            rec["native_best"] = nbest
            rec["linked_over_native"] = {x: round(g(linked, x) / g(nat, x), 4) for x in nat}
        records.append(rec)
        print("cell %s: auto %s %.0f GB/s; linked best %s %.0f; auto/best %.3f; default %s %.0f, "
              "auto/default %.2f; table: %s, auto/default %s%s [%.0fs]" % (
                  name, auto, g(linked, auto), best, g(linked, best), rec["auto_over_best"], base,
                  g(linked, base), rec["auto_over_default"], tc["choice"] if tc else "-",
                  rec["table"]["auto_over_default"] if tc else "-",
                  "; native best %s, linked/native %s" % (rec["native_best"], " ".join(
                      "%s %.3f" % kv for kv in rec["linked_over_native"].items())) if nat else "",
                  time.time() - t0), flush=True)
    worst = min(r["auto_over_best"] for r in records)
    print("auto/best over %d cells: worst %.4f; cells where auto is more than 2%% below the "
          "linked best: %s" % (len(records), worst, ", ".join(
              r["cell"] for r in records if r["auto_over_best"] < 0.98) or "none"))
    doc = {"run": "linked", "started": started,
           "command": "device/tuning/linked_check.py " + " ".join(
               shlex.quote(x) for x in sys.argv[1:]),
           "commit": run.git_describe(), "device": gpu.device_name,
           "toolchain": plan.manifest.get("toolchain"), "linker": linker, "table_version": version,
           "bytes_per_launch": a.bytes, "repeats": a.repeats, "warmup": a.warmup, "seed": a.seed,
           "worst_auto_over_best": worst, "wrong": wrong, "cells": records}
    if a.out:
        with open(a.out, "w") as f:
            dump_json(doc, f)
        print("wrote %s" % a.out)
    if wrong:
        print("FAIL: %d kernels gave wrong results" % len(wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
