#!/usr/bin/env bash
# Produces the artifacts the GPU harnesses (gpu_check, gpu_suite) consume,
# with a real coopd, on this (GPU-less) machine.
# usage: device/gpu_check/make_artifacts.sh OUT_DIR
#   COOPD_BUILD=DIR    the coopd build to use (default ./build)
#   COOPD_CASES=REGEX  only the cases whose name matches (bash =~)
#   COOPD_CCCL33=DIR   CCCL 3.3 headers for the topk (3.3) cases; default
#                      .deps/nvidia-cuda-cccl-13.3.3.3.1 (deploy/install-deps.sh)
#   COOPD_CCCL35=DIR   CCCL 3.5 headers for the topk35 cases; default .deps/cuda-cccl-1.1.1
#   COOPD_CCCL36=DIR   CCCL 3.6 headers for the topk36 cases; default .deps/cuda-cccl-1.2.1
# One coopd serves every CCCL found (--cccl cccl33=DIR ...; the other cases use the toolkit's);
# the cases of a CCCL that is not there are skipped, saying so.
# Writes OUT_DIR/<case>.ltoir, OUT_DIR/<case>.h, OUT_DIR/<case>.json (coopctl's reply) and
# OUT_DIR/<case>.op<N>.ltoir (a user operator's LTO-IR, the artifact's link_inputs, linked too),
# OUT_DIR/user_op_symbols.txt (the user operators' symbols, for the SASS checks) and
# OUT_DIR/manifest.txt, one line per case:
#   <case> <symbol>:<temp bytes> [<symbol>:<temp bytes> ...]   (one pair per part, in order)
# Cases whose family this coopd does not know yet (block_radix_sort, while it is being added)
# are skipped with a message and left out of the manifest; the harnesses skip them by name.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${COOPD_BUILD:-build}
out=$(realpath -m "$1")
rm -rf "$out"
mkdir -p "$out"
declare -A cccl_dirs=([cccl33]=${COOPD_CCCL33:-.deps/nvidia-cuda-cccl-13.3.3.3.1}
                      [cccl35]=${COOPD_CCCL35:-.deps/cuda-cccl-1.1.1}
                      [cccl36]=${COOPD_CCCL36:-.deps/cuda-cccl-1.2.1})
declare -A have_cccl=()
cccl_args=()
for name in cccl33 cccl35 cccl36; do
  dir=${cccl_dirs[$name]}
  if [[ -e $dir/include/cub/block/block_topk.cuh || -e $dir/cub/block/block_topk.cuh ||
        -e $dir/nvidia/cu13/include/cccl/cub/block/block_topk.cuh ]]; then
    cccl_args+=(--cccl "$name=$(realpath "$dir")")
    have_cccl[$name]=1
  fi
done
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/server/coopd" --socket "$tmp/s" --cache-dir "$tmp/c" --log-level warn \
  --probe-cccl off "${cccl_args[@]}" &
pid=$!
for _ in $(seq 200); do "$build/client/coopctl" --socket "$tmp/s" stats >/dev/null 2>&1 && break; sleep 0.1; done
: >"$out/manifest.txt"
: >"$out/user_op_symbols.txt"
socket=$tmp/s
# User operators: source files, and one compiled here to LTO-IR with NVRTC (-dlto -rdc=true).
ops=$PWD/device/gpu_check/ops
g++ -O1 -std=c++17 -I"${CUDA_HOME:-/usr/local/cuda}/include" device/gpu_check/nvrtc_ltoir.cc \
  -o "$tmp/nvrtc_ltoir" -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lnvrtc
