#!/usr/bin/env bash
# On the development machine (no GPU needed): compiles the CuTe DSL example kernels
# (device/cute/coop_cute.py, on coopd.cute) to sm_90a cubins plus manifest.json in DEST, with a
# coopd started from $COOPD_BIN (default ./build/server/coopd) on a temporary socket, then runs
# the SASS check (device/gpu_suite/sass_check.sh) on them: every primitive inlined, temp storage
# in shared memory. Carry DEST to the GPU machine (a few tens of KB) and run
# device/cute/run_cubins.py there.
#   [COOPD_BIN=...] device/cute/make_cubins.sh [DEST] [coop_cute.py options]
#   (default DEST .device-carry/cute-cubins). Exit 1 when a kernel does not compile or fails the
#   SASS check; 77 when CuTe DSL (nvidia-cutlass-dsl) or nvdisasm is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
dest=${1:-.device-carry/cute-cubins}
shift || true
coopd=${COOPD_BIN:-$root/build/server/coopd}
[[ -x $coopd ]] || { echo "make_cubins: no coopd at $coopd (build first, or set COOPD_BIN)" >&2; exit 1; }
if ! python3 -c "import cutlass.cute" 2>/dev/null; then
  echo "SKIP: CuTe DSL is not installed (deploy/install-deps.sh installs nvidia-cutlass-dsl)"
  exit 77
fi
# nvdisasm and cuobjdump: PATH, $COOPD_SASS_TOOLS_DIR, the toolkit, or what install-deps
# unpacked into .deps/.
for d in ${COOPD_SASS_TOOLS_DIR:-} "${CUDA_HOME:-/usr/local/cuda}/bin" \
         "$root"/.deps/nvidia-cuda-sass-tools-*/nvidia/cu13/bin; do
  [[ -x $d/nvdisasm ]] && PATH=$PATH:$d
done
command -v nvdisasm >/dev/null || { echo "SKIP: no nvdisasm (deploy/install-deps.sh fetches it)"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$coopd" --socket "$tmp/s" --cache-dir "$tmp/c" --log-level warn &
pid=$!
for _ in $(seq 600); do [[ -S $tmp/s ]] && break; sleep 0.1; done  # coopd listens once ready
rm -rf "$dest"
export CUTE_DSL_ARCH=${CUTE_DSL_ARCH:-sm_90a} COOPD_NO_AUTOSTART=1 COOPD_CUTE_DIR=$tmp/bitcode
PYTHONPATH=$root/client/python${PYTHONPATH:+:$PYTHONPATH} \
  python3 device/cute/coop_cute.py --socket "$tmp/s" --out "$dest" "$@" 2>&1 \
  | grep -v -e 'Linking two modules of different data layouts' -e '^$'
((PIPESTATUS[0] == 0)) || { echo "make_cubins: compiling the kernels failed"; exit 1; }
device/gpu_suite/sass_check.sh "$dest"
