#!/usr/bin/env bash
# CI test for the CuTe DSL examples without a GPU: device/cute/make_cubins.sh starts a real coopd,
# compiles device/cute/coop_cute.py's kernels (reduce, scan on tensors and on values, radix sort,
# load-then-store, load-reduce-scan-store in one planned allocation, and the
# load-then-store launched with the wrong block, with and without the launch check) to
# sm_90a cubins with CuTe DSL and runs the SASS check on them: each must pass, and the manifest
# the GPU machine's runner reads must name each kernel's symbol. Then the reduce kernel built with
# its entry declared noinline must fail the check as a CALL to a coop_ function.
# usage: cute_example_test.sh COOPD SOURCE_DIR      (exit 77: skipped)
set -euo pipefail
coopd=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
COOPD_BIN=$coopd "$src/device/cute/make_cubins.sh" "$tmp/good" >"$tmp/good.log" 2>&1 || rc=$?
cat "$tmp/good.log"
((rc == 77)) && exit 77
((rc == 0)) || { echo "FAIL: make_cubins.sh exited $rc"; exit 1; }
for k in cute_reduce_f32 cute_scan_i32 cute_scan_values_i32 cute_sort_u32 cute_load_store_i32 \
         cute_planned_i32 \
         cute_wrong_block_checked_i32 cute_wrong_block_unchecked_i32; do
  grep -q "^PASS $k: kernel_" "$tmp/good.log" || { echo "FAIL: $k did not compile"; exit 1; }
  grep -Eq "^RESULT sass $k:kernel_\S+ PASS$" "$tmp/good.log" || { echo "FAIL: $k failed the SASS check"; exit 1; }
done
python3 - "$tmp/good/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
names = [k["name"] for k in m["kernels"]]
assert names == ["cute_reduce_f32", "cute_scan_i32", "cute_scan_values_i32", "cute_sort_u32",
                 "cute_load_store_i32", "cute_planned_i32",
                 "cute_wrong_block_checked_i32", "cute_wrong_block_unchecked_i32"], names
expect = {k["name"]: (k.get("expect"), k["block"]) for k in m["kernels"]}
assert expect["cute_wrong_block_checked_i32"] == ("trap", [64, 1, 1]), expect
assert expect["cute_wrong_block_unchecked_i32"] == ("unchecked", [64, 1, 1]), expect
assert expect["cute_load_store_i32"] == (None, [128, 1, 1]), expect
assert m["arch"] == "sm_90a", m["arch"]
for k in m["kernels"]:
    assert k["symbol"].startswith("kernel_") and k["smem"] > 0 and len(k["params"]) == 2, k
PY
rc=0
COOPD_BIN=$coopd "$src/device/cute/make_cubins.sh" "$tmp/bad" --only cute_reduce_f32 \
  --no-inline cute_reduce_f32 >"$tmp/bad.log" 2>&1 || rc=$?
cat "$tmp/bad.log"
((rc == 1)) || { echo "FAIL: the noinline build passed the SASS check (exit $rc)"; exit 1; }
grep -Eq "FAIL: CALL to coop_ function \S+coop_block_reduce_sum_f32_[0-9a-f]+ \(not inlined\)" "$tmp/bad.log" \
  || { echo "FAIL: the SASS check did not name the CALL to the noinline entry"; exit 1; }
echo "cute example: 8 kernels compiled and inlined; the noinline build fails the SASS check"
