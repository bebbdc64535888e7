"""coopd.coop, cuda.coop 1.1.1's API on coopd.numba, against a real coopd.

No GPU needed: every factory coopd.coop serves builds its objects from the daemon, and kernels
calling each of their in-kernel forms (temp storage given and left out) are compiled by
numba-cuda and linked with nvJitLink into sm_90 cubins, checked for calls to every entry before
linking and none left after (the SASS check's inlining rules, where nvdisasm is at hand). The
factories' signatures and exception types are those of 1.1.1, user types (a struct type of the
test's own, complex64/128) take cuda.coop's pointer-form operators, exclusive scans without an
initial value are CUB's unseeded ones, and Python block-prefix callbacks compile to LTO-IR. The switch (install_alias, ``python -m coopd.coop run``,
COOPD_COOP_ALIAS) is tested in fresh processes, with and without a stand-in for a real cuda.coop.
"""

import inspect
import operator
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (deploy/install-deps.sh)")
pytest.importorskip("cuda.bindings.nvjitlink", reason="cuda-bindings is not installed")

import numba  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import cgutils, types  # noqa: E402
from numba.cuda.core.imputils import lower_constant  # noqa: E402
from numba.cuda.extending import (lower_builtin, make_attribute_wrapper, models,  # noqa: E402
                                  register_model, type_callable, typeof_impl)

import coopd.coop as coop  # noqa: E402
import coopd.numba as cn  # noqa: E402
from coopd.coop import _alias  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "client", "python")
ARCH = "sm_90"
sys.path.insert(0, os.path.join(ROOT, "device", "gpu_suite"))
import sass_check  # noqa: E402


def _find_nvdisasm():
    for d in (os.environ.get("COOPD_SASS_TOOLS_DIR", ""),
              os.path.join(ROOT, ".deps", "nvidia-cuda-sass-tools-13.2.51", "nvidia", "cu13",
                           "bin")):
        if d and os.access(os.path.join(d, "nvdisasm"), os.X_OK):
            os.environ["PATH"] = d + os.pathsep + os.environ["PATH"]
            return True
    return subprocess.run(["sh", "-c", "command -v nvdisasm"], capture_output=True).returncode == 0


HAS_NVDISASM = _find_nvdisasm()


@pytest.fixture(scope="module", autouse=True)
def coop_client(daemon):
    old = os.environ.get("COOPD_ARCH")
    os.environ["COOPD_ARCH"] = ARCH  # what coopd.coop's factories (which take no arch) build for
    with daemon.client(client_name="pytest coopd.coop") as c:
        cn.set_client(c)
        yield c
        cn.set_client(None)
    if old is None:
        del os.environ["COOPD_ARCH"]
    else:
        os.environ["COOPD_ARCH"] = old


def link_checked(kernel, signature, *invocables):
    """Links ``kernel`` into an sm_90 cubin; checks that its PTX calls every entry of each
    invocable's primitives and that none of them (or their operators) is left in the cubin,
    and, with nvdisasm, that the SASS check finds no CALL or function of coopd's left."""
    ptx, _ = cuda.compile_ptx(kernel, signature, cc=(9, 0))
    cubin = cn.link_to_cubin(kernel, signature, ARCH)
    assert cubin[:4] == b"\x7fELF"
    operators = set()
    for inv in invocables:
        for p in inv.primitives:
            for e in p.entries:
                assert re.search(r"call(\.uni)?\s[^;]*\b" + e.symbol + r"\b", ptx), (
                    f"{inv.name}: the kernel does not call {e.symbol}")
                assert e.symbol.encode() not in cubin, f"{e.symbol} was not inlined"
            for sym in p.operator_symbols:
                assert sym.encode() not in cubin, f"operator {sym} was not inlined"
                operators.add(sym)
    if HAS_NVDISASM:
        with tempfile.TemporaryDirectory(prefix="coopd-coop-sass-") as d:
            path = os.path.join(d, "k.cubin")
            with open(path, "wb") as f:
                f.write(cubin)
            for row in sass_check.check_cubin(path, operators):
                bad = [f for f in row[5] if "CALL" in f or "left in the cubin" in f]
                assert not bad, bad
    return cubin


I32 = "void(int32[::1], int32[::1])"


def py_max(a, b):
    return a if a > b else b


def py_add(a, b):
    return a + b


def py_less(a, b):
    return a < b


# ---- every factory and call form compiles and links ----------------------------------------

def test_block_sum_and_reduce_every_form():
    s1 = coop.block.make_sum(numba.int32, 128)
    r1 = coop.block.make_reduce(numba.int32, 128, py_max)
    s4 = coop.block.make_sum(numba.int32, (32, 4), 4, "raking")
    r4 = coop.block.make_reduce(numba.int32, (32, 4), np.maximum, 4)
    assert len(s1.primitives) == 2 and len(s4.primitives) == 1  # num_valid: a second one
    t1 = s1.temp_storage_bytes
    t4 = r4.temp_storage_bytes

    def kernel(x, out):
        tid = cuda.threadIdx.x
        temp = cuda.shared.array(t1, numba.uint8)
        items = cuda.local.array(4, numba.int32)
        for i in range(4):
            items[i] = x[tid * 4 + i]
        a = s1(x[tid]) + s1(temp, x[tid]) + s1(x[tid], 100) + s1(temp, x[tid], 100)
        b = r1(x[tid]) + r1(temp, x[tid], 7)
        temp4 = cuda.shared.array(t4, numba.uint8)
        c = s4(items) + s4(temp4, items) + r4(items) + r4(temp4, items)
        out[tid] = a + b + c

    link_checked(kernel, I32, s1, r1, s4, r4)


