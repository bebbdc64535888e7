#!/usr/bin/env bash
# fuzz_depth.sh: fuzzing at depth, not in CI (docs/security.md, "Fuzzing"). Runs each libFuzzer
# target of tests/fuzz until it has executed --runs inputs or for --seconds, whichever comes
# first, with --jobs processes per target (libFuzzer's -fork mode: one merged corpus), from the
# committed corpus into a scratch corpus, and writes a report: per target the inputs executed,
# the time, executions per second, coverage (edges and features), the corpus it grew, and every
# crash with its reproducer.
#
#   bench/fuzz_depth.sh [--build-dir DIR] [--runs N] [--seconds S] [--jobs J] [--out DIR] [TARGET...]
#   bench/fuzz_depth.sh --pack DIR     # the targets, their shared libraries, corpora and
#                                      # dictionaries in DIR, to run on another machine:
#   DIR/run.sh [--runs N] [--seconds S] [--jobs J] [--out DIR] [TARGET...]
#
# Defaults: the fuzz build in ./build-fuzz (deploy/fuzz-smoke.sh makes it), 10,000,000 runs or
# 3600 s per target, one job per core, the report in ./fuzz-depth-<date>/.
# Targets run one after another, each on all its jobs. Exit status 1 when any target crashed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -f $here/fuzz_depth.sh && -d $here/targets ]]; then
  packed=1 root=$here  # running from a pack
else
  packed=0 root=$(cd "$here/.." && pwd)
fi
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
runs=10000000 seconds=3600 jobs=0 out="" pack=""
targets=()
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --pack) pack=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "fuzz_depth: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

if ((packed)); then
  bindir=$root/targets corpora=$root/corpus dicts=$root/dicts
  export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  bindir=$build/tests/fuzz corpora=$root/tests/fuzz/corpus dicts=$root/tests/fuzz
fi
if ((${#targets[@]} == 0)); then
  for exe in "$bindir"/coopd_fuzz_*; do
    name=${exe##*/coopd_fuzz_}
    [[ $name == planted ]] && continue  # the smoke's self-test: a bug on purpose
    targets+=("$name")
  done
fi
if ((${#targets[@]} == 0)); then
  echo "fuzz_depth: no targets in $bindir: build them first (deploy/fuzz-smoke.sh, or" \
       "CC=clang-22 CXX=clang++-22 cmake -S . -B build-fuzz -G Ninja -DCOOPD_FUZZ=ON)" >&2
  exit 2
fi

if [[ -n $pack ]]; then
  mkdir -p "$pack/targets" "$pack/lib" "$pack/dicts" "$pack/corpus"
  for t in "${targets[@]}"; do
    # Debug info makes a sanitized target tens of MB; symbols stay, so reports still name
    # functions.
    strip --strip-debug -o "$pack/targets/coopd_fuzz_$t" "$bindir/coopd_fuzz_$t"
    cp -r "$corpora/$t" "$pack/corpus/"
    [[ -f $dicts/$t.dict ]] && cp "$dicts/$t.dict" "$pack/dicts/"
    # Every shared library but the C library's own (the other machine has its own loader).
    ldd "$bindir/coopd_fuzz_$t" | awk '/=> \// {print $3}' | while read -r lib; do
      case ${lib##*/} in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
        *) cp -Lu "$lib" "$pack/lib/" ;;
      esac
    done
  done
  cp "$0" "$pack/fuzz_depth.sh"
  ln -sf fuzz_depth.sh "$pack/run.sh"
  du -sh "$pack"
  exit 0
fi

# Targets run one after another, so each may use every core.
((jobs > 0)) || jobs=$(nproc)
out=${out:-$PWD/fuzz-depth-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
report=$out/report.md
{
  echo "| target | inputs run | seconds | exec/s | edges | features | corpus | crashes |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$report"
failed=0
for t in "${targets[@]}"; do
  exe=$bindir/coopd_fuzz_$t
  work=$out/$t
  mkdir -p "$work/corpus" "$work/artifacts"
  dict=()
  [[ -f $dicts/$t.dict ]] && dict=("-dict=$dicts/$t.dict")
  echo "fuzz_depth: $t: up to $runs runs or ${seconds}s on $jobs jobs" >&2
  start=$(date +%s)
  set +e
  # -fork: jobs child processes share one corpus; -ignore_crashes keeps going after a finding
  # (each is saved under artifacts/), so one shallow bug does not end a deep run.
  "$exe" -fork="$jobs" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -max_total_time="$seconds" -runs="$runs" -max_len=16384 -malloc_limit_mb=64 \
    -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$work/artifacts/" "$work/corpus" "$corpora/$t" >"$work/libfuzzer.log" 2>&1
  set -e
  elapsed=$(($(date +%s) - start))
  # Fork mode's progress lines: "#N: cov: C ft: F corp: K exec/s: E oom/timeout/crash: ..."
  last=$(grep -E '^#[0-9]+: cov:' "$work/libfuzzer.log" | tail -n 1 || true)
  execs=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$last")
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$last")
  crashes=$(find "$work/artifacts" -type f | wc -l)
  rate=$((${execs:-0} / (elapsed > 0 ? elapsed : 1)))
  echo "| $t | ${execs:-?} | $elapsed | $rate | ${cov:-?} | ${ft:-?} | ${corp:-?} | $crashes |" >>"$report"
  if ((crashes > 0)); then
    failed=1
    find "$work/artifacts" -type f | sed 's/^/  reproducer: /' >>"$out/crashes.txt"
  fi
done
echo "machine: $(nproc) cores, $(uname -sr); jobs per target: $jobs; limits: $runs runs or ${seconds}s" >>"$report"
cat "$report"
[[ -f $out/crashes.txt ]] && cat "$out/crashes.txt"
exit $failed
