"""The families the tuning suite measures: what the tuning-table contract (docs/tuning.md) says
about each one, in one place for run.py, make_table.py, rule.py and validate.py.

eligible   the algorithms `auto` may choose (the contract's table), in the catalog's spelling
baseline   CUB's default, what `auto` falls back to
info       algorithms measured for information only: never a `choice`, kept out of the table
method     the measured method (the table is keyed by it)
warp       True for warp_* families, whose `threads` is warp_threads
"""
import json

FAMILIES = {
    "block_load": dict(method="load", warp=False, baseline="direct",
                       eligible=["direct", "vectorize", "transpose", "warp_transpose",
                                 "warp_transpose_timesliced"],
                       info=["striped"], enum="cub::BLOCK_LOAD_", case="BlockLoadCase",
                       kind="load", dtype_sizes=[1, 2, 4, 8]),
    "block_store": dict(method="store", warp=False, baseline="direct",
                        eligible=["direct", "vectorize", "transpose", "warp_transpose",
                                  "warp_transpose_timesliced"],
                        info=["striped"], enum="cub::BLOCK_STORE_", case="BlockStoreCase",
                        kind="store", dtype_sizes=[1, 2, 4, 8]),
    "warp_load": dict(method="load", warp=True, baseline="direct",
                      eligible=["direct", "vectorize", "transpose"], info=["striped"],
                      enum="cub::WARP_LOAD_", case="WarpLoadCase", kind="load",
                      dtype_sizes=[1, 2, 4, 8]),
    "warp_store": dict(method="store", warp=True, baseline="direct",
                       eligible=["direct", "vectorize", "transpose"], info=["striped"],
                       enum="cub::WARP_STORE_", case="WarpStoreCase", kind="store",
                       dtype_sizes=[1, 2, 4, 8]),
    "block_scan": dict(method="inclusive_sum", warp=False, baseline="raking",
                       eligible=["raking", "raking_memoize", "warp_scans"], info=[],
                       enum="cub::BLOCK_SCAN_", case="BlockScanCase", kind="scan",
                       dtype_sizes=[1, 2, 4, 8]),
    # raking_commutative_only is eligible only for commutative operators; the measured method,
    # sum, is one, so the suite measures it and the table lists it (the server drops it from the
    # eligible set for a non-commutative operator).
    "block_reduce": dict(method="sum", warp=False, baseline="warp_reductions",
                         eligible=["raking", "raking_commutative_only", "warp_reductions"],
                         info=[], enum="cub::BLOCK_REDUCE_", case="BlockReduceCase",
                         kind="reduce", dtype_sizes=[1, 2, 4, 8]),
    "block_histogram": dict(method="histogram", warp=False, baseline="sort",
                            eligible=["sort", "atomic"], info=[], enum="cub::BLOCK_HISTO_",
                            case="BlockHistogramCase", kind="histogram", dtype_sizes=[1, 2]),
}

# Algorithms that need block threads % 32 == 0 (the catalog's rule).
WARP_MULTIPLE = {"warp_transpose", "warp_transpose_timesliced"}

# The contract's grid (the CI check requires at least this coverage).
BLOCK_THREADS = [64, 128, 256, 512]
WARP_THREADS = [8, 16, 32]
ITEMS = [1, 2, 4, 8, 16]

# Threads per block of the warp_* kernels (kernels.cuh's kWarpBlockThreads).
WARP_BLOCK_THREADS = 256


def family(name):
    if name not in FAMILIES:
        raise ValueError("family: unknown %r; allowed: %s" % (name, ", ".join(FAMILIES)))
    return FAMILIES[name]


def eligible(name, threads, commutative=True):
    """The contract's eligible set E for a request (step 1 of the resolution rule)."""
    f = family(name)
    algs = [a for a in f["eligible"]
            if not (a in WARP_MULTIPLE and not f["warp"] and threads % 32 != 0)]
    if name == "block_reduce" and not commutative:
        algs = [a for a in algs if a != "raking_commutative_only"]
    return algs


def measured_algorithms(name, threads, with_info=True):
    """What the suite measures for a cell: the eligible set plus, optionally, the info ones."""
    f = family(name)
    return eligible(name, threads) + ([a for a in f["info"]] if with_info else [])


def grid_cells(name):
    """The contract's grid for one family: (dtype_size, threads, items) triples."""
    f = family(name)
    threads = WARP_THREADS if f["warp"] else BLOCK_THREADS
    return [(s, t, n) for s in f["dtype_sizes"] for t in threads for n in ITEMS]


def dump_json(doc, f):
    """JSON with each cell on one line: small files, readable diffs (run.py, make_table.py)."""
    head = {k: v for k, v in doc.items() if k != "cells"}
    text = json.dumps(head, indent=1)[:-2]
    cells = ",\n  ".join(json.dumps(c) for c in doc.get("cells", []))
    f.write(text + ',\n "cells": [\n  ' + cells + "\n ]\n}\n")
