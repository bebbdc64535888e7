"""coopd.cute against a real coopd: objects for every family, CuTe DSL kernels that call them
compiled to sm_90a cubins by CuTe DSL 4.8.1 (no GPU needed), checked with the SASS check
(device/gpu_suite/sass_check.py): every entry inlined, nothing of coopd's left to CALL, temp
storage in shared memory; and the same kernels with the entries declared noinline, which the
check must fail. Also user operators as bitcode, the object's attributes and the errors.
"""

import os
import subprocess
import sys
import tempfile

import grpc
import pytest

# Before CuTe DSL is imported: it reads its arch once, at import.
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
pytest.importorskip("cutlass.cute", reason="CuTe DSL is not installed (deploy/install-deps.sh "
                                           "installs nvidia-cutlass-dsl)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

import coopd  # noqa: E402
import coopd.cute as coop  # noqa: E402
from coopd.cute._primitive import parse_entry  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "device", "gpu_suite"))
import sass_check  # noqa: E402

ARCH = "sm_90a"
BLOCK = 128


def _find_nvdisasm():
    dirs = [os.environ.get("COOPD_SASS_TOOLS_DIR", ""),
            os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin"),
            os.path.join(ROOT, ".deps", "nvidia-cuda-sass-tools-13.2.51", "nvidia", "cu13",
                         "bin")]
    for d in dirs:
        if d and os.access(os.path.join(d, "nvdisasm"), os.X_OK):
            os.environ["PATH"] = d + os.pathsep + os.environ["PATH"]
            return True
    return subprocess.run(["sh", "-c", "command -v nvdisasm"], capture_output=True).returncode == 0


HAS_NVDISASM = _find_nvdisasm()
needs_nvdisasm = pytest.mark.skipif(not HAS_NVDISASM, reason="no nvdisasm for the SASS check "
                                    "(deploy/install-deps.sh fetches it)")


@pytest.fixture(scope="module", autouse=True)
def coop_client(daemon):
    with daemon.client(client_name="pytest coopd.cute", timeout=600) as c:
        coop.set_client(c)
        yield c
        coop.set_client(None)


# One spec per family, with a non-default method or option where the family has one, so the
# kernels call entries with every kind of parameter: temp storage (a row per warp for warp
# families), item arrays, tiles, numbers. CuTe passes no 16-bit float structs by value and
# coopd.cute takes no user types, so the value types are numbers.
FAMILY_SPECS = {
    "block_reduce": dict(dtype=cutlass.Float32, threads=BLOCK, items_per_thread=4),
    "block_scan": dict(dtype=cutlass.Int32, threads=(32, 4), items_per_thread=4,
                       method="exclusive_scan", op="max", with_aggregate=True),
    "block_load": dict(dtype=cutlass.Float32, threads=BLOCK, items_per_thread=4,
                       algorithm="warp_transpose", method="load_guarded_default"),
    "block_store": dict(dtype=cutlass.Float64, threads=BLOCK, items_per_thread=2,
                        algorithm="vectorize", method="store_guarded"),
    "block_exchange": dict(dtype=cutlass.Int16, threads=BLOCK, items_per_thread=4,
                           method="scatter_to_striped_flagged"),
    "block_shuffle": dict(dtype=cutlass.Int32, threads=BLOCK, method="offset"),
    "block_radix_sort": dict(dtype=cutlass.Uint32, threads=BLOCK, items_per_thread=4,
                             value_dtype=cutlass.Float32, radix_bits=5),
    "block_merge_sort": dict(dtype=cutlass.Float32, threads=BLOCK, items_per_thread=4,
                             method="stable_sort_guarded", op="less"),
    "block_histogram": dict(dtype=cutlass.Uint8, threads=BLOCK, items_per_thread=4, bins=64,
                            algorithm="atomic"),
    "block_discontinuity": dict(dtype=cutlass.Int32, threads=BLOCK, items_per_thread=4,
                                method="flag_heads_and_tails_with_predecessor_and_successor",
                                op="not_equal"),
    "block_adjacent_difference": dict(dtype=cutlass.Float32, threads=BLOCK, items_per_thread=4,
                                      method="subtract_left_partial_with_predecessor",
                                      op="difference"),
    "block_run_length_decode": dict(dtype=cutlass.Int32, threads=BLOCK, items_per_thread=2,
                                    decoded_items_per_thread=4, method="decode_with_offsets"),
    "block_radix_rank": dict(dtype=cutlass.Uint32, threads=BLOCK, items_per_thread=4,
                             radix_bits=5),
    "block_topk": dict(dtype=cutlass.Float32, threads=BLOCK, items_per_thread=4,
                       method="max_pairs", value_dtype=cutlass.Int32),
    "warp_reduce": dict(dtype=cutlass.Int64, warp_threads=16, method="head_segmented_reduce",
                        op="sum", block_threads=BLOCK),
    "warp_scan": dict(dtype=cutlass.Uint16, warp_threads=32, method="exclusive_scan", op="max",
                      block_threads=BLOCK),
    "warp_load": dict(dtype=cutlass.Float32, warp_threads=32, items_per_thread=4,
                      algorithm="transpose", block_threads=BLOCK),
    "warp_store": dict(dtype=cutlass.Float32, warp_threads=32, items_per_thread=4,
                       algorithm="striped", method="store_guarded", block_threads=BLOCK),
    "warp_exchange": dict(dtype=cutlass.Int32, warp_threads=8, items_per_thread=8,
                          algorithm="shuffle", method="blocked_to_striped", block_threads=BLOCK),
    "warp_merge_sort": dict(dtype=cutlass.Uint64, warp_threads=32, items_per_thread=2, op="less",
                            value_dtype=cutlass.Int8, block_threads=BLOCK),
}


