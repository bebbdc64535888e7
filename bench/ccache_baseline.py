#!/usr/bin/env python3
"""The same-run baseline for a whole-process coopctl hit: a ccache direct hit.

The issue's baseline was a ccache direct hit of nvcc on the wrapper coopd compiles. There is no
nvcc on the development machines, so the compiler here is the one coopd itself runs for bitcode:
Debian's clang++-22 compiling the rendered wrapper as CUDA device code to LLVM bitcode, with the
same headers (coopd's device headers from device/include, CCCL, the CUDA include directory). A
direct hit means ccache hashed the command line and the source, found its manifest, and checked
every header the wrapper includes (the whole CUB block/warp prelude) before copying the result.

ccache runs with a private cache directory and a private, empty configuration file (so the
user's ccache.conf does not apply): its defaults, or with --inode-cache its inode cache on (it
then remembers each header's hash by inode, size and times instead of re-reading the header),
the fastest direct hit ccache offers.

Usage:
  bench/ccache_baseline.py --dir DIR (--source FILE | --socket PATH) [--inode-cache] [--json]
  bench/ccache_baseline.py --dir DIR --self-test

  --source FILE    the wrapper to compile (a rendered translation unit)
  --socket PATH    fetch it from a running coopd instead: the rendered source of the spec
                   bench/footprint.py times (block_reduce sum float32, 256 threads, sm_90)

It compiles once (a miss that fills DIR/ccache), runs the command again, checks from ccache's
statistics that the second run was a direct hit (exit status 1 otherwise), and prints the
command to time: with --json an object {"argv": [...], "env": {...}, "cwd": DIR,
"description": "..."}; run argv with env added to the environment, in cwd. Every later run of
that command is a direct hit. bench/footprint.py imports prepare() and times it.

--self-test feeds the check a unit ccache cannot serve from direct mode (it uses __TIME__) and
exits 0 only if the check refuses it.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")
# The spec bench/footprint.py asks coopctl for (its coopctl flags and the Python client's).
SPEC_FLAGS = ["block_reduce", "--method", "sum", "--dtype", "float32", "--threads", "256",
              "--arch", "sm_90"]
SPEC_KWARGS = dict(family="block_reduce", method="sum", dtype="float32", threads=256,
                   arch="sm_90")


def fetch_source(socket):
    """The rendered translation unit of the benchmark's spec, from coopd at `socket`."""
    sys.path.insert(0, os.path.join(REPO, "client", "python"))
    import coopd  # noqa: E402 (the repository's Python package)

    with coopd.Client(socket) as client:
        return client.specialize(**SPEC_KWARGS).proto.source


def _stats(env):
    out = subprocess.run(["ccache", "--print-stats"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def prepare(directory, source, inode_cache=False, clang="clang++-22"):
    """Fills a private ccache in `directory` with one compile of `source`; returns the command
    of a direct hit (argv, env, cwd, description). Raises RuntimeError if it is not one."""
    os.makedirs(directory, exist_ok=True)
    directory = os.path.abspath(directory)
    for tool in ("ccache", clang):
        if shutil.which(tool) is None:
            raise RuntimeError(f"ccache_baseline: {tool} is not on PATH (apt-get install "
                               f"{'ccache' if tool == 'ccache' else 'clang-22'})")
    with open(os.path.join(directory, "wrapper.cu"), "w") as f:
        f.write(source)
    config = os.path.join(directory, "ccache.conf")
    with open(config, "w") as f:
        f.write("inode_cache = true\n" if inode_cache else "")
    env = {"CCACHE_DIR": os.path.join(directory, "ccache"), "CCACHE_CONFIGPATH": config}
    argv = ["ccache", clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90",
            "-fcuda-short-ptr", "-emit-llvm", "-c", "-O3", "-std=c++17", f"--cuda-path={CUDA}",
            "-nocudalib", "-Wno-unknown-cuda-version", f"-I{REPO}/device/include",
            f"-I{CUDA}/include/cccl", f"-I{CUDA}/include", "wrapper.cu", "-o", "wrapper.bc"]
    full_env = dict(os.environ, **env)
    for _ in range(2):  # a miss (or an old hit), then the hit to check
        before = _stats(full_env)
        subprocess.run(argv, env=full_env, cwd=directory, check=True)
    after = _stats(full_env)
    if int(after.get("direct_cache_hit", 0)) != int(before.get("direct_cache_hit", 0)) + 1:
        counters = ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss")
        change = ", ".join(f"{c} +{int(after.get(c, 0)) - int(before.get(c, 0))}"
                           for c in counters)
        raise RuntimeError(f"ccache_baseline: the second compile was not a direct hit ({change})")
    return {
        "argv": argv,
        "env": env,
        "cwd": directory,
        "description": ("ccache 4 direct hit, " + ("inode_cache=true" if inode_cache else
                                                   "default configuration") +
                        f": {clang} -x cuda --cuda-device-only -emit-llvm (sm_90) of the "
                        "rendered block_reduce wrapper"),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--source")
    src.add_argument("--socket")
    src.add_argument("--self-test", action="store_true")
    p.add_argument("--inode-cache", action="store_true")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.self_test:
        try:
            prepare(a.dir, '__device__ const char* coop_built_at = __TIME__;\n')
        except RuntimeError as e:
            if "not a direct hit" not in str(e):
                raise
            print(f"ccache_baseline self-test: refused as it should be: {e}")
            return 0
        print("ccache_baseline self-test: FAIL: a unit with __TIME__ passed as a direct hit",
              file=sys.stderr)
        return 1
    source = open(a.source).read() if a.source else fetch_source(a.socket)
    try:
        cmd = prepare(a.dir, source, a.inode_cache)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(e, file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(cmd))
    else:
        env = " ".join(f"{k}={v}" for k, v in cmd["env"].items())
        print(f"cd {cmd['cwd']} && {env} {' '.join(cmd['argv'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