@pytest.mark.parametrize("op", [operator.add, np.multiply, np.bitwise_or, operator.xor, "max"])
def test_block_and_warp_reduce_take_1_1_1s_known_operators(op):
    r = coop.block.make_reduce(numba.int32, 64, op, 2)
    w = coop.warp.make_reduce(numba.int32, op, 8)

    def kernel(x, out):
        items = cuda.local.array(2, numba.int32)
        items[0] = x[cuda.threadIdx.x]
        items[1] = x[cuda.threadIdx.x + 64]
        out[cuda.threadIdx.x] = r(items) + w(items[0])

    link_checked(kernel, I32, r, w)


@pytest.mark.parametrize("algorithm", ["direct", "striped", "vectorize", "transpose",
                                       "warp_transpose", "warp_transpose_timesliced"])
def test_block_load_and_store_every_algorithm(algorithm):
    load = coop.block.make_load(numba.int32, 64, 4, algorithm)
    store = coop.block.make_store(numba.int32, 64, 4, algorithm)
    assert load.primitives[0].resolved.algorithm == algorithm

    def kernel(x, out):
        items = cuda.local.array(4, numba.int32)
        load(x[cuda.blockIdx.x * 256:], items)
        cuda.syncthreads()
        store(out[cuda.blockIdx.x * 256:], items)

    link_checked(kernel, I32, load, store)


SCANS = [  # (one item per thread, four, whether they take an initial value)
    (lambda: coop.block.make_exclusive_sum(numba.int32, 64, 1),
     lambda: coop.block.make_exclusive_sum(numba.int32, (16, 2, 2), 4, algorithm="warp_scans"),
     False),
    (lambda: coop.block.make_inclusive_sum(numba.int32, 64, 1),
     lambda: coop.block.make_inclusive_sum(numba.int32, (16, 2, 2), 4, algorithm="warp_scans"),
     False),
] + [  # known operators: without an initial value, seeded with the operator's identity
    (lambda op=op: coop.block.make_exclusive_scan(numba.int32, 128, op, 1),
     lambda op=op: coop.block.make_exclusive_scan(numba.int32, 128, op, 4,
                                                  algorithm="raking_memoize"), True)
    for op in ("max", np.minimum, "*", operator.xor, "bit_and")]


@pytest.mark.parametrize("make_one, make_four, seeded", SCANS)
def test_block_sums_and_scans_of_known_operators_every_form(make_one, make_four, seeded):
    one, four = make_one(), make_four()
    t = max(one.temp_storage_bytes, four.temp_storage_bytes)

    def kernel(x, out):
        tid = cuda.threadIdx.x
        temp = cuda.shared.array(t, numba.uint8)
        items = cuda.local.array(4, numba.int32)
        for i in range(4):
            items[i] = x[tid * 4 + i]
        four(items, items)
        four(temp, items, items)
        out[tid] = one(x[tid]) + one(temp, items[0]) + items[3]

    link_checked(kernel, I32, one, four)
    if seeded:
        def with_initial_values(x, out):
            temp = cuda.shared.array(t, numba.uint8)
            items = cuda.local.array(4, numba.int32)
            items[0] = x[cuda.threadIdx.x]
            four(items, items, 3)
            four(temp, items, items, 4)
            out[cuda.threadIdx.x] = one(items[0], 5) + one(temp, items[1], 6)

        link_checked(with_initial_values, I32, one, four)


def test_block_scans_with_a_python_operator():
    inc1 = coop.block.make_inclusive_scan(numba.int32, 128, py_add, 1)
    inc4 = coop.block.make_inclusive_scan(numba.int32, 128, py_add, 4)
    exc1 = coop.block.make_exclusive_scan(numba.int32, 128, py_max, 1)
    exc4 = coop.block.make_exclusive_scan(numba.int32, 128, py_max, 4, initial_value=0)
    generic = coop.block.make_scan(numba.float32, 128, 4, 0.0, "inclusive", py_add)
    assert len(inc4.primitives) == 2  # with an initial value: inclusive_scan_init

    def kernel(x, out):
        tid = cuda.threadIdx.x
        items = cuda.local.array(4, numba.int32)
        fl = cuda.local.array(4, numba.float32)
        for i in range(4):
            items[i] = x[tid * 4 + i]
            fl[i] = items[i]
        inc4(items, items)
        inc4(items, items, 9)
        exc4(items, items, -1)
        exc4(items, items)
        generic(fl, fl)
        generic(fl, fl, numba.float32(1.5))
        out[tid] = inc1(x[tid]) + exc1(x[tid], 0) + exc1(x[tid]) + items[1] + numba.int32(fl[0])

    link_checked(kernel, I32, inc1, inc4, exc1, exc4, generic)


def test_block_load_and_store_default_to_direct_and_take_every_algorithm():
    load = coop.block.make_load(numba.float32, 128, 4)
    store = coop.block.make_store(numba.float32, 128, 4)
    assert load.primitives[0].resolved.algorithm == "direct"
    assert store.primitives[0].resolved.algorithm == "direct"
    wload = coop.block.make_load(numba.float32, 128, 4, "warp_transpose")
    wstore = coop.block.make_store(numba.float32, 128, 4, algorithm="transpose")
    t = max(wload.temp_storage_bytes, wstore.temp_storage_bytes)

    def kernel(x, out):
        base = cuda.blockIdx.x * 512
        temp = cuda.shared.array(t, numba.uint8)
        items = cuda.local.array(4, numba.float32)
        load(x[base:], items)
        wload(temp, x[base:], items)
        store(out[base:], items)
        cuda.syncthreads()
        wstore(temp, out[base:], items)
        wstore(out[base:], items)

    link_checked(kernel, "void(float32[::1], float32[::1])", load, store, wload, wstore)