LD_LIBRARY_PATH=${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$tmp/nvrtc_ltoir" "$ops/clamp_add_lto.cu" "$tmp/clamp_add_lto.ltoir" sm_90
echo clamp_add_lto >>"$out/user_op_symbols.txt"
spec() {  # case, then coopctl specialize arguments
  local name=$1
  shift
  [[ -z ${COOPD_CASES:-} || $name =~ $COOPD_CASES ]] || return 0
  if ! "$build/client/coopctl" --socket "$socket" specialize "$@" --json --out "$tmp/o" \
      >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    if grep -q 'family must be one of' "$tmp/$name.err"; then
      echo "make_artifacts: skipping $name: $(cat "$tmp/$name.err")" >&2
      return 0
    fi
    cat "$tmp/$name.err" >&2
    return 1
  fi
  python3 - "$tmp/$name.json" "$name" "$out" <<'PY'
import json, shutil, sys
a = json.load(open(sys.argv[1]))
name, out = sys.argv[2], sys.argv[3]
ltoir, header, *ops = a["files"]  # then <symbol>.op<N>.ltoir, one per link input
shutil.copy(ltoir, f"{out}/{name}.ltoir")
shutil.copy(header, f"{out}/{name}.h")
shutil.copy(sys.argv[1], f"{out}/{name}.json")
for n, op in enumerate(ops):
    shutil.copy(op, f"{out}/{name}.op{n}.ltoir")
with open(f"{out}/user_op_symbols.txt", "a") as f:
    for link_input in a["link_inputs"]:
        f.write(link_input["symbol"] + "\n")
parts = " ".join(f'{p["entries"][0]["symbol"]}:{p["temp_storage"]["bytes"]}' for p in a["parts"])
open(f"{out}/manifest.txt", "a").write(f"{name} {parts}\n")
PY
}
A=(--arch sm_90)

# ---- correctness cases (device/gpu_suite) ----
spec reduce_sum_f32 block_reduce --method sum --dtype float32 --threads 256 "${A[@]}"
spec reduce_max_i32_2d block_reduce --method max --dtype int32 --threads 16,16 --items 4 --algorithm raking "${A[@]}"
spec scan_exsum_i32 block_scan --method exclusive_sum --dtype int32 --threads 128 --items 4 --algorithm warp_scans --with-aggregate "${A[@]}"
spec scan_max_i64 block_scan --method inclusive_scan --op max --dtype int64 --threads 64 "${A[@]}"
spec warp_sum_f64 warp_reduce --method sum --dtype float64 --warp-threads 16 "${A[@]}"
spec warp_incsum_i32 warp_scan --method inclusive_sum --dtype int32 --warp-threads 8 "${A[@]}"
spec tile_pipeline block_load --method load_guarded_default --dtype int32 --threads 128 --items 4 --algorithm warp_transpose "${A[@]}" \
  + block_scan --method exclusive_sum --dtype int32 --threads 128 --items 4 --algorithm warp_scans "${A[@]}" \
  + block_store --method store_guarded --dtype int32 --threads 128 --items 4 --algorithm warp_transpose "${A[@]}"

spec reduce_xor_u32_3d block_reduce --method reduce --op bit_xor --dtype uint32 --threads 8,4,2 --items 2 --algorithm raking_commutative_only "${A[@]}"
spec reduce_min_f64 block_reduce --method min --dtype float64 --threads 96 --items 3 "${A[@]}"
spec scan_incsum_u32_80 block_scan --method inclusive_sum --dtype uint32 --threads 80 --items 3 --algorithm raking "${A[@]}"
spec scan_exmax_i32_2d block_scan --method exclusive_scan --op max --dtype int32 --threads 32,4 --items 2 --algorithm raking_memoize --with-aggregate "${A[@]}"
# block_load + block_store, every algorithm, 2D block 32x4, 4 int32 items: parts are
# load, load_guarded, load_guarded_default, store, store_guarded.
for alg in direct striped vectorize transpose warp_transpose warp_transpose_timesliced; do
  L=(--dtype int32 --threads 32,4 --items 4 --algorithm "$alg" "${A[@]}")
  spec "ls_$alg" block_load --method load "${L[@]}" + block_load --method load_guarded "${L[@]}" \
    + block_load --method load_guarded_default "${L[@]}" + block_store --method store "${L[@]}" \
    + block_store --method store_guarded "${L[@]}"
done
E=(--dtype int16 --threads 32,2 --items 3 "${A[@]}")
spec exchange_i16_2d block_exchange --method striped_to_blocked "${E[@]}" \
  + block_exchange --method blocked_to_striped "${E[@]}" \
  + block_exchange --method warp_striped_to_blocked "${E[@]}" \
  + block_exchange --method blocked_to_warp_striped "${E[@]}" \
  + block_exchange --method blocked_to_striped --warp-time-slicing "${E[@]}"
S=(--dtype int64 --threads 32,3 "${A[@]}")
spec shuffle_i64_2d block_shuffle --method offset "${S[@]}" + block_shuffle --method rotate "${S[@]}" \
  + block_shuffle --method up --items 4 "${S[@]}" + block_shuffle --method down --items 4 "${S[@]}"
spec warp_max_i32 warp_reduce --method max --dtype int32 "${A[@]}"
spec warp_or_u64 warp_reduce --method reduce --op bit_or --dtype uint64 --warp-threads 4 "${A[@]}"
spec warp_exsum_u32 warp_scan --method exclusive_sum --dtype uint32 --with-aggregate "${A[@]}"
spec warp_exmax_i64 warp_scan --method exclusive_scan --op max --dtype int64 --warp-threads 16 "${A[@]}"
spec radix_sort_u32 block_radix_sort --method sort --dtype uint32 --threads 128 --items 4 "${A[@]}"
spec radix_sort_desc_i32 block_radix_sort --method sort_descending --dtype int32 --threads 64,2 --items 3 "${A[@]}"

# ---- families and features added since: radix/merge sort pairs, histogram, discontinuity,
# adjacent difference, exchange scatters, float16, user operators, block_topk ----
spec radix_pairs_bits_u32 block_radix_sort --method sort --dtype uint32 --value-dtype int32 --threads 128 --items 4 "${A[@]}"
spec radix_pairs_desc_f32_2d block_radix_sort --method sort_descending --dtype float32 --value-dtype int64 --threads 32,4 --items 3 "${A[@]}"
spec merge_sort_i32_2d block_merge_sort --method sort --op less --dtype int32 --threads 32,4 --items 3 "${A[@]}"
spec merge_pairs_f32 block_merge_sort --method sort --op greater --dtype float32 --value-dtype float64 --threads 64 --items 4 "${A[@]}"
spec merge_guarded_u16 block_merge_sort --method sort_guarded --op less --dtype uint16 --threads 128 --items 2 "${A[@]}"
spec merge_user_cmp block_merge_sort --method stable_sort --dtype int32 --threads 128 --items 4 \
  --op-name abs_less --op-source "$ops/abs_less.cu" "${A[@]}"
spec histo_sort_u8 block_histogram --method histogram --algorithm sort --bins 64 --dtype uint8 --threads 128 --items 4 "${A[@]}"
spec histo_atomic_u16_2d block_histogram --method histogram --algorithm atomic --bins 300 --dtype uint16 --threads 16,8 --items 3 "${A[@]}"
spec discont_heads_pred_2d block_discontinuity --method flag_heads_with_predecessor --op not_equal --dtype int32 --threads 16,8 --items 2 "${A[@]}"
spec adjdiff_left_i32 block_adjacent_difference --method subtract_left --op difference --dtype int32 --threads 128 --items 4 "${A[@]}"
spec exchange_scatter_striped_f64 block_exchange --method scatter_to_striped --dtype float64 --threads 64 --items 4 "${A[@]}"
spec reduce_sum_f16 block_reduce --method sum --dtype float16 --threads 128 --items 4 "${A[@]}"
spec op_src_reduce_2d block_reduce --method reduce --dtype int32 --threads 16,8 --items 4 \
  --op-name clamp_add --op-source "$ops/clamp_add.cu" "${A[@]}"
spec op_src_scan block_scan --method inclusive_scan --dtype int32 --threads 128 --items 4 \
  --op-name clamp_add --op-source "$ops/clamp_add.cu" "${A[@]}"
spec op_lto_reduce_2d block_reduce --method reduce --dtype int32 --threads 16,8 --items 4 \
  --op-name clamp_add_lto --op-ltoir "$tmp/clamp_add_lto.ltoir" "${A[@]}"
spec op_lto_scan block_scan --method inclusive_scan --dtype int32 --threads 128 --items 4 \
  --op-name clamp_add_lto --op-ltoir "$tmp/clamp_add_lto.ltoir" "${A[@]}"
spec op_stateful_reduce block_reduce --method reduce --dtype int32 --threads 128 --items 2 \
  --op-name limit_add --op-source "$ops/limit_add.cu" --op-stateful "${A[@]}"
# block_topk on CCCL 3.3 (a sort of the tile), 3.5 (a radix selection that honours k; partial
# tiles) and 3.6 (the same on whole keys), each spec naming its CCCL (coopctl --cccl).
if [[ -n ${have_cccl[cccl33]:-} ]]; then
  C=(--cccl cccl33 "${A[@]}")
  spec topk_max_i32 block_topk --method max_keys --dtype int32 --threads 128 --items 4 "${C[@]}"
  spec topk_min_pairs_f32 block_topk --method min_pairs --dtype float32 --value-dtype uint32 --threads 64 --items 8 "${C[@]}"
  spec topk33_k8_max_f32 block_topk --method max_keys --dtype float32 --threads 128 --items 8 "${C[@]}"
else
  echo "make_artifacts: skipping block_topk on CCCL 3.3: no headers in ${cccl_dirs[cccl33]} (deploy/install-deps.sh)" >&2
fi
if [[ -n ${have_cccl[cccl35]:-} ]]; then
  C=(--cccl cccl35 "${A[@]}")
  spec topk35_max_i32 block_topk --method max_keys --dtype int32 --threads 128 --items 4 "${C[@]}"
  spec topk35_min_pairs_f32 block_topk --method min_pairs --dtype float32 --value-dtype uint32 --threads 64 --items 8 "${C[@]}"
  spec topk35_max_pairs_f32 block_topk --method max_pairs --dtype float32 --value-dtype uint32 --threads 256 --items 8 "${C[@]}"
  spec topk35_partial_min_i32 block_topk --method min_keys --dtype int32 --threads 128 --items 4 --valid-items "${C[@]}"
  spec topk35_partial_max_pairs_f32 block_topk --method max_pairs --dtype float32 --value-dtype uint32 --threads 64 --items 8 --valid-items "${C[@]}"
  spec topk35_k8_max_f32 block_topk --method max_keys --dtype float32 --threads 128 --items 8 "${C[@]}"
  spec topk35_k8_partial_max_f32 block_topk --method max_keys --dtype float32 --threads 128 --items 8 --valid-items "${C[@]}"
else
  echo "make_artifacts: skipping block_topk on CCCL 3.5: no headers in ${cccl_dirs[cccl35]} (deploy/install-deps.sh)" >&2
fi
if [[ -n ${have_cccl[cccl36]:-} ]]; then
  C=(--cccl cccl36 "${A[@]}")
  spec topk36_k8_max_f32 block_topk --method max_keys --dtype float32 --threads 128 --items 8 "${C[@]}"
  spec topk36_k8_partial_max_f32 block_topk --method max_keys --dtype float32 --threads 128 --items 8 --valid-items "${C[@]}"
else
  echo "make_artifacts: skipping block_topk on CCCL 3.6: no headers in ${cccl_dirs[cccl36]} (deploy/install-deps.sh)" >&2
fi
# The baseline the k = 8 cases are timed against: a full sort of the same 128 x 8 tiles.
spec topk_sort_desc_f32 block_radix_sort --method sort_descending --dtype float32 --threads 128 --items 8 "${A[@]}"

# ---- catalogue entries covered since: run-length decode, radix rank, warp load/store/exchange,
# partial and segmented reductions, prefix-callback scans (running total and user callback),
# user types ----
spec rld_decode_i32 block_run_length_decode --method decode --dtype int32 --threads 64 --items 2 --decoded-items 4 "${A[@]}"
spec radix_rank_u32 block_radix_rank --method rank_keys --dtype uint32 --threads 128 --items 4 --radix-bits 5 "${A[@]}"
spec warp_ls_transpose_i32 warp_load --method load --dtype int32 --warp-threads 16 --items 4 --algorithm transpose "${A[@]}" \
  + warp_load --method load_guarded_default --dtype int32 --warp-threads 16 --items 4 --algorithm transpose "${A[@]}" \
  + warp_store --method store --dtype int32 --warp-threads 16 --items 4 --algorithm transpose "${A[@]}" \
  + warp_store --method store_guarded --dtype int32 --warp-threads 16 --items 4 --algorithm transpose "${A[@]}"
spec warp_exchange_b2s_f64 warp_exchange --method blocked_to_striped --algorithm smem --dtype float64 --warp-threads 8 --items 3 "${A[@]}"
spec reduce_sum_partial_i32 block_reduce --method sum_partial --dtype int32 --threads 96 "${A[@]}"
spec warp_headseg_sum_i32 warp_reduce --method head_segmented_sum --dtype int32 --warp-threads 32 "${A[@]}"
spec warp_sum_partial_i64 warp_reduce --method sum_partial --dtype int64 --warp-threads 8 "${A[@]}"
spec scan_exsum_prefix_i32 block_scan --method exclusive_sum_prefix --dtype int32 --threads 128 --items 4 --algorithm warp_scans "${A[@]}"
spec scan_exsum_prefix_cb block_scan --method exclusive_sum_prefix --dtype int32 --threads 128 --items 4 \
  --prefix-name tile_prefix --prefix-source "$ops/tile_prefix.cu" "${A[@]}"
U=(--user-type 12,4 --threads 128 --items 4 "${A[@]}")
spec user_sort_pipeline block_load --method load --algorithm warp_transpose "${U[@]}" \
  + block_merge_sort --method stable_sort --op-name key_less --op-source "$ops/key_less.cu" "${U[@]}" \
  + block_store --method store --algorithm warp_transpose "${U[@]}"

# ---- timed cases: must match device/gpu_suite/bench_kernels.cuh ----
spec bench_reduce block_reduce --method sum --dtype float32 --threads 256 --items 16 --algorithm warp_reductions "${A[@]}"
spec bench_scan block_load --method load --dtype int32 --threads 128 --items 8 --algorithm warp_transpose "${A[@]}" \
  + block_scan --method exclusive_sum --dtype int32 --threads 128 --items 8 --algorithm warp_scans "${A[@]}" \
  + block_store --method store --dtype int32 --threads 128 --items 8 --algorithm warp_transpose "${A[@]}"
spec bench_copy block_load --method load --dtype int32 --threads 128 --items 16 --algorithm warp_transpose "${A[@]}" \
  + block_store --method store --dtype int32 --threads 128 --items 16 --algorithm warp_transpose "${A[@]}"
spec bench_sort block_radix_sort --method sort --dtype uint32 --threads 128 --items 4 "${A[@]}"

cat "$out/manifest.txt"
