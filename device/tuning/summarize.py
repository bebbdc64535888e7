#!/usr/bin/env python3
"""Markdown for docs/benchmarks.md's "Algorithm auto (issue 18)" from the table and the runs in
device/tuning/results (no GPU needed).

usage: summarize.py [--table server/catalog/tuning/sm_90.json] [--results device/tuning/results]
                    [--remeasure v2] [--validation v1:v1,v4:v1,v3:v3,v5:v5]

Per family, over a re-measure of the whole grid (--remeasure, a run separate from the table's):
default (CUB's, the baseline) against auto (the table's choice) against the best algorithm of
that run, as geometric means of the ratios and the cell where auto gains most (medians, min-max).
Then each validation run (RUN:PLAN): the held-out sample's worst auto/best and the
out-of-table shapes' fallback against the default, under the rule's margin and the contract's
original 1.05.
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rule  # noqa: E402
import validate  # noqa: E402
from families import FAMILIES  # noqa: E402


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def spread(m):
    return "%.0f (%.0f-%.0f)" % (m["median_gbps"], m["min_gbps"], m["max_gbps"])


def per_family(table, run):
    out = ["| family | cells | auto/default (geomean) | auto/default (max; cell) | "
           "auto/best (geomean) | auto/best (worst) | that max cell: default / auto / best GB/s, "
           "median (min-max) |", "|" + "---|" * 7]
    for fam in FAMILIES:
        rows = []
        for c in run["cells"]:
            if c["family"] != fam:
                continue
            pick = rule.resolve(table, fam, c["threads"], c["items_per_thread"],
                                c["dtype_size"])[0]
            m = c["measured"]
            base = FAMILIES[fam]["baseline"]
            best = max(m, key=lambda a: m[a]["median_gbps"])
            rows.append((m[pick]["median_gbps"] / m[base]["median_gbps"],
                         m[pick]["median_gbps"] / m[best]["median_gbps"], c, pick, base, best))
        if not rows:
            continue
        top = max(rows, key=lambda r: r[0])
        _, _, c, pick, base, best = top
        m = c["measured"]
        out.append("| %s | %d | %.2f | %.2f (S=%d T=%d N=%d) | %.4f | %.4f | "
                   "%s %s / %s %s / %s %s |" % (fam, len(rows), geo([r[0] for r in rows]), top[0], c["dtype_size"],
                      c["threads"], c["items_per_thread"], geo([r[1] for r in rows]),
                      min(r[1] for r in rows), base, spread(m[base]), pick, spread(m[pick]),
                      best, spread(m[best])))
    return out


def validation(table, results, pairs):
    out = ["| run | held-out cells (seed) | worst auto/best | out-of-table shapes | "
           "fallback/default worst | geomean | slower than default (< 0.99) | same with margin "
           "1.05 |", "|" + "---|" * 8]
    margin = rule.NEAREST_MARGIN
    for pair in pairs:
        run_id, plan_id = pair.split(":")
        run = json.load(open(os.path.join(results, run_id + ".json")))
        plan = json.load(open(os.path.join(results, plan_id + "-plan.json")))
        ok, _, s = validate.report(table, plan, run, 0.01)
        rule.NEAREST_MARGIN = 1.05
        _, _, old = validate.report(table, plan, run, 0.01)
        rule.NEAREST_MARGIN = margin
        held, oot = s["held_out"], s["out_of_table"]
        slow = [r for r in oot if r["auto_vs_baseline"] < 0.99]
        old_slow = [r for r in old["out_of_table"] if r["auto_vs_baseline"] < 0.99]
        out.append("| %s | %s | %s | %d | %.4f | %.3f | %d | %d (worst %.3f) |" % (
            run_id, "%d (%s)" % (len(held), plan.get("seed")) if held else "-",
            "%.4f" % min(r["auto_vs_best"] for r in held) if held else "-", len(oot),
            min(r["auto_vs_baseline"] for r in oot), geo([r["auto_vs_baseline"] for r in oot]),
            len(slow), len(old_slow),
            min(r["auto_vs_baseline"] for r in old["out_of_table"])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.join(HERE, "..", "..")
    ap.add_argument("--table", default=os.path.join(root, "server", "catalog", "tuning",
                                                    "sm_90.json"))
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--remeasure", default="v2")
    ap.add_argument("--validation", default="v1:v1,v4:v1,v3:v3,v5:v5")
    a = ap.parse_args()
    table = json.load(open(a.table))
    run = json.load(open(os.path.join(a.results, a.remeasure + ".json")))
    print("Table %s; whole grid re-measured in run %s:\n" % (table["version"], a.remeasure))
    print("\n".join(per_family(table, run)))
    print()
    print("\n".join(validation(table, a.results, a.validation.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