def build(family, **fields):
    group = coop.warp if family.startswith("warp_") else coop.block
    return getattr(group, family.split("_", 1)[1])(arch=ARCH, **fields)


def gptr(dtype):
    return make_ptr(dtype, 16, cute.AddressSpace.gmem, assumed_align=16)


def call_every_entry(p, smem, g, out):
    """In a kernel: each entry of ``p`` once, with its temp storage, the global pointer ``g``
    wherever it takes a pointer (so nothing it writes is dead) and numbers where it takes
    values; each result is stored to ``out``. Plain Python, run while CuTe traces."""
    results = cute.make_tensor(out, cute.make_layout(len(p.names)))
    for i, name in enumerate(p.names):
        entry = getattr(p, name)
        args = [p.temp_storage(smem)]
        for param in entry.info.params[1:]:
            if param.numeric is None:
                args.append(g)
            elif param.name == "begin_bit":
                args.append(0)
            elif param.name == "end_bit":
                args.append(p.numeric.width)
            else:
                args.append(param.numeric(1))
        r = entry(*args)
        if r is not None:
            results[i] = cutlass.Int64(r)


def call_all(primitives, smem, g, out):
    for q in primitives:
        call_every_entry(q, smem, g, out)


def compile_calling_every_entry(p, *extra):
    """The sm_90a cubin of a kernel calling every entry of ``p`` (and of ``extra``)."""
    threads = p.block_threads

    primitives = [p, *extra]

    @cute.kernel
    def every_entry(g: cute.Pointer, out: cute.Pointer):
        smem = cutlass.memory.SmemAllocator()
        call_all(primitives, smem, g, out)

    smem_bytes = coop.smem_size(*[q for q in primitives for _ in q.names])  # one per call

    @cute.jit
    def host(g: cute.Pointer, out: cute.Pointer):
        every_entry(g, out).launch(grid=[1, 1, 1], block=[threads, 1, 1], smem=smem_bytes)

    with tempfile.TemporaryDirectory(prefix="coopd-cute-test-") as dump:
        compiled = cute.compile(host, gptr(p.numeric), gptr(cutlass.Int64),
                                options=f"--keep-cubin --dump-dir={dump}")
        cubin = compiled.artifacts.CUBIN
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF", "CuTe DSL kept a cubin"
    return cubin


def sass_rows(cubin, user_syms=()):
    with tempfile.TemporaryDirectory(prefix="coopd-cute-sass-") as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return sass_check.check_cubin(path, set(user_syms))


