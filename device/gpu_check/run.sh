#!/usr/bin/env bash
# Kept for existing callers: gpu_check's cases now live in device/gpu_suite (gpu_suite.cu), which
# also covers every family, timing and SASS checks. This runs its correctness checks only, then
# once more under compute-sanitizer (memcheck). The fixed-k top-k cases' tiles are checked against
# NumPy too (topk_numpy.py).
# usage: device/gpu_check/run.sh ARTIFACT_DIR [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/../gpu_suite" && pwd)
art=$1
out=${2:-/tmp}
nvcc -std=c++17 -O3 -arch=sm_90 -DCOOP_SUITE_DIR="\"$here\"" -o "$out/gpu_suite" \
  "$here/gpu_suite.cu" -lnvrtc -lnvJitLink -lcuda
# The fixed-k top-k cases also dump their first tiles, checked against NumPy afterwards.
mkdir -p "$out/dump"
COOP_DUMP_DIR="$out/dump" "$out/gpu_suite" "$art" --check-only
if compgen -G "$out/dump/*.meta" >/dev/null; then
  python3 "$(dirname "$0")/topk_numpy.py" "$out/dump"
fi
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$out/gpu_suite" "$art" --small | tail -3
fi
