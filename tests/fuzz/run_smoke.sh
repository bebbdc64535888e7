#!/usr/bin/env bash
# run_smoke.sh TARGET SEEDS SECONDS [LIBFUZZER_FLAG...]: the CI smoke of one fuzz target.
#
# Runs libFuzzer's TARGET for SECONDS on a scratch corpus seeded from the directory SEEDS (which
# it never writes), with every crash, leak, timeout or out-of-memory written under a scratch
# artifacts directory. Exit status 0 when the run ends clean (its final coverage and execution
# figures are printed); otherwise 1, with the reproducer's path, the command that replays it and
# the end of libFuzzer's log. The scratch directory is removed after a clean run and kept after
# a failed one.
set -uo pipefail
if (($# < 3)); then
  echo "usage: $0 TARGET SEEDS SECONDS [LIBFUZZER_FLAG...]" >&2
  exit 2
fi
target=$1 seeds=$2 seconds=$3
shift 3
name=$(basename "$target")
work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX") || exit 2
mkdir -p "$work/corpus" "$work/artifacts"
log=$work/libfuzzer.log

# -timeout: one input running this long is a hang (far beyond any real input's milliseconds).
"$target" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$seeds" >"$log" 2>&1
rc=$?

reproducers=$(find "$work/artifacts" -type f | sort)
if ((rc == 0)) && [[ -z $reproducers ]]; then
  grep -E '^#[0-9]+ +DONE' "$log" | tail -n 1
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log"
  rm -rf "$work"
  echo "fuzz smoke: $name: clean after ${seconds}s"
  exit 0
fi

echo "fuzz smoke: $name FAILED (libFuzzer exit status $rc)"
for r in $reproducers; do
  echo "reproducer: $r"
  echo "replay it:  $target $* $r"
done
[[ -n $reproducers ]] || echo "no reproducer was written; the log is $log"
echo "---- the end of libFuzzer's log ($log) ----"
tail -n 60 "$log"
exit 1