def inlining_failures(cubin, user_syms=()):
    """The SASS check's failures about CALLs and functions left in the cubin."""
    (row,) = sass_rows(cubin, user_syms)
    return [f for f in row[5] if "CALL" in f or "left in the cubin" in f]


class noinline:
    """Declares a primitive's entries noinline for a while (a deliberately broken build)."""

    def __init__(self, *primitives):
        self.ffis = [f for p in primitives for f in p.ffi.values()]

    def __enter__(self):
        for f in self.ffis:
            f.inline = False

    def __exit__(self, *exc):
        for f in self.ffis:
            f.inline = True


# ---- tests -------------------------------------------------------------------------------

def test_importing_coopd_does_not_import_cute():
    code = "import sys, coopd; print('cutlass' in sys.modules, 'coopd.cute' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_every_family_of_the_catalogue_has_a_factory(coop_client):
    for f in coop_client.catalog().families:
        group, name = f.name.split("_", 1)
        factory = getattr(coop.block if group == "block" else coop.warp, name, None)
        assert callable(factory), f"coopd.cute.{group}.{name} is missing"
        assert f.name in FAMILY_SPECS, f"no compile test for {f.name}"


def check_every_entry_inlined(p):
    cubin = compile_calling_every_entry(p)
    assert inlining_failures(cubin) == []
    for e in p.entries:
        assert e.symbol.encode() not in cubin, f"{e.symbol} was not inlined"
    # The same kernel with the entries noinline: each is called, and the check says so.
    with noinline(p):
        broken = compile_calling_every_entry(p)
    failures = inlining_failures(broken)
    for e in p.entries:
        assert e.symbol.encode() in broken, f"the kernel does not call {e.symbol}"
        assert any(e.symbol in f and "not inlined" in f for f in failures), failures


@needs_nvdisasm
@pytest.mark.parametrize("family", sorted(FAMILY_SPECS))
def test_a_kernel_calling_every_entry_compiles_to_an_sm90a_cubin_with_them_inlined(
        family, coop_client):
    row = next(f for f in coop_client.catalog().families if f.name == family)
    if not row.available:
        pytest.skip(f"{family}: this coopd's CCCL lacks it ({row.requires}); "
                    "test_block_topk_on_cccl_3_3_and_3_5_partial_tiles_from_one_coopd covers it")
    p = build(family, **FAMILY_SPECS[family])
    assert p.family == family and p.arch == ARCH
    assert p.temp_storage_bytes == p.artifact.temp_storage_bytes
    assert open(p.files[0], "rb").read() == p.artifact.bitcode
    assert len(p.names) == len(p.entries) == len(p.ffi) >= 1
    check_every_entry_inlined(p)


def traps_and_block_shape_reads(cubin):
    """(the number of TRAP instructions, the number of reads of the block's shape) in the
    kernel's SASS."""
    with tempfile.TemporaryDirectory(prefix="coopd-cute-sass-") as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        code, _ = sass_check.disassemble(path)
    rows = [(m, o) for section in code.values() for _, m, o in section]
    return (sum("TRAP" in m for m, _ in rows),
            sum("SR_NTID" in o or "c[0x0][0x0]" in o or "c[0x0][0x4]" in o for _, o in rows))


