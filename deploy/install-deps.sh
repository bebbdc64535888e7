#!/usr/bin/env bash
# Installs the Debian packages coopd's build and tests need. Idempotent: installs only what is
# missing, and does nothing (no apt-get update) when everything is present.
#
# The CUDA toolkit (NVRTC, nvJitLink, CCCL headers, nvcc) is not a Debian package here: it must
# already be installed under $CUDA_HOME (default /usr/local/cuda).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libsqlite3-dev sqlite3
  libspdlog-dev libzstd-dev libssl-dev
  # The access tests make their CA, certificates and tokens with the openssl CLI.
  openssl
  libgtest-dev libgmock-dev
  clang-format
  # The bitcode backend (FORMAT_BITCODE): Debian 12's clang-22 (bookworm-security); llvm-22 for
  # the tests, which read the bitcode back with llvm-dis-22. coopd itself runs without either.
  clang-22 llvm-22
  # The fuzz targets (tests/fuzz, deploy/fuzz-smoke.sh): libFuzzer and the sanitizer runtimes of
  # clang-22 (only recommended by clang-22, so not installed with it here).
  libclang-rt-22-dev
  # The Redis farm tier (issue 15): hiredis for coopd; redis-server and redis-cli (Cluster
  # included) for the tests, which start their own servers on loopback.
  libhiredis-dev redis-server redis-tools
  # deploy/validate-manifests.py (a ctest) parses the compose file and manifests.
  python3-yaml
  # Operations (issue 16): the /metrics endpoint (civetweb's HTTP server, prometheus-cpp's
  # metric types and text format), socket activation and sd_notify (libsystemd), and
  # systemd-socket-activate for the socket-activation test.
  libcivetweb-dev prometheus-cpp-dev libsystemd-dev systemd
  # coopd's settings (issue 16): flags parsed by CLI11, the TOML config file by toml++.
  # coopctl (issue 16): CLI11 parses its arguments, nlohmann-json writes --json and reads JSON
  # manifests, yaml-cpp reads YAML ones; its warm test runs under script(1) (util-linux's
  # bsdutils, essential in Debian, so not listed).
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libyaml-cpp-dev
  # The compile sandbox (issue 27): an allowlist seccomp filter built with libseccomp.
  libseccomp-dev
  # The benchmarks' ccache baseline (bench/ccache_baseline.py: coopctl's hit against a ccache
  # direct hit of the same wrapper), which bench/run.sh --quick and the Footprint tests run.
  ccache
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all Debian packages present" >&2
fi

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
for f in "$CUDA_HOME/include/nvrtc.h" "$CUDA_HOME/include/nvJitLink.h" \
         "$CUDA_HOME/include/cccl/cub/block/block_reduce.cuh" "$CUDA_HOME/bin/nvcc"; do
  if [[ ! -e $f ]]; then
    echo "install-deps: the CUDA toolkit is missing $f (set CUDA_HOME; CUDA 13.0 is expected)" >&2
    exit 1
  fi
done

# A newer CCCL (3.3, from PyPI's nvidia-cuda-cccl) for block_topk, which CUDA 13.0's CCCL 3.0
# lacks. Used by the tests (and by anyone who starts coopd with --cccl-include on it); unpacked
# into .deps/ in the source tree, never installed system-wide.
NEWER_CCCL_VERSION=13.3.3.3.1
newer_cccl="$(cd "$(dirname "$0")/.." && pwd)/.deps/nvidia-cuda-cccl-$NEWER_CCCL_VERSION"
if [[ ! -e $newer_cccl/nvidia/cu13/include/cccl/cub/block/block_topk.cuh ]]; then
  echo "install-deps: fetching nvidia-cuda-cccl==$NEWER_CCCL_VERSION (CCCL 3.3 headers) into $newer_cccl" >&2
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$newer_cccl" \
    "nvidia-cuda-cccl==$NEWER_CCCL_VERSION"
else
  echo "install-deps: CCCL 3.3 headers present in $newer_cccl" >&2
fi