@pytest.mark.parametrize("slicing", [False, True])
def test_block_exchange_in_place_and_out_of_place(slicing):
    ex = coop.block.make_exchange(coop.block.BlockExchangeType.StripedToBlocked, numba.int16,
                                  128, 4, slicing)
    assert ex.primitives[0].resolved.exchange.warp_time_slicing == slicing
    t = ex.temp_storage_bytes

    def kernel(x, out):
        tid = cuda.threadIdx.x
        temp = cuda.shared.array(t, numba.uint8)
        a = cuda.local.array(4, numba.int16)
        b = cuda.local.array(4, numba.int16)
        for i in range(4):
            a[i] = x[tid + 128 * i]
        ex(a)
        ex(temp, a, b)
        ex(a, b)
        ex(temp, b)
        for i in range(4):
            out[tid * 4 + i] = b[i]

    link_checked(kernel, "void(int16[::1], int16[::1])", ex)


def test_block_sorts():
    merge = coop.block.make_merge_sort_keys(numba.float32, 128, 4, py_less)
    up = coop.block.make_radix_sort_keys(numba.uint16, 128, 4)
    down = coop.block.make_radix_sort_keys_descending(np.uint16, 128, 4)
    assert down.primitives[0].method == "sort_descending"

    def kernel(x, out):
        tid = cuda.threadIdx.x
        keys = cuda.local.array(4, numba.uint16)
        fk = cuda.local.array(4, numba.float32)
        for i in range(4):
            keys[i] = x[tid * 4 + i]
            fk[i] = keys[i]
        merge(fk)
        up(keys)  # all the key's bits
        up(keys, 0, 8)
        down(keys)
        down(keys, 4, 12)
        for i in range(4):
            out[tid * 4 + i] = keys[i] + numba.uint16(fk[i])

    link_checked(kernel, "void(uint16[::1], uint16[::1])", merge, up, down)


def test_warp_factories_every_form():
    ws = coop.warp.make_sum(numba.int32)
    ws16 = coop.warp.make_sum(numba.int32, 16)
    wr = coop.warp.make_reduce(numba.int32, py_max)
    wx = coop.warp.make_exclusive_sum(numba.int32)
    wm = coop.warp.make_merge_sort_keys(numba.int32, 4, py_less)
    assert ws16.primitives[0].warp_threads == 16
    t = max(ws.temp_storage_bytes, wm.temp_storage_bytes)

    def kernel(x, out):
        tid = cuda.threadIdx.x
        temp = cuda.shared.array(t, numba.uint8)
        keys = cuda.local.array(4, numba.int32)
        for i in range(4):
            keys[i] = x[tid * 4 + i]
        wm(keys)
        wm(temp, keys)
        a = ws(x[tid]) + ws(temp, x[tid]) + ws16(x[tid]) + wr(x[tid]) + wx(x[tid])
        out[tid] = a + keys[0]

    link_checked(kernel, I32, ws, ws16, wr, wx, wm)


# ---- the objects ---------------------------------------------------------------------------

def test_files_and_temp_storage_come_from_coopds_artifacts():
    s = coop.block.make_exclusive_scan(numba.int32, 128, py_max, 4)
    p = s.primitives[0]
    assert s.temp_storage_bytes == p.artifact.temp_storage_bytes > 0
    assert s.temp_storage_alignment == p.temp_storage_align > 0
    assert s.files and all(isinstance(f, cuda.LTOIR) for f in s.files)
    # Seeded and unseeded (CUB's ExclusiveScan without an initial value) primitives, sharing
    # the Python operator's LTO-IR: each file once.
    u = s.primitives[1]
    assert (p.method, u.method) == ("exclusive_scan", "exclusive_scan_unseeded")
    assert len(p.files) == len(u.files) == 2 and p.files[1] is u.files[1]
    assert s.files == [p.files[0], p.files[1], u.files[0]]
    # Built twice, the same artifacts: cuda.jit(link=...) links each object once.
    again = coop.block.make_exclusive_scan(numba.int32, 128, py_max, 4)
    assert again.primitives[0] is p and again.files == s.files
    with pytest.raises(RuntimeError, match="inside a numba.cuda.jit kernel"):
        s(1)


def test_kernels_may_read_the_temp_storage_size_as_a_constant():
    s = coop.block.make_inclusive_sum(numba.int32, 128, 1)

    def kernel(x, out):
        temp = cuda.shared.array(s.temp_storage_bytes, numba.uint8)
        out[cuda.threadIdx.x] = s(temp, x[cuda.threadIdx.x]) + s.temp_storage_alignment

    link_checked(kernel, I32, s)


def test_a_kernel_passing_wrong_arguments_is_a_typing_error():
    s = coop.block.make_inclusive_sum(numba.int32, 128, 4)

    def kernel(x, out):
        items = cuda.local.array(4, numba.int32)
        s(items)  # 2 arguments (or temp storage and 2)

    with pytest.raises(Exception, match="takes 2 arguments .* got 1") as e:
        cn.link_to_cubin(kernel, I32, ARCH)
    assert "TypingError" in type(e.value).__name__


# ---- 1.1.1's signatures and errors ---------------------------------------------------------

