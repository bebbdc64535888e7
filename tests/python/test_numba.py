"""coopd.numba against a real coopd: objects for every family, kernels that call them compiled by
numba-cuda and linked with nvJitLink into sm_90 cubins (no GPU needed), Python operators, errors,
and, where there is a GPU, kernels that run and are checked against NumPy (``-m gpu``).

On a GPU machine, alone: ``COOPD_BIN=/path/to/coopd python3 -m pytest tests/python/test_numba.py
-m gpu`` (with client/python and tests/python on PYTHONPATH).
"""

import os
import re
import subprocess
import sys

import grpc
import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (deploy/install-deps.sh)")
pytest.importorskip("cuda.bindings.nvjitlink", reason="cuda-bindings is not installed")

import numba  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402
from numba.cuda.core import errors  # noqa: E402
from numba.cuda.np import numpy_support  # noqa: E402

import coopd  # noqa: E402
import coopd.numba as coop  # noqa: E402

ARCH = "sm_90"  # compile-only tests; the GPU tests use the device's
HAS_GPU = cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no GPU here: the kernels were only compiled and "
                                             "linked (the compile tests)")


@pytest.fixture(scope="module", autouse=True)
def coop_client(daemon):
    with daemon.client(client_name="pytest coopd.numba") as c:
        coop.set_client(c)
        yield c
        coop.set_client(None)


def less(a, b):
    return a < b


def greater(a, b):
    return a > b


def add(a, b):
    return a + b


def by_key_source():
    return coopd.UserOperator(name="by_key", source=(
        "struct Pair { int key; float value; int tag; };\n"
        "__device__ bool by_key(Pair a, Pair b) { return a.key < b.key; }\n"))


PAIR = np.dtype([("key", np.int32), ("value", np.float32), ("tag", np.int32)], align=True)

# One spec per family, each with a non-default method or option where the family has one, so the
# kernel below calls entries with every kind of parameter: temp storage (1-D, and a row per warp
# for warp families), item arrays, tiles in global memory, values by reference (float16, user
# types), operator state, numbers.
FAMILY_SPECS = {
    "block_reduce": dict(dtype=numba.float32, threads=128, items_per_thread=4),
    "block_scan": dict(dtype=numba.int32, threads=(32, 4), items_per_thread=4,
                       method="exclusive_scan", op="max", with_aggregate=True),
    "block_load": dict(dtype=numba.float32, threads=128, items_per_thread=4,
                       algorithm="warp_transpose", method="load_guarded_default"),
    "block_store": dict(dtype=numba.float64, threads=128, items_per_thread=2,
                        algorithm="vectorize", method="store_guarded"),
    "block_exchange": dict(dtype=numba.int16, threads=128, items_per_thread=4,
                           method="scatter_to_striped_flagged"),
    "block_shuffle": dict(dtype=np.float16, threads=128, method="offset"),
    "block_radix_sort": dict(dtype=numba.uint32, threads=128, items_per_thread=4,
                             value_dtype=numba.float32, radix_bits=5),
    "block_merge_sort": dict(dtype=numba.float32, threads=128, items_per_thread=4,
                             method="stable_sort_guarded", op=less),
    "block_histogram": dict(dtype=numba.uint8, threads=128, items_per_thread=4, bins=64,
                            algorithm="atomic"),
    "block_discontinuity": dict(dtype=numba.int32, threads=128, items_per_thread=4,
                                method="flag_heads_and_tails_with_predecessor_and_successor",
                                op="not_equal"),
    "block_adjacent_difference": dict(dtype=numba.float32, threads=128, items_per_thread=4,
                                      method="subtract_left_partial_with_predecessor",
                                      op="difference"),
    "block_run_length_decode": dict(dtype=numba.int32, threads=128, items_per_thread=2,
                                    decoded_items_per_thread=4, method="decode_with_offsets"),
    "block_radix_rank": dict(dtype=numba.uint32, threads=128, items_per_thread=4, radix_bits=5),
    "block_topk": dict(dtype=numba.float32, threads=128, items_per_thread=4, method="max_pairs",
                       value_dtype=numba.int32),
    "warp_reduce": dict(dtype=numba.int64, warp_threads=16, method="head_segmented_reduce",
                        op=add, block_threads=128),
    "warp_scan": dict(dtype=numba.uint16, warp_threads=32, method="exclusive_scan", op="max"),
    "warp_load": dict(dtype=numba.float32, warp_threads=32, items_per_thread=4,
                      algorithm="transpose", block_threads=128),
    "warp_store": dict(dtype=numba.float32, warp_threads=32, items_per_thread=4,
                       algorithm="striped", method="store_guarded"),
    "warp_exchange": dict(dtype=numba.int32, warp_threads=8, items_per_thread=8,
                          algorithm="shuffle", method="blocked_to_striped"),
    "warp_merge_sort": dict(dtype=numba.uint64, warp_threads=32, items_per_thread=2, op="less",
                            value_dtype=numba.int8),
}

