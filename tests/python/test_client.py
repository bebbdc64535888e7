"""The Python client against a real coopd: artifacts, errors, retries, link, catalog, explain."""

import os
import threading
import time

import grpc
import pytest

import coopd
from conftest import Daemon

REDUCE = coopd.Spec(family="block_reduce", dtype="float32", threads=256, arch="sm_90")


def test_specialize_returns_a_link_ready_artifact_then_serves_it_from_memory(daemon, tmpdir_path):
    with daemon.client() as c:
        a = c.specialize(REDUCE)
        assert len(a.key) == 64
        assert a.origin in ("compiled", "memory", "disk")
        assert a.arch == "sm_90"
        assert len(a.ltoir) > 10_000
        assert (a.temp_storage_bytes, a.temp_storage_align) == (44, 4)  # BlockReduce<float, 256>
        assert len(a.entries) == 1
        assert a.entries[0].declaration.startswith('extern "C" __device__ float coop_block_reduce')
        assert a.parts[0].spec.method == "sum", "the resolved spec names the default method"
        again = c.specialize(family="block_reduce", dtype="float32", threads=256, arch="sm_90")
        assert again.origin == "memory"
        assert again.key == a.key and again.ltoir == a.ltoir
        files = a.write(tmpdir_path)
        assert files == [os.path.join(tmpdir_path, a.entries[0].symbol + ".ltoir")]
        with open(files[0], "rb") as f:
            assert f.read() == a.ltoir
        with open(os.path.join(tmpdir_path, a.entries[0].symbol + ".h")) as f:
            header = f.read()
        assert f"#define {a.entries[0].symbol}_TEMP_STORAGE_BYTES 44" in header
        assert a.entries[0].declaration in header


def test_family_options_and_bundles(daemon):
    with daemon.client() as c:
        pairs = coopd.Spec(family="block_radix_sort", dtype="uint32", threads=128,
                           items_per_thread=4, arch="sm_90",
                           options={"radix_sort": {"value_dtype": "float32"}})
        scan = coopd.Spec(family="block_scan", method="exclusive_sum", dtype="int32",
                          threads=128, arch="sm_90")
        b = c.bundle([pairs, scan])
        assert len(b.parts) == 2
        assert b.parts[0].spec.radix_sort.value_dtype == "float32"
        assert b.parts[1].family == "block_scan"
        assert b.stem.startswith("coop_bundle_")
        assert all(p.temp_storage_bytes > 0 for p in b.parts)


def test_algorithm_auto_shares_the_explicit_entry_and_says_what_it_chose(daemon):
    # block_reduce sum over int32, 256 x 16: a cell of the tuning grid (docs/tuning.md).
    spec = coopd.Spec(family="block_reduce", dtype="int32", threads=256, items_per_thread=16,
                      algorithm="auto", arch="sm_90")
    with daemon.client() as c:
        a = c.specialize(spec)
        choice = a.algorithm_choice
        assert choice is not None and choice.requested == "auto"
        assert choice.chosen in ("raking", "raking_commutative_only", "warp_reductions")
        assert a.parts[0].spec.algorithm == choice.chosen, "the resolved spec names the choice"
        assert "cell block_reduce/sum S=4 T=256 N=16" in choice.reason
        explicit = c.specialize(family="block_reduce", dtype="int32", threads=256,
                                items_per_thread=16, algorithm=choice.chosen, arch="sm_90")
        assert explicit.key == a.key and explicit.origin == "memory"
        assert explicit.algorithm_choice is None, "the shared entry stores no choice"
        e = c.explain(spec)
        assert e.key == a.key and e.auto_choice.choice.chosen == choice.chosen
        assert [m.algorithm for m in e.auto_choice.measured]
        assert c.stats().tuning_tables[0].digest == choice.table_digest


def test_a_bad_request_raises_invalid_argument_naming_the_field(daemon):
    with daemon.client() as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.specialize(family="block_reduce", dtype="float32", threads=256, items_per_thread=0,
                         algorithm="warp_scans", arch="sm_90")
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.from_server
        assert "algorithm" in e.value.message and "warp_scans" in e.value.message
        # The request id coopd returned is the one its log line about the call carries.
        assert e.value.request_id
        assert f"[req {e.value.request_id}] invalid request: block_reduce: " in daemon.log()
        with pytest.raises(coopd.CoopdError) as e:
            c.specialize(family="block_frobnicate", dtype="float32", threads=256, arch="sm_90")
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "block_reduce" in e.value.message, "the error lists the allowed families"
        c.stats()  # the daemon stays up