E = inspect.Parameter.empty
SIGNATURES = {  # cuda.coop 1.1.1's: (name, default) in positional order
    "block.make_reduce": [("dtype", E), ("threads_per_block", E), ("binary_op", E),
                          ("items_per_thread", 1), ("algorithm", "warp_reductions"),
                          ("methods", None)],
    "block.make_sum": [("dtype", E), ("threads_per_block", E), ("items_per_thread", 1),
                       ("algorithm", "warp_reductions"), ("methods", None)],
    "block.make_scan": [("dtype", E), ("threads_per_block", E), ("items_per_thread", E),
                        ("initial_value", None), ("mode", "exclusive"), ("scan_op", "+"),
                        ("block_prefix_callback_op", None), ("algorithm", "raking"),
                        ("methods", None)],
    "block.make_exclusive_sum": [("dtype", E), ("threads_per_block", E),
                                 ("items_per_thread", E), ("prefix_op", None),
                                 ("algorithm", "raking"), ("methods", None)],
    "block.make_inclusive_sum": [("dtype", E), ("threads_per_block", E),
                                 ("items_per_thread", E), ("prefix_op", None),
                                 ("algorithm", "raking"), ("methods", None)],
    "block.make_exclusive_scan": [("dtype", E), ("threads_per_block", E), ("scan_op", E),
                                  ("items_per_thread", E), ("initial_value", None),
                                  ("prefix_op", None), ("algorithm", "raking"),
                                  ("methods", None)],
    "block.make_inclusive_scan": [("dtype", E), ("threads_per_block", E), ("scan_op", E),
                                  ("items_per_thread", E), ("initial_value", None),
                                  ("prefix_op", None), ("algorithm", "raking"),
                                  ("methods", None)],
    "block.make_load": [("dtype", E), ("threads_per_block", E), ("items_per_thread", 1),
                        ("algorithm", "direct")],
    "block.make_store": [("dtype", E), ("threads_per_block", E), ("items_per_thread", 1),
                         ("algorithm", "direct")],
    "block.make_exchange": [("block_exchange_type", E), ("dtype", E),
                            ("threads_per_block", E), ("items_per_thread", E),
                            ("warp_time_slicing", False), ("methods", None)],
    "block.make_merge_sort_keys": [("dtype", E), ("threads_per_block", E),
                                   ("items_per_thread", E), ("compare_op", E),
                                   ("methods", None)],
    "block.make_radix_sort_keys": [("dtype", E), ("threads_per_block", E),
                                   ("items_per_thread", E)],
    "block.make_radix_sort_keys_descending": [("dtype", E), ("threads_per_block", E),
                                              ("items_per_thread", E)],
    "warp.make_reduce": [("dtype", E), ("binary_op", E), ("threads_in_warp", 32),
                         ("methods", None)],
    "warp.make_sum": [("dtype", E), ("threads_in_warp", 32)],
    "warp.make_exclusive_sum": [("dtype", E), ("threads_in_warp", 32)],
    "warp.make_merge_sort_keys": [("dtype", E), ("items_per_thread", E), ("compare_op", E),
                                  ("threads_in_warp", 32), ("methods", None)],
}


def test_the_factories_are_1_1_1s_with_its_signatures():
    assert sorted(coop.block.__all__) == sorted(
        ["BlockExchangeType"] + [k.split(".")[1] for k in SIGNATURES if k.startswith("block.")])
    assert sorted(coop.warp.__all__) == sorted(
        k.split(".")[1] for k in SIGNATURES if k.startswith("warp."))
    for name, want in SIGNATURES.items():
        group, fn = name.split(".")
        params = inspect.signature(getattr(getattr(coop, group), fn)).parameters.values()
        assert [(p.name, p.default) for p in params] == want, name
        assert all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params), name
    assert [m.name for m in coop.block.BlockExchangeType] == ["StripedToBlocked"]
    assert coop.StatefulFunction(py_add, numba.int64).dtype == numba.int64


class Complexish:
    pass


@pytest.mark.parametrize("make, error, match", [
    (lambda: coop.block.make_sum(numba.int32, 128, 0), ValueError, "items_per_thread"),
    (lambda: coop.block.make_reduce(numba.int32, 128, py_add, algorithm="fast"), ValueError,
     "algorithm"),
    (lambda: coop.block.make_inclusive_sum(numba.int32, 128, -1), ValueError,
     "items_per_thread"),
    (lambda: coop.block.make_exclusive_sum(numba.int32, 128, 1, algorithm="x"), ValueError,
     "algorithm"),
    (lambda: coop.block.make_scan(numba.int32, 128, 1, mode="sideways"), ValueError, "mode"),
    (lambda: coop.block.make_scan(numba.int32, 128, 1, scan_op="frobnicate"), ValueError,
     "scan operator"),
    (lambda: coop.block.make_scan(numba.int32, 128, 1, scan_op=3), ValueError,
     "scan operator of type int"),
    (lambda: coop.block.make_scan(numba.int32, 128, 4, initial_value=1), ValueError, "sums"),
    (lambda: coop.block.make_inclusive_scan(numba.int32, 128, "max", 1, initial_value=1),
     ValueError, "inclusive scans with items_per_thread == 1"),
    (lambda: coop.block.make_exclusive_scan(numba.int32, 128, "max", 1, initial_value=1,
                                            prefix_op=coop.StatefulFunction(py_add,
                                                                            numba.int32)),
     ValueError, "prefix callback"),
    (lambda: coop.block.make_sum("float128", 128), ValueError, "float128"),
    (lambda: coop.block.make_sum("numpy.int32", 128), ValueError, "np."),
    (lambda: coop.block.make_sum(Complexish, 128), ValueError, "dtype"),
    (lambda: coop.block.make_sum(numba.int32, (2, 2, 2, 2)), ValueError, "2 or 3"),
    (lambda: coop.block.make_sum(numba.int32, -4), ValueError, "negative"),
    (lambda: coop.block.make_sum(numba.int32, 128.0), ValueError, "int"),
    (lambda: coop.block.make_exchange(7, numba.int32, 128, 4), ValueError,
     "BlockExchangeType"),
    (lambda: coop.block.make_exchange(coop.block.BlockExchangeType.StripedToBlocked,
                                      numba.int32, 128, 0), ValueError, "items_per_thread"),
    (lambda: coop.block.make_load(numba.int32, 128, 4, "sideways"), KeyError, "sideways"),
    (lambda: coop.block.make_store(numba.int32, 128, 4, "sideways"), KeyError, "sideways"),
])
def test_errors_have_1_1_1s_exception_types(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_dtypes_normalize_as_1_1_1_does():
    for dtype in (numba.int32, np.int32, np.dtype(np.int32), "int32", "np.int32"):
        assert coop.block.make_sum(dtype, 32).primitives[0].dtype.name == "int32"


# ---- user types, unseeded scans, prefix callbacks ------------------------------------------
# A struct type defined the way Numba extensions define one (a StructModel with a constructor
# and constant lowering), as cuda.coop's users write them for make_reduce and make_scan.

class Duo:
    def __init__(self, x, y):
        self.x, self.y = x, y


class DuoType(types.Type):
    def __init__(self):
        super().__init__(name="Duo")


duo = DuoType()


@typeof_impl.register(Duo)
def _typeof_duo(val, c):
    return duo


@type_callable(Duo)
def _type_duo(context):
    def typer(x, y):
        if isinstance(x, types.Integer) and isinstance(y, types.Integer):
            return duo
    return typer


@register_model(DuoType)
class _DuoModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("x", types.int32), ("y", types.int32)])