TILES = ("block_src", "block_dst", "warp_src", "warp_dst")


def build(family, arch=ARCH, **fields):
    group = coop.warp if family.startswith("warp_") else coop.block
    return getattr(group, family.split("_", 1)[1])(arch=arch, **fields)


def kernel_calling_every_entry(p):
    """A kernel (x, out) that calls each entry of ``p`` once: temp storage from
    p.temp_storage(), local arrays for items, x and out for tiles, x[0] for values."""
    env = {"cuda": cuda, "p": p, "numba": numba, "T": p.dtype.numba}
    lines = ["def kernel(x, out):", "    temp = p.temp_storage()"]
    for e, name in zip(p.entries, p.names):
        info = coop_entry_info(p, e)
        args = ["temp"]
        for i, param in enumerate(info.params[1:]):
            var = f"{name}_{param.name}"
            if param.kind == "array" and param.name in TILES:
                args.append("x" if param.name.endswith("src") else "out")
            elif param.kind == "array" and param.name == "histogram":
                lines.append(f"    {var} = cuda.shared.array(64, numba.uint32)")
                args.append(var)
            elif param.kind in ("array", "state"):
                env[f"T_{var}"] = param.dtype.numba if param.dtype else numba.int64
                lines.append(f"    {var} = cuda.local.array(16, T_{var})")
                args.append(var)
            elif param.kind == "ref":
                args.append("x[0]")
            elif param.name == "begin_bit":
                args.append("0")
            elif param.name == "end_bit":
                args.append(str(p.dtype.size * 8))
            else:
                args.append("1")
        call = f"p.{name}({', '.join(args)})"
        lines.append(f"    out[1] = {call}" if info.result else f"    {call}")
        lines.append("    cuda.syncthreads()")
    exec(compile("\n".join(lines) + "\n", f"<kernel for {p.family}>", "exec"), env)
    return env["kernel"]


def coop_entry_info(p, entry):
    from coopd.numba._primitive import parse_entry
    return parse_entry(entry, p.dtype if p.dtype.is_user else None)


def signature_of(p):
    t = p.dtype.numba
    return (types.Array(t, 1, "C"), types.Array(t, 1, "C"))


def link_checked(kernel, signature, *primitives):
    """Links ``kernel`` to an sm_90 cubin and checks that it calls every entry of each
    primitive (the kernel's own PTX, before linking, has a call to each) and that after LTO
    none is left as a function of its own (no entry or operator symbol in the cubin)."""
    ptx, _ = cuda.compile_ptx(getattr(kernel, "py_func", kernel), signature, cc=(9, 0))
    cubin = coop.link_to_cubin(kernel, signature, ARCH)
    assert cubin[:4] == b"\x7fELF", "a cubin"
    for p in primitives:
        for e in p.entries:
            assert re.search(r"call(\.uni)?\s[^;]*\b" + e.symbol + r"\b", ptx), (
                f"the kernel does not call {e.symbol}")
            assert e.symbol.encode() not in cubin, f"{e.symbol} was not inlined"
        for li in p.artifact.proto.link_inputs:
            assert li.symbol.encode() not in cubin, f"operator {li.symbol} was not inlined"
    return cubin


# ---- no GPU needed ------------------------------------------------------------------------

def test_the_numba_versions_are_the_ones_the_versions_matrix_names():
    """Python.NumbaOldestSupported runs this file under the oldest pair it names; pip resolving
    something else there must fail, not pass for the wrong versions."""
    import importlib.metadata as m
    for dist, env in (("numba-cuda", "COOPD_EXPECT_NUMBA_CUDA"), ("numba", "COOPD_EXPECT_NUMBA")):
        expected = os.environ.get(env)
        if expected:
            assert m.version(dist) == expected, f"{dist}: {env} says {expected}"