@needs_nvdisasm
def test_entries_take_values_and_return_fresh_tensors(coop_client):
    """A TensorSSA where an entry takes a pointer is stored to a fresh register tensor; trailing
    outputs may be left out and come back fresh; values passed for in-place parameters come back
    rewritten. Everything stays in registers and inlined; the wrong dtype or count is a
    TypeError naming the entry."""
    scan = coop.block.scan(cutlass.Int32, BLOCK, 4, method="exclusive_sum")
    reduce = coop.block.reduce(cutlass.Int32, BLOCK, 4)
    sort = coop.block.radix_sort(cutlass.Uint32, BLOCK, 4)
    seen = {}

    @cute.kernel
    def values(g: cute.Pointer, out: cute.Pointer):
        smem = cutlass.memory.SmemAllocator()
        items = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Int32)
        cute.autovec_copy(cute.make_tensor(g, cute.make_layout(4)), items)
        scanned = scan(scan.temp_storage(smem), items.load())  # input a value, output left out
        total = reduce(reduce.temp_storage(smem), scanned.load())
        keys = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Uint32)
        for i in cutlass.range_constexpr(4):
            keys[i] = cutlass.Uint32(scanned[i])
        sorted_keys = sort(sort.temp_storage(smem), keys.load(), 0, 32)  # in place: rewritten
        seen.update(scanned=type(scanned), sorted=type(sorted_keys), total=type(total))
        o = cute.make_tensor(out, cute.make_layout(8))
        for i in cutlass.range_constexpr(4):
            o[i] = scanned[i] + total
            o[4 + i] = cutlass.Int32(sorted_keys[i])

    @cute.jit
    def host(g: cute.Pointer, out: cute.Pointer):
        values(g, out).launch(grid=[1, 1, 1], block=[BLOCK, 1, 1],
                              smem=coop.smem_size(scan, reduce, sort))

    with tempfile.TemporaryDirectory(prefix="coopd-cute-test-") as dump:
        cubin = cute.compile(host, gptr(cutlass.Int32), gptr(cutlass.Int32),
                             options=f"--keep-cubin --dump-dir={dump}").artifacts.CUBIN
    assert seen["total"] is cutlass.Int32 and issubclass(seen["scanned"], cute.Tensor), seen
    assert issubclass(seen["sorted"], cute.Tensor), seen
    (row,) = sass_rows(cubin)
    name, shared, local, generic, calls, failures, _ = row
    assert failures == [] and calls == 0 and shared > 0, row  # inlined, temp storage in smem
    assert local == 0, f"{local} local-memory accesses: a fresh tensor left the registers"

    @cute.kernel
    def wrong(g: cute.Pointer, out: cute.Pointer):
        smem = cutlass.memory.SmemAllocator()
        floats = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        floats.fill(1.0)
        scan(scan.temp_storage(smem), floats.load())

    @cute.jit
    def wrong_host(g: cute.Pointer, out: cute.Pointer):
        wrong(g, out).launch(grid=[1, 1, 1], block=[BLOCK, 1, 1], smem=coop.smem_size(scan))

    with pytest.raises(Exception, match="takes const int\\*; got a TensorSSA of Float32"):
        cute.compile(wrong_host, gptr(cutlass.Int32), gptr(cutlass.Int32))


