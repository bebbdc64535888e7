#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, COOPD_FUZZ=ON with clang-22, in ./build-fuzz or
# $FUZZ_BUILD_DIR) and runs their smoke: every target for COOPD_FUZZ_SECONDS (default 60) from
# the committed corpus, all at once, and the smoke's self-test. Fails when any target finds a
# crash, a leak, a hang or an oversized allocation; the failing test's output names the
# reproducer and the command that replays it. Arguments go to ctest (e.g. -R request).
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${COOPD_FUZZ_SECONDS:-60}
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
if [[ ! -f $dir/CMakeCache.txt ]]; then
  CC=clang-22 CXX=clang++-22 cmake -S . -B "$dir" -G Ninja -DCOOPD_FUZZ=ON \
    -DCOOPD_FUZZ_SMOKE_SECONDS="$seconds"
else
  cmake "$dir" -DCOOPD_FUZZ_SMOKE_SECONDS="$seconds"
fi
cmake --build "$dir"
# Each smoke is a fixed wall-clock run, so they all run at once whatever the core count.
ctest --test-dir "$dir" --output-on-failure -L fuzz -j 8 "$@"
