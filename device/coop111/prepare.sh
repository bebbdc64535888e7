#!/usr/bin/env bash
# Here (with network): gathers what the GPU machine needs to run cuda.coop 1.1.1's own test suite
# against real cuda.coop and against coopd.coop, into DEST (default .device-carry/coop111, which
# git ignores: NVIDIA's tests and wheel never enter the repository).
#   device/coop111/prepare.sh CCCL_GIT [DEST]
# CCCL_GIT is a clone of NVIDIA/cccl (a bare one will do) that has the tag python-1.1.1. Writes
# DEST/suite.tar.gz (at that tag: python/cuda_cccl's pyproject.toml, for its pytest settings, and
# tests/_utils, tests/coop/_experimental and tests/test_examples.py), DEST/wheels with the
# cuda-cccl 1.1.1 wheel for the GPU image's Python 3.12, and bundles the coopd built here into
# .device-carry/coopd (device/bundle_coopd.sh). Carry both folders.
set -euo pipefail
cd "$(dirname "$0")/../.."
cccl=${1:?usage: device/coop111/prepare.sh CCCL_GIT [DEST]}
dest=${2:-.device-carry/coop111}
tag=python-1.1.1
mkdir -p "$dest/wheels"
rel=$dest
dest=$(cd "$dest" && pwd)
git -C "$cccl" rev-parse -q --verify "refs/tags/$tag" >/dev/null ||
  { echo "prepare: $cccl has no tag $tag" >&2; exit 1; }
git -C "$cccl" archive --format=tar.gz -o "$dest/suite.tar.gz" "$tag" \
  python/cuda_cccl/pyproject.toml python/cuda_cccl/tests/_utils \
  python/cuda_cccl/tests/coop/_experimental python/cuda_cccl/tests/test_examples.py
rm -f "$dest"/wheels/cuda_cccl-*.whl
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --platform manylinux_2_26_x86_64 \
  --platform manylinux_2_28_x86_64 -d "$dest/wheels" cuda-cccl==1.1.1
./device/bundle_coopd.sh .device-carry/coopd
echo "prepare: $rel ($(du -sh "$dest" | cut -f1)); carry [\"$rel\", \".device-carry/coopd\"]"
