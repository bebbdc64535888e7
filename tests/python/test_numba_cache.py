"""coopd.numba.jit(cache=True): kernels that link coopd artifacts cached across processes.

Every process here is a fresh ``python3`` against the session's real coopd, with its own
NUMBA_CACHE_DIR. Without a GPU, the first process fills the cache with
``coopd.numba.precompile`` (numba-cuda and nvJitLink, for sm_90) and the second loads the kernel
through the dispatcher's own ``compile`` with numba-cuda's compile path made to raise, so a hit
provably compiled nothing. The kernel module reads its spec from the environment, so a changed
artifact reaches the key through coopd's artifact, not through the source file. ``-m gpu`` runs
cached kernels on a device and checks their results.
"""

import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (deploy/install-deps.sh)")
pytest.importorskip("cuda.bindings.nvjitlink", reason="cuda-bindings is not installed")

import numba  # noqa: E402
from numba import cuda  # noqa: E402

import coopd.numba as coop  # noqa: E402
from coopd.numba import _cache  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAS_GPU = cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no GPU here: cached kernels were stored and "
                                             "loaded, not launched (the tests above)")

# The kernel: a block sum through coopd.numba; its spec (algorithm, threads) and its options
# (fastmath, lineinfo) come from the environment.
KERNELS = textwrap.dedent("""
    import os
    import numba
    from numba import cuda
    import coopd.numba as coop

    THREADS = int(os.environ.get("KC_THREADS", "128"))
    ITEMS = 4
    block_sum = coop.block.reduce(numba.int32, THREADS, ITEMS, method="sum",
                                  algorithm=os.environ.get("KC_ALGORITHM", "warp_reductions"))

    @coop.jit(cache=True, fastmath=os.environ.get("KC_FASTMATH") == "1",
              lineinfo=os.environ.get("KC_LINEINFO") == "1")
    def block_sums(inp, out):
        temp = block_sum.temp_storage()
        items = cuda.local.array(ITEMS, numba.int32)
        base = cuda.blockIdx.x * THREADS * ITEMS + cuda.threadIdx.x * ITEMS
        for i in range(ITEMS):
            items[i] = inp[base + i]
        s = block_sum(temp, items)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    SIG = (numba.int32[::1], numba.int32[::1])
""")

# One process: "precompile" fills the cache without a GPU; "load" compiles through the
# dispatcher with every compile step (numba's kernel build, NVVM, nvJitLink) made to raise;
# "run" launches on a GPU (in "load" mode too when "forbid" is set).
CHILD = textwrap.dedent("""
    import hashlib, json, sys
    mode, forbid = sys.argv[1], sys.argv[2] == "forbid"
    import numpy as np
    import coopd.numba as coop
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver, nvvm
    import kernels

    out = {}
    if forbid:
        def compile_path(*args, **kwargs):
            raise RuntimeError("test: the compile path ran")
        dispatcher._Kernel.__init__ = compile_path
        nvvm.compile_ir = compile_path
        driver._Linker.new = compile_path
        driver._Linker.__init__ = compile_path
    k = kernels.block_sums
    out["key"] = coop.cache_key(k, kernels.SIG).digest if mode != "run" else None
    if mode == "precompile":
        cubin = coop.precompile(k, kernels.SIG)
        out["cubin"] = hashlib.sha256(cubin).hexdigest()
    else:
        try:
            compiled = k.compile(kernels.SIG)
        except RuntimeError as e:
            if "test: the compile path ran" not in str(e):
                raise
            out["compiled"] = True
        else:
            out["compiled"] = False
            lib = compiled._codelibrary
            out["link_inputs"] = len(lib._linking_files)
            out["cubins"] = {repr(cc): hashlib.sha256(bytes(c.code)).hexdigest()
                             for cc, c in lib._cubin_cache.items()}
            if mode == "run":
                from numba import cuda
                threads, items, blocks = kernels.THREADS, kernels.ITEMS, 64
                host = np.arange(blocks * threads * items, dtype=np.int32) % 1000 - 500
                d_out = cuda.device_array(blocks, dtype=np.int32)
                k[blocks, threads](cuda.to_device(host), d_out)
                want = host.reshape(blocks, -1).sum(axis=1, dtype=np.int64).astype(np.int32)
                out["ok"] = bool(np.array_equal(d_out.copy_to_host(), want))
        out["hits"] = sum(k.stats.cache_hits.values())
        out["misses"] = sum(k.stats.cache_misses.values())
    print(json.dumps(out))
""")


