#!/usr/bin/env bash
# On the GPU machine: build gpu_check with nvcc and run it on artifacts coopd made elsewhere,
# then once more under compute-sanitizer (memcheck).
# usage: device/gpu_check/run.sh ARTIFACT_DIR [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
art=$1
out=${2:-/tmp}
nvcc -std=c++17 -O2 -o "$out/gpu_check" "$here/gpu_check.cu" -lnvrtc -lnvJitLink -lcuda
"$out/gpu_check" "$art"
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$out/gpu_check" "$art" | tail -3
fi