@needs_nvdisasm
def test_a_plan_is_one_allocation_that_uses_share_and_reservations_become_tensors(coop_client):
    """coop.plan lays a reduce and a scan whose lifetimes do not overlap in the same bytes, a
    warp primitive a row per warp, and a reservation apart; in a kernel, storage() is one
    allocation, temp_storage(name, base[, sync]) the use's pointer, tensor(...) a reservation as
    a tensor. The kernel compiles with every entry inlined and the temp storage in shared
    memory."""
    reduce = coop.block.reduce(cutlass.Float32, BLOCK, 4)
    scan = coop.block.scan(cutlass.Float32, BLOCK, 4, method="exclusive_sum")
    wreduce = coop.warp.reduce(cutlass.Int32, block_threads=BLOCK)
    shared = coop.plan([("reduce", reduce, 0, 0), ("scan", scan, 1, 1), ("warps", wreduce, 0, 1)],
                       {"tile": (BLOCK * 4 * 4, 16)})
    assert shared["reduce"].offset == shared.reduce and shared.offsets["scan"] == shared.scan
    assert shared["warps"].count == BLOCK // 32 and shared["warps"].stride >= 1
    # reduce and scan share bytes; the warp rows and the tile are apart from both.
    assert shared.dynamic_shared_bytes < (reduce.temp_storage_bytes + scan.temp_storage_bytes +
                                          shared["warps"].bytes + BLOCK * 16)
    for name in ("reduce", "scan"):
        lo, hi = shared[name].offset, shared[name].offset + shared[name].bytes
        for other in ("warps", "tile"):
            o_lo, o_hi = shared[other].offset, shared[other].offset + shared[other].bytes
            assert hi <= o_lo or o_hi <= lo, f"{name} overlaps {other}"
    with pytest.raises(AttributeError, match="no region 'sort'"):
        shared.sort

    @cute.kernel
    def planned(g: cute.Pointer, out: cute.Pointer):
        base = shared.storage(cutlass.memory.SmemAllocator())
        tile = shared.tensor("tile", base, cutlass.Float32, BLOCK * 4)
        tid, _, _ = cute.arch.thread_idx()
        items = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        cute.autovec_copy(cute.make_tensor(g + tid * 4, cute.make_layout(4)), items)
        for i in cutlass.range_constexpr(4):
            tile[tid * 4 + i] = items[i]
        total = reduce(shared.temp_storage("reduce", base), items)
        scan(shared.temp_storage("scan", base, sync=True), items, items)
        lane_sum = wreduce(shared.temp_storage("warps", base), cutlass.Int32(tid))
        o = cute.make_tensor(out, cute.make_layout(BLOCK * 4))
        for i in cutlass.range_constexpr(4):
            o[tid * 4 + i] = items[i] + total + tile[(tid * 4 + i + 1) % (BLOCK * 4)] + \
                cutlass.Float32(lane_sum)

    @cute.jit
    def host(g: cute.Pointer, out: cute.Pointer):
        planned(g, out).launch(grid=[1, 1, 1], block=[BLOCK, 1, 1],
                               smem=shared.dynamic_shared_bytes + shared.base_align)

    with tempfile.TemporaryDirectory(prefix="coopd-cute-test-") as dump:
        cubin = cute.compile(host, gptr(cutlass.Float32), gptr(cutlass.Float32),
                             options=f"--keep-cubin --dump-dir={dump}").artifacts.CUBIN
    (row,) = sass_rows(cubin)
    _, shared_accesses, local, _, calls, failures, _ = row
    assert failures == [] and calls == 0 and shared_accesses > 0 and local == 0, row

    @cute.kernel
    def too_big(g: cute.Pointer, out: cute.Pointer):
        base = shared.storage(cutlass.memory.SmemAllocator())
        shared.tensor("tile", base, cutlass.Float32, BLOCK * 4 + 1)

    @cute.jit
    def too_big_host(g: cute.Pointer, out: cute.Pointer):
        too_big(g, out).launch(grid=[1, 1, 1], block=[BLOCK, 1, 1])

    with pytest.raises(Exception, match="do not fit region 'tile'"):
        cute.compile(too_big_host, gptr(cutlass.Float32), gptr(cutlass.Float32))


@needs_nvdisasm
def test_the_launch_check_traps_on_another_block_shape_and_is_opt_in(coop_client, monkeypatch):
    """With launch_check=True, temp_storage() traps unless the block has the shape the object
    was built for (warp primitives: at most block_threads threads): the kernel's SASS reads the
    block's shape and traps. Off by default; $COOPD_CUTE_DEBUG=1 turns it on; the objects are
    kept apart. device/cute/run_cubins.py launches one with the wrong shape on a GPU."""
    monkeypatch.delenv("COOPD_CUTE_LAUNCH_CHECK", raising=False)
    monkeypatch.delenv("COOPD_CUTE_DEBUG", raising=False)
    plain = build("block_reduce", **FAMILY_SPECS["block_reduce"])
    checked = build("block_reduce", launch_check=True, **FAMILY_SPECS["block_reduce"])
    assert not plain.launch_check and checked.launch_check and plain is not checked
    assert checked.block_shape == (BLOCK, 1, 1) and plain.artifact.key == checked.artifact.key
    assert traps_and_block_shape_reads(compile_calling_every_entry(plain))[0] == 0
    traps, reads = traps_and_block_shape_reads(compile_calling_every_entry(checked))
    assert traps >= 1 and reads >= 1, (traps, reads)
    # A warp primitive checks the block's size against the rows it lays out.
    warp = build("warp_reduce", launch_check=True, **FAMILY_SPECS["warp_reduce"])
    assert warp.block_shape is None and warp.block_threads == BLOCK
    assert traps_and_block_shape_reads(compile_calling_every_entry(warp))[0] >= 1
    # The debug mode turns it on; the variable says on or off, and nothing else.
    monkeypatch.setenv("COOPD_CUTE_DEBUG", "1")
    assert build("block_reduce", **FAMILY_SPECS["block_reduce"]) is checked
    monkeypatch.setenv("COOPD_CUTE_LAUNCH_CHECK", "0")
    assert build("block_reduce", **FAMILY_SPECS["block_reduce"]) is plain
    monkeypatch.setenv("COOPD_CUTE_LAUNCH_CHECK", "yes")
    with pytest.raises(ValueError, match='COOPD_CUTE_LAUNCH_CHECK must be "0" or "1"'):
        build("block_reduce", **FAMILY_SPECS["block_reduce"])