# The headers inside PyPI's cuda-cccl wheels (cuda/cccl/headers/include), unpacked into
# .deps/cuda-cccl-VERSION/include, the headers only:
#   1.1.1: CCCL 3.5, what cuda.coop's users compile against, and the first CCCL whose block_topk
#          honours k;
#   1.2.1: CCCL 3.6, the newest CCCL on PyPI (December 2026).
# The tests serve them beside the toolkit's from one coopd (--cccl NAME=DIR).
fetch_cccl_wheel_headers() {
  local version=$1 what=$2
  local dest
  dest="$(cd "$(dirname "$0")/.." && pwd)/.deps/cuda-cccl-$version"
  if [[ -e $dest/include/cub/block/block_topk.cuh ]]; then
    echo "install-deps: $what headers present in $dest" >&2
    return
  fi
  echo "install-deps: fetching the cuda-cccl==$version wheel's headers ($what) into $dest" >&2
  local wheel_dir
  wheel_dir=$(mktemp -d)
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --dest "$wheel_dir" "cuda-cccl==$version"
  python3 - "$wheel_dir" "$dest" <<'PY'
import glob, os, shutil, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "cuda_cccl-*.whl"))[0]
prefix = "cuda/cccl/headers/include/"
tmp = sys.argv[2] + ".partial"
shutil.rmtree(tmp, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(tmp, "include", name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
shutil.rmtree(sys.argv[2], ignore_errors=True)
os.rename(tmp, sys.argv[2])
PY
  rm -rf "$wheel_dir"
}
fetch_cccl_wheel_headers 1.1.1 "CCCL 3.5"
fetch_cccl_wheel_headers 1.2.1 "CCCL 3.6"

# cuobjdump and nvdisasm, which this CUDA 13.0 install lacks, from PyPI's nvidia-cuda-cuobjdump
# and nvidia-cuda-nvdisasm: the SASS check's self-test (tests/integration/device/
# sass_check_test.sh) runs device/gpu_suite/sass_check.sh, which disassembles cubins with
# nvdisasm. Unpacked into .deps/ in the source tree (binaries in nvidia/cu13/bin), never
# installed system-wide; tests/CMakeLists.txt names the same version.
SASS_TOOLS_VERSION=13.2.51
sass_tools="$(cd "$(dirname "$0")/.." && pwd)/.deps/nvidia-cuda-sass-tools-$SASS_TOOLS_VERSION"
if [[ ! -x $sass_tools/nvidia/cu13/bin/nvdisasm || ! -x $sass_tools/nvidia/cu13/bin/cuobjdump ]]; then
  echo "install-deps: fetching nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm==$SASS_TOOLS_VERSION into $sass_tools" >&2
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$sass_tools" \
    "nvidia-cuda-cuobjdump==$SASS_TOOLS_VERSION" "nvidia-cuda-nvdisasm==$SASS_TOOLS_VERSION"
else
  echo "install-deps: cuobjdump and nvdisasm present in $sass_tools" >&2
fi

# pip_ensure WHAT CHECK WITHOUT_PIP PACKAGE...: pip-installs PACKAGEs into python3's
# environment unless the Python statement CHECK succeeds; without pip, says WITHOUT_PIP.
pip_ensure() {
  local what=$1 check=$2 without_pip=$3
  shift 3
  if python3 -c "$check" 2>/dev/null; then
    echo "install-deps: $what present" >&2
  elif python3 -m pip --version >/dev/null 2>&1; then
    echo "install-deps: installing $* (pip)" >&2
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
      --root-user-action=ignore "$@"
  else
    echo "install-deps: no pip for python3: $without_pip" >&2
  fi
}

# Python packages for the Numba-CUDA example's CI test (device/numba; it links a coopd artifact
# into a Numba kernel cubin, no GPU needed). numba-cuda finds NVVM and nvJitLink in $CUDA_HOME.
# The version is the one on the GPU machines the example runs on.
NUMBA_CUDA_VERSION=0.30.4
pip_ensure "numba-cuda $NUMBA_CUDA_VERSION" "import numba.cuda, cuda.bindings.nvjitlink; \
assert __import__('numba_cuda').__version__ == '$NUMBA_CUDA_VERSION'" \
  "the Numba example's test will skip" "numba-cuda==$NUMBA_CUDA_VERSION" cuda-bindings

# CuTe DSL for coopd.cute's CI tests (tests/python/test_cute.py, device/cute): its kernels
# compile to sm_90a cubins with no GPU (CUTE_DSL_ARCH=sm_90a) and link coopd's bitcode. 4.8.1 is
# the release coopd.cute was written and run against (its LLVM is 23, newer than clang-22's, so
# it reads clang-22's bitcode); the wheels are about 300 MB.
CUTLASS_DSL_VERSION=4.8.1
pip_ensure "nvidia-cutlass-dsl $CUTLASS_DSL_VERSION" "import importlib.metadata as m; \
assert m.version('nvidia-cutlass-dsl') == '$CUTLASS_DSL_VERSION'; import cutlass.cute" \
  "the CuTe DSL tests will skip" "nvidia-cutlass-dsl==$CUTLASS_DSL_VERSION"

# The Python package (client/python) and its tests: grpcio and protobuf at run time, pytest and
# wheel (pip install --no-build-isolation) for the tests, and grpcio-tools 1.62.3 in a venv of
# its own (.deps/protoc-venv; it needs protobuf 4.x) to check the checked-in stubs against the
# .proto. Versions are the ones the tests ran with.
pip_ensure "Python test packages" "import grpc, google.protobuf, pytest, wheel; \
assert grpc.__version__ == '1.85.3'" "the Python package's tests will fail" \
  grpcio==1.85.3 protobuf==7.36.2 pytest==9.2.0 wheel==0.48.0
# Generic gRPC and Prometheus clients for the operations tests (tests/python/test_ops.py): the
# standard health-checking stub, the server-reflection client, and prometheus_client's parser.
pip_ensure "grpcio health, reflection and prometheus_client" "import grpc_health.v1.health_pb2_grpc, \
grpc_reflection.v1alpha.proto_reflection_descriptor_database, prometheus_client.parser" \
  "the operations tests will fail" grpcio-health-checking==1.85.1 grpcio-reflection==1.85.1 \
  prometheus_client==0.26.0
# The Python package's build backend and type checker: setuptools 77.0.3 or newer for its SPDX
# license metadata (the wheel test builds with --no-build-isolation), mypy for the type check
# (tests/python/test_packaging.py).
pip_ensure "setuptools >= 77.0.3 and mypy 2.4.1" "import importlib.metadata as m; \
assert tuple(int(p) for p in m.version('setuptools').split('.')[:3]) >= (77, 0, 3); \
assert m.version('mypy') == '2.4.1'" "the Python package's wheel and type-check tests will fail" \
  setuptools==80.9.0 mypy==2.4.1
protoc_venv="$(cd "$(dirname "$0")/.." && pwd)/.deps/protoc-venv"
if [[ ! -x $protoc_venv/bin/python ]] || ! "$protoc_venv/bin/python" -c "import grpc_tools" 2>/dev/null; then
  echo "install-deps: creating $protoc_venv with grpcio-tools==1.62.3" >&2
  python3 -m venv "$protoc_venv"
  "$protoc_venv/bin/python" -m pip install --quiet --disable-pip-version-check grpcio-tools==1.62.3
else
  echo "install-deps: grpcio-tools present in $protoc_venv" >&2
fi

# The oldest numba-cuda and numba that cuda-cccl 1.1.1 accepts (numba-cuda 0.23.0, numba 0.60.0;
# its users pin them), in a venv of their own for the versions-matrix test
# (Python.NumbaOldestSupported): coopd.numba and coopd.coop compile and link there too. The
# newest pair is python3's own (numba-cuda above, and the newest numba it takes).
# numba-cuda 0.23 finds NVVM in the nvidia-nvvm wheel or under $CUDA_HOME/nvvm/lib64, so the
# venv carries the wheel matching this toolkit's NVVM (13.0).
OLDEST_NUMBA_CUDA=0.23.0 OLDEST_NUMBA=0.60.0
oldest_venv="$(cd "$(dirname "$0")/.." && pwd)/.deps/numba-oldest-venv"
if ! "$oldest_venv/bin/python" -c "import importlib.metadata as m, grpc, pytest; \
assert m.version('numba-cuda') == '$OLDEST_NUMBA_CUDA' and m.version('numba') == '$OLDEST_NUMBA'; \
import numba.cuda" 2>/dev/null; then
  echo "install-deps: creating $oldest_venv (numba-cuda $OLDEST_NUMBA_CUDA, numba $OLDEST_NUMBA)" >&2
  rm -rf "$oldest_venv"
  python3 -m venv "$oldest_venv"
  "$oldest_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "numba-cuda==$OLDEST_NUMBA_CUDA" "numba==$OLDEST_NUMBA" "cuda-bindings>=13,<14" \
    "nvidia-nvvm==13.0.*" grpcio protobuf pytest ||
    echo "install-deps: could not create $oldest_venv: the versions-matrix test will skip" >&2
else
  echo "install-deps: numba-cuda $OLDEST_NUMBA_CUDA and numba $OLDEST_NUMBA present in $oldest_venv" >&2
fi
