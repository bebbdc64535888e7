#!/usr/bin/env bash
# smoke_selftest.sh RUN_SMOKE PLANTED SEEDS: proves that the fuzz smoke (run_smoke.sh) can fail.
# PLANTED is a target with a known bug (planted_fuzz.cc). Checks, each of which fails this test:
#   1. fuzzing from SEEDS (which do not crash) finds the bug: run_smoke.sh exits 1 and names a
#      reproducer file that exists, and the target run on that file alone crashes with ASan's
#      report of the planted heap-buffer-overflow;
#   2. a seed that crashes fails the smoke at once, before any fuzzing (a reproducer committed
#      to a corpus keeps failing CI until the bug is fixed).
set -uo pipefail
run_smoke=$1 planted=$2 seeds=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coopd-fuzz-selftest.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "smoke self-test FAILED: $*"
  exit 1
}

# 1. Found by fuzzing. The run's limit is only a guard against a hang: libFuzzer needs one byte
# changed in a seed.
"$run_smoke" "$planted" "$seeds" 300 -seed=1 >"$tmp/found.out" 2>&1
rc=$?
cat "$tmp/found.out"
((rc == 1)) || fail "run_smoke.sh exited $rc on a planted bug, expected 1"
reproducer=$(sed -n 's/^reproducer: //p' "$tmp/found.out" | head -n 1)
[[ -n $reproducer && -f $reproducer ]] || fail "no reproducer file named (got '$reproducer')"
"$planted" "$reproducer" >"$tmp/replay.out" 2>&1 && fail "the reproducer does not crash the target"
grep -q "heap-buffer-overflow" "$tmp/replay.out" ||
  fail "replaying $reproducer did not report the planted heap-buffer-overflow: $(tail -n 5 "$tmp/replay.out")"
echo "self-test 1: the smoke found the planted bug and its reproducer replays it"
rm -rf "$(dirname "$(dirname "$reproducer")")"  # run_smoke.sh keeps a failed run's directory

# 2. A known-crashing seed.
mkdir "$tmp/seeds"
printf 'COOPXREC1' >"$tmp/seeds/crash"
"$run_smoke" "$planted" "$tmp/seeds" 300 >"$tmp/seed.out" 2>&1
rc=$?
cat "$tmp/seed.out"
((rc == 1)) || fail "run_smoke.sh exited $rc on a crashing seed, expected 1"
grep -q '^reproducer: ' "$tmp/seed.out" || fail "no reproducer named for the crashing seed"
rm -rf "$(dirname "$(dirname "$(sed -n 's/^reproducer: //p' "$tmp/seed.out" | head -n 1)")")"
echo "self-test 2: a crashing seed fails the smoke"
echo "smoke self-test passed"