@needs_nvdisasm
def test_block_topk_on_cccl_3_3_and_3_5_partial_tiles_from_one_coopd(tmpdir_path):
    """One coopd serving CCCL 3.3 and 3.5: block_topk on each (`cccl=`), and on 3.5 the
    partial-tile form (valid_items=True), every entry inlined."""
    found = []
    for name, var in (("cccl33", "COOPD_NEWER_CCCL_INCLUDE"), ("cccl35", "COOPD_CCCL35_INCLUDE")):
        include = os.environ.get(var, "")
        if not os.path.exists(os.path.join(include, "cub", "block", "block_topk.cuh")):
            pytest.skip(f"no {name} headers at {var}={include!r} (ctest sets it to those "
                        "deploy/install-deps.sh unpacks)")
        found += ["--cccl", f"{name}={include}"]
    from conftest import Daemon
    daemon = Daemon(tmpdir_path, *found, "--probe-cccl", "off").start()
    try:
        with daemon.client(timeout=600) as c:
            spec = FAMILY_SPECS["block_topk"]
            check_every_entry_inlined(build("block_topk", client=c, cccl="cccl33", **spec))
            q = build("block_topk", client=c, cccl="3.5", valid_items=True, **spec)
            assert q.artifact.cccl == "cccl35"
            assert all("int num_valid" in e.declaration for e in q.entries)
            check_every_entry_inlined(q)
    finally:
        assert daemon.stop() == 0, daemon.log()


@needs_nvdisasm
def test_block_reduce_keeps_its_temp_storage_in_shared_memory(coop_client):
    """The whole SASS check: the shared-memory pointer reached the entry as a generic pointer
    to shared memory (LDS/STS, no generic LD/ST), and nothing is called."""
    p = coop.block.reduce(cutlass.Float32, 256, 4, arch=ARCH)
    (name, shared, _, generic, calls, failures, _) = sass_rows(compile_calling_every_entry(p))[0]
    assert failures == [] and shared > 0 and generic == 0 and calls == 0, failures


def clamp_add():
    return coopd.UserOperator(name="clamp_add", source=(
        "__device__ int clamp_add(int a, int b) { int s = a + b; return s > 7000 ? 7000 : s; }"))


@needs_nvdisasm
def test_a_source_operator_is_linked_as_bitcode_and_inlined(coop_client):
    p = coop.block.reduce(cutlass.Int32, BLOCK, 4, method="reduce", op=clamp_add(), arch=ARCH)
    assert len(p.files) == 2 and p.operator_symbols, "the operator's bitcode file"
    assert open(p.files[1], "rb").read() == p.artifact.bitcode_link_inputs[0]
    cubin = compile_calling_every_entry(p)
    assert inlining_failures(cubin, p.operator_symbols) == []
    assert p.operator_symbols[0].encode() not in cubin, "the operator was not inlined"