def test_importing_coopd_does_not_import_numba():
    code = "import sys, coopd; print('numba' in sys.modules, 'coopd.numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_every_family_of_the_catalogue_has_a_factory(coop_client):
    for f in coop_client.catalog().families:
        group, name = f.name.split("_", 1)
        assert group in ("block", "warp"), f.name
        factory = getattr(coop.block if group == "block" else coop.warp, name, None)
        assert callable(factory), f"coopd.numba.{group}.{name} is missing"
        assert f.name in FAMILY_SPECS, f"no compile test for {f.name}"


def test_every_factory_takes_cccl_and_make_puts_it_in_the_spec(coop_client, monkeypatch):
    import inspect
    from types import SimpleNamespace

    from coopd import _families
    for ns in (coop.block, coop.warp):
        for name in ns.__all__:
            assert "cccl" in inspect.signature(getattr(ns, name)).parameters, name
    got = []
    for warp in (False, True):
        for factory in _families.factories(lambda f, d, **kw: got.append(kw["cccl"]), "",
                                           warp).values():
            factory(numba.int32, cccl="3.5") if warp else factory(numba.int32, 128, cccl="3.5")
    assert got == ["3.5"] * (len(_families.BLOCK_FAMILIES) + len(_families.WARP_FAMILIES))

    spec = coopd.Spec(family="block_reduce")
    _families.shape_spec(spec, SimpleNamespace(warp=False), "block_reduce", 128, None, "cccl35")
    assert spec.to_proto().cccl == "cccl35" and spec.to_proto().block.x == 128
    _families.shape_spec(spec, SimpleNamespace(warp=False), "block_reduce", 128, None)
    assert spec.to_proto().cccl == ""

    class Built(Exception):
        pass

    real = _families.shape_spec

    def stop(spec, row, family, threads, warp_threads, cccl=None):
        real(spec, row, family, threads, warp_threads, cccl)
        raise Built(spec.cccl)  # the spec as make sends it, without a request
    monkeypatch.setattr(_families, "shape_spec", stop)
    with pytest.raises(Built, match="^cccl35$"):
        coop.block.reduce(numba.int32, 128, arch=ARCH, cccl="cccl35")
    with pytest.raises(Built, match="^$"):
        coop.warp.reduce(numba.int32, arch=ARCH)


@pytest.mark.parametrize("family", sorted(FAMILY_SPECS))
def test_a_kernel_calling_every_entry_of_the_family_links_to_an_sm90_cubin(family,
                                                                            coop_client):
    row = next(f for f in coop_client.catalog().families if f.name == family)
    if not row.available:
        pytest.skip(f"{family}: this coopd's CCCL lacks it ({row.requires})")
    p = build(family, **FAMILY_SPECS[family])
    assert p.family == family
    assert p.files and all(isinstance(f, cuda.LTOIR) for f in p.files)
    assert p.temp_storage_bytes == p.artifact.temp_storage_bytes > 0
    assert len(p.names) == len(p.entries) >= 1
    link_checked(kernel_calling_every_entry(p), signature_of(p), p)


def newer_cccls():
    """(name, include) of the newer CCCLs ctest names (deploy/install-deps.sh unpacks them)."""
    found = []
    for name, var in (("cccl33", "COOPD_NEWER_CCCL_INCLUDE"), ("cccl35", "COOPD_CCCL35_INCLUDE")):
        include = os.environ.get(var, "")
        if not os.path.exists(os.path.join(include, "cub", "block", "block_topk.cuh")):
            pytest.skip(f"no {name} headers at {var}={include!r} (ctest sets it to those "
                        "deploy/install-deps.sh unpacks)")
        found.append((name, include))
    return found


def test_block_topk_on_cccl_3_3_and_3_5_partial_tiles_from_one_coopd(tmpdir_path):
    """One coopd serving CCCL 3.3 and 3.5: block_topk on each, named by `cccl=`, and on 3.5 the
    partial-tile form (valid_items=True), whose entries take num_valid."""
    from conftest import Daemon
    args = [a for name, include in newer_cccls() for a in ("--cccl", f"{name}={include}")]
    daemon = Daemon(tmpdir_path, *args, "--probe-cccl", "off").start()
    try:
        with daemon.client() as c:
            spec = FAMILY_SPECS["block_topk"]
            p = build("block_topk", client=c, cccl="cccl33", **spec)
            assert p.artifact.cccl == "cccl33" and p.artifact.cccl_version.startswith("3.3.")
            link_checked(kernel_calling_every_entry(p), signature_of(p), p)
            q = build("block_topk", client=c, cccl="3.5", valid_items=True, **spec)
            assert q.artifact.cccl == "cccl35" and q.artifact.key != p.artifact.key
            assert all("int num_valid" in e.declaration for e in q.entries)
            link_checked(kernel_calling_every_entry(q), signature_of(q), q)
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_the_object_exposes_the_artifact_and_its_temp_storage(coop_client):
    p = coop.block.reduce(numba.float32, 256, arch=ARCH)
    assert (p.temp_storage_bytes, p.temp_storage_align) == (44, 4)  # BlockReduce<float, 256>
    assert p.method == "sum" and p.names == ("sum",)
    assert p.artifact.parts[0].spec.calling_convention == 2, "Numba's calling convention"
    assert p.files[0].data == p.artifact.ltoir
    assert p.sum is p._callables["sum"]
    with pytest.raises(AttributeError, match="its entries are sum"):
        p.max  # noqa: B018
    assert "block_reduce sum float32" in repr(p)


