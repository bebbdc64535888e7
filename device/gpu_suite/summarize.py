#!/usr/bin/env python3
"""Prints run_gpu_suite.sh's summary table from the logs in LOG_DIR."""
import collections
import os
import re
import sys

FAMILIES = [("reduce_sum_f16", "block_reduce float16"),
            ("reduce_sum_partial", "block_reduce sum_partial"), ("reduce_", "block_reduce"),
            ("scan_exsum_prefix_cb", "block_scan prefix callback"),
            ("scan_exsum_prefix", "block_scan running prefix"),
            ("rld_", "block_run_length_decode"), ("radix_rank", "block_radix_rank"),
            ("warp_ls_", "warp_load/warp_store"), ("warp_exchange", "warp_exchange"),
            ("warp_headseg", "warp_reduce head_segmented_sum"),
            ("warp_sum_partial", "warp_reduce sum_partial"),
            ("user_sort", "user type: load/merge sort/store"),
            ("scan_", "block_scan"), ("ls_", "block_load/store"),
            ("tile_pipeline", "block_load/scan/store"), ("exchange", "block_exchange"),
            ("merge_user_cmp", "block_merge_sort, user comparator"),
            ("merge_", "block_merge_sort"), ("histo_", "block_histogram"),
            ("discont_", "block_discontinuity"), ("adjdiff_", "block_adjacent_difference"),
            ("op_src_", "user operator (source)"), ("op_lto_", "user operator (LTO-IR)"),
            ("op_stateful", "user operator (stateful)"), ("topk_", "block_topk (CCCL 3.3)"),
            ("shuffle", "block_shuffle"), ("warp_sum", "warp_reduce"), ("warp_max", "warp_reduce"),
            ("warp_or", "warp_reduce"), ("warp_", "warp_scan"), ("radix", "block_radix_sort"),
            ("bench.", "timed kernels' outputs")]


def family(case):
    return next((f for p, f in FAMILIES if case.startswith(p)), case)


def lines(logs, name):
    path = os.path.join(logs, name)
    return open(path, errors="replace").read().splitlines() if os.path.exists(path) else []


def main(logs):
    suite = lines(logs, "suite.log")
    seed = next((l.split()[1] for l in suite if l.startswith("seed:")), "?")
    gpu = suite[1] if len(suite) > 1 else "?"
    print(f"\n==== summary  ({gpu.strip()}; seed {seed})")
    counts = collections.OrderedDict()
    for l in suite:
        m = re.match(r"RESULT check (\S+)\s+(PASS|FAIL|SKIP|XFAIL|XPASS)", l)
        if m:
            c = counts.setdefault(family(m.group(1)), collections.Counter())
            c[{"XPASS": "PASS"}.get(m.group(2), m.group(2))] += 1
    print(f"{'correctness':36} {'pass':>5} {'fail':>5} {'skip':>5} {'known bug (XFAIL)':>18}")
    for fam, c in counts.items():
        print(f"  {fam:34} {c['PASS']:5} {c['FAIL']:5} {c['SKIP']:5} {c['XFAIL']:18}")
    for l in suite:
        if re.match(r"RESULT check \S+\s+X(FAIL|PASS)", l):
            print("  " + l[len("RESULT check "):])

    # Timings: one row per timed kernel and run ("RESULT copy" starts each run).
    runs, run = [], None
    for l in suite:
        f = l.split()
        if l.startswith("RESULT copy"):
            run = {"copy": (float(f[2]), float(f[3])), "bench": [], "dev": None}
            runs.append(run)
        elif run is not None and l.startswith("RESULT bench"):
            run["bench"].append(f[2:])
        elif run is not None and l.startswith("RESULT devreduce"):
            run["dev"] = (float(f[2]), float(f[3]))
    print(f"\n{'speed (median)':24} {'linked ms':>10} {'native ms':>10} {'ratio':>7} "
          f"{'linked GB/s':>12} {'native GB/s':>12} {'% copy':>7}")
    for i, r in enumerate(runs, 1):
        copy_ms, copy_gbs = r["copy"]
        for f in r["bench"]:
            name = f"{f[0]} (run {i})"
            if f[1] == "SKIP":
                print(f"  {name:22} skipped: {' '.join(f[2:])}")
                continue
            print(f"  {name:22} {float(f[1]):10.4f} {float(f[2]):10.4f} {float(f[3]):7.3f} "
                  f"{float(f[4]):12.0f} {float(f[5]):12.0f} {100 * float(f[4]) / copy_gbs:6.1f}%")
        if r["dev"]:
            ms, gbs = r["dev"]
            print(f"  {'DeviceReduce (run %d)' % i:22} {ms:10.4f} {'':>10} {'':>7} {gbs:12.0f} "
                  f"{'':>12} {100 * gbs / copy_gbs:6.1f}%")
        print(f"  {'D2D copy (run %d)' % i:22} {copy_ms:10.4f} {'':>10} {'':>7} {copy_gbs:12.0f} "
              f"{'':>12} {100.0:6.1f}%   (bytes read + written)")

    sass = collections.Counter(l.split()[3] for l in lines(logs, "sass.log")
                               if l.startswith("RESULT sass"))
    print(f"\nSASS checks: {sass['PASS']} kernels pass, {sass['FAIL']} fail")
    sass_log = lines(logs, "sass.log")
    if any(l.startswith("SASS of the timed") for l in sass_log):
        i = next(i for i, l in enumerate(sass_log) if l.startswith("SASS of the timed"))
        print("\n".join(sass_log[i:]))
    numba = [l for l in lines(logs, "numba.log") if re.match(r"(PASS|FAIL|SKIP) ", l)]
    print("Numba-CUDA example:" + ("".join("\n  " + l for l in numba) if numba else " no result"))
    for l in lines(logs, "sanitizer.log"):
        if l.startswith("RESULT sanitizer"):
            print("compute-sanitizer " + " ".join(l.split()[2:]))
    for l in lines(logs, "sanitizer.log"):
        if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l:
            print("  " + l.strip())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
