#!/usr/bin/env bash
# bench/run.sh: runs the benchmark suite and writes its results into docs/benchmarks.md, between
# the markers "<!-- bench/run.sh begin ... -->" and "<!-- bench/run.sh end -->" (the hand-written
# sections around them are kept). Every figure is a ratio against a baseline measured in the same
# run, with medians, spreads, the machine and the toolchain (bench/render.py renders them).
#
#   bench/run.sh [--quick] [--build DIR] [--out FILE] [--results DIR] [--only LIST] [--full-fill]
#
#   --quick    checks the harness end to end in seconds: tiny counts, every section runs, every
#              report is parsed and rendered (bench/render.py check); numbers are not judged.
#              Writes into a temporary directory unless --out is given; never docs/benchmarks.md
#              unless --out names it.
#   --build    the build directory (default: build)
#   --out      the document to write (default: docs/benchmarks.md; with --quick, RESULTS/out.md)
#   --results  where the raw reports go (default: BUILD/bench-results; with --quick, a temporary
#              directory); with --only, the other sections' reports already there are rendered
#              again as they are
#   --only     comma-separated sections to (re)run: hit, artifact, flight, process, frontend,
#              cancel, scaling (default: all)
#   --full-fill  scaling fills the 100,000-entry cache with real-sized payloads (13 GB, about 6.5
#              more minutes here) instead of 8 KiB ones (about 1 GB): start-up and a hit depend
#              on the number of rows, and the measured spec is the real one either way
#
# Sections whose benchmark is not built or not installed (hit_bench, bench/footprint.sh,
# redis-server) are listed as skipped with the reason, never filled with stand-ins. Exit status:
# 0 on success, 1 when a benchmark fails or a report does not parse, 2 for a usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
caller=$PWD

quick=0 build=build out="" results="" only="" small_above=10000
usage() { sed -n '7,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --build) build=${2:?--build needs a directory}; shift ;;
    --out) out=${2:?--out needs a file}; shift ;;
    --results) results=${2:?--results needs a directory}; shift ;;
    --only) only=${2:?--only needs a list}; shift ;;
    --full-fill) small_above=0 ;;
    -h | --help) usage ;;
    *)
      echo "bench/run.sh: unknown argument \"$1\"; allowed: --quick, --build, --out, --results," \
        "--only, --full-fill" >&2
      exit 2
      ;;
  esac
  shift
