#!/usr/bin/env python3
"""The tuning table's acceptance checks (issue 18), from a run separate from the sweep.

  validate.py plan --table T [--sample 40] [--seed S] --out cells.json
      a seeded random sample of the table's cells (held out: re-measured, not reused) plus
      out-of-table shapes: block threads 96/192/384 and warp_threads 4/16/32 with items 3/6/12,
      for several dtype sizes
  run.py --cells cells.json --run-id v1 --out DIR          (on the GPU)
  validate.py report --table T --plan cells.json --run DIR/v1.json [--json OUT]
      held-out: what `auto` picks (rule.py: the table's cell) against the best eligible
      algorithm in the new run; passes when every ratio is >= 0.98 (within 2%)
      out-of-table: rule.py's fallback against CUB's default in the new run; passes when no
      ratio is under 1 - --noise (default 0.01: the run-to-run noise of a median)
Exit status 1 when a check fails.
"""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rule  # noqa: E402
from families import FAMILIES, dump_json, eligible  # noqa: E402

HELD_OUT_TOLERANCE = 0.98
OUT_BLOCK_THREADS = [96, 192, 384]
OUT_WARP_THREADS = [4, 16, 32]
OUT_ITEMS = [3, 6, 12]
OUT_BLOCK_SIZES = [1, 4, 8]
OUT_WARP_SIZES = [2, 8]


def out_of_table_cells(block_threads=None, warp_threads=None, items=None, block_sizes=None,
                       warp_sizes=None):
    cells = []
    block_threads = block_threads or OUT_BLOCK_THREADS
    warp_threads = warp_threads or OUT_WARP_THREADS
    items = items or OUT_ITEMS
    block_sizes, warp_sizes = block_sizes or OUT_BLOCK_SIZES, warp_sizes or OUT_WARP_SIZES
    for fam, f in FAMILIES.items():
        if f["warp"]:
            threads, sizes = warp_threads, warp_sizes
        else:
            threads = block_threads
            # block_histogram measures only sizes 1 and 2: both
            sizes = [s for s in block_sizes if s in f["dtype_sizes"]]
            if len(sizes) < 2:
                sizes = f["dtype_sizes"]
        for s in sizes:
            for t in threads:
                for n in items:
                    cells.append({"family": fam, "dtype_size": s, "threads": t,
                                  "items_per_thread": n, "purpose": "out_of_table"})
    return cells


def plan(a):
    table = json.load(open(a.table))
    rng = random.Random(a.seed)
    sample = rng.sample(table["cells"], min(a.sample, len(table["cells"])))
    cells = [{"family": c["family"], "dtype_size": c["dtype_size"], "threads": c["threads"],
              "items_per_thread": c["items_per_thread"], "purpose": "held_out"} for c in sample]
    ints = lambda v: [int(x) for x in v.split(",")] if v else None  # noqa: E731
    cells += out_of_table_cells(ints(a.block_threads), ints(a.warp_threads), ints(a.items),
                                ints(a.block_sizes), ints(a.warp_sizes))
    inside = {(c["family"], c["dtype_size"], c["threads"], c["items_per_thread"])
              for c in table["cells"]}
    clash = [c for c in cells if c["purpose"] == "out_of_table" and
             (c["family"], c["dtype_size"], c["threads"], c["items_per_thread"]) in inside]
    if clash:
        print("validate: %d out-of-table shapes are table cells, e.g. %s" % (len(clash), clash[0]))
        return 1
    doc = {"table": table["version"], "seed": a.seed, "sample": a.sample, "cells": cells}
    with open(a.out, "w") as f:
        dump_json(doc, f)
    print("wrote %s: %d held-out cells (seed %d), %d out-of-table cells" % (
        a.out, len(sample), a.seed, len(cells) - len(sample)))
    return 0


def key(c):
    return (c["family"], c["dtype_size"], c["threads"], c["items_per_thread"])


