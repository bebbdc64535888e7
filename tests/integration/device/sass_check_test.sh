#!/usr/bin/env bash
# The SASS check (device/gpu_suite/sass_check.sh) must fail what it exists to catch. Without a
# GPU: probe kernels from tests/integration/device/sass/ are compiled to LTO-IR by NVRTC
# (nvrtc_ltoir) and linked into sm_90 cubins with -lto by a real coopd's Link RPC (coopctl link),
# one cubin per case, then checked:
#   must FAIL, each for its named reason:
#     noinline_wrapper    a kernel calling a __noinline__ coop_ function from a second module
#                         (it stays in the cubin as $k_probe$coop_block_probe_f32_0123)
#     other_noinline      the same with a function that is neither coop_ nor CUDA's (and, when
#                         the SYMBOLS_FILE lists it, as a user operator)
#     function_pointer    a CALL through a register to a function of the module
#   must PASS:
#     inlined_wrapper     the same wrapper, inlinable: no CALL left
#     cuda_helpers        CALLs to ptxas's division/sqrt slow paths, 64-bit division and vprintf
#     coopd_block_reduce  a kernel linked with a real coopd block_reduce artifact
# usage: sass_check_test.sh SASS_CHECK NVRTC_LTOIR COOPD COOPCTL PROBE_DIR [TOOLS_DIR]
#   TOOLS_DIR: where nvdisasm is when neither PATH nor $CUDA_HOME/bin has it (deploy/install-deps.sh
#   unpacks PyPI's nvidia-cuda-nvdisasm into .deps/). Exit 77 (skipped) without nvdisasm.
set -euo pipefail
sass_check=$1 nvrtc_ltoir=$2 coopd=$3 coopctl=$4 probes=$5 tools=${6:-}
if ! command -v nvdisasm >/dev/null; then
  for d in "${CUDA_HOME:-/usr/local/cuda}/bin" "$tools"; do
    [[ -n $d && -x $d/nvdisasm ]] && { PATH=$d:$PATH; break; }
  done
fi
if ! command -v nvdisasm >/dev/null; then
  echo "SKIP: nvdisasm not found on PATH, in \$CUDA_HOME/bin or in '$tools'" \
    "(deploy/install-deps.sh installs it from PyPI's nvidia-cuda-nvdisasm)"
  exit 77
fi
echo "nvdisasm: $(command -v nvdisasm)"
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && { kill $pid 2>/dev/null; wait $pid 2>/dev/null; }; rm -rf "$tmp"' EXIT
"$coopd" --socket "$tmp/s" --cache-dir "$tmp/c" --log-level warn &
pid=$!
for _ in $(seq 300); do "$coopctl" --socket "$tmp/s" stats >/dev/null 2>&1 && break; sleep 0.1; done
mkdir "$tmp/bad" "$tmp/good" "$tmp/empty" "$tmp/art"

ltoir() { "$nvrtc_ltoir" "$1" "$tmp/$(basename "$1" .cu).ltoir" sm_90; }
# link DIR/CASE.cubin from the given probe sources, LTO-IR and all, with coopd's Link RPC
link() {
  local out=$1 args=()
  shift
  for src in "$@"; do
    ltoir "$src"
    args+=(--ltoir "$tmp/$(basename "$src" .cu).ltoir")
  done
  "$coopctl" --socket "$tmp/s" link --arch sm_90 "${args[@]}" --out "$out" >/dev/null
}
link "$tmp/bad/noinline_wrapper.cubin" "$probes/probe_kernel.cu" "$probes/coop_noinline.cu"
link "$tmp/bad/other_noinline.cubin" "$probes/helper_kernel.cu" "$probes/helper_noinline.cu"
link "$tmp/bad/function_pointer.cubin" "$probes/fnptr_kernel.cu"
link "$tmp/good/inlined_wrapper.cubin" "$probes/probe_kernel.cu" "$probes/coop_inline.cu"
link "$tmp/good/cuda_helpers.cubin" "$probes/cuda_helpers_kernel.cu"
# A real artifact: the kernel is its header, the entry's symbol and size, then artifact_kernel.cu.
"$coopctl" --socket "$tmp/s" specialize block_reduce --method sum --dtype float32 --threads 128 \
  --arch sm_90 --out "$tmp/art" --json >"$tmp/art.json"
