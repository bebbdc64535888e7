#!/usr/bin/env bash
# Produces the artifacts the GPU check consumes, with a real coopd, on this (GPU-less) machine.
# usage: device/gpu_check/make_artifacts.sh OUT_DIR
# Writes OUT_DIR/<case>.ltoir, OUT_DIR/<case>.h and OUT_DIR/manifest.txt, one line per case:
#   <case> <symbol>:<temp bytes> [<symbol>:<temp bytes> ...]   (one pair per part, in order)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "$1")
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
./build/server/coopd --socket "$tmp/s" --cache-dir "$tmp/c" --log-level warn &
pid=$!
for _ in $(seq 200); do ./build/client/coopctl --socket "$tmp/s" stats >/dev/null 2>&1 && break; sleep 0.1; done
: >"$out/manifest.txt"
spec() {  # case, then coopctl specialize arguments
  local name=$1
  shift
  ./build/client/coopctl --socket "$tmp/s" specialize "$@" --json --out "$tmp/o" >"$tmp/$name.json"
  python3 - "$tmp/$name.json" "$name" "$out" <<'PY'
import json, shutil, sys
a = json.load(open(sys.argv[1]))
name, out = sys.argv[2], sys.argv[3]
ltoir, header = a["files"]
shutil.copy(ltoir, f"{out}/{name}.ltoir")
shutil.copy(header, f"{out}/{name}.h")
parts = " ".join(f'{p["entries"][0]["symbol"]}:{p["temp_storage"]["bytes"]}' for p in a["parts"])
open(f"{out}/manifest.txt", "a").write(f"{name} {parts}\n")
PY
}
spec reduce_sum_f32 block_reduce --method sum --dtype float32 --threads 256 --arch sm_90
spec reduce_max_i32_2d block_reduce --method max --dtype int32 --threads 16,16 --items 4 --algorithm raking --arch sm_90
spec scan_exsum_i32 block_scan --method exclusive_sum --dtype int32 --threads 128 --items 4 --algorithm warp_scans --with-aggregate --arch sm_90
spec scan_max_i64 block_scan --method inclusive_scan --op max --dtype int64 --threads 64 --arch sm_90
spec warp_sum_f64 warp_reduce --method sum --dtype float64 --warp-threads 16 --arch sm_90
spec warp_incsum_i32 warp_scan --method inclusive_sum --dtype int32 --warp-threads 8 --arch sm_90
spec tile_pipeline block_load --method load_guarded_default --dtype int32 --threads 128 --items 4 --algorithm warp_transpose --arch sm_90 \
  + block_scan --method exclusive_sum --dtype int32 --threads 128 --items 4 --algorithm warp_scans --arch sm_90 \
  + block_store --method store_guarded --dtype int32 --threads 128 --items 4 --algorithm warp_transpose --arch sm_90
cat "$out/manifest.txt"