def test_the_same_spec_is_fetched_once_per_process(coop_client):
    before = coop_client.stats().requests
    a = coop.block.scan(numba.int32, 64, 2, method="inclusive_sum", arch=ARCH)
    b = coop.block.scan(np.int32, 64, 2, method="inclusive_sum", arch=ARCH)
    c = coop.block.scan("int32", 64, items_per_thread=2, method="inclusive_sum", arch=ARCH)
    assert a is b is c
    assert coop_client.stats().requests == before + 1
    other = coop.block.scan(numba.int32, 64, 2, method="exclusive_sum", arch=ARCH)
    assert other is not a
    assert coop_client.stats().requests == before + 2


def test_two_objects_of_one_kernel_share_an_operator_without_a_duplicate_symbol(coop_client):
    # Both sorts link the same compiled comparator; linked twice it would be defined twice.
    s1 = coop.block.merge_sort(numba.int32, 64, 2, op=greater, arch=ARCH)
    s2 = coop.block.merge_sort(numba.int32, 64, 2, method="stable_sort", op=greater, arch=ARCH)
    assert s1.files[1] is s2.files[1]

    def kernel(x, out):
        keys = cuda.local.array(2, numba.int32)
        keys[0] = x[0]
        keys[1] = x[1]
        s1(s1.temp_storage(), keys)
        s2(s2.temp_storage(), keys)
        out[cuda.threadIdx.x] = keys[0]

    link_checked(kernel, "void(int32[::1], int32[::1])", s1, s2)


def test_a_python_comparator_is_sent_as_ltoir_and_inlined(coop_client):
    p = coop.block.merge_sort(numba.float64, 128, 4, op=greater, arch=ARCH)
    op = p.spec.user_op
    assert op.ltoir and not op.source, "compiled by numba-cuda to LTO-IR"
    assert op.name.startswith("coopd_py_greater_")
    assert p.artifact.link_inputs == (op.ltoir,), "coopd links it with the primitive"
    assert p.resolved.op.user.digest, "coopd names the operator by its digest"

    def kernel(x, out):
        keys = cuda.local.array(4, numba.float64)
        for i in range(4):
            keys[i] = x[cuda.threadIdx.x * 4 + i]
        p(p.temp_storage(), keys)
        for i in range(4):
            out[cuda.threadIdx.x * 4 + i] = keys[i]

    cubin = link_checked(kernel, "void(float64[::1], float64[::1])", p)
    assert op.name.encode() not in cubin


def test_python_operators_on_16_bit_floats_or_records_ask_for_source(coop_client):
    with pytest.raises(ValueError, match="for float16 give CUDA C.. source"):
        coop.block.reduce(np.float16, 128, method="reduce", op=add, arch=ARCH)
    with pytest.raises(ValueError, match="for Record.* give CUDA C.. source"):
        coop.block.merge_sort(PAIR, 64, 2, op=less, arch=ARCH)


def test_user_types_travel_as_records(coop_client):
    record = numpy_support.from_dtype(PAIR)
    srt = coop.block.merge_sort(PAIR, 64, 2, method="sort_guarded", op=by_key_source(),
                                arch=ARCH)
    load = coop.block.load(PAIR, 64, 2, algorithm="direct", method="load_guarded_default",
                           arch=ARCH)
    assert srt.dtype.is_user and (srt.dtype.size, srt.dtype.align) == (12, 4)
    assert "const coop_user_12_4& oob_default" in srt.entries[0].declaration

    def kernel(x, out):
        keys = cuda.local.array(2, record)
        load(load.temp_storage(), x, keys, 100, x[0])  # the default by reference: a record
        srt(srt.temp_storage(), keys, 100, x[1])
        out[cuda.threadIdx.x] = keys[0]

    link_checked(kernel, (record[::1], record[::1]), srt, load)
    with pytest.raises(ValueError, match="returns a 12-byte user type by value"):
        coop.block.shuffle(PAIR, 64, method="rotate", arch=ARCH)


