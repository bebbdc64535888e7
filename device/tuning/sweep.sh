#!/usr/bin/env bash
# On the GPU machine: the suite's GPU self-test, then one run.py run per RUN_ID:FAMILIES argument,
# each writing $OUT/<run-id>.json and its log (see docs/tuning.md, "The tuning suite").
# usage: device/tuning/sweep.sh r1:block_load,block_store r2:block_scan [-- EXTRA run.py ARGS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/tuning-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
runs=()
while (($#)) && [[ $1 != -- ]]; do runs+=("$1"); shift; done
(($#)) && shift
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$out/gpu.txt"
python3 "$here/run.py" --self-test --threads 128,16 --items 4 --dtype-sizes 2 --work /tmp/tuning-st \
  2>&1 | tee "$out/selftest.log"
((PIPESTATUS[0] == 0)) || { echo "sweep: the self-test failed"; exit 1; }
status=0
for r in "${runs[@]}"; do
  id=${r%%:*} fams=${r#*:}
  python3 "$here/run.py" --run-id "$id" --families "$fams" --out "$out" --work "/tmp/tuning-$id" "$@" \
    2>&1 | tee "$out/$id.log" | grep -vE '^cell ' 
  ((PIPESTATUS[0] == 0)) || status=1
done
exit $status