make_attribute_wrapper(DuoType, "x", "x")
make_attribute_wrapper(DuoType, "y", "y")


@lower_builtin(Duo, types.Integer, types.Integer)
def _lower_duo(context, builder, sig, args):
    st = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    st.x = context.cast(builder, args[0], sig.args[0], types.int32)
    st.y = context.cast(builder, args[1], sig.args[1], types.int32)
    return st._getvalue()


@lower_constant(DuoType)
def _lower_duo_constant(context, builder, ty, value):
    st = cgutils.create_struct_proxy(ty)(context, builder)
    st.x = context.get_constant(types.int32, value.x)
    st.y = context.get_constant(types.int32, value.y)
    return st._getvalue()


def duo_add(result, a, b):  # cuda.coop's pointer form for operators on user types
    result[0] = Duo(a[0].x + b[0].x, a[0].y + b[0].y)


def duo_construct(this):
    this[0] = Duo(0, 0)


def duo_assign(this, that):
    this[0] = Duo(that[0].x, that[0].y)


DUO_METHODS = {"construct": duo_construct, "assign": duo_assign}
DUO_ONE = Duo(1, 1)


def test_block_and_warp_reduce_of_a_user_type_with_a_pointer_operator():
    r = coop.block.make_reduce(duo, (4, 8), duo_add, methods=DUO_METHODS)
    r4 = coop.block.make_reduce(duo, 32, duo_add, 4, "raking")
    w = coop.warp.make_reduce(duo, duo_add, 16, methods=DUO_METHODS)
    assert r.primitives[0].dtype.is_user and r.primitives[0].family == "block_reduce"
    assert all(op.by_pointer for p in r.primitives + w.primitives for op in [p.spec.user_op])

    def kernel(x, out):
        tid = cuda.threadIdx.y * 4 + cuda.threadIdx.x
        items = cuda.local.array(4, duo)
        for i in range(4):
            items[i] = Duo(x[tid * 4 + i], i)
        a = r(Duo(x[tid], tid))
        b = r(Duo(x[tid], 1), 20)  # num_valid
        c = r4(items)
        d = w(Duo(x[tid], 2))
        if tid == 0:
            out[0] = a.x + b.y + c.x + d.y

    link_checked(kernel, I32, r, r4, w)


def test_block_scans_of_a_user_type_unseeded_and_with_an_initial_value():
    inc = coop.block.make_inclusive_scan(duo, 32, duo_add, 1, methods=DUO_METHODS)
    exc = coop.block.make_exclusive_scan(duo, (4, 8), duo_add, 1, methods=DUO_METHODS)
    inc4 = coop.block.make_inclusive_scan(duo, 32, duo_add, 4, initial_value=DUO_ONE)
    # No initial value: CUB's ExclusiveScan(input, output, op), thread 0's output undefined.
    assert {p.method for p in exc.primitives} == {"exclusive_scan", "exclusive_scan_unseeded"}

    def kernel(x, out):
        tid = cuda.threadIdx.x + cuda.threadIdx.y * 4
        a = cuda.local.array(4, duo)
        b = cuda.local.array(4, duo)
        for i in range(4):
            a[i] = Duo(x[tid * 4 + i], -i)
        inc4(a, b, DUO_ONE)
        inc4(b, b)
        p = inc(Duo(x[tid], 1))
        q = exc(Duo(x[tid], 2))
        s = exc(Duo(x[tid], 3), DUO_ONE)
        out[tid] = p.x + q.y + s.x + b[3].y

    link_checked(kernel, I32, inc, exc, inc4)


def test_an_exclusive_scan_without_an_initial_value_is_cubs_unseeded_scan():
    # A Python operator has no identity to seed with; a known one on integers has.
    one = coop.block.make_exclusive_scan(numba.int32, 128, py_max, 1)
    four = coop.block.make_exclusive_scan(numba.int32, 128, py_max, 4)
    known = coop.block.make_exclusive_scan(numba.int32, 128, "max", 1)
    assert sorted(p.method for p in four.primitives) == ["exclusive_scan",
                                                         "exclusive_scan_unseeded"]
    assert [p.method for p in known.primitives] == ["exclusive_scan"]

    def kernel(x, out):
        tid = cuda.threadIdx.x
        items = cuda.local.array(4, numba.int32)
        for i in range(4):
            items[i] = x[tid * 4 + i]
        four(items, items)
        four(items, items, 7)
        out[tid] = one(x[tid]) + one(x[tid], 5) + known(x[tid]) + items[2]

    link_checked(kernel, I32, one, four, known)


class RunningTotal:
    """A block-prefix callback as cuda.coop's users write one: ``__call__`` gets a pointer to
    the state (here a Duo whose x is the total so far) and the tile's aggregate."""

    def __call__(state, aggregate):
        before = state[0].x
        state[0] = Duo(before + aggregate, state[0].y + 1)
        return before


