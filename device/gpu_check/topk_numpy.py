#!/usr/bin/env python3
"""Checks the top-k tiles the GPU suite dumped (COOP_DUMP_DIR, gpu_suite.cu DumpTopK) against
NumPy: in each tile, the first k outputs must be the k largest (or smallest) of the tile's first
num_valid inputs, as a multiset, and in order where the case sorts (CCCL 3.3's block_topk, the
radix-sort baseline). Prints one line per case, "NUMPY PASS|FAIL <case> ...", and exits 1 on a
failure or when there is nothing to check.

usage: topk_numpy.py DUMP_DIR
"""
import glob
import os
import sys

import numpy as np

DTYPES = {"float": np.float32, "double": np.float64, "int": np.int32,
          "unsigned int": np.uint32, "long long": np.int64}


def check(base):
    """(ok, detail) for the case dumped at `base` (its path without the suffix)."""
    with open(base + ".meta") as f:
        fields = f.read().split()
    # The C type may be two words ("unsigned int"); the five numbers follow it.
    ctype, (tile, k, blocks, largest, ordered) = " ".join(fields[:-5]), map(int, fields[-5:])
    dtype = DTYPES[ctype]
    keys = np.fromfile(base + ".keys", dtype=dtype).reshape(blocks, tile)
    got = np.fromfile(base + ".got", dtype=dtype).reshape(blocks, tile)
    nvs = np.fromfile(base + ".nv", dtype=np.int32)
    bad = []
    for b in range(blocks):
        candidates = np.sort(keys[b, :nvs[b]])
        want = (candidates[::-1] if largest else candidates)[:k]
        first = got[b, :k]
        same = np.array_equal(first, want) if ordered else np.array_equal(
            np.sort(first), np.sort(want))
        if not same:
            bad.append(b)
    detail = (f"{blocks} tiles of {tile} {ctype}, k = {k}, num_valid "
              f"{int(nvs.min())}..{int(nvs.max())}, {'ordered' if ordered else 'as a multiset'}")
    if bad:
        detail += f"; tiles {bad[:5]} differ (first: got {got[bad[0], :k]})"
    return not bad, detail


def main():
    bases = sorted(p[:-len(".meta")] for p in glob.glob(os.path.join(sys.argv[1], "*.meta")))
    if not bases:
        print(f"NUMPY FAIL: no dumped cases in {sys.argv[1]}")
        return 1
    failed = 0
    for base in bases:
        ok, detail = check(base)
        failed += not ok
        print(f"NUMPY {'PASS' if ok else 'FAIL'} {os.path.basename(base)}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
