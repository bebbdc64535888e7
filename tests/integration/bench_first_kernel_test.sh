#!/usr/bin/env bash
# bench/first_kernel.py --link-only against a real coopd on a temporary socket: the benchmark's
# coopd kernels (BlockReduce, BlockScan, BlockRadixSort through coopd.numba) compile and link to
# sm_90 cubins without a GPU, and the "coopd (hit, cached kernel)" variant's kernels are stored
# in coopd.numba's kernel cache by one process and loaded from it by a fresh one, so the GPU run
# does not find a broken script.
# usage: bench_first_kernel_test.sh COOPD_BINARY SOURCE_DIR     (exit 77 without numba-cuda)
set -euo pipefail
coopd=$1 src=$2
python3 -c "import numba.cuda, cuda.bindings.nvjitlink" 2>/dev/null || {
  echo "SKIP: numba-cuda or cuda-bindings not installed (deploy/install-deps.sh)"; exit 77; }
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
"$coopd" --socket "$dir/coopd.sock" --cache-dir "$dir/cache" >"$dir/coopd.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [[ -S $dir/coopd.sock ]] && break; sleep 0.1; done
[[ -S $dir/coopd.sock ]] || { cat "$dir/coopd.log"; echo "coopd did not start"; exit 1; }
COOPD_SOCKET=$dir/coopd.sock COOPD_NO_AUTOSTART=1 COOPD_ARCH=sm_90 \
  PYTHONPATH="$src/client/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$src/bench/first_kernel.py" --link-only
