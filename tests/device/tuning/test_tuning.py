"""device/tuning's Python parts on the CPU (no GPU): the correctness checks against kernels
simulated element by element (and against deliberately wrong results), the resolution rule's
steps, and make_table's merge and coverage check."""
import copy
import json
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TUNING = os.path.join(ROOT, "device", "tuning")
sys.path.insert(0, TUNING)

import checks  # noqa: E402
import make_table  # noqa: E402
import rule  # noqa: E402
import validate  # noqa: E402
from families import FAMILIES, grid_cells  # noqa: E402

DT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def simulate_load(src, block, group, items, striped, t):
    """What kernels.cuh's load kernels write, one thread at a time."""
    out = []
    for th in range(src.size // items):
        g, lane = divmod(th, group)
        acc = 0
        for i in range(items):
            j = g * group * items + (lane + i * group if striped else lane * items + i)
            acc = (acc * 3 + int(src[j])) % (1 << (8 * t().itemsize))
        out.append(acc)
    return np.array(out, dtype=t)


@pytest.mark.parametrize("size", [1, 2, 4, 8])
@pytest.mark.parametrize("striped", [False, True])
def test_load_check_matches_the_kernel_and_rejects_wrong_results(size, striped):
    t = DT[size]
    rng = np.random.default_rng(size)
    block, group, items = 64, 16, 4
    src = rng.integers(0, np.iinfo(t).max, size=block * items * 3, dtype=t)
    got = simulate_load(src, block, group, items, striped, t)
    alg = "striped" if striped else "direct"
    ok, why = checks.check(np, "load", alg, got, src, block, group, items, 0, t)
    assert ok, why
    # the other arrangement's result is wrong
    other = simulate_load(src, block, group, items, not striped, t)
    assert not checks.check(np, "load", alg, other, src, block, group, items, 0, t)[0]
    bad = got.copy()
    bad[7] += t(1)
    ok, why = checks.check(np, "load", alg, bad, src, block, group, items, 0, t)
    assert not ok and "first at 7" in why


def test_store_scan_reduce_histogram_checks_reject_wrong_results():
    t = np.uint16
    rng = np.random.default_rng(3)
    block, items, seed = 32, 2, 77
    n = block * items * 4
    i = np.arange(n, dtype=np.uint64)
    stored = ((i + (i >> np.uint64(8)) + np.uint64(seed)) & np.uint64(0xFFFF)).astype(t)
    assert checks.check(np, "store", "direct", stored, None, block, block, items, seed, t)[0]
    stored[n - 1] ^= t(1)
    assert not checks.check(np, "store", "direct", stored, None, block, block, items, seed, t)[0]

    src = rng.integers(0, 65535, size=n, dtype=t)
    tile = block * items
    scan = np.concatenate([np.cumsum(src[k:k + tile].astype(np.uint64)) for k in
                           range(0, n, tile)]).astype(t)
    assert checks.check(np, "scan", "raking", scan, src, block, block, items, 0, t)[0]
    # an exclusive scan is not an inclusive one
    excl = np.concatenate([np.concatenate([[0], np.cumsum(src[k:k + tile - 1].astype(np.uint64))])
                           for k in range(0, n, tile)]).astype(t)
    assert not checks.check(np, "scan", "raking", excl, src, block, block, items, 0, t)[0]

    sums = np.array([int(src[k:k + tile].astype(np.uint64).sum()) & 0xFFFF
                     for k in range(0, n, tile)], dtype=t)
    assert checks.check(np, "reduce", "raking", sums, src, block, block, items, 0, t)[0]
    sums[1] += t(1)
    assert not checks.check(np, "reduce", "raking", sums, src, block, block, items, 0, t)[0]

    samples = rng.integers(0, 256, size=n, dtype=t)
    hist = np.zeros((256, 256), dtype=np.uint32)  # copies x bins, as the kernel's atomics leave it
    for k, s in enumerate(samples):
        hist[(k // tile) % 256, s] += 1
    assert checks.check(np, "histogram", "sort", hist, samples, block, block, items, 0, t)[0]
    hist[5, 9] += 1
    assert not checks.check(np, "histogram", "sort", hist, samples, block, block, items, 0, t)[0]
    samples[0] = 300  # over the 256 bins: the input itself is refused
    ok, why = checks.check(np, "histogram", "sort", hist, samples, block, block, items, 0, t)
    assert not ok and "< 256" in why


def measured(**gbps):
    return {a: {"median_gbps": v, "min_gbps": v, "max_gbps": v, "n": 15} for a, v in gbps.items()}


def small_table():
    cells = [
        {"family": "block_scan", "method": "inclusive_sum", "dtype_size": 4, "threads": 128,
         "items_per_thread": 8, "choice": "warp_scans", "run": "r1",
         "measured": measured(raking=100, raking_memoize=120, warp_scans=300)},
        {"family": "block_scan", "method": "inclusive_sum", "dtype_size": 4, "threads": 256,
         "items_per_thread": 8, "choice": "warp_scans", "run": "r1",
         "measured": measured(raking=100, raking_memoize=101, warp_scans=104)},
        {"family": "block_reduce", "method": "sum", "dtype_size": 2, "threads": 128,
         "items_per_thread": 4, "choice": "raking_commutative_only", "run": "r2",
         "measured": measured(raking=150, raking_commutative_only=190, warp_reductions=100)},
    ]
    return {"schema": 1, "version": "sm_90-test.1", "arch": "sm_90", "cells": cells}


def test_rule_exact_cell_nearest_cell_margin_and_arch():
    t = small_table()
    alg, reason, d = rule.resolve(t, "block_scan", 128, 8, 4)
    assert (alg, d["kind"]) == ("warp_scans", "exact")
    assert reason.startswith(
        "table sm_90-test.1 cell block_scan/inclusive_sum S=4 T=128 N=8 (run r1)")
    # 96 threads: 128 is nearer (0.415 in log2) than 256
    alg, reason, d = rule.resolve(t, "block_scan", 96, 8, 4)
    assert d["cell"]["threads"] == 128 and alg == "warp_scans" and "distance 0.415" in reason
    # 192 threads: nearest is 256, whose best beats raking by 4%, under the margin: the baseline
    alg, _, d = rule.resolve(t, "block_scan", 192, 8, 4)
    assert d["cell"]["threads"] == 256 and alg == "raking"
    # an exact tie in real numbers (log2(4/3) + log2(3/2) = 1 = log2(3/2) + log2(4/3)) stays a
    # tie in floating point and goes to the smaller Nc
    cells = [dict(t["cells"][0], threads=64, items_per_thread=4),
             dict(t["cells"][0], threads=128, items_per_thread=2)]
    c, dist = rule.nearest_cell(cells, 4, 96, 3)
    assert (c["items_per_thread"], dist) == (2, 1.0)
    # no cell with S=8: the nearest size in log2 (4)
    assert rule.resolve(t, "block_scan", 128, 8, 8)[2]["cell"]["dtype_size"] == 4
    # the margin is a factor of the baseline's median: 2.5x passes, just under it does not
    assert rule.NEAREST_MARGIN == 2.5
    t2 = copy.deepcopy(t)
    t2["cells"][0]["measured"] = measured(raking=100, raking_memoize=120, warp_scans=250)
    assert rule.resolve(t2, "block_scan", 96, 8, 4)[0] == "warp_scans"
    t2["cells"][0]["measured"] = measured(raking=100, raking_memoize=120, warp_scans=249.9)
    assert rule.resolve(t2, "block_scan", 96, 8, 4)[0] == "raking"
    # sm_90a uses sm_90's table; another arch has none
    assert rule.resolve(t, "block_scan", 128, 8, 4, arch="sm_90a")[0] == "warp_scans"
    alg, reason, _ = rule.resolve(t, "block_scan", 128, 8, 4, arch="sm_100")
    assert alg == "raking"
    assert reason == "fallback: no tuning table for sm_100; CUB's default raking"
    # a non-commutative operator never gets raking_commutative_only
    assert rule.resolve(t, "block_reduce", 128, 4, 2)[0] == "raking_commutative_only"
    assert rule.resolve(t, "block_reduce", 128, 4, 2, commutative=False)[0] == "raking"
    # warp_transpose* need threads % 32 == 0
    assert "warp_transpose" not in rule.eligible("block_load", 48)


def run_doc(run_id, cells):
    return {"run": run_id, "started": "2026-12-01T22:00Z", "command": "device/tuning/run.py x",
            "device": "NVIDIA H200", "toolchain": "CUDA 13.0", "wrong": [], "cells": cells}


def full_runs():
    """Two runs covering the whole grid, with a striped information measurement."""
    runs = []
    for i, fam in enumerate(FAMILIES):
        f = FAMILIES[fam]
        cells = []
        for s, th, n in grid_cells(fam):
            m = measured(**{a: 100.0 + k for k, a in enumerate(rule.eligible(fam, th))})
            m.update(measured(**{a: 999.0 for a in f["info"]}))
            cells.append({"family": fam, "method": f["method"], "dtype_size": s, "threads": th,
                          "items_per_thread": n, "measured": m})
        runs.append(run_doc("r%d" % (1 + i % 2), cells))
    merged = {"r1": run_doc("r1", []), "r2": run_doc("r2", [])}
    for r in runs:
        merged[r["run"]]["cells"] += r["cells"]
    return list(merged.values())


def test_make_table_merges_runs_drops_info_algorithms_and_checks_coverage(tmp_path):
    paths = []
    for doc in full_runs():
        p = tmp_path / (doc["run"] + ".json")
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    out = tmp_path / "sm_90.json"
    tool = os.path.join(TUNING, "make_table.py")
    p = subprocess.run([sys.executable, tool, *paths, "--out", str(out), "--version", "v1"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    table = json.loads(out.read_text())
    assert set(table["runs"]) == {"r1", "r2"}
    assert make_table.validate(table) == []
    c = next(c for c in table["cells"] if c["family"] == "block_load")
    assert "striped" not in c["measured"] and c["choice"] == "warp_transpose_timesliced"
    assert c["run"] == "r1"
    # a table missing a cell, or choosing a slower algorithm, or listing striped, is refused
    broken = copy.deepcopy(table)
    broken["cells"].pop()
    errs = make_table.validate(broken)
    assert any(e.startswith("coverage: no cell block_histogram") for e in errs)
    broken = copy.deepcopy(table)
    broken["cells"][0]["choice"] = "direct"
    assert any("is not the best median" in e for e in make_table.validate(broken))
    broken = copy.deepcopy(table)
    broken["cells"][0]["measured"]["striped"] = broken["cells"][0]["measured"]["direct"]
    assert any("not eligible for auto" in e for e in make_table.validate(broken))
    p = subprocess.run([sys.executable, tool, "--check", str(out)], capture_output=True, text=True)
    assert p.returncode == 0 and "ok" in p.stdout
    # one run alone misses half the grid: make_table says so and fails
    p = subprocess.run([sys.executable, tool, paths[0], "--out", str(tmp_path / "half.json")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "coverage: no cell" in p.stdout


def test_make_table_refuses_a_run_with_wrong_kernels(tmp_path):
    doc = full_runs()[0]
    doc["wrong"] = ["block_load_s1_t64_n1_direct: 3 of 64 wrong"]
    p = tmp_path / "r1.json"
    p.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, os.path.join(TUNING, "make_table.py"), str(p), "--out",
                        str(tmp_path / "t.json")], capture_output=True, text=True)
    assert r.returncode == 1 and "recorded wrong kernels" in r.stdout


def test_the_checked_in_table_is_measured_valid_and_traceable_to_its_runs():
    table = json.load(open(os.path.join(ROOT, "server", "catalog", "tuning", "sm_90.json")))
    assert make_table.validate(table) == []
    assert table["arch"] == "sm_90" and table["device"] == "NVIDIA H200"
    # every cell is the one its run recorded in device/tuning/results
    runs = {r: json.load(open(os.path.join(TUNING, "results", r + ".json"))) for r in table["runs"]}
    for c in table["cells"]:
        src = next(x for x in runs[c["run"]]["cells"] if make_table.cell_key(x) ==
                   make_table.cell_key(c))
        for alg, m in c["measured"].items():
            assert m["median_gbps"] == src["measured"][alg]["median_gbps"]
            assert m["n"] >= 15


def oot_case(fallback_gbps):
    """A table of one scan cell and a validation run of one out-of-table shape near it."""
    t = small_table()
    plan = {"seed": 1, "cells": [{"family": "block_scan", "dtype_size": 4, "threads": 96,
                                  "items_per_thread": 8, "purpose": "out_of_table"},
                                 {"family": "block_scan", "dtype_size": 4, "threads": 128,
                                  "items_per_thread": 8, "purpose": "held_out"}]}
    run = {"run": "vX", "cells": [
        {"family": "block_scan", "dtype_size": 4, "threads": 96, "items_per_thread": 8,
         "measured": measured(raking=100, raking_memoize=90, warp_scans=fallback_gbps)},
        {"family": "block_scan", "dtype_size": 4, "threads": 128, "items_per_thread": 8,
         "measured": measured(raking=100, raking_memoize=120, warp_scans=300)}]}
    return t, plan, run


def test_validate_report_fails_a_slower_fallback_and_a_held_out_miss():
    ok, lines, _ = validate.report(*oot_case(150), noise=0.01)
    assert ok, lines
    # the fallback (warp_scans, from the 128-thread cell) runs slower than raking: caught
    ok, lines, _ = validate.report(*oot_case(97), noise=0.01)
    assert not ok and any(x.startswith("  SLOWER block_scan S=4 T=96 N=8") for x in lines)
    # the table's choice is 3% behind the best in the new run: a held-out miss
    t, plan, run = oot_case(150)
    run["cells"][1]["measured"] = measured(raking=100, raking_memoize=310, warp_scans=300)
    ok, lines, _ = validate.report(t, plan, run, noise=0.01)
    assert not ok and any("HELD-OUT MISS block_scan S=4 T=128 N=8" in x for x in lines)


def test_every_family_renders_and_compiles_with_nvrtc(tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    if not os.path.isdir("/usr/local/cuda/include/cccl"):
        pytest.skip("no CCCL headers at /usr/local/cuda/include/cccl")
    # out-of-grid shapes (96 threads, warp_threads 4, 3 items), every family
    cells = tmp_path / "cells.json"
    cells.write_text(json.dumps({"cells": [
        {"family": f, "dtype_size": 2, "threads": 4 if FAMILIES[f]["warp"] else 96,
         "items_per_thread": 3} for f in FAMILIES]}))
    p = subprocess.run([sys.executable, os.path.join(TUNING, "run.py"), "--dry-run",
                        "--cells", str(cells), "--per-tu", "100", "--work", str(tmp_path),
                        "--nvrtc-check", "1"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "plan: 7 cells, 28 kernels, 1 units" in p.stdout
    assert "nvrtc-check: unit000 ok" in p.stdout


def test_run_refuses_an_empty_selection_and_an_unknown_family(tmp_path):
    tool = os.path.join(TUNING, "run.py")
    p = subprocess.run([sys.executable, tool, "--dry-run", "--items", "3", "--work",
                        str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and "no cells selected" in p.stderr
    p = subprocess.run([sys.executable, tool, "--dry-run", "--families", "block_sort", "--work",
                        str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and "family: unknown 'block_sort'; allowed: block_load" in p.stderr
