"""The contract's resolution rule for `algorithm: auto`, mirrored in Python (the server implements
it in C++; docs/tuning.md states it). validate.py uses it to say what `auto` picks for held-out
and out-of-table shapes; the two implementations are cross-checked once both have landed.

resolve(table, family, threads, items, dtype_size, arch="sm_90", commutative=True)
returns (algorithm, reason, detail) where detail is a dict: kind ("exact", "nearest", "no_table",
"single"), and for table cells the cell used and its distance.
"""
import math

from families import eligible, family

# Step 4: a non-baseline choice from the nearest cell must beat the baseline there by this factor.
# The contract started at 1.05; on the H200 that picked algorithms slower than CUB's default for
# out-of-table shapes (run v1: 4 of 162 shapes, down to 0.74x, e.g. warp_load transpose for
# warp_threads 4; odd item counts, where vectorize runs as direct). 2.5 was chosen from runs v1
# and v3 and then held on fresh shapes (run v5): no shape slower, and the large gains (transposes
# at 8-16 items, 2.5-20x) kept (docs/tuning.md, "The tuning suite").
NEAREST_MARGIN = 2.5


def _best(cell, algs):
    """The eligible algorithm with the best median in a cell (ties: the first in algs)."""
    best = None
    for a in algs:
        m = cell["measured"].get(a)
        if m is None:
            continue
        if best is None or m["median_gbps"] > cell["measured"][best]["median_gbps"]:
            best = a
    return best


def _gbps(cell, alg):
    return cell["measured"][alg]["median_gbps"]


def nearest_cell(cells, dtype_size, threads, items):
    """Step 4's nearest cell: same dtype size if any (else the nearest in log2, ties to the
    smaller), then distance |log2(N/Nc)| + |log2(T/Tc)|, ties to smaller Nc, then smaller Tc."""
    sizes = sorted({c["dtype_size"] for c in cells})
    if not sizes:
        return None, None
    if dtype_size in sizes:
        s = dtype_size
    else:
        s = min(sizes, key=lambda x: (abs(math.log2(x / dtype_size)), x))
    same = [c for c in cells if c["dtype_size"] == s]

    def dist(c):
        # Rounded, so that sums equal in real numbers tie in floating point too.
        return round(abs(math.log2(items / c["items_per_thread"])) +
                     abs(math.log2(threads / c["threads"])), 9)

    best = min(same, key=lambda c: (dist(c), c["items_per_thread"], c["threads"]))
    return best, dist(best)


def resolve(table, name, threads, items, dtype_size, arch="sm_90", commutative=True):
    f = family(name)
    base = f["baseline"]
    algs = eligible(name, threads, commutative)
    if len(algs) == 1:
        return algs[0], "only one eligible algorithm: %s" % algs[0], {"kind": "single"}
    want_arch = arch[:-1] if arch.endswith("a") else arch
    if table is None or table.get("arch") != want_arch:
        return (base, "fallback: no tuning table for %s; CUB's default %s" % (arch, base),
                {"kind": "no_table"})
    cells = [c for c in table["cells"] if c["family"] == name and c["method"] == f["method"]]
    for c in cells:
        if (c["dtype_size"], c["threads"], c["items_per_thread"]) == (dtype_size, threads, items):
            a = _best(c, algs)
            reason = ("table %s cell %s/%s S=%d T=%d N=%d (run %s): %s %.1f GB/s vs baseline %s "
                      "%.1f GB/s" % (table["version"], name, f["method"], dtype_size, threads,
                                     items, c["run"], a, _gbps(c, a), base, _gbps(c, base)))
            return a, reason, {"kind": "exact", "cell": c, "distance": 0.0}
    c, d = nearest_cell(cells, dtype_size, threads, items)
    if c is None:
        return (base, "fallback: no cells for %s/%s; CUB's default %s" % (name, f["method"], base),
                {"kind": "no_table"})
    a = _best(c, algs)
    if a != base and _gbps(c, a) < NEAREST_MARGIN * _gbps(c, base):
        a = base
    reason = ("fallback: nearest cell %s/%s S=%d T=%d N=%d (run %s, distance %.3f): %s" %
              (name, f["method"], c["dtype_size"], c["threads"], c["items_per_thread"], c["run"],
               d, a))
    return a, reason, {"kind": "nearest", "cell": c, "distance": d}