def test_float16_values_go_by_reference_and_are_inlined(coop_client):
    p = coop.block.reduce(np.float16, 128, arch=ARCH)
    assert p.entries[0].declaration.endswith("(__half* result, void* temp_storage, "
                                             "const __half& input);")

    def kernel(x, out):
        s = p(p.temp_storage(), x[cuda.grid(1)])
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    link_checked(kernel, "void(float16[::1], float16[::1])", p)


def test_warp_temp_storage_has_a_row_per_logical_warp(coop_client):
    p = coop.warp.reduce(numba.int32, 16, block_threads=96, arch=ARCH)

    def kernel(x, out):
        temp = p.temp_storage()
        out[0] = temp.shape[0]
        out[1] = temp.shape[1]
        s = p(temp, x[cuda.threadIdx.x])  # a 2-D array: each warp takes its own row
        out[2 + cuda.threadIdx.x // 16] = s

    link_checked(kernel, "void(int32[::1], int32[::1])", p)


def test_kernel_side_constants_size_local_arrays(coop_client):
    p = coop.block.radix_sort(numba.uint16, 64, 3, arch=ARCH)

    def kernel(x, out):
        keys = cuda.local.array(p.items_per_thread, numba.uint16)
        temp = cuda.shared.array(p.temp_storage_bytes, numba.uint8, alignment=16)
        for i in range(p.items_per_thread):
            keys[i] = x[cuda.threadIdx.x * p.items_per_thread + i]
        p.sort(temp, keys, 0, 16)
        out[cuda.threadIdx.x] = keys[0]

    link_checked(kernel, "void(uint16[::1], uint16[::1])", p)


def compile_error(kernel, signature):
    # numba-cuda raises its own TypingError or numba's, by where typing failed.
    with pytest.raises((errors.TypingError, numba.core.errors.TypingError)) as e:
        coop.link_to_cubin(kernel, signature, ARCH)
    return str(e.value)


def test_wrong_arguments_are_typing_errors_naming_the_parameter(coop_client):
    p = coop.block.scan(numba.int32, 128, 4, method="exclusive_sum", arch=ARCH)

    def wrong_dtype(x, out):
        items = cuda.local.array(4, numba.float32)
        p(p.temp_storage(), items, items)

    message = compile_error(wrong_dtype, "void(int32[::1], int32[::1])")
    assert "exclusive_sum" in message and "input takes an array of int32" in message
    assert "float32" in message

    def number_for_items(x, out):
        p(p.temp_storage(), x[0], x)

    message = compile_error(number_for_items, "void(int32[::1], int32[::1])")
    assert "input takes an array of int32" in message and "got int32" in message

    def strided(x, out):
        p(p.temp_storage(), x[::2], out)

    assert "C-contiguous" in compile_error(strided, "void(int32[::1], int32[::1])")


def test_bad_specs_are_clear_errors(coop_client):
    with pytest.raises(coopd.CoopdError) as e:
        coop.block.reduce(numba.float32, 128, method="frobnicate", arch=ARCH)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "sum" in e.value.message
    with pytest.raises(ValueError, match="radix_bits, value_dtype|value_dtype, radix_bits"):
        coop.block.radix_sort(numba.uint32, 128, 4, radix_bitz=4, arch=ARCH)
    with pytest.raises(ValueError, match="block_reduce: takes no options; got bins"):
        coop.block.reduce(numba.float32, 128, bins=4, arch=ARCH)
    with pytest.raises(ValueError, match="dtype must be one of int8"):
        coop.block.reduce("float128", 128, arch=ARCH)
    # complex64 is a user type: its sum has no builtin operator, and coopd says what does.
    with pytest.raises(coopd.CoopdError, match="needs an arithmetic dtype.*reduce, "
                                                "reduce_partial with op.user"):
        coop.block.reduce(numba.complex64, 128, arch=ARCH)
    with pytest.raises(ValueError, match="no value type for Numba's"):
        coop.block.reduce(numba.types.unicode_type, 128, arch=ARCH)
    with pytest.raises(ValueError, match='arch must look like "sm_90"'):
        coop.block.merge_sort(numba.int32, 64, 2, op=less, arch="hopper")


def test_the_arch_comes_from_coopd_arch_without_a_gpu(coop_client, monkeypatch):
    monkeypatch.setenv("COOPD_ARCH", "sm_80")
    p = coop.block.reduce(numba.int32, 32)
    assert p.arch == "sm_80"
    if not HAS_GPU:
        monkeypatch.delenv("COOPD_ARCH")
        with pytest.raises(ValueError, match="no GPU to take the arch from; pass arch="):
            coop.block.reduce(numba.int32, 32)


# ---- on a GPU: run and check against NumPy ------------------------------------------------

BLOCKS = 256


def run_arch():
    return coop.default_arch()


def test_a_plan_lays_two_primitives_in_one_region_and_kernels_slice_it():
    reduce = coop.block.reduce(numba.float32, 128, 4, arch=ARCH)
    scan = coop.block.scan(numba.float32, 128, 4, method="exclusive_sum", arch=ARCH)
    shared = coop.plan([("reduce", reduce, 0, 0), ("scan", scan, 1, 1)],
                       {"mine": (64, 16)})
    # Lifetimes do not overlap: the two uses share bytes; the reservation lives throughout.
    need = max(reduce.temp_storage_bytes, scan.temp_storage_bytes)
    assert shared.reduce == shared["reduce"].offset and shared.offsets["scan"] == shared.scan
    assert shared["reduce"].bytes == reduce.temp_storage_bytes
    assert shared["scan"].bytes == scan.temp_storage_bytes
    assert shared.dynamic_shared_bytes <= need + 64 + 16 < (reduce.temp_storage_bytes +
                                                            scan.temp_storage_bytes + 64 + 32)
    for name, p in (("reduce", reduce), ("scan", scan)):
        assert shared[name].offset % p.temp_storage_align == 0
        lo, hi = shared[name].offset, shared[name].offset + shared[name].bytes
        m_lo, m_hi = shared["mine"].offset, shared["mine"].offset + 64
        assert hi <= m_lo or m_hi <= lo, f"{name} overlaps the reservation"
    with pytest.raises(AttributeError, match="no region 'sort'"):
        shared.sort

    def kernel(x, out):
        smem = shared.storage()
        items = cuda.local.array(4, numba.float32)
        for i in range(4):
            items[i] = x[cuda.grid(1) * 4 + i]
        total = reduce(smem[shared.reduce:], items)
        cuda.syncthreads()
        scan(smem[shared.scan:], items, items)
        smem[shared.mine] = 1
        for i in range(4):
            out[cuda.grid(1) * 4 + i] = items[i] + total

    link_checked(kernel, "void(float32[::1], float32[::1])", reduce, scan)


@pytest.mark.gpu
@gpu
def test_gpu_block_reduce_sums_each_block():
    p = coop.block.reduce(numba.float32, 128, 4, arch=run_arch())

    @cuda.jit(lto=True)
    def kernel(x, out):
        items = cuda.local.array(4, numba.float32)
        for i in range(4):
            items[i] = x[cuda.grid(1) * 4 + i]
        s = p(p.temp_storage(), items)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    x = np.random.default_rng(1).standard_normal(BLOCKS * 512).astype(np.float32)
    out = cuda.to_device(np.full(BLOCKS, np.nan, np.float32))
    kernel[BLOCKS, 128](cuda.to_device(x), out)
    want = x.astype(np.float64).reshape(BLOCKS, 512).sum(axis=1)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
@gpu
def test_gpu_block_scan_with_a_python_operator_and_the_aggregate():
    p = coop.block.scan(numba.int32, 128, 4, method="inclusive_scan", op=add,
                        with_aggregate=True, arch=run_arch())
    assert p.names == ("inclusive_scan", "inclusive_scan_aggregate")

    @cuda.jit(link=p.files, lto=True)  # link= as well: the same objects, linked once
    def kernel(x, out, totals):
        items = cuda.local.array(4, numba.int32)
        total = cuda.local.array(1, numba.int32)
        base = cuda.grid(1) * 4
        for i in range(4):
            items[i] = x[base + i]
        p.inclusive_scan_aggregate(p.temp_storage(), items, items, total)
        for i in range(4):
            out[base + i] = items[i]
        if cuda.threadIdx.x == 0:
            totals[cuda.blockIdx.x] = total[0]

    x = np.random.default_rng(2).integers(-1000, 1000, BLOCKS * 512, dtype=np.int32)
    out = cuda.to_device(np.full(x.size, -0x5A5A5A5A, np.int32))
    totals = cuda.to_device(np.zeros(BLOCKS, np.int32))
    kernel[BLOCKS, 128](cuda.to_device(x), out, totals)
    tiles = x.reshape(BLOCKS, 512)
    np.testing.assert_array_equal(out.copy_to_host(), np.cumsum(tiles, axis=1).reshape(-1))
    np.testing.assert_array_equal(totals.copy_to_host(), tiles.sum(axis=1))


@pytest.mark.gpu
@gpu
def test_gpu_block_load_and_store_move_tiles():
    load = coop.block.load(numba.float32, 128, 8, algorithm="warp_transpose", arch=run_arch())
    store = coop.block.store(numba.float32, 128, 8, algorithm="warp_transpose",
                             method="store_guarded", arch=run_arch())

    @cuda.jit(lto=True)
    def kernel(x, out, n):
        items = cuda.local.array(8, numba.float32)
        tile = cuda.blockIdx.x * 1024
        load(load.temp_storage(), x[tile:], items)
        for i in range(8):
            items[i] = -2 * items[i]  # exact: Numba computes it in float64, NumPy in float32
        store(store.temp_storage(), out[tile:], items, min(n - tile, 1024))

    n = BLOCKS * 1024 - 300  # the last tile is partial: the guarded store stops at n
    x = np.random.default_rng(3).standard_normal(BLOCKS * 1024).astype(np.float32)
    out = cuda.to_device(np.full(x.size, -7.0, np.float32))
    kernel[BLOCKS, 128](cuda.to_device(x), out, n)
    got = out.copy_to_host()
    np.testing.assert_array_equal(got[:n], -2 * x[:n])
    np.testing.assert_array_equal(got[n:], -7.0)


@pytest.mark.gpu
@gpu
def test_gpu_block_radix_sort_sorts_pairs():
    p = coop.block.radix_sort(numba.uint32, 128, 4, value_dtype=numba.int32, arch=run_arch())

    @cuda.jit(lto=True)
    def kernel(keys_in, keys_out, values_out):
        keys = cuda.local.array(4, numba.uint32)
        values = cuda.local.array(4, numba.int32)
        base = cuda.grid(1) * 4
        for i in range(4):
            keys[i] = keys_in[base + i]
            values[i] = base + i
        p(p.temp_storage(), keys, values, 0, 32)
        for i in range(4):
            keys_out[base + i] = keys[i]
            values_out[base + i] = values[i]

    keys = np.random.default_rng(4).integers(0, 2**32, BLOCKS * 512, dtype=np.uint32)
    keys_out = cuda.to_device(np.zeros_like(keys))
    values_out = cuda.to_device(np.full(keys.size, -1, np.int32))
    kernel[BLOCKS, 128](cuda.to_device(keys), keys_out, values_out)
    tiles = keys.reshape(BLOCKS, 512)
    order = np.argsort(tiles, axis=1, kind="stable") + np.arange(BLOCKS)[:, None] * 512
    np.testing.assert_array_equal(keys_out.copy_to_host(), np.sort(tiles, axis=1).reshape(-1))
    np.testing.assert_array_equal(values_out.copy_to_host(), order.reshape(-1))


@pytest.mark.gpu
@gpu
def test_gpu_block_merge_sort_with_a_python_comparator():
    p = coop.block.merge_sort(numba.float32, 128, 4, op=greater, arch=run_arch())

    @cuda.jit(lto=True)
    def kernel(x, out):
        keys = cuda.local.array(4, numba.float32)
        base = cuda.grid(1) * 4
        for i in range(4):
            keys[i] = x[base + i]
        p(p.temp_storage(), keys)
        for i in range(4):
            out[base + i] = keys[i]

    x = np.random.default_rng(5).standard_normal(BLOCKS * 512).astype(np.float32)
    out = cuda.to_device(np.full(x.size, np.nan, np.float32))
    kernel[BLOCKS, 128](cuda.to_device(x), out)
    want = -np.sort(-x.reshape(BLOCKS, 512), axis=1)  # descending: the comparator is a > b
    np.testing.assert_array_equal(out.copy_to_host(), want.reshape(-1))


@pytest.mark.gpu
@gpu
def test_gpu_warp_reduce_with_a_row_per_warp():
    p = coop.warp.reduce(numba.int32, 32, block_threads=256, arch=run_arch())

    @cuda.jit(lto=True)
    def kernel(x, out):
        s = p(p.temp_storage(), x[cuda.grid(1)])
        if cuda.threadIdx.x % 32 == 0:
            out[cuda.grid(1) // 32] = s

    x = np.random.default_rng(6).integers(-100, 100, BLOCKS * 256, dtype=np.int32)
    out = cuda.to_device(np.zeros(BLOCKS * 8, np.int32))
    kernel[BLOCKS, 256](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x.reshape(-1, 32).sum(axis=1))


@pytest.mark.gpu
@gpu
def test_gpu_float16_values_by_reference():
    p = coop.block.reduce(np.float16, 128, arch=run_arch())

    @cuda.jit(lto=True)
    def kernel(x, out):
        s = p(p.temp_storage(), x[cuda.grid(1)])  # the value goes by reference (const __half&)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    # Small integers: every partial sum is exact in float16, so the sums must be too.
    x = np.random.default_rng(7).integers(-8, 9, BLOCKS * 128).astype(np.float16)
    out = cuda.to_device(np.full(BLOCKS, np.nan, np.float16))
    kernel[BLOCKS, 128](cuda.to_device(x), out)
    want = x.astype(np.float32).reshape(BLOCKS, 128).sum(axis=1).astype(np.float16)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@pytest.mark.gpu
@gpu
def test_gpu_records_sorted_by_a_source_comparator_with_a_record_default():
    record = numpy_support.from_dtype(PAIR)
    p = coop.block.merge_sort(PAIR, 64, 2, method="sort_guarded", op=by_key_source(),
                              arch=run_arch())
    valid = 125  # of a 128-item tile: the last 3 become the default record

    @cuda.jit(lto=True)
    def kernel(x, default, out):
        keys = cuda.local.array(2, record)
        base = cuda.grid(1) * 2
        for i in range(2):
            keys[i] = x[base + i]
        p(p.temp_storage(), keys, valid, default[0])
        for i in range(2):
            out[base + i] = keys[i]

    rng = np.random.default_rng(8)
    x = np.zeros(BLOCKS * 128, PAIR)
    x["key"] = np.concatenate([rng.permutation(128) for _ in range(BLOCKS)])
    x["value"] = x["key"] * 0.5
    x["tag"] = x["key"] + 7
    default = np.array([(1 << 30, -1.0, -1)], PAIR)
    out = cuda.to_device(np.zeros_like(x))
    kernel[BLOCKS, 64](cuda.to_device(x), cuda.to_device(default), out)
    got = out.copy_to_host().reshape(BLOCKS, 128)
    tiles = x.reshape(BLOCKS, 128)
    for b in range(BLOCKS):
        want = np.sort(tiles[b][:valid], order="key")
        np.testing.assert_array_equal(got[b][:valid], want)
        np.testing.assert_array_equal(got[b][valid:], np.repeat(default, 128 - valid))


@pytest.mark.gpu
@gpu
def test_gpu_a_plan_reuses_one_region_for_reduce_then_scan():
    reduce = coop.block.reduce(numba.int32, 128, 4, arch=run_arch())
    scan = coop.block.scan(numba.int32, 128, 4, method="exclusive_sum", arch=run_arch())
    shared = coop.plan([("reduce", reduce, 0, 0), ("scan", scan, 1, 1)])
    assert shared.dynamic_shared_bytes == max(reduce.temp_storage_bytes,
                                              scan.temp_storage_bytes)

    @cuda.jit(lto=True)
    def kernel(x, out, totals):
        smem = shared.storage()
        items = cuda.local.array(4, numba.int32)
        base = cuda.grid(1) * 4
        for i in range(4):
            items[i] = x[base + i]
        total = reduce(smem[shared.reduce:], items)
        cuda.syncthreads()  # the scan reuses the reduce's bytes
        scan(smem[shared.scan:], items, items)
        for i in range(4):
            out[base + i] = items[i]
        if cuda.threadIdx.x == 0:
            totals[cuda.blockIdx.x] = total

    x = np.random.default_rng(9).integers(-1000, 1000, BLOCKS * 512, dtype=np.int32)
    out = cuda.to_device(np.zeros_like(x))
    totals = cuda.to_device(np.zeros(BLOCKS, np.int32))
    kernel[BLOCKS, 128](cuda.to_device(x), out, totals)
    tiles = x.reshape(BLOCKS, 512).astype(np.int64)
    np.testing.assert_array_equal(totals.copy_to_host(), tiles.sum(axis=1))
    np.testing.assert_array_equal(out.copy_to_host().reshape(BLOCKS, 512),
                                  np.cumsum(tiles, axis=1) - tiles)