def test_the_object_exposes_the_artifact_and_its_temp_storage(coop_client):
    p = coop.block.reduce(cutlass.Float32, 256, arch=ARCH)
    assert (p.temp_storage_bytes, p.temp_storage_align) == (44, 4)  # BlockReduce<float, 256>
    assert p.method == "sum" and p.names == ("sum",) and p.dtype == "float32"
    assert p.artifact.parts[0].spec.calling_convention == 1, "the C calling convention"
    assert p.artifact.bitcode[:4] == b"BC\xc0\xde" and p.files[0].endswith(".bc")
    assert p.ffi["sum"].name == p.entries[0].symbol
    assert p.ffi["sum"].source == cute.BitCode(p.files[0])
    assert p.sum.ffi is p.ffi["sum"]
    assert coop.block.reduce(cutlass.Float32, 256, arch=ARCH) is p, "fetched once per spec"
    with pytest.raises(AttributeError, match="its entries are sum"):
        p.max  # noqa: B018
    assert "block_reduce sum float32 sm_90a" in repr(p)
    # Room for each temp storage at any alignment: 44 bytes + up to 3 of padding.
    assert coop.smem_size(p) == 47 and coop.smem_size(p, p, extra=10) == 104


def test_warp_temp_storage_has_a_row_per_logical_warp(coop_client):
    p = coop.warp.reduce(cutlass.Int32, 16, block_threads=256, arch=ARCH)
    row = -(-p.temp_storage_bytes // p.temp_storage_align) * p.temp_storage_align
    assert p.smem_bytes == 16 * row  # 256 threads: 16 logical warps of 16


def test_the_arch_comes_from_coopd_arch_else_cute_dsl(coop_client, monkeypatch):
    monkeypatch.setenv("COOPD_ARCH", "sm_90")
    assert coop.block.reduce(cutlass.Int32, 32).arch == "sm_90"
    monkeypatch.delenv("COOPD_ARCH")
    from cutlass.cutlass_dsl import CuTeDSL
    assert coop.default_arch() == CuTeDSL._get_dsl().envar.arch == "sm_90a"


def test_wrong_arguments_in_a_kernel_are_errors_naming_the_parameter(coop_client):
    p = coop.block.radix_sort(cutlass.Uint32, BLOCK, 4, arch=ARCH)

    def compile_with(call):
        @cute.kernel
        def k(g: cute.Pointer, out: cute.Pointer):
            smem = cutlass.memory.SmemAllocator()
            call(p.temp_storage(smem), g)

        @cute.jit
        def host(g: cute.Pointer, out: cute.Pointer):
            k(g, out).launch(grid=[1, 1, 1], block=[BLOCK, 1, 1])

        cute.compile(host, gptr(cutlass.Uint32), gptr(cutlass.Int64))

    with pytest.raises(Exception, match=r"sort \(coop_block_radix_sort_sort_u32_[0-9a-f]+\) "
                                        r"takes 4 arguments \(temp_storage, keys, begin_bit, "
                                        r"end_bit\); got 2"):
        compile_with(lambda temp, g: p(temp, g))
    with pytest.raises(Exception, match="keys takes a CuTe tensor, TensorSSA or pointer "
                                        r"\(unsigned int\*\); got int"):
        compile_with(lambda temp, g: p(temp, 5, 0, 32))


def test_bad_specs_are_clear_errors(coop_client):
    with pytest.raises(coopd.CoopdError) as e:
        coop.block.reduce(cutlass.Float32, 128, method="frobnicate", arch=ARCH)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "sum" in e.value.message
    with pytest.raises(ValueError, match="radix_bits, value_dtype|value_dtype, radix_bits"):
        coop.block.radix_sort(cutlass.Uint32, 128, 4, radix_bitz=4, arch=ARCH)
    with pytest.raises(ValueError, match="block_reduce: takes no options; got bins"):
        coop.block.reduce(cutlass.Float32, 128, bins=4, arch=ARCH)
    with pytest.raises(ValueError, match="dtype must be one of int8"):
        coop.block.reduce("float128", 128, arch=ARCH)
    with pytest.raises(ValueError, match="no user types"):
        coop.block.reduce(cutlass.Boolean, 128, arch=ARCH)
    with pytest.raises(ValueError, match="op must be a builtin's name or a coopd.UserOperator "
                                         "with CUDA C\\+\\+ source"):
        coop.block.merge_sort(cutlass.Int32, 64, 2, op=lambda a, b: a < b, arch=ARCH)
    with pytest.raises(ValueError, match="passes a float16 by value, which a CuTe DSL call "
                                         "cannot"):
        coop.block.reduce(cutlass.Float16, 128, arch=ARCH)