@pytest.fixture
def workdir(tmpdir_path, daemon):
    with open(os.path.join(tmpdir_path, "kernels.py"), "w") as f:
        f.write(KERNELS)
    with open(os.path.join(tmpdir_path, "child.py"), "w") as f:
        f.write(CHILD)
    env = dict(os.environ, COOPD_SOCKET=daemon.socket, COOPD_NO_AUTOSTART="1",
               NUMBA_CACHE_DIR=os.path.join(tmpdir_path, "numba-cache"),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "client", "python"),
                                           tmpdir_path]))
    if not HAS_GPU:
        env["COOPD_ARCH"] = "sm_90"
    for k in ("KC_THREADS", "KC_ALGORITHM", "KC_FASTMATH", "KC_LINEINFO"):
        env.pop(k, None)
    return tmpdir_path, env


def child(workdir, mode, forbid=True, **spec):
    d, env = workdir
    env = dict(env, **{f"KC_{k.upper()}": str(v) for k, v in spec.items()})
    p = subprocess.run([sys.executable, os.path.join(d, "child.py"), mode,
                        "forbid" if forbid else "allow"], env=env, cwd=d,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def entries(workdir):
    return sorted(glob.glob(os.path.join(workdir[0], "numba-cache", "**", "*.coopd.nbk"),
                            recursive=True))


def test_a_second_process_loads_the_linked_kernel_without_compiling(workdir):
    first = child(workdir, "precompile", forbid=False)
    assert len(entries(workdir)) == 1
    for _ in range(2):
        second = child(workdir, "load")
        assert second["compiled"] is False
        assert (second["hits"], second["misses"]) == (1, 0)
        assert second["key"] == first["key"]  # the same key in every fresh process
        assert second["cubins"] == {"(9, 0, 'a')": first["cubin"]}  # the stored cubin
        assert second["link_inputs"] == 0  # the cubin is self-contained: no LTO-IR kept


def test_an_empty_cache_is_a_miss_that_reaches_the_compile_path(workdir):
    r = child(workdir, "load")
    assert r["compiled"] is True and (r["hits"], r["misses"]) == (0, 1)


def test_a_changed_artifact_misses_and_each_spec_keeps_its_own_kernel(workdir):
    raking = child(workdir, "precompile", forbid=False, algorithm="raking")
    assert child(workdir, "load", algorithm="warp_reductions")["compiled"] is True
    warp = child(workdir, "precompile", forbid=False, algorithm="warp_reductions")
    assert warp["key"] != raking["key"] and warp["cubin"] != raking["cubin"]
    for spec, want in (("raking", raking), ("warp_reductions", warp)):
        r = child(workdir, "load", algorithm=spec)
        assert r["compiled"] is False and r["cubins"] == {"(9, 0, 'a')": want["cubin"]}
    # A block shape that changes the LTO-IR (and the temp storage) misses as well.
    assert child(workdir, "load", threads=256)["compiled"] is True


@pytest.mark.parametrize("option", ["fastmath", "lineinfo"])
def test_a_changed_compile_option_misses(workdir, option):
    child(workdir, "precompile", forbid=False)
    assert child(workdir, "load", **{option: 1})["compiled"] is True


CORRUPTIONS = {
    "truncated": lambda b: b[:len(b) // 2],
    "empty": lambda b: b"",
    "a byte flipped in the body": lambda b: b[:-100] + bytes([b[-100] ^ 1]) + b[-99:],
    "not a cache file": lambda b: b"\x80\x04garbage" + b[10:],
    "another format": lambda b: b[:8] + (99).to_bytes(4, "little") + b[12:],
    "another key": lambda b: b[:12] + bytes(32) + b[44:],
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_cache_file_is_a_miss_and_is_replaced(workdir, corruption):
    child(workdir, "precompile", forbid=False)
    [path] = entries(workdir)
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(CORRUPTIONS[corruption](blob))
    r = child(workdir, "load")
    assert r["compiled"] is True and (r["hits"], r["misses"]) == (0, 1)
    child(workdir, "precompile", forbid=False)  # a new entry replaces the corrupt one
    assert child(workdir, "load")["compiled"] is False


def test_concurrent_writers_of_one_entry_leave_one_whole_file(workdir):
    d, env = workdir
    procs = [subprocess.Popen([sys.executable, os.path.join(d, "child.py"), "precompile",
                               "allow"], env=env, cwd=d, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err[-2000:] for _, err in results]
    cubins = {json.loads(out.strip().splitlines()[-1])["cubin"] for out, _ in results}
    assert len(cubins) == 1  # every writer linked the same cubin
    assert len(entries(workdir)) == 1
    assert not glob.glob(os.path.join(d, "numba-cache", "**", "*.tmp.*"), recursive=True)
    r = child(workdir, "load")
    assert r["compiled"] is False and r["cubins"] == {"(9, 0, 'a')": cubins.pop()}


def test_an_edited_source_file_misses_and_its_old_entries_are_removed(workdir):
    child(workdir, "precompile", forbid=False)
    [old] = entries(workdir)
    path = os.path.join(workdir[0], "kernels.py")
    with open(path, "a") as f:
        f.write("\n# edited\n")
    assert child(workdir, "load")["compiled"] is True
    child(workdir, "precompile", forbid=False)
    [new] = entries(workdir)
    assert new != old


# ---- the key, in this process -----------------------------------------------------------------

@pytest.fixture
def cache_dir(tmpdir_path, monkeypatch, coop_client):
    from numba.cuda.core import config
    monkeypatch.setattr(config, "CACHE_DIR", tmpdir_path)
    return tmpdir_path


@pytest.fixture
def coop_client(daemon):
    with daemon.client(client_name="pytest coopd.numba cache") as c:
        coop.set_client(c)
        yield c
        coop.set_client(None)


SIG = (numba.int32[::1], numba.int32[::1])


def make_kernel(prim, **options):
    def kernel(inp, out):
        temp = prim.temp_storage()
        s = prim(temp, inp[cuda.grid(1)])
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s
    return coop.jit(cache=True, **options)(kernel)


def components(kernel, sig=SIG, arch="sm_90"):
    return dict(coop.cache_key(kernel, sig, arch=arch).components)


def differing(a, b):
    return sorted(k for k in a if a[k] != b[k])


def test_the_key_names_each_input_that_changes_the_cubin(cache_dir):
    prim = coop.block.reduce(numba.int32, 128, arch="sm_90")
    other = coop.block.reduce(numba.int32, 128, arch="sm_90", algorithm="raking")
    base = components(make_kernel(prim))
    assert base == components(make_kernel(prim))  # deterministic
    assert prim.artifact.key in base["reaches"]
    assert all(d in base["reaches"] for d in prim.link_digests)
    assert differing(base, components(make_kernel(other))) == ["reaches"]
    assert differing(base, components(make_kernel(prim, fastmath=True))) == ["options"]
    assert differing(base, components(make_kernel(prim, debug=True, opt=False))) == ["options"]
    assert differing(base, components(make_kernel(prim, max_registers=32))) == ["options"]
    assert differing(base, components(make_kernel(prim, lto=False))) == ["options"]
    assert differing(base, components(make_kernel(prim), arch="sm_80")) == ["target"]
    assert components(make_kernel(prim), arch="sm_90a") == base  # numba links sm_90a anyway
    assert differing(base, components(make_kernel(prim), sig=(numba.int64[::1],) * 2)) == \
        ["signature"]
    assert "numba_cuda" in base and "nvjitlink" in base and "nvvm" in base


def test_the_key_covers_constants_and_closures_that_numba_cuda_does_not(cache_dir):
    # numba-cuda's own key hashes co_code only: these two differ only in a constant.
    def one(out):
        out[0] = 1

    consts = tuple(2 if c == 1 else c for c in one.__code__.co_consts)
    two = type(one)(one.__code__.replace(co_consts=consts), one.__globals__, "one")
    assert one.__code__.co_code == two.__code__.co_code and consts != one.__code__.co_consts
    a, b = coop.jit(cache=True)(one), coop.jit(cache=True)(two)
    assert components(a, sig=(numba.int32[::1],))["reaches"] != \
        components(b, sig=(numba.int32[::1],))["reaches"]


def test_the_numba_cuda_version_is_part_of_the_key(cache_dir, monkeypatch):
    kernel = make_kernel(coop.block.reduce(numba.int32, 128, arch="sm_90"))
    base = components(kernel)
    import numba_cuda
    monkeypatch.setattr(numba_cuda, "__version__", "0.30.99")
    monkeypatch.setattr(_cache, "_internals", None)
    monkeypatch.setattr(_cache, "_toolchain", None)
    assert differing(base, components(kernel)) == ["numba_cuda"]


def test_another_numba_cuda_series_is_refused_loudly(cache_dir, monkeypatch):
    import numba_cuda
    monkeypatch.setattr(numba_cuda, "__version__", "0.31.0")
    monkeypatch.setattr(_cache, "_internals", None)
    with pytest.raises(coop.CacheError, match=r"supports numba-cuda 0\.30\.x; this is 0\.31\.0"):
        coop.jit(cache=True)(lambda out: None)


def add_one(x):
    return x + 1


def test_a_kernel_linking_a_file_the_key_does_not_name_is_refused(cache_dir):
    ltoir, _ = cuda.compile(add_one, numba.int32(numba.int32), device=True, abi="c",
                            output="ltoir", cc=(9, 0), abi_info={"abi_name": "kc_add_one"})
    code = cuda.LTOIR(bytes(getattr(ltoir, "data", ltoir)), name="kc_add_one.ltoir")
    declared = cuda.declare_device("kc_add_one", numba.int32(numba.int32), link=[code])

    def uses_declared(out):
        out[0] = declared(out[0])

    # The declaration brings the file, but nothing the key can see names it: refused.
    hidden = coop.jit(cache=True)(uses_declared)
    with pytest.raises(coop.CacheError, match=r"links 'kc_add_one.ltoir'.*pass the file in link="):
        coop.precompile(hidden, (numba.int32[::1],), arch="sm_90")
    # Named in link=, it is keyed by content and cached.
    named = coop.jit(cache=True, link=[code])(uses_declared)
    assert len(coop.precompile(named, (numba.int32[::1],), arch="sm_90")) > 0
    key = coop.cache_key(named, (numba.int32[::1],), arch="sm_90")
    assert _cache._digest(bytes(code.data)) in key.links


def test_misuse_is_a_clear_error(cache_dir):
    with pytest.raises(ValueError, match="cache=True is for kernels"):
        coop.jit(cache=True, device=True)(add_one)
    with pytest.raises(coop.CacheError, match="CUDA C\\+\\+ source"):
        coop.cache_key(coop.jit(cache=True, link=[cuda.CUSource("__device__ int f();")])(
            add_one), (numba.int32,), arch="sm_90")
    with pytest.raises(coop.CacheError, match=r"was not made by coopd.numba.jit\(cache=True\)"):
        coop.cache_key(cuda.jit(add_one), (numba.int32,), arch="sm_90")
    plain = coop.jit(add_one)  # without cache=True: numba-cuda's own dispatcher, uncached
    assert type(plain._cache).__name__ == "NullCache"


# ---- on a GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@gpu
def test_gpu_a_cached_kernel_runs_in_a_second_process_without_compiling(workdir):
    first = child(workdir, "run", forbid=False)
    assert first["ok"] and first["compiled"] is False and first["misses"] == 1
    assert len(entries(workdir)) == 1
    second = child(workdir, "run", forbid=True)
    assert second["ok"] and (second["hits"], second["misses"]) == (1, 0)
    assert second["cubins"] == first["cubins"] and second["link_inputs"] == 0


@pytest.mark.gpu
@gpu
def test_gpu_a_kernel_precompiled_without_a_device_runs_on_one(workdir):
    d, env = workdir
    stored = child((d, dict(env, COOPD_ARCH="sm_%d%d" % cuda.get_current_device()
                             .compute_capability, CUDA_VISIBLE_DEVICES="")),
                   "precompile", forbid=False)
    r = child(workdir, "run", forbid=True)
    assert r["ok"] and (r["hits"], r["misses"]) == (1, 0)
    assert list(r["cubins"].values()) == [stored["cubin"]]
