#!/usr/bin/env bash
# CI test for device/numba/coop_numba.py without a GPU: a real coopd on a temp socket serves
# artifacts to coopd.numba (Numba's calling convention); the example compiles its kernels with
# Numba for sm_90 and links each with its primitives' LTO-IR into a cubin.
# usage: numba_example_test.sh COOPD EXAMPLE.py      (exit 77: skipped)
set -euo pipefail
coopd=$1 example=$2
if ! python3 -c "import numba.cuda, cuda.bindings.nvjitlink" 2>/dev/null; then
  echo "SKIP: numba-cuda or cuda-bindings is not installed (deploy/install-deps.sh installs them)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
"$coopd" --socket "$tmp/s" --cache-dir "$tmp/c" --log-level warn &
pid=$!
for _ in $(seq 600); do [[ -S $tmp/s ]] && break; sleep 0.1; done  # coopd listens once ready
mkdir "$tmp/cubins"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
COOPD_NO_AUTOSTART=1 python3 "$example" --socket "$tmp/s" --compile-only --cubins "$tmp/cubins" \
  | tee "$tmp/log"
# Every kernel must have linked into a non-empty ELF cubin.
n=0
for k in numba_reduce_f32 numba_scan_i32 numba_sort_u32 numba_load_store_f32 numba_merge_sort_f32; do
  grep -q "^PASS $k" "$tmp/log" || { echo "FAIL: $k did not link"; exit 1; }
  [[ $(head -c4 "$tmp/cubins/$k.cubin") == $'\x7fELF' ]] || { echo "FAIL: $k.cubin is no ELF"; exit 1; }
  n=$((n + 1))
done
echo "numba example: $n kernels linked, 0 failed"
