#!/usr/bin/env bash
# CI test for device/numba/coop_numba.py without a GPU: a real coopd on a temp socket serves
# artifacts in Numba's calling convention; the example fetches them with coopctl, compiles its
# kernels with Numba for sm_90 and links each with the artifact's LTO-IR into a cubin.
# usage: numba_example_test.sh COOPD COOPCTL EXAMPLE.py      (exit 77: skipped)
set -euo pipefail
coopd=$1 coopctl=$2 example=$3
if ! python3 -c "import numba.cuda, cuda.bindings.nvjitlink" 2>/dev/null; then
  echo "SKIP: numba-cuda or cuda-bindings is not installed (deploy/install-deps.sh installs them)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
"$coopd" --socket "$tmp/s" --cache-dir "$tmp/c" --log-level warn &
pid=$!
for _ in $(seq 300); do "$coopctl" --socket "$tmp/s" stats >/dev/null 2>&1 && break; sleep 0.1; done
mkdir "$tmp/cubins"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
python3 "$example" --coopctl "$coopctl" --socket "$tmp/s" --compile-only --cubins "$tmp/cubins" \
  | tee "$tmp/log"
# Each kernel that ran must have produced a non-empty ELF cubin; reduce and scan must be there.
for k in numba_reduce_f32 numba_scan_i32; do
  grep -q "^PASS $k" "$tmp/log" || { echo "FAIL: $k did not link"; exit 1; }
  [[ $(head -c4 "$tmp/cubins/$k.cubin") == $'\x7fELF' ]] || { echo "FAIL: $k.cubin is no ELF"; exit 1; }
done
echo "numba example: 1 passed, 0 failed"