done
# Paths given on the command line are the caller's; the defaults are the source tree's.
abs() { if [[ -z $1 || $1 == /* ]]; then echo "$1"; else echo "$caller/$1"; fi; }
[[ $build == build ]] || build=$(abs "$build")
out=$(abs "$out") results=$(abs "$results")
cd "$root"
all_sections="hit artifact flight process frontend scaling cancel"
for s in ${only//,/ }; do
  [[ " $all_sections " == *" $s "* ]] || {
    echo "bench/run.sh: --only: unknown section \"$s\"; allowed: ${all_sections// /, }" >&2
    exit 2
  }
done
bin=$build/bench
for b in coopd_bench cache_bench; do
  [[ -x $bin/$b ]] || { echo "bench/run.sh: $bin/$b is not built (cmake --build $build)" >&2; exit 1; }
done
if [[ -z $results ]]; then
  if ((quick)); then
    results=$(mktemp -d /tmp/coopd-bench-quick.XXXXXX)
    trap 'rm -rf "$results"' EXIT
  else
    results=$build/bench-results
  fi
fi
mkdir -p "$results"
if [[ -z $out ]]; then
  if ((quick)); then out=$results/out.md; else out=docs/benchmarks.md; fi
fi
if [[ -z $only ]]; then rm -f "$results"/*.json; fi
python3 "$here/render.py" meta "$results/meta.json"
# Each section's status names the run it belongs to (--only renders older sections again).
read_meta() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$results/meta.json" "$1"
}
commit=$(read_meta commit) run=$(read_meta date)
export COOPD_NO_AUTOSTART=1

order=0
# section NAME TITLE COMMAND... : runs COMMAND (which writes $results/NAME.json) and records its
# status, the load average at its start and its wall time. A COMMAND that is not there (another
# branch's benchmark not merged or not built) makes the section "skipped", saying which.
section() {
  local name=$1 title=$2 status=ok
  shift 2
  order=$((order + 1))
  [[ -z $only || ",$only," == *",$name,"* ]] || return 0
  local load start
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s.%N)
  rm -f "$results/$name.json"
  echo "== bench/run.sh: $name: $*" >&2
  local rc=0
  if [[ ! -x $1 ]]; then
    if [[ $1 == "$bin"/* ]]; then
      status="skipped: ${1##*/} not built ($1 is missing)"
    else
      status="skipped: ${1##*/} not present ($1 is missing)"
    fi
  else
    "$@" >"$results/$name.log" 2>&1 || rc=$?
    if ((rc != 0)); then
      status="failed: exit status $rc (log: $results/$name.log)"
      tail -20 "$results/$name.log" >&2
    elif [[ ! -s $results/$name.json ]]; then
      status="failed: no report in $results/$name.json"
    fi
  fi
  local cmd=$*
  cmd=${cmd//$results/RESULTS}
  python3 - "$results/$name.status.json" "$order" "$title" "$cmd" "$status" "$load" "$start" \
    "$quick" "$commit" "$run" <<'EOF'
import datetime, json, sys, time
path, order, title, cmd, status, load, start, quick, commit, run = sys.argv[1:]
date = datetime.datetime.fromtimestamp(float(start), datetime.timezone.utc)
json.dump({"order": int(order), "title": title, "command": cmd, "status": status, "load": load,
           "seconds": round(time.time() - float(start), 1), "quick": quick == "1",
           "date": date.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit, "run": run},
          open(path, "w"), indent=1)
EOF
  echo "   $status" >&2
}

if ((quick)); then
  rounds=1 warm_specs=1 flight=1,8 flight_workers=1 e2e_rounds=1 sizes=200 scale_rounds=1 hits=10
  q=--quick
else
  rounds=3 warm_specs=3 flight=1,8,32,128 flight_workers=2 e2e_rounds=5 sizes=1000,10000,100000
  scale_rounds=5 hits=200 q=""
fi

section hit "Hit latency and throughput against a minimal gRPC echo server" \
  "$bin/hit_bench" --json "$results/hit.json" $q
section artifact "Time to artifact" \
  "$bin/coopd_bench" --sections T --rounds $rounds --warm-specs $warm_specs \
  --json "$results/artifact.json"
section flight "Single-flight" \
  "$bin/coopd_bench" --sections S --rounds $rounds --flight $flight \
  --flight-workers $flight_workers --json "$results/flight.json"
section process "Whole process (coopctl, ccache, /bin/true) and footprint" \
  bench/footprint.sh --build "$build" --json "$results/process.json" $q
section frontend "End to end in a frontend: a fresh process to a linked cubin" \
  "$bin/coopd_bench" --sections G --rounds $e2e_rounds --json "$results/frontend.json"
section cancel "A compile whose only caller gave up" \
  "$bin/coopd_bench" --sections K --rounds $rounds --json "$results/cancel.json"
section scaling "Scaling: start-up and hits by cache size" \
  "$bin/cache_bench" --sections AB --entries $sizes --rounds $scale_rounds --hits $hits \
  --small-fill-above $small_above --json "$results/scaling.json"

# The document's hand-written parts come from OUT itself, or from docs/benchmarks.md for a new OUT.
template=$out
[[ -f $template ]] || template=docs/benchmarks.md
python3 "$here/render.py" render "$results" "$template" "$out"
python3 "$here/render.py" check "$results" "$out"
if [[ $out == "$results"/* && $results == /tmp/coopd-bench-quick.* ]]; then
  echo "bench/run.sh: rendered and checked (in a temporary directory, now removed)" >&2
else
  echo "bench/run.sh: wrote $out" >&2
fi