@pytest.mark.parametrize("make, items", [
    (lambda cb: coop.block.make_exclusive_sum(numba.int32, 64, 1, cb), 1),
    (lambda cb: coop.block.make_inclusive_sum(numba.int32, (8, 8), 4, cb), 4),
    (lambda cb: coop.block.make_exclusive_scan(numba.int32, 64, py_add, 4, prefix_op=cb), 4),
    (lambda cb: coop.block.make_scan(numba.int32, 64, 1, mode="inclusive", scan_op=py_max,
                                     block_prefix_callback_op=cb), 1),
])
def test_python_prefix_callbacks_take_the_running_total_s_place(make, items):
    s = make(coop.StatefulFunction(RunningTotal, duo))
    p = s.primitives[0]
    assert p.method.endswith("_prefix") and p.spec.prefix_callback.ltoir

    if items == 1:
        def kernel(x, out):
            tid = cuda.threadIdx.x + cuda.threadIdx.y * 8
            state = cuda.local.array(1, duo)
            state[0] = Duo(0, 0)
            for tile in range(3):
                out[tile * 64 + tid] = s(x[tile * 64 + tid], state)
    else:
        def kernel(x, out):
            tid = cuda.threadIdx.x + cuda.threadIdx.y * 8
            state = cuda.local.array(1, duo)
            state[0] = Duo(0, 0)
            items = cuda.local.array(4, numba.int32)
            for tile in range(3):
                for i in range(4):
                    items[i] = x[tile * 256 + tid * 4 + i]
                s(items, items, state)
                for i in range(4):
                    out[tile * 256 + tid * 4 + i] = items[i]

    link_checked(kernel, I32, s)


def test_sorts_of_complex_numbers_and_user_types_with_pointer_comparators():
    def by_real_descending(a, b):
        return a[0].real > b[0].real

    def by_x(a, b):
        return a[0].x < b[0].x

    block = coop.block.make_merge_sort_keys(numba.complex128, 128, 3, by_real_descending)
    warp = coop.warp.make_merge_sort_keys(duo, 2, by_x, methods=DUO_METHODS)

    def kernel(x, out):
        tid = cuda.threadIdx.x
        c = cuda.local.array(3, numba.complex128)
        d = cuda.local.array(2, duo)
        for i in range(3):
            c[i] = complex(x[tid * 3 + i], i)
        for i in range(2):
            d[i] = Duo(x[tid * 2 + i], i)
        block(c)
        warp(d)
        out[tid] = numba.int32(c[0].real) + d[1].x

    link_checked(kernel, I32, block, warp)


@pytest.mark.parametrize("make, error, match", [
    (lambda: coop.block.make_reduce(duo, 32, duo_add, methods={"destroy": duo_construct}),
     ValueError, "Unexpected method 'destroy'"),
    (lambda: coop.block.make_exchange(coop.block.BlockExchangeType.StripedToBlocked, duo, 32,
                                      2, methods={"assign": 3}), ValueError,
     r"methods\['assign'\] must be a callable"),
    (lambda: coop.block.make_sum(duo, 32), ValueError, "a sum needs a numeric dtype"),
    (lambda: coop.warp.make_sum(numba.complex64), ValueError, "needs a numeric dtype"),
    (lambda: coop.block.make_inclusive_scan(duo, 32, "max", 1), ValueError,
     "needs a numeric dtype"),
    (lambda: coop.block.make_exclusive_scan(numba.int32, 64, py_add, 4, initial_value=0,
                                            prefix_op=coop.StatefulFunction(RunningTotal, duo)),
     ValueError, "does not combine with a block prefix callback"),
    (lambda: coop.block.make_exclusive_sum(numba.int32, 64, 1, py_add), ValueError,
     "must be a StatefulFunction"),
])
def test_user_type_and_callback_mistakes_are_value_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_1_1_1s_private_helpers_that_programs_import():
    from coopd.coop._common import (CudaSharedMemConfig, dim3, normalize_dim_param,
                                    normalize_dtype_param)
    from coopd.coop._scan_op import CUDA_MAXIMUM, ScanOp, ScanOpCategory
    from coopd.coop.block._block_scan import ScanOp as BlockScanOp

    assert BlockScanOp is ScanOp
    assert normalize_dim_param((2, 3)) == dim3(2, 3, 1)
    assert normalize_dtype_param("np.complex64") == numba.complex64
    for bad, message in ((-1, "must be non-negative"), ((1,), "2 or 3 elements"),
                         ("x", "Unsupported dimension type")):
        with pytest.raises(ValueError, match=message):
            normalize_dim_param(bad)
    for bad, message in (("numpy.int32", "must start with 'np.'"),
                         ("np.nothing", "Invalid numpy dtype"), ("nothing", "Invalid numba type"),
                         (7, "Unrecognized dtype format")):
        with pytest.raises(ValueError, match=message):
            normalize_dtype_param(bad)
    assert str(CudaSharedMemConfig.BankSizeEightByte) == "cudaSharedMemBankSizeEightByte"
    assert [m.value for m in CudaSharedMemConfig] == [0, 1, 2]
    op = ScanOp(np.maximum)
    assert op.is_known and op.op_category is ScanOpCategory.Known and op.op_cpp == CUDA_MAXIMUM
    assert ScanOp(py_add).op_category is ScanOpCategory.Callable and ScanOp(py_add).op_cpp is None
    assert repr(ScanOp("+")) == "ScanOp(+)"
    for bad in ("nope", 3, None):
        with pytest.raises(ValueError):
            ScanOp(bad)


# ---- the switch ----------------------------------------------------------------------------

