#!/usr/bin/env bash
# Sets everything up, builds, and runs every test that runs without a GPU (labels unit and
# integration). Arguments go to ctest, e.g. -L unit or -R Spec.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" -LE gpu "$@"
