"""The tuning suite's correctness checks: the reference result of each kernel kind
(kernels.cuh), computed with NumPy or CuPy (xp), compared element by element.

check(xp, kind, alg, result, src, block, group, items, seed, t) -> (ok, why)
  kind    load, store, scan, reduce or histogram
  alg     the algorithm (only "striped" changes the reference: its items are striped)
  result  what the kernel wrote: one value per thread (load), the tile (store, scan), one value
          per tile (reduce), or kHistogramCopies x 256 counters (histogram)
  src     the input elements the launch read (dtype t), ignored for store
  block   threads per block; group: threads sharing one tile arrangement (block threads, or
          warp_threads for warp_*); items: items per thread; seed: the store kernel's seed
"""

HISTOGRAM_BINS = 256


def fold(xp, src, group, items, striped):
    """kernels.cuh's Fold over each thread's items: acc = acc * 3 + item, in the thread's order."""
    x = src.reshape(-1, items, group) if striped else src.reshape(-1, group, items)
    acc = xp.zeros(x.shape[0] * group, dtype=xp.uint64).reshape(-1, group)
    for i in range(items):
        item = x[:, i, :] if striped else x[:, :, i]
        acc = acc * xp.uint64(3) + item.astype(xp.uint64)
    return acc.reshape(-1)


def store_values(xp, n, seed):
    """kernels.cuh's StoreValue for tile indices 0..n-1 (32-bit unsigned arithmetic)."""
    i = xp.arange(n, dtype=xp.uint64) & xp.uint64(0xFFFFFFFF)
    return (i + (i >> xp.uint64(8)) + xp.uint64(seed)) & xp.uint64(0xFFFFFFFF)


def reference(xp, kind, alg, src, block, group, items, seed, n_result):
    if kind == "load":
        return fold(xp, src, group, items, alg == "striped")
    if kind == "store":
        return store_values(xp, n_result, seed)
    tile = block * items
    if kind == "scan":
        return xp.cumsum(src.reshape(-1, tile).astype(xp.uint64), axis=1).reshape(-1)
    if kind == "reduce":
        return src.reshape(-1, tile).astype(xp.uint64).sum(axis=1)
    if kind == "histogram":
        return xp.bincount(src.astype(xp.int64), minlength=HISTOGRAM_BINS).astype(xp.uint64)
    raise ValueError("kind: unknown %r; allowed: load, store, scan, reduce, histogram" % kind)


def check(xp, kind, alg, result, src, block, group, items, seed, t):
    if kind == "histogram":
        got = result.reshape(-1, HISTOGRAM_BINS).astype(xp.uint64).sum(axis=0)
        want = reference(xp, kind, alg, src, block, group, items, seed, 0)
        if int(src.max()) >= HISTOGRAM_BINS:
            return False, "samples must be < %d, got %d" % (HISTOGRAM_BINS, int(src.max()))
    else:
        # Reference arithmetic runs in uint64; the kernel's in t: compare modulo t's width.
        want = reference(xp, kind, alg, src, block, group, items, seed, result.size).astype(t)
        got = result
    if got.shape != want.shape:
        return False, "%d results, want %d" % (got.size, want.size)
    bad = xp.nonzero(got != want)[0]
    if bad.size:
        i = int(bad[0])
        return False, "%d of %d wrong; first at %d: got %d, want %d" % (
            bad.size, want.size, i, int(got[i]), int(want[i]))
    return True, "%d results match" % want.size