def run_python(code, env_extra=None, args=None, daemon=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != _alias.ENV}
    env["PYTHONPATH"] = PACKAGE
    env["COOPD_ARCH"] = ARCH
    if daemon is not None:
        env["COOPD_SOCKET"] = daemon.socket
    env.update(env_extra or {})
    cmd = args or [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture
def real_cuda_coop(tmpdir_path):
    """A directory holding a stand-in for cuda-cccl's cuda.coop (a namespace ``cuda`` with
    ``coop/_experimental``), for PYTHONPATH."""
    pkg = os.path.join(tmpdir_path, "cuda", "coop", "_experimental")
    os.makedirs(pkg)
    with open(os.path.join(tmpdir_path, "cuda", "coop", "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("IMPLEMENTATION = 'stand-in for NVIDIA cuda.coop'\n")
    return tmpdir_path


needs_no_cuda_cccl = pytest.mark.skipif(
    _alias.real_cuda_coop() is not None,
    reason=f"a real cuda.coop is importable here ({_alias.real_cuda_coop()})")


@needs_no_cuda_cccl
def test_without_the_switch_cuda_coop_is_not_coopd():
    r = run_python("""
        import coopd.coop, coopd.numba
        print(coopd.coop.active())
        import cuda.coop._experimental
    """)
    assert r.returncode != 0 and "No module named 'cuda.coop'" in r.stderr, r.stderr
    assert r.stdout.split() == ["None"]


@needs_no_cuda_cccl
def test_install_alias_serves_cuda_coop_and_its_submodules(daemon):
    r = run_python("""
        import coopd.coop
        coopd.coop.install_alias()
        import cuda.coop._experimental as coop
        from cuda.coop._experimental import block, warp
        import cuda.coop._experimental.block as block2
        import cuda.coop, cuda.bindings.nvjitlink
        import numba
        print(coop is coopd.coop, block is coopd.coop.block is block2, warp is coopd.coop.warp,
              cuda.coop._experimental is coop, coopd.coop.active(), coop.__spec__.name)
        r = coop.block.make_sum(numba.int32, 128)
        print(type(r).__name__, r.temp_storage_bytes > 0)
        coopd.coop.uninstall_alias()
        print(coopd.coop.active())
    """, daemon=daemon)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True", "True", "coopd.coop", "coopd.coop",
                                "Invocable", "True", "None"]
    assert "import cuda.coop._experimental gives coopd.coop" in r.stderr


PROGRAM = """
    import sys
    import numba
    from numba import cuda
    import cuda.coop._experimental as coop
    import coopd.numba

    block_sum = coop.block.make_sum(numba.int32, 128)

    @cuda.jit(link=block_sum.files)
    def kernel(x, out):
        s = block_sum(x[cuda.threadIdx.x])
        if cuda.threadIdx.x == 0:
            out[0] = s

    cubin = coopd.numba.link_to_cubin(kernel, "void(int32[::1], int32[::1])", "sm_90")
    print(coop.__name__, coop.active(), cubin[:4] == b"\\x7fELF")
"""


@needs_no_cuda_cccl
def test_an_unmodified_program_runs_on_coopd_coop_through_python_m_coopd_coop_run(daemon,
                                                                                 tmpdir_path):
    script = os.path.join(tmpdir_path, "program.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(PROGRAM))
    plain = run_python("", args=[sys.executable, script], daemon=daemon)
    assert plain.returncode != 0 and "No module named 'cuda.coop'" in plain.stderr
    for args in ([sys.executable, "-m", "coopd.coop", "run", "--", sys.executable, script],
                 [sys.executable, "-m", "coopd.coop", "run", script]):
        r = run_python("", args=args, daemon=daemon)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["coopd.coop", "coopd.coop", "True"]
        assert "gives coopd.coop" in r.stderr


@needs_no_cuda_cccl
def test_the_environment_variable_with_the_boot_path(daemon):
    boot = run_python("", args=[sys.executable, "-m", "coopd.coop", "boot-path"])
    assert boot.returncode == 0 and os.path.isfile(
        os.path.join(boot.stdout.strip(), "sitecustomize.py"))
    code = "import cuda.coop._experimental as c; print(c.__name__)"
    path = os.pathsep.join([boot.stdout.strip(), PACKAGE])
    on = run_python(code, {"PYTHONPATH": path, _alias.ENV: "1"})
    assert on.returncode == 0 and on.stdout.split() == ["coopd.coop"], on.stderr
    off = run_python(code, {"PYTHONPATH": path})  # the boot path alone switches nothing
    assert off.returncode != 0 and "No module named 'cuda.coop'" in off.stderr
    bad = run_python(code, {"PYTHONPATH": path, _alias.ENV: "maybe"})
    assert bad.returncode == 2 and "COOPD_COOP_ALIAS must be 1 or force" in bad.stderr


def test_the_switch_refuses_to_shadow_a_real_cuda_coop_unless_forced(real_cuda_coop):
    path = os.pathsep.join([real_cuda_coop, PACKAGE])
    code = """
        import coopd.coop
        print(coopd.coop.active())
        try:
            coopd.coop.install_alias()
        except coopd.coop.AliasRefused as e:
            print("refused", type(e).__mro__[1].__name__)
            print(e, file=__import__("sys").stderr)
        import cuda.coop._experimental as c
        print(c.IMPLEMENTATION.split()[-1])
        coopd.coop.install_alias(force=True)
        import cuda.coop._experimental as c
        print(c.__name__, coopd.coop.active())
    """
    r = run_python(code, {"PYTHONPATH": path})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["cuda-cccl", "refused", "ImportError", "cuda.coop",
                                "coopd.coop", "coopd.coop"]
    assert f"a real cuda.coop (cuda-cccl) is importable from {real_cuda_coop}" in r.stderr
    assert "force=True" in r.stderr and "it shadows the real one" in r.stderr

    program = "import cuda.coop._experimental as c; print(c.__name__)"
    refused = run_python("", {"PYTHONPATH": path}, args=[
        sys.executable, "-m", "coopd.coop", "run", "--", sys.executable, "-c", program])
    assert refused.returncode == 2 and refused.stdout == ""
    assert "refusing to shadow it" in refused.stderr
    forced = run_python("", {"PYTHONPATH": path}, args=[
        sys.executable, "-m", "coopd.coop", "run", "--force", "--", sys.executable, "-c",
        program])
    assert forced.returncode == 0 and forced.stdout.split() == ["coopd.coop"], forced.stderr
    active = run_python("", {"PYTHONPATH": path}, args=[sys.executable, "-m", "coopd.coop",
                                                         "active"])
    assert active.stdout.split() == ["cuda-cccl"]


def test_the_runner_chains_to_the_environments_own_sitecustomize(tmpdir_path):
    own = os.path.join(tmpdir_path, "own")
    os.makedirs(own)
    with open(os.path.join(own, "sitecustomize.py"), "w") as f:
        f.write("import builtins\nbuiltins.OWN_SITECUSTOMIZE = True\n")
    code = "import builtins; print(getattr(builtins, 'OWN_SITECUSTOMIZE', False))"
    r = run_python("", {"PYTHONPATH": os.pathsep.join([own, PACKAGE])}, args=[
        sys.executable, "-m", "coopd.coop", "run", "--force", "--", sys.executable, "-c", code])
    assert r.returncode == 0 and r.stdout.split() == ["True"], r.stderr


def test_the_cccl_of_an_installed_cuda_cccl_is_asked_for_where_coopd_serves_it(tmpdir_path,
                                                                                monkeypatch):
    from types import SimpleNamespace

    from coopd.coop import _cccl
    assert _cccl.version_from_header("#define CCCL_VERSION 3005000\n") == "3.5.0"
    assert _cccl.version_from_header("#  define CCCL_VERSION 3010002") == "3.10.2"
    assert _cccl.version_from_header("#define CCCL_MAJOR_VERSION (CCCL_VERSION / 1000000)") is None

    # A cuda-cccl on sys.path (its metadata, were one installed here, left out).
    def no_distribution(name):
        raise _cccl.importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(_cccl.importlib.metadata, "distribution", no_distribution)
    package = os.path.join(tmpdir_path, "cuda", "cccl")
    headers = os.path.join(package, "headers", "include", "cuda", "std", "__cccl")
    os.makedirs(headers)
    open(os.path.join(package, "__init__.py"), "w").close()
    with open(os.path.join(headers, "version.h"), "w") as f:
        f.write("#pragma once\n#define CCCL_VERSION 3005000\n"
                "#define CCCL_MAJOR_VERSION (CCCL_VERSION / 1000000)\n")
    monkeypatch.setattr(sys, "path", [tmpdir_path] + sys.path)
    assert _cccl.installed_version() == "3.5.0"

    cccls = [SimpleNamespace(name="toolkit", version="3.3.0", is_default=True),
             SimpleNamespace(name="cccl35", version="3.5.0", is_default=False),
             SimpleNamespace(name="other35", version="3.5.0", is_default=False)]
    assert _cccl.choose("3.5.0", cccls) == "cccl35"
    assert _cccl.choose("3.3.0", cccls) == ""  # the default's own
    assert _cccl.choose("3.4.0", cccls) == "" and _cccl.choose(None, cccls) == ""

    class Daemon:
        def __init__(self, socket):
            self.socket, self.catalogs = socket, 0

        def catalog(self):
            self.catalogs += 1
            return SimpleNamespace(cccls=cccls)

    serving = Daemon(os.path.join(tmpdir_path, "a.sock"))
    assert [_cccl.cccl_for(serving), _cccl.cccl_for(serving)] == ["cccl35", "cccl35"]
    assert serving.catalogs == 1  # once per socket
    monkeypatch.setattr(_cccl, "installed_version", lambda: None)
    without = Daemon(os.path.join(tmpdir_path, "b.sock"))
    assert _cccl.cccl_for(without) == "" and without.catalogs == 0

    # Every factory of coop.block and coop.warp goes through their _make, which asks for it.
    made = []
    monkeypatch.setattr(cn, "make", lambda family, dtype, **kw: made.append(kw))
    monkeypatch.setattr(coop.block, "cccl_for", lambda client: "cccl35")
    monkeypatch.setattr(coop.warp, "cccl_for", lambda client: "cccl35")
    coop.block._make("block_reduce", numba.int32, (128, 1, 1), 1)
    coop.warp._make("warp_reduce", numba.int32, 32)
    coop.warp._make("warp_reduce", numba.int32, 32, cccl="toolkit")
    assert [kw["cccl"] for kw in made] == ["cccl35", "cccl35", "toolkit"]


def test_coop_compiles_against_the_headers_of_the_installed_cuda_cccl(tmpdir_path):
    """End to end: a site-packages holding a cuda-cccl (its wheel's layout, the CCCL 3.5 headers
    deploy/install-deps.sh unpacks), a coopd serving that directory with --cccl, and a program
    on it that uses coopd.coop: its artifacts are compiled against that CCCL, not the default."""
    include = os.environ.get("COOPD_CCCL35_INCLUDE", "")
    if not os.path.exists(os.path.join(include, "cub", "block", "block_topk.cuh")):
        pytest.skip(f"no CCCL 3.5 headers at COOPD_CCCL35_INCLUDE={include!r} (ctest sets it to "
                    "those deploy/install-deps.sh unpacks)")
    site = os.path.join(tmpdir_path, "site")
    os.makedirs(os.path.join(site, "cuda", "cccl", "headers"))
    os.symlink(include, os.path.join(site, "cuda", "cccl", "headers", "include"))
    from conftest import Daemon
    d = Daemon(tmpdir_path, "--cccl", f"wheel={site}", "--probe-cccl", "off").start()
    try:
        code = """
            import sys
            sys.path.append(%r)
            import numba
            import coopd.coop as coop
            from coopd.coop import _cccl
            r = coop.block.make_sum(numba.int32, 128)
            a = r.primitives[0].artifact
            print(_cccl.installed_version(), a.cccl, a.cccl_version)
        """ % site
        r = run_python(code, daemon=d)
        assert r.returncode == 0, r.stderr
        version, name, compiled = r.stdout.split()
        assert version.startswith("3.5.") and name == "wheel" and compiled == version
        # Without that cuda-cccl on the path, the daemon's default.
        r = run_python(code.replace("sys.path.append", "print"), daemon=d)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[-3:] == ["None", "toolkit", "3.0.1"]
    finally:
        assert d.stop() == 0, d.log()
