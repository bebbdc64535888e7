#!/usr/bin/env python3
"""Fetch coopd's own artifacts for linked_check.py (issue 18: does `auto`'s choice hold for what
coopd serves?). Runs on a machine with coopd and coopctl; needs no GPU.

usage: linked_artifacts.py --coopctl PATH --socket SOCK --out DIR [--cells FILE]

For each cell (family, dtype size, threads, items per thread; the built-in SAMPLE unless --cells
names a JSON {"cells": [...]} like run.py's) it asks coopd, with `coopctl specialize --json --out`,
for the `auto` artifact and for the artifact of every algorithm in the cell's eligible set
(families.eligible), and writes DIR/manifest.json: per artifact the requested and concrete
algorithm, auto's reason, the entry symbol and declaration, the temp storage size and alignment,
the cache key and the LTO-IR file (relative to DIR). A failed request fails the run.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from families import FAMILIES, eligible, family  # noqa: E402

DTYPE = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}

# Cells where the table's algorithms differ a lot, and a few where they tie (server/catalog/
# tuning/sm_90.json): (family, dtype_size, threads, items_per_thread).
SAMPLE = [
    ("block_load", 1, 512, 16),        # vectorize 3428 vs direct 1928 GB/s
    ("block_load", 2, 128, 16),        # vectorize 4042 vs direct 1980
    ("block_load", 4, 128, 2),         # tie
    ("block_store", 2, 128, 16),       # warp_transpose 4029 vs direct 202
    ("block_store", 1, 256, 16),       # vectorize 3869 vs direct 217
    ("block_store", 2, 128, 2),        # tie
    ("block_scan", 8, 512, 8),         # warp_scans 3985 vs raking 2847
    ("block_scan", 1, 512, 1),         # raking_memoize 521 vs warp_scans 380
    ("block_reduce", 1, 256, 8),       # raking 2309 vs warp_reductions 1782
    ("block_reduce", 4, 256, 4),       # near tie
    ("block_histogram", 2, 512, 4),    # atomic 2067 vs sort 185
    ("block_histogram", 1, 128, 4),    # atomic vs sort
    ("warp_store", 1, 32, 16),         # vectorize 4309 vs direct 220
    ("warp_store", 2, 16, 16),         # transpose 1932 vs direct 204
]


def spec_args(fam, s, t, n, alg):
    f = family(fam)
    args = ["specialize", fam, "--method", f["method"], "--dtype", DTYPE[s], "--items", str(n),
            "--algorithm", alg, "--arch", "sm_90", "--json"]
    if f["warp"]:
        args += ["--threads", "256", "--warp-threads", str(t)]
    else:
        args += ["--threads", str(t)]
    if fam == "block_histogram":
        args += ["--bins", "256"]
    return args


def load_cells(path):
    if not path:
        return list(SAMPLE)
    with open(path) as f:
        return [(c["family"], c["dtype_size"], c["threads"], c["items_per_thread"])
                for c in json.load(f)["cells"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coopctl", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cells")
    a = ap.parse_args()
    cells = load_cells(a.cells)
    os.makedirs(a.out, exist_ok=True)
    records, toolchain = [], {}
    t0 = time.time()
    for fam, s, t, n in cells:
        family(fam)
        if s not in FAMILIES[fam]["dtype_sizes"]:
            ap.error("cells: %s dtype_size must be one of %s, got %d" %
                     (fam, FAMILIES[fam]["dtype_sizes"], s))
        cell = "%s_s%d_t%d_n%d" % (fam, s, t, n)
        for alg in ["auto"] + eligible(fam, t, items=n):
            rel = os.path.join(cell, alg)
            out_dir = os.path.join(a.out, rel)
            cmd = [a.coopctl, "--socket", a.socket] + spec_args(fam, s, t, n, alg) + [
                "--out", out_dir]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print("FAIL %s %s: exit %d: %s" % (cell, alg, p.returncode, p.stderr.strip()))
                return 1
            d = json.loads(p.stdout)
            (entry,) = d["entries"]
            ltoir = [x for x in d["files"] if x.endswith(".ltoir")]
            choice = d.get("algorithm_choice") or {}
            toolchain = d["toolchain"]
            concrete = d["spec"]["algorithm"]
            if alg != "auto" and concrete != alg:
                print("FAIL %s: asked for %s, got %s" % (cell, alg, concrete))
                return 1
            records.append({
                "cell": cell, "family": fam, "dtype_size": s, "threads": t,
                "items_per_thread": n, "requested": alg, "algorithm": concrete,
                "reason": choice.get("reason", ""), "table_version": choice.get("table_version",
                                                                                ""),
                "symbol": entry["symbol"], "declaration": entry["declaration"],
                "temp_bytes": d["temp_storage"]["bytes"], "temp_align": d["temp_storage"]["align"],
                "key": d["key"], "origin": d["origin"], "compile_ms": round(d["compile_ms"], 1),
                "ltoir": os.path.relpath(ltoir[0], a.out), "command": " ".join(
                    ["coopctl"] + spec_args(fam, s, t, n, alg) + ["--out", rel]),
            })
            print("%s %-26s -> %-26s %6.0f ms %s" % (cell, alg, concrete, d["compile_ms"],
                                                      d["origin"]), flush=True)
    doc = {"made": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
           "coopctl": a.coopctl, "toolchain": toolchain, "artifacts": records}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote %s: %d artifacts of %d cells in %.0f s" %
          (os.path.join(a.out, "manifest.json"), len(records), len(cells), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
