#!/usr/bin/env bash
# Self-test of the tuning-table check (coopd_tuning_check, docs/tuning.md): a table covering the
# whole grid passes; the same table missing one cell, with a bad field, or a placeholder without
# --allow-placeholder fails, each with the message that names what is wrong.
# usage: tuning_check_test.sh CHECKER
set -euo pipefail
checker=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$dir" <<'PY'
import copy, json, sys
out = sys.argv[1]
families = {  # family: (measured method, auto algorithms, baseline, sizes, threads)
    "block_load": ("load", ["direct", "vectorize", "transpose", "warp_transpose",
                            "warp_transpose_timesliced"], "direct", [1, 2, 4, 8], [64, 128, 256, 512]),
    "block_store": ("store", ["direct", "vectorize", "transpose", "warp_transpose",
                              "warp_transpose_timesliced"], "direct", [1, 2, 4, 8], [64, 128, 256, 512]),
    "warp_load": ("load", ["direct", "vectorize", "transpose"], "direct", [1, 2, 4, 8], [8, 16, 32]),
    "warp_store": ("store", ["direct", "vectorize", "transpose"], "direct", [1, 2, 4, 8], [8, 16, 32]),
    "block_scan": ("inclusive_sum", ["raking", "raking_memoize", "warp_scans"], "raking",
                   [1, 2, 4, 8], [64, 128, 256, 512]),
    "block_reduce": ("sum", ["raking", "raking_commutative_only", "warp_reductions"],
                     "warp_reductions", [1, 2, 4, 8], [64, 128, 256, 512]),
    "block_histogram": ("histogram", ["sort", "atomic"], "sort", [1, 2], [64, 128, 256, 512]),
}
cells = []
for fam, (method, algs, base, sizes, threads) in families.items():
    for s in sizes:
        for t in threads:
            for n in [1, 2, 4, 8, 16]:
                measured = {}
                for i, a in enumerate(algs):
                    g = 100.0 + 10 * i
                    measured[a] = {"median_gbps": g, "min_gbps": g - 1, "max_gbps": g + 1, "n": 15}
                cells.append({"family": fam, "method": method, "dtype_size": s, "threads": t,
                              "items_per_thread": n, "choice": algs[-1], "run": "r1",
                              "measured": measured})
table = {"schema": 1, "version": "sm_90-selftest.1", "arch": "sm_90", "device": "none",
         "toolchain": "CUDA 13.0, CCCL 3.0.1", "generated_by": "tuning_check_test.sh",
         "runs": {"r1": "generated"}, "cells": cells}
json.dump(table, open(f"{out}/full.json", "w"))
missing = copy.deepcopy(table)
gone = missing["cells"].pop(42)
json.dump(missing, open(f"{out}/missing.json", "w"))
open(f"{out}/gone.txt", "w").write(
    f'{gone["family"]}/{gone["method"]} S={gone["dtype_size"]} T={gone["threads"]} N={gone["items_per_thread"]}')
bad = copy.deepcopy(table)
bad["cells"][3]["threads"] = "many"
json.dump(bad, open(f"{out}/bad.json", "w"))
placeholder = copy.deepcopy(table)
placeholder["runs"] = {"placeholder": "not measured"}
placeholder["cells"] = placeholder["cells"][:3]
for c in placeholder["cells"]:
    c["run"] = "placeholder"
json.dump(placeholder, open(f"{out}/placeholder.json", "w"))
PY
placeholder=$dir/placeholder.json

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_fail() {  # FILE NEEDLE [ARGS...]
  local file=$1 needle=$2
  shift 2
  local err
  if err=$("$checker" "$@" "$file" 2>&1); then fail "$file passed: $err"; fi
  [[ $err == *"$needle"* ]] || fail "$file: expected \"$needle\" in: $err"
  echo "ok: $file fails: $err" | head -c 300
  echo
}

"$checker" "$dir/full.json" || fail "the full grid must pass"
expect_fail "$dir/missing.json" "1 cells of the tuning grid are missing"
expect_fail "$dir/missing.json" "$(cat "$dir/gone.txt")"
expect_fail "$dir/bad.json" 'cells[3].threads: must be an integer 1..1024, got "many"'
expect_fail "$placeholder" "cells of the tuning grid are missing"
"$checker" --allow-placeholder "$placeholder" || fail "--allow-placeholder must pass the placeholder"
# A measured table is never exempt: --allow-placeholder still checks the grid.
expect_fail "$dir/missing.json" "1 cells of the tuning grid are missing" --allow-placeholder
echo "tuning_check_test: ok"
