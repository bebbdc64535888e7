#!/usr/bin/env bash
# On the GPU machine (CUDA 13 toolkit, an sm_90 GPU, no gRPC): builds gpu_suite with nvcc and
# runs, on artifacts coopd made elsewhere (device/gpu_check/make_artifacts.sh):
#   1. correctness of every family + the timed kernels (linked vs CUB compiled in by nvcc),
#      timed GPU_SUITE_BENCH_RUNS times (default 2) to show the spread,
#   2. the Numba-CUDA example and coopd.numba's GPU tests (run and check; the example also links
#      its cubins for the SASS checks), with a coopd started from $COOPD_BIN,
#   3. the SASS checks on every linked cubin,
#   4. compute-sanitizer memcheck and racecheck on the correctness cases (few blocks),
# then prints a summary table. Logs (and the SASS of the timed kernels, linked and native) go to
# $OUT, else /tmp/gpu_suite_logs.
# usage: [COOPD_BIN=...] device/run_gpu_suite.sh [ARTIFACT_DIR]  (default .device-carry/gpu-artifacts)
# Exit status 1 when any correctness, SASS or sanitizer check failed; timings never fail it.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
art=$(realpath "${1:-.device-carry/gpu-artifacts}")
logs=${OUT:-/tmp/gpu_suite_logs}
mkdir -p "$logs"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run_gpu_suite: SKIP: no GPU here"
  exit 0
fi
[[ -f $art/manifest.txt ]] || { echo "run_gpu_suite: no artifacts in $art (make_artifacts.sh)"; exit 1; }
build=$(mktemp -d /tmp/gpu_suite.XXXXXX)
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
status=0

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
    --format=csv
  echo "artifacts: $art ($(wc -l <"$art/manifest.txt") cases)"
} >"$logs/suite.log"
echo "== build (nvcc)"
nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo -DCOOP_SUITE_DIR="\"$root/device/gpu_suite\"" \
  -o "$build/gpu_suite" device/gpu_suite/gpu_suite.cu -lnvrtc -lnvJitLink -lcuda \
  || { echo "run_gpu_suite: build failed"; exit 1; }
mkdir -p "$build/cubins"

echo "== correctness and speed"
"$build/gpu_suite" "$art" --cubins "$build/cubins" 2>&1 | tee -a "$logs/suite.log" \
  | grep -vE '^RESULT check .* PASS' || true
((PIPESTATUS[0] == 0)) || status=1
# The timings once more, to show their run-to-run spread next to the first run's.
for run in $(seq 2 "${GPU_SUITE_BENCH_RUNS:-2}"); do
  echo "== timing run $run"
  "$build/gpu_suite" "$art" --bench-only 2>&1 | tee -a "$logs/suite.log" | grep -E '^RESULT (bench|copy|devreduce)'
  ((PIPESTATUS[0] == 0)) || status=1
done

echo "== Numba-CUDA: the example and coopd.numba's GPU tests"
# coopd.numba asks a running coopd for its artifacts. This machine has no gRPC C++ libraries:
# COOPD_BIN names a coopd packed with the shared libraries ldd lists for it: device/bundle_coopd.sh
# makes one (.device-carry/coopd/coopd).
if [[ -n ${COOPD_BIN:-} && -x $COOPD_BIN ]]; then
  daemon=$(mktemp -d /tmp/gpu_suite_coopd.XXXXXX)
  "$COOPD_BIN" --socket "$daemon/s" --cache-dir "$daemon/c" --log-level warn >"$logs/coopd.log" 2>&1 &
  coopd_pid=$!
  for _ in $(seq 600); do [[ -S $daemon/s ]] && break; sleep 0.1; done  # it listens once ready
  export COOPD_NO_AUTOSTART=1 PYTHONPATH=$root/client/python:$root/tests/python${PYTHONPATH:+:$PYTHONPATH}
  {
    python3 device/numba/coop_numba.py --socket "$daemon/s" --compile-only --cubins "$build/cubins"
    python3 device/numba/coop_numba.py --socket "$daemon/s"
    # The module's own GPU tests (their fixture starts another coopd from COOPD_BIN).
    python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python/test_numba.py \
      && echo "PASS coopd.numba GPU tests" || echo "FAIL coopd.numba GPU tests"
  } 2>&1 | tee "$logs/numba.log"
  kill "$coopd_pid" 2>/dev/null; wait "$coopd_pid" 2>/dev/null
  rm -rf "$daemon"
else
  echo "SKIP numba: no coopd that runs here; set COOPD_BIN (device/bundle_coopd.sh packs one)" | tee "$logs/numba.log"
fi
grep -q '^FAIL' "$logs/numba.log" && status=1

echo "== SASS checks"
cat "$art/user_op_symbols.txt" "$build/cubins/numba_op_symbols.txt" >"$build/op_symbols.txt" 2>/dev/null
rm -f "$build/cubins/numba_op_symbols.txt"
device/gpu_suite/sass_check.sh "$build/cubins" "$build/op_symbols.txt" >"$logs/sass.log" 2>&1 || status=1
grep -v '^RESULT' "$logs/sass.log"
cuobjdump -sass "$build/cubins/bench.cubin" >"$logs/linked_bench.sass" 2>&1
cuobjdump -sass "$build/gpu_suite" | awk '/Function :/ {on = ($3 ~ /^bench_/)} on' \
  >"$logs/native_bench.sass" 2>&1
echo "SASS of the timed kernels, linked vs native (instructions):" | tee -a "$logs/sass.log"
python3 device/gpu_suite/sass_diff.py "$logs/linked_bench.sass" "$logs/native_bench.sass" \
  | tee -a "$logs/sass.log"

echo "== compute-sanitizer"
: >"$logs/sanitizer.log"
for tool in memcheck racecheck; do
  echo "---- $tool" >>"$logs/sanitizer.log"
  # Exit 9: the tool found errors; any other non-zero exit is gpu_suite's own (a check failed,
  # reported above), which is no sanitizer finding.
  start=$(wc -l <"$logs/sanitizer.log")
  compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/gpu_suite" "$art" --small \
    >>"$logs/sanitizer.log" 2>&1
  rc=$?
  if ((rc == 0)); then
    echo "RESULT sanitizer $tool PASS" | tee -a "$logs/sanitizer.log"
  elif ((rc != 9)) && tail -n +"$((start + 1))" "$logs/sanitizer.log" | grep -q '^FAILED: '; then
    echo "RESULT sanitizer $tool PASS (no findings; gpu_suite exit $rc: a check failed)" \
      | tee -a "$logs/sanitizer.log"
    status=1
  else
    echo "RESULT sanitizer $tool FAIL (exit $rc)" | tee -a "$logs/sanitizer.log"
    status=1
  fi
done

python3 device/gpu_suite/summarize.py "$logs" | tee "$logs/summary.txt"
rm -rf "$build"
exit $status
