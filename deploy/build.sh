#!/usr/bin/env bash
# Installs dependencies (deploy/install-deps.sh) and builds coopd into ./build (or $BUILD_DIR).
# Extra arguments go to CMake's configure step, e.g. -DCOOPD_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif (($#)); then
  cmake "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR"
