#!/usr/bin/env python3
"""Merges tuning-suite runs (run.py's DIR/<run-id>.json) into a tuning table (schema 1,
docs/tuning.md): server/catalog/tuning/sm_90.json by default.

usage: make_table.py RUN.json... [--out FILE] [--version V] [--arch sm_90] [--toolchain T]
       make_table.py --check TABLE...

Each cell keeps the run that measured it ("run"); when two runs measured the same cell the later
one on the command line wins (and is reported). A cell's `measured` lists only the algorithms
eligible for `auto` (families.py); information-only ones (striped) stay in the run files.
`choice` is the eligible algorithm with the best median. The table's "runs" maps each run id to
its start time and command line. Exits 1 when the merged table misses a cell of the contract's
grid (families.grid_cells) or a run recorded a wrong kernel.
--check FILE... only validates existing tables (schema, choices, coverage) and writes nothing.
"""
import argparse
import datetime
import json
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from families import FAMILIES, dump_json, eligible, grid_cells  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "..", "..", "server", "catalog", "tuning", "sm_90.json")
STAT_KEYS = ("median_gbps", "min_gbps", "max_gbps", "n")


def cell_key(c):
    return (c["family"], c["method"], c["dtype_size"], c["threads"], c["items_per_thread"])


def table_cell(c, run):
    elig = eligible(c["family"], c["threads"])
    measured = {a: {k: c["measured"][a][k] for k in STAT_KEYS}
                for a in elig if a in c["measured"]}
    missing = [a for a in elig if a not in measured]
    if missing:
        raise ValueError("%s/%s S=%d T=%d N=%d (run %s): no measurement of %s" % (
            c["family"], c["method"], c["dtype_size"], c["threads"], c["items_per_thread"], run,
            ", ".join(missing)))
    choice = max(measured, key=lambda a: measured[a]["median_gbps"])
    return {"family": c["family"], "method": c["method"], "dtype_size": c["dtype_size"],
            "threads": c["threads"], "items_per_thread": c["items_per_thread"],
            "choice": choice, "run": run, "measured": measured}


def merge(runs):
    cells, notes, meta = {}, [], {}
    for doc in runs:
        if doc.get("wrong"):
            raise ValueError("run %s recorded wrong kernels: %s" % (doc["run"], doc["wrong"][:3]))
        if doc["run"] in meta:
            raise ValueError("run id %r given twice" % doc["run"])
        meta[doc["run"]] = doc
        for c in doc["cells"]:
            k = cell_key(c)
            if k in cells:
                notes.append("%s/%s S=%d T=%d N=%d: run %s replaces run %s" % (
                    k + (doc["run"], cells[k]["run"])))
            cells[k] = table_cell(c, doc["run"])
    order = {f: i for i, f in enumerate(FAMILIES)}
    ordered = sorted(cells.values(), key=lambda c: (order[c["family"]],) + cell_key(c)[1:])
    return ordered, notes, meta


def validate(table):
    """Schema 1 rules the loader relies on, and the contract grid's coverage; [] when fine."""
    errs = []
    for key in ("schema", "version", "arch", "device", "toolchain", "generated_by", "runs",
                "cells"):
        if key not in table:
            errs.append("table: missing %r" % key)
    if errs:
        return errs
    if table["schema"] != 1:
        errs.append("schema: must be 1, got %r" % table["schema"])
    have = set()
    for i, c in enumerate(table["cells"]):
        where = "cells[%d] (%s)" % (i, c.get("family"))
        if c.get("family") not in FAMILIES:
            errs.append("%s: family must be one of %s" % (where, ", ".join(FAMILIES)))
            continue
        f = FAMILIES[c["family"]]
        if c.get("method") != f["method"]:
            errs.append("%s: method must be %r, got %r" % (where, f["method"], c.get("method")))
        if c.get("run") not in table["runs"]:
            errs.append("%s: run %r is not in runs" % (where, c.get("run")))
        elig = eligible(c["family"], c["threads"])
        extra = [a for a in c["measured"] if a not in elig]
        if extra:
            errs.append("%s: measured lists %s, not eligible for auto (allowed: %s)" % (
                where, ", ".join(extra), ", ".join(elig)))
        if f["baseline"] not in c["measured"]:
            errs.append("%s: the baseline %s is not measured" % (where, f["baseline"]))
        if c["measured"]:
            best = max(c["measured"], key=lambda a: c["measured"][a]["median_gbps"])
            if c["measured"].get(c.get("choice"), {}).get("median_gbps") != \
                    c["measured"][best]["median_gbps"]:
                errs.append("%s: choice %r is not the best median (%s)" % (
                    where, c.get("choice"), best))
        have.add((c["family"], c["dtype_size"], c["threads"], c["items_per_thread"]))
    for fam in FAMILIES:
        for s, t, n in grid_cells(fam):
            if (fam, s, t, n) not in have:
                errs.append("coverage: no cell %s S=%d T=%d N=%d" % (fam, s, t, n))
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--version", help="default: <arch>-<today>.1")
    ap.add_argument("--toolchain", help="default: the first run's")
    ap.add_argument("--check", action="store_true", help="validate the given tables only")
    a = ap.parse_args()
    if a.check:
        bad = 0
        for path in a.runs:
            errs = validate(json.load(open(path)))
            for e in errs[:20]:
                print("%s: %s" % (path, e))
            print("%s: %s" % (path, "ok" if not errs else "%d problems" % len(errs)))
            bad += bool(errs)
        return 1 if bad else 0
    docs = [json.load(open(p)) for p in a.runs]
    try:
        cells, notes, meta = merge(docs)
    except ValueError as e:
        print("make_table: %s" % e)
        return 1
    for n in notes:
        print("note: " + n)
    devices = sorted({d["device"] for d in docs})
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    table = {
        "schema": 1,
        "version": a.version or "%s-%s.1" % (a.arch, today),
        "arch": a.arch,
        "device": ", ".join(devices),
        "toolchain": a.toolchain or docs[0]["toolchain"],
        "generated_by": "; ".join(d["command"] for d in docs) + "; device/tuning/make_table.py " +
                        " ".join(shlex.quote(x) for x in sys.argv[1:]),
        "runs": {r: "%s %s" % (d["started"], d["command"]) for r, d in meta.items()},
        "cells": cells,
    }
    errs = validate(table)
    with open(a.out, "w") as f:
        dump_json(table, f)
    print("wrote %s: %d cells from runs %s" % (a.out, len(cells), ", ".join(meta)))
    for e in errs[:20]:
        print("make_table: " + e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