read -r key symbol bytes < <(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))
print(a["key"], a["entries"][0]["symbol"], a["temp_storage"]["bytes"])' "$tmp/art.json")
{
  cat "$tmp/art/$symbol.h"
  printf '#define COOP_ENTRY %s\n#define COOP_TEMP_BYTES %s\n' "$symbol" "$bytes"
  cat "$probes/artifact_kernel.cu"
} >"$tmp/artifact_kernel.cu"
ltoir "$tmp/artifact_kernel.cu"
"$coopctl" --socket "$tmp/s" link --arch sm_90 --ltoir "$tmp/artifact_kernel.ltoir" \
  --artifact "$key" --out "$tmp/good/coopd_block_reduce.cubin" >/dev/null

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run DIR [SYMBOLS_FILE]: the check's output in $tmp/out, its exit status in $rc
run() {
  rc=0
  bash "$sass_check" "$@" >"$tmp/out" 2>&1 || rc=$?
  cat "$tmp/out"
}
# expect KERNEL PASS|FAIL [TEXT...]: the kernel's RESULT line, and its row names each TEXT
expect() {
  local kernel=$1 result=$2 row
  shift 2
  grep -qxF "RESULT sass $kernel $result" "$tmp/out" || fail "$kernel: expected RESULT $result"
  row=$(grep -F "$kernel " "$tmp/out" | grep -v '^RESULT' || true)
  for text in "$@"; do
    grep -qF -- "$text" <<<"$row" || fail "$kernel: its row does not say \"$text\": $row"
  done
}

echo "== cases that must fail"
run "$tmp/bad"
((rc == 1)) || fail "sass_check exited $rc on the bad cases, expected 1"
grep -qF 'sass_check: FAILED' "$tmp/out" || fail "no 'sass_check: FAILED' line"
expect noinline_wrapper:k_probe FAIL \
  'CALL to coop_ function $k_probe$coop_block_probe_f32_0123 (not inlined)' \
  'coop_ function $k_probe$coop_block_probe_f32_0123 left in the cubin'
expect other_noinline:k_helper FAIL \
  "CALL to \$k_helper\$probe_helper, which is not one of CUDA's allowlisted helpers"
expect function_pointer:k_fnptr FAIL 'a function pointer, target unknown'
# Only the call is wrong in these kernels: their shared memory and loads must not fail them.
grep -E '^(noinline_wrapper|other_noinline|function_pointer):' "$tmp/out" \
  | grep -E 'LDS/STS:|generic LD/ST' && fail "a bad case failed for a reason other than its CALL"

echo "== a function the SYMBOLS_FILE names is a user operator"
echo probe_helper >"$tmp/user_op_symbols.txt"
run "$tmp/bad" "$tmp/user_op_symbols.txt"
((rc == 1)) || fail "sass_check exited $rc on the bad cases with a SYMBOLS_FILE, expected 1"
expect other_noinline:k_helper FAIL 'CALL to user operator $k_helper$probe_helper (not inlined)' \
  'user operator $k_helper$probe_helper left in the cubin'

echo "== cases that must pass"
run "$tmp/good"
((rc == 0)) || fail "sass_check exited $rc on the good cases, expected 0"
expect inlined_wrapper:k_probe PASS
expect coopd_block_reduce:k_artifact PASS
# The allowlist was exercised: the kernel does CALL CUDA's helpers, and passes.
expect cuda_helpers:k_cuda_helpers PASS __cuda_sm3x_div_rn_noftz_f32_slowpath \
  __cuda_sm20_sqrt_rn_f32_slowpath __cuda_sm20_div_u64 vprintf
for k in inlined_wrapper:k_probe coopd_block_reduce:k_artifact; do
  # columns: kernel LDS/STS LDL/STL generic CALL
  read -r _ shared _ _ calls _ < <(grep -F "$k " "$tmp/out" | grep -v '^RESULT')
  ((calls == 0)) || fail "$k: $calls CALLs, expected none"
  ((shared > 0)) || fail "$k: no LDS/STS"
done

echo "== no cubins"
run "$tmp/empty"
((rc == 2)) || fail "sass_check exited $rc on an empty directory, expected 2"

if ((failures)); then
  echo "sass check self-test: $failures failed"
  exit 1
fi
echo "sass check self-test: passed"
