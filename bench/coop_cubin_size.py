"""What nvJitLink's -optimize-unused-variables, which numba-cuda's linker does not pass, would
change for kernels that call coopd.coop primitives: cubin size, link time and nvdisasm time,
side by side in one run. No GPU needed (kernels are compiled for sm_90 and linked, not run).

    python3 bench/coop_cubin_size.py [--socket PATH] [--reps N]

Starts a coopd of its own on a temporary socket unless --socket names a running one (COOPD_BIN
or build/server/coopd). nvdisasm comes from PATH or from the SASS tools deploy/install-deps.sh
fetches. Prints one row per kernel and link option: medians over N links (default 5)."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
os.environ.setdefault("COOPD_ARCH", "sm_90")

import numba  # noqa: E402
from numba import cuda  # noqa: E402

import coopd  # noqa: E402
import coopd.numba as cn  # noqa: E402
from coopd.coop import block  # noqa: E402


def nvdisasm() -> str:
    tools = os.path.join(ROOT, ".deps", "nvidia-cuda-sass-tools-13.2.51", "nvidia", "cu13", "bin",
                         "nvdisasm")
    found = shutil.which("nvdisasm") or (tools if os.access(tools, os.X_OK) else None)
    if not found:
        sys.exit("coop_cubin_size: no nvdisasm (deploy/install-deps.sh fetches one)")
    return found


def kernels():
    load = block.make_load(numba.int32, 128, 4, "transpose")
    store = block.make_store(numba.int32, 128, 4, "transpose")

    def load_store(a, b):
        t = cuda.local.array(4, numba.int32)
        load(a, t)
        store(b, t)

    def py_max(a, b):
        return a if a > b else b

    reduce = block.make_reduce(numba.float32, 128, py_max)

    def reduce_max(a, b):
        b[0] = reduce(a[cuda.threadIdx.x])

    sort = block.make_radix_sort_keys(numba.int32, 128, 4)

    def radix_sort(a, b):
        t = cuda.local.array(4, numba.int32)
        for i in range(4):
            t[i] = a[cuda.threadIdx.x * 4 + i]
        sort(t)
        for i in range(4):
            b[cuda.threadIdx.x * 4 + i] = t[i]

    return [("block load+store, transpose", load_store, "void(int32[::1], int32[::1])"),
            ("block reduce, Python max", reduce_max, "void(float32[::1], float32[::1])"),
            ("block radix sort, 4 keys", radix_sort, "void(int32[::1], int32[::1])")]


def measure(socket: str, reps: int) -> None:
    cn.set_client(coopd.Client(socket))
    disasm = nvdisasm()
    print(f"{'kernel':30s} {'link options':30s} {'cubin':>9s} {'link ms':>8s} {'nvdisasm ms':>12s}")
    for name, kernel, sig in kernels():
        for options in ((), ("-optimize-unused-variables",)):
            links, disasms = [], []
            for _ in range(reps):
                t0 = time.perf_counter()
                cubin = cn.link_to_cubin(kernel, sig, "sm_90", options=options)
                links.append(time.perf_counter() - t0)
                with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                    f.write(cubin)
                    f.flush()
                    t0 = time.perf_counter()
                    subprocess.run([disasm, "-gi", f.name], capture_output=True, check=True)
                    disasms.append(time.perf_counter() - t0)
            shown = " ".join(options) or "(numba-cuda's: none)"
            print(f"{name:30s} {shown:30s} {len(cubin):7d} B {1e3 * statistics.median(links):8.0f} "
                  f"{1e3 * statistics.median(disasms):12.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="a running coopd's socket (default: start one)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    if args.socket:
        measure(args.socket, args.reps)
        return 0
    binary = os.environ.get("COOPD_BIN") or os.path.join(ROOT, "build", "server", "coopd")
    with tempfile.TemporaryDirectory(prefix="coopd-cubin-size-") as d:
        sock = os.path.join(d, "coopd.sock")
        with open(os.path.join(d, "coopd.log"), "wb") as log:
            proc = subprocess.Popen([binary, "--socket", sock, "--cache-dir",
                                     os.path.join(d, "cache")], stdout=log, stderr=log)
        try:
            for _ in range(300):
                if os.path.exists(sock):
                    break
                time.sleep(0.1)
            measure(sock, args.reps)
        finally:
            proc.terminate()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