def test_undecodable_requests_on_a_raw_channel_are_invalid_argument_saying_why(daemon):
    # grpcio with identity serializers: the bytes go to coopd as they are.
    with grpc.insecure_channel("unix:" + daemon.socket) as channel:
        specialize = channel.unary_unary("/coop.v1.Coop/Specialize",
                                         request_serializer=lambda b: b,
                                         response_deserializer=lambda b: b)
        for body in (b"\xff" * 6, b"\x0a\x10\x0a\x05"):  # garbage; truncated
            with pytest.raises(grpc.RpcError) as e:
                specialize(body, timeout=60)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert e.value.details() == (
                f"request: coop.v1.SpecializeRequest does not decode from its {len(body)} bytes: "
                "not a well-formed protobuf encoding of it (truncated, corrupt, or another "
                "message)")
        with pytest.raises(grpc.RpcError) as e:
            specialize(b"\x0a\x04\x0a\x02\xc3\x28", timeout=60)  # spec.family: invalid UTF-8
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "string field coop.v1.PrimitiveSpec.family holds invalid UTF-8" in e.value.details()
    with daemon.client() as c:
        c.stats()  # the daemon stays up


def _huge_log_operator() -> coopd.UserOperator:
    """An operator whose NVRTC compile fails with a log of about 3 MB (a static_assert quoting a
    3,000,000-byte string)."""
    source = '#define S0 "' + "x" * 100 + '"\n'
    for i in range(1, 5):
        source += f"#define S{i} " + " ".join([f"S{i - 1}"] * 10) + "\n"
    source += "static_assert(sizeof(float) == 0, S4 S4 S4);\n"
    source += "__device__ float huge(float a, float b) { return a + b; }\n"
    return coopd.UserOperator(name="huge", source=source)


def test_an_error_of_megabytes_is_summarized_and_whole_on_request(daemon):
    spec = dict(family="block_reduce", method="reduce", dtype="float32", threads=128,
                arch="sm_90", user_op=_huge_log_operator())
    with daemon.client() as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.specialize(**spec)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert len(e.value.message) < 4096
    assert "bytes not shown" in e.value.message
    assert e.value.details == "" and e.value.full_message == e.value.message
    with daemon.client(full_errors=True) as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.specialize(**spec)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "bytes not shown" in e.value.message
    assert "x" * 3000000 in e.value.details
    assert "1 error detected in the compilation of" in e.value.details
    assert e.value.full_message == e.value.details


def test_client_side_mistakes_are_value_errors():
    with pytest.raises(ValueError, match="abi"):
        coopd.Spec(family="block_reduce", abi="fortran").to_proto()
    with pytest.raises(ValueError, match="threads"):
        coopd.Spec(family="block_reduce", threads=(1, 2, 3, 4)).to_proto()


def test_cccl_reaches_the_spec_the_catalog_request_and_the_artifact(tmpdir_path, monkeypatch):
    from coopd._proto.coop.v1 import coop_pb2
    assert coopd.Spec(family="block_reduce").to_proto().cccl == ""
    assert coopd.Spec(family="block_reduce", cccl="3.5").to_proto().cccl == "3.5"
    sent = []

    def call(method, request):
        sent.append((method, request))
        if method == "Catalog":
            return coop_pb2.CatalogResponse(cccl=request.cccl or "toolkit")
        toolchain = coop_pb2.Toolchain(cccl_version="3.5.0", cccl_name="cccl35")
        return coop_pb2.SpecializeResponse(artifact=coop_pb2.Artifact(toolchain=toolchain))

    socket = os.path.join(tmpdir_path, "nobody.sock")
    with coopd.Client(socket, autostart=False, artifact_cache_entries=0) as c:
        monkeypatch.setattr(c, "_call", call)
        assert c.catalog().cccl == "toolkit"
        assert c.catalog(cccl="3.5").cccl == "3.5"
        a = c.specialize(family="block_reduce", dtype="float32", threads=128, cccl="cccl35")
        c.bundle([coopd.Spec(family="block_reduce", cccl="3.5"),
                  coopd.Spec(family="block_scan", cccl="3.5")])
    assert [m for m, _ in sent] == ["Catalog", "Catalog", "Specialize", "SpecializeBundle"]
    assert [sent[0][1].cccl, sent[1][1].cccl, sent[2][1].spec.cccl] == ["", "3.5", "cccl35"]
    assert [s.cccl for s in sent[3][1].specs] == ["3.5", "3.5"]
    assert (a.cccl, a.cccl_version) == ("cccl35", "3.5.0")


def test_no_daemon_is_unavailable_and_says_not_reachable(tmpdir_path):
    socket = os.path.join(tmpdir_path, "nobody.sock")
    with coopd.Client(socket, timeout=5, retries=2, backoff=0.01) as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.stats()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE
    assert not e.value.from_server
    assert e.value.request_id == ""
    assert f"coopd is not reachable on {socket}" in e.value.message


