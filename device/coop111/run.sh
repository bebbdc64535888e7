#!/usr/bin/env bash
# On the GPU machine: runs cuda.coop 1.1.1's own suite and examples, unmodified, in each MODE
# given, one after the other, and prints passed/failed/skipped and wall time for each.
#   device/coop111/run.sh MODE...      (MODE: real, coopd-cold, coopd-warm)
# real: NVIDIA's cuda.coop from the cuda-cccl 1.1.1 wheel. coopd-cold: coopd.coop through
# `python -m coopd.coop run --`, a fresh coopd on an empty cache. coopd-warm: the same with a
# fresh coopd on the cache the last coopd-cold left. Needs what device/coop111/prepare.sh made
# (carry .device-carry/coop111 and .device-carry/coopd). Environment: JOBS (pytest -n, default
# 14), COOP111_PROFILE=1 (cProfile each pytest worker; pstats files go to $OUT/profile-MODE),
# COOP111_K (a pytest -k filter, for a short run). Logs and JUnit XML go to $OUT (or /tmp/coop111).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
carry=$repo/.device-carry/coop111
out=${OUT:-/tmp/coop111-out}
work=/tmp/coop111
jobs=${JOBS:-14}
mkdir -p "$out" "$work"
if [[ ! -d $work/suite ]]; then
  mkdir -p "$work/suite" && tar -xzf "$carry/suite.tar.gz" -C "$work/suite" || exit 1
fi
pkg=$work/suite/python/cuda_cccl  # its pyproject.toml holds the suite's pytest settings
# numba-cuda 0.30 calls np.row_stack, which NumPy 2.5 (the GPU image's) removed; coopd.numba
# restores it itself, real cuda.coop needs this shim to import at all. Nothing else is changed.
mkdir -p "$work/shim"
cat >"$work/shim/sitecustomize.py" <<'PY'
import numpy as _np
if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack
PY
if [[ ${COOP111_PROFILE:-0} == 1 ]]; then
  cp "$repo/device/coop111/profile_plugin.py" "$work/shim/"
  profile=(-p profile_plugin)
else
  profile=()
fi
filter=()
[[ -n ${COOP111_K:-} ]] && filter=(-k "$COOP111_K")

run_suite() {  # MODE PREFIX...: runs pytest under PREFIX, prints one summary line
  local mode=$1; shift
  local t0 t1 rc
  t0=$(date +%s%N)
  (cd "$pkg" && COOP111_PROFILE_DIR="$out/profile-$mode" "$@" python3 -m pytest -q -p no:cacheprovider \
    -n "$jobs" "${profile[@]}" "${filter[@]}" --junitxml="$out/junit-$mode.xml" \
    tests/coop/_experimental tests/test_examples.py) >"$out/log-$mode.txt" 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf '%-11s rc=%d wall=%d.%d s  %s\n' "$mode" "$rc" $(((t1 - t0) / 1000000000)) \
    $(((t1 - t0) / 100000000 % 10)) \
    "$(grep -E '[0-9]+ (passed|failed)' "$out/log-$mode.txt" | tail -1)"
}

start_coopd() {  # CACHE: a fresh coopd on CACHE, serving $work/coopd.sock
  stop_coopd
  mkdir -p "$1"
  "$repo/.device-carry/coopd/coopd" --socket "$work/coopd.sock" --cache-dir "$1" \
    >"$out/coopd-$(basename "$1")-$RANDOM.log" 2>&1 &
  echo $! >"$work/coopd.pid"
  for _ in $(seq 100); do [[ -S $work/coopd.sock ]] && return 0; sleep 0.1; done
  echo "coopd did not start" >&2; return 1
}
stop_coopd() {  # and wait until it has gone: the next one cannot own the socket before
  local pid
  [[ -f $work/coopd.pid ]] || return 0
  pid=$(cat "$work/coopd.pid")
  kill "$pid" 2>/dev/null
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$work/coopd.pid"
}

for mode in "$@"; do
  case $mode in
    real)
      if [[ ! -d $work/real-site ]]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --target "$work/real-site" \
          "$carry"/wheels/cuda_cccl-1.1.1-*.whl || exit 1
      fi
      run_suite real env PYTHONPATH="$work/shim:$work/real-site" ;;
    coopd-cold|coopd-warm)
      [[ $mode == coopd-cold ]] && rm -rf "$work/cache"
      start_coopd "$work/cache" || exit 1
      run_suite "$mode" env PYTHONPATH="$work/shim:$repo/client/python" COOPD_SOCKET="$work/coopd.sock" \
        COOPD_NO_AUTOSTART=1 python3 -m coopd.coop run --
      stop_coopd
      echo "  cache: $(du -sh "$work/cache" | cut -f1)" ;;
    *) echo "run.sh: unknown mode $mode (real, coopd-cold, coopd-warm)" >&2; exit 2 ;;
  esac
done