def report(table, plan_doc, run, noise):
    """Returns (ok, lines, summary)."""
    measured = {key(c): c for c in run["cells"]}
    lines, held, oot = [], [], []
    for p in plan_doc["cells"]:
        c = measured.get(key(p))
        if c is None:
            lines.append("MISSING %s S=%d T=%d N=%d" % key(p))
            continue
        fam = p["family"]
        algs = eligible(fam, p["threads"])
        m = {a: c["measured"][a]["median_gbps"] for a in algs}
        best = max(m, key=m.get)
        pick, reason, _ = rule.resolve(table, fam, p["threads"], p["items_per_thread"],
                                       p["dtype_size"])
        base = FAMILIES[fam]["baseline"]
        row = {"family": fam, "dtype_size": p["dtype_size"], "threads": p["threads"],
               "items_per_thread": p["items_per_thread"], "auto": pick, "best": best,
               "baseline": base, "auto_gbps": m[pick], "best_gbps": m[best],
               "baseline_gbps": m[base], "auto_vs_best": round(m[pick] / m[best], 4),
               "auto_vs_baseline": round(m[pick] / m[base], 4), "reason": reason}
        (held if p["purpose"] == "held_out" else oot).append(row)
    ok = not any(x.startswith("MISSING") for x in lines)
    if held:
        worst = min(held, key=lambda r: r["auto_vs_best"])
        bad = [r for r in held if r["auto_vs_best"] < HELD_OUT_TOLERANCE]
        ok &= not bad
        lines.append("held-out: %d cells (seed %s); worst auto/best %.4f at %s S=%d T=%d N=%d "
                     "(auto %s, best %s); %d under %.2f" % (
                         len(held), plan_doc.get("seed"), worst["auto_vs_best"], worst["family"],
                         worst["dtype_size"], worst["threads"], worst["items_per_thread"],
                         worst["auto"], worst["best"], len(bad), HELD_OUT_TOLERANCE))
        for r in bad:
            lines.append("  HELD-OUT MISS %s S=%d T=%d N=%d auto %s %.1f best %s %.1f" % (
                r["family"], r["dtype_size"], r["threads"], r["items_per_thread"], r["auto"],
                r["auto_gbps"], r["best"], r["best_gbps"]))
    if oot:
        worst = min(oot, key=lambda r: r["auto_vs_baseline"])
        slow = [r for r in oot if r["auto_vs_baseline"] < 1 - noise]
        ok &= not slow
        lines.append("out-of-table: %d cells; worst fallback/baseline %.4f at %s S=%d T=%d N=%d "
                     "(%s); %d under %.2f; fallback/best worst %.4f, median %.4f" % (
                         len(oot), worst["auto_vs_baseline"], worst["family"],
                         worst["dtype_size"], worst["threads"], worst["items_per_thread"],
                         worst["auto"], len(slow), 1 - noise,
                         min(r["auto_vs_best"] for r in oot),
                         sorted(r["auto_vs_best"] for r in oot)[len(oot) // 2]))
        for r in slow:
            lines.append("  SLOWER %s S=%d T=%d N=%d fallback %s %.1f baseline %s %.1f (%s)" % (
                r["family"], r["dtype_size"], r["threads"], r["items_per_thread"], r["auto"],
                r["auto_gbps"], r["baseline"], r["baseline_gbps"], r["reason"]))
    return ok, lines, {"held_out": held, "out_of_table": oot, "ok": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--table", required=True)
    p.add_argument("--sample", type=int, default=40)
    p.add_argument("--seed", type=int, default=18)
    p.add_argument("--out", required=True)
    p.add_argument("--block-threads", help="out-of-table block threads (default 96,192,384)")
    p.add_argument("--warp-threads", help="out-of-table warp_threads (default 4,16,32)")
    p.add_argument("--items", help="out-of-table items per thread (default 3,6,12)")
    p.add_argument("--block-sizes", help="out-of-table dtype sizes, block families (1,4,8)")
    p.add_argument("--warp-sizes", help="out-of-table dtype sizes, warp families (2,8)")
    r = sub.add_parser("report")
    r.add_argument("--table", required=True)
    r.add_argument("--plan", required=True)
    r.add_argument("--run", required=True)
    r.add_argument("--noise", type=float, default=0.01)
    r.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    if a.cmd == "plan":
        return plan(a)
    ok, lines, summary = report(json.load(open(a.table)), json.load(open(a.plan)),
                                json.load(open(a.run)), a.noise)
    for line in lines:
        print(line)
    if a.json:
        summary["run"] = json.load(open(a.run))["run"]
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    print("validate: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