def test_unavailable_is_retried_with_backoff_until_the_daemon_answers(tmpdir_path):
    late = Daemon(tmpdir_path)
    starter = threading.Timer(0.5, late.start)
    starter.start()
    try:
        with coopd.Client(late.socket, timeout=120, retries=30, backoff=0.05) as c:
            s = c.stats()  # the first attempts find no daemon
        assert s.uptime_s >= 0
    finally:
        starter.join()
        assert late.stop() == 0, late.log()


def test_deadline_bounds_a_call_including_its_retries(tmpdir_path):
    socket = os.path.join(tmpdir_path, "nobody.sock")
    start = time.monotonic()
    with coopd.Client(socket, timeout=1.0, retries=1000, backoff=0.05) as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.stats()
    assert e.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    # Liveness, not speed: 1000 retries with backoff up to 2 s would take over half an hour.
    assert time.monotonic() - start < 60


def test_link_makes_a_cubin_from_ptx_and_an_artifact(daemon):
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n"
           ".visible .entry coopd_pytest_kernel() { ret; }\n")
    with daemon.client() as c:
        a = c.specialize(REDUCE)
        r = c.link("sm_90", ptx=[ptx], artifacts=[a])
        assert r.cubin[:4] == b"\x7fELF"
        assert r.origin == "compiled"
        assert "-optimize-unused-variables" in r.options
        again = c.link("sm_90", ptx=[ptx], artifacts=[a.key])
        assert again.origin == "memory" and again.key == r.key
        with pytest.raises(coopd.CoopdError) as e:
            c.link("sm_90", ptx=[ptx], artifacts=["0" * 64])
        assert e.value.code == grpc.StatusCode.NOT_FOUND


def test_catalog_stats_and_explain(daemon):
    with daemon.client() as c:
        catalog = c.catalog()
        names = [f.name for f in catalog.families]
        assert "block_reduce" in names and "warp_scan" in names
        assert "sm_90" in catalog.archs
        a = c.specialize(REDUCE)
        e = c.explain(REDUCE)
        assert e.key == a.key and e.cached
        assert [x.name for x in e.components][:2] == ["schema", "canonical_request"]
        s = c.stats()
        assert s.requests >= 1
        assert any(t.name == "disk" for t in s.tiers)


def test_a_fresh_process_with_no_daemon_starts_one_and_gets_an_artifact(tmpdir_path):
    import signal
    import subprocess
    import sys

    from conftest import coopd_binary

    socket = os.path.join(tmpdir_path, "run", "coopd.sock")
    env = {k: v for k, v in os.environ.items()
           if k not in ("COOPD_NO_AUTOSTART", "COOPD_IDLE_EXIT")}
    env.update(COOPD_BIN=coopd_binary(), COOPD_CACHE_DIR=os.path.join(tmpdir_path, "cache"))
    code = ("import coopd, sys\n"
            "a = coopd.Client(sys.argv[1]).specialize(family='block_reduce', dtype='float32',"
            " threads=128, arch='sm_90')\n"
            "print(a.origin, a.temp_storage_bytes)\n")
    try:
        out = subprocess.run([sys.executable, "-c", code, socket], env=env, check=True,
                             capture_output=True, text=True, timeout=300).stdout.split()
        assert out[0] in ("compiled", "disk", "memory") and int(out[1]) > 0
        assert os.path.exists(os.path.join(tmpdir_path, "run", "coopd.log"))
        # As coop::Client's: an auto-started daemon stops after 30 idle minutes.
        with open(socket + ".lock") as f:
            pid = int(f.read().split()[0])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert b"\0--idle-exit\x001800" in f.read()
    finally:
        try:
            with open(socket + ".lock") as f:
                pid = int(f.read().split()[0])
            os.kill(pid, signal.SIGTERM)
            for _ in range(600):
                os.kill(pid, 0)
                time.sleep(0.05)
        except (OSError, ValueError, IndexError):
            pass


def test_no_autostart_when_turned_off(tmpdir_path, monkeypatch):
    monkeypatch.setenv("COOPD_NO_AUTOSTART", "1")
    socket = os.path.join(tmpdir_path, "coopd.sock")
    with coopd.Client(socket, timeout=5, retries=1, backoff=0.01) as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.stats()
    assert "auto-start is off" in e.value.message
    assert not os.path.exists(socket)


def test_bitcode_comes_with_the_same_entries_and_is_written_as_bc(daemon, tmpdir_path):
    spec = coopd.Spec(family="block_reduce", dtype="float32", threads=256, arch="sm_90a")
    with daemon.client() as c:
        bc = c.specialize(spec, formats="bitcode")
        assert bc.bitcode[:4] == b"BC\xc0\xde"
        assert bc.ltoir == b""
        assert bc.key == bc.bitcode_key
        both = c.specialize(spec, formats=["ltoir", "bitcode"])
        assert both.bitcode == bc.bitcode and both.bitcode_key == bc.bitcode_key
        assert both.key != both.bitcode_key, "each format is a cache entry of its own"
        assert [e.declaration for e in both.entries] == [e.declaration for e in bc.entries]
        assert (bc.temp_storage_bytes, bc.temp_storage_align) == (44, 4)
        files = both.write(tmpdir_path)
        stem = os.path.join(tmpdir_path, both.entries[0].symbol)
        assert files == [stem + ".ltoir", stem + ".bc"]
        with open(stem + ".bc", "rb") as f:
            assert f.read() == bc.bitcode
        names = {comp.name: comp.value for comp in c.explain(spec, format="bitcode").components}
        assert names["format"] == "bitcode" and "clang version" in names["clang"]
        with pytest.raises(ValueError, match="formats: each must be one of ltoir, bitcode"):
            c.specialize(spec, formats="ptx")


def test_bitcode_without_clang_is_failed_precondition_naming_the_package(tmpdir_path):
    d = Daemon(tmpdir_path, "--clang", "/nonexistent/clang").start()
    try:
        with d.client() as c:
            with pytest.raises(coopd.CoopdError) as e:
                c.specialize(REDUCE, formats="bitcode")
            assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert "bitcode needs clang-22: apt-get install clang-22 (or --clang PATH)" in str(
                e.value.message)
            assert c.specialize(REDUCE).ltoir, "LTO-IR needs no clang"
    finally:
        assert d.stop() == 0, d.log()


def test_digest_only_hits_return_complete_artifacts_and_the_cache_is_bounded(tmpdir_path):
    d = Daemon(tmpdir_path, "--workers", "1").start()
    try:
        small = coopd.Spec(family="block_reduce", dtype="float32", threads=128, arch="sm_90")
        with d.client() as c:
            first = c.specialize(small)
            again = c.specialize(small)
            s = c.stats()
            assert s.digest_only_replies == 1, "the second request sent the digest it held"
            assert s.bytes_omitted >= len(first.ltoir)
            assert again.ltoir == first.ltoir and again.key == first.key
            assert again.proto.source == first.proto.source
            assert not again.proto.bytes_omitted, "the client filled the bytes back in"
            assert again.origin == "memory"
            assert c.artifact_cache.entries == 1
        # One entry: alternating two specs never holds the one asked for.
        with d.client(artifact_cache_entries=1) as c:
            other = coopd.Spec(family="block_reduce", dtype="float32", threads=64, arch="sm_90")
            for spec in (small, other, small):
                c.specialize(spec)
            assert c.artifact_cache.entries == 1
            assert c.stats().digest_only_replies == 1
            assert c.specialize(small).ltoir == first.ltoir
            assert c.stats().digest_only_replies == 2
        # A wrong digest gets the whole artifact.
        with d.client() as c:
            req = coopd._client.coop_pb2.SpecializeRequest(spec=small.to_proto())
            req.have.add(format=1, key=first.key, digest="0" * 64)
            reply = c._call("Specialize", req).artifact
            assert not reply.bytes_omitted and reply.ltoir == first.ltoir
    finally:
        assert d.stop() == 0, d.log()


def test_stop_stops_a_running_daemon_and_starts_none(tmpdir_path, monkeypatch):
    d = Daemon(tmpdir_path).start()
    with d.client(timeout=30) as c:
        c.stop()
    assert d.proc.wait(timeout=60) == 0, d.log()
    assert not os.path.exists(d.socket), "coopd removes its socket when it stops"
    # A second stop finds no daemon, and starts none (even with auto-start on).
    monkeypatch.delenv("COOPD_NO_AUTOSTART", raising=False)
    with d.client(timeout=5, retries=0) as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.stop()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE
    assert not os.path.exists(d.socket)


def test_stop_needs_the_admin_role_when_tokens_are_on(tmpdir_path):
    tokens = os.path.join(tmpdir_path, "tokens")
    with open(tokens, "w") as f:
        f.write("compile builders " + "c" * 32 + "\nadmin ops " + "a" * 32 + "\n")
    os.chmod(tokens, 0o600)
    compile_token = os.path.join(tmpdir_path, "compile.tok")
    admin_token = os.path.join(tmpdir_path, "admin.tok")
    for path, text in ((compile_token, "c" * 32), (admin_token, "a" * 32)):
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, 0o600)
    d = Daemon(tmpdir_path, "--tokens-file", tokens, "--tokens-unix").start()
    with d.client(timeout=30, token_file=compile_token) as c:
        with pytest.raises(coopd.CoopdError) as e:
            c.stop()
    assert e.value.code == grpc.StatusCode.PERMISSION_DENIED, e.value.message
    assert d.proc.poll() is None, "a compile token does not stop coopd"
    with d.client(timeout=30, token_file=admin_token) as c:
        c.stop()
    assert d.proc.wait(timeout=60) == 0, d.log()
