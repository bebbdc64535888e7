"""Generic clients against a real coopd: grpcio's standard health-checking stub and its
server-reflection client (what grpcurl and grpc_health_probe use), and the Prometheus endpoint
(--metrics) parsed by prometheus_client's parser, its counters and histograms moving with
requests, and its refusal counters with refused calls."""

import os
import re
import signal
import tempfile
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase)
from prometheus_client.parser import text_string_to_metric_families

import coopd
from conftest import Daemon
from coopd._proto.coop.v1 import coop_pb2

SPEC = dict(family="block_reduce", method="sum", dtype="float32", threads=256, arch="sm_90")


def channel(daemon):
    return grpc.insecure_channel("unix:" + daemon.socket)


def test_health_service_says_serving_for_the_daemon_and_coop_v1(daemon):
    with channel(daemon) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        for service in ("", "coop.v1.Coop"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=30)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, service
        with pytest.raises(grpc.RpcError) as e:
            stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=30)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_watch_streams_the_current_status(daemon):
    with channel(daemon) as ch:
        stream = health_pb2_grpc.HealthStub(ch).Watch(
            health_pb2.HealthCheckRequest(service="coop.v1.Coop"), timeout=30)
        first = next(stream)
        stream.cancel()
        assert first.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_services_and_describes_coop_v1(daemon):
    with channel(daemon) as ch:
        db = ProtoReflectionDescriptorDatabase(ch)
        services = set(db.get_services())
        assert {"coop.v1.Coop", "grpc.health.v1.Health",
                "grpc.reflection.v1alpha.ServerReflection"} <= services
        pool = descriptor_pool.DescriptorPool(db)
        coop = pool.FindServiceByName("coop.v1.Coop")
        methods = {m.name for m in coop.methods}
        assert {"Specialize", "Link", "Explain", "GetStats"} <= methods
        specialize = coop.methods_by_name["Specialize"]
        assert specialize.input_type.full_name == "coop.v1.SpecializeRequest"
        assert "spec" in specialize.input_type.fields_by_name
        with pytest.raises(KeyError):
            pool.FindServiceByName("coop.v1.NoSuchService")


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200
        # The text format's media type (prometheus-cpp's Exposer leaves out "version=0.0.4",
        # which text/plain means by default).
        assert r.headers["Content-Type"].split(";")[0] == "text/plain"
        text = r.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {}
    for f in families.values():
        for s in f.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return families, samples


def metrics_url(daemon):
    """The /metrics URL coopd logs. It starts the endpoint just after the gRPC server, which is
    what Daemon.start waits for, so the line may come a moment later: wait for it."""
    end = time.monotonic() + 60
    while True:
        m = re.search(r"metrics: (http://127\.0\.0\.1:\d+/metrics)", daemon.log())
        if m or time.monotonic() > end:
            assert m, daemon.log()
            return m.group(1)
        time.sleep(0.05)


@pytest.fixture(scope="module")
def metrics_daemon():
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d:
        daemon = Daemon(d, "--workers", "1", "--metrics", "127.0.0.1:0").start()
        daemon.metrics_url = metrics_url(daemon)
        yield daemon
        assert daemon.stop() == 0, daemon.log()


def test_metrics_parse_and_name_every_kind_of_figure(metrics_daemon):
    families, samples = scrape(metrics_daemon.metrics_url)
    types = {name: f.type for name, f in families.items()}
    # prometheus_client strips _total from counter family names.
    for name, kind in [("coopd_requests", "counter"), ("coopd_cache_hits", "counter"),
                       ("coopd_compiles", "counter"), ("coopd_cache_misses", "counter"),
                       ("coopd_compile_duration_seconds", "histogram"),
                       ("coopd_cache_hit_duration_seconds", "histogram"),
                       ("coopd_queue_depth", "gauge"), ("coopd_workers", "gauge"),
                       ("coopd_cache_bytes", "gauge"), ("coopd_degraded", "gauge")]:
        assert types.get(name) == kind, (name, types.get(name))
    assert samples[("coopd_workers", (("state", "idle"),))] + \
        samples[("coopd_workers", (("state", "busy"),))] + \
        samples[("coopd_workers", (("state", "down"),))] == 1
    assert samples[("coopd_degraded", ())] == 0
    assert ("coopd_cache_bytes", (("tier", "disk"),)) in samples


def test_metrics_counters_and_histograms_move_with_requests(metrics_daemon):
    _, before = scrape(metrics_daemon.metrics_url)
    with metrics_daemon.client() as c:
        first = c.specialize(**SPEC)
        second = c.specialize(**SPEC)
    # The module's daemon has a fresh cache, and no other test of it specializes.
    assert (first.origin, second.origin) == ("compiled", "memory")
    _, after = scrape(metrics_daemon.metrics_url)

    def moved(name, labels=()):
        return after[(name, labels)] - before[(name, labels)]

    assert moved("coopd_requests_total") == 2
    memory = (("tier", "memory"),)
    assert moved("coopd_cache_hits_total", memory) >= 1
    assert moved("coopd_cache_hit_duration_seconds_count", memory) >= 1
    assert after[("coopd_cache_hit_duration_seconds_bucket", (("le", "+Inf"),) + memory)] == \
        after[("coopd_cache_hit_duration_seconds_count", memory)]
    assert moved("coopd_compiles_total") == 1
    assert moved("coopd_compile_duration_seconds_count") == 1
    assert moved("coopd_compile_duration_seconds_sum") > 0
    assert moved("coopd_cache_misses_total") == 1
    assert after[("coopd_cache_bytes", memory)] > 0
    assert after[("coopd_cache_entries", memory)] >= 1


def test_metrics_endpoint_serves_only_metrics(metrics_daemon):
    url = metrics_daemon.metrics_url.replace("/metrics", "/other")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=30)
    assert e.value.code == 404


def children(pid):
    """The pids of `pid`'s child processes (coopd's compile workers)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def test_metrics_count_refusals_by_reason(tmp_path):
    """Each kind of call the gRPC edge refuses moves its coopd_refused_calls_total{reason} by
    one, and GetStats reports the same counts."""
    tokens = {name: os.urandom(24).hex() for name in ("reader", "builder", "hog")}
    with open(tmp_path / "tokens", "w") as f:
        f.write(f"read reader {tokens['reader']}\n")
        f.write(f"compile builder {tokens['builder']}\ncompile hog {tokens['hog']}\n")
    for name, token in tokens.items():
        with open(tmp_path / (name + ".token"), "w") as f:
            f.write(token + "\n")
    for name in ("tokens", *(n + ".token" for n in tokens)):
        os.chmod(tmp_path / name, 0o600)
    # 0.001 requests per second: no token comes back to a bucket during the test.
    daemon = Daemon(str(tmp_path), "--workers", "1", "--metrics", "127.0.0.1:0", "--tokens-file",
                    str(tmp_path / "tokens"), "--tokens-unix", "--client-max-in-flight", "1",
                    "--client-rate", "0.001", "--client-burst", "3", "--max-message-mb",
                    "1").start()
    try:
        url = metrics_url(daemon)

        def client(name):
            return daemon.client(token_file=str(tmp_path / (name + ".token")), retries=0)

        families, before = scrape(url)
        assert families["coopd_refused_calls"].type == "counter"

        def moved(reason):
            _, after = scrape(url)
            key = ("coopd_refused_calls_total", (("reason", reason),))
            return after[key] - before[key]

        # Access control: no token; a read token calling an admin RPC.
        with daemon.client(retries=0) as anonymous, pytest.raises(coopd.CoopdError) as e:
            anonymous.stats()
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
        with client("reader") as reader, pytest.raises(coopd.CoopdError) as e:
            reader._call("Purge", coop_pb2.PurgeRequest(all=True))
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert (moved("unauthenticated"), moved("permission_denied")) == (1, 1)

        # Per-client limits: the hog's compile is held in flight (its worker stopped), so its
        # second call is over --client-max-in-flight 1; the builder's burst of 3 is spent by
        # three calls, so its fourth is over --client-rate.
        workers = children(daemon.proc.pid)
        assert len(workers) == 1, workers
        with client("hog") as hog, client("hog") as hog2, client("builder") as builder:
            first = {}
            held = threading.Thread(target=lambda: first.update(a=hog2.specialize(**SPEC)))
            for w in workers:
                os.kill(w, signal.SIGSTOP)
            try:
                held.start()
                end = time.monotonic() + 120
                while builder.stats().requests < 1:  # GetStats is not rate limited
                    assert time.monotonic() < end, daemon.log()
                    time.sleep(0.02)
                with pytest.raises(coopd.CoopdError) as e:
                    hog.specialize(**SPEC)
                assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "in flight" in e.value.message
                for _ in range(3):
                    builder.explain(**SPEC)
                with pytest.raises(coopd.CoopdError) as e:
                    builder.explain(**SPEC)
                assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "rate limit" in e.value.message
            finally:
                for w in workers:
                    os.kill(w, signal.SIGCONT)
                held.join(timeout=120)
        assert first["a"].origin == "compiled"
        assert (moved("client_in_flight"), moved("client_rate")) == (1, 1)

        # Requests that do not decode, and one over --max-message-mb (the reader's bucket has
        # room: its one call was refused before it took a token).
        metadata = (("authorization", "Bearer " + tokens["reader"]),)
        with channel(daemon) as ch:
            call = ch.unary_unary("/coop.v1.Coop/Specialize")
            for body in (b"\xff\xff\xff", b"\x0a" + bytes([0x7f]) * 4 + b"x" * (2 << 20)):
                with pytest.raises(grpc.RpcError) as e:
                    call(body, timeout=60, metadata=metadata)
                assert e.value.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                                          grpc.StatusCode.RESOURCE_EXHAUSTED), e.value.details()
        assert (moved("undecodable"), moved("oversized")) == (1, 1)

        # GetStats counts the same refusals.
        with client("reader") as reader:
            stats = reader.stats()
        _, after = scrape(url)
        for field, reason in (("unauthenticated_calls", "unauthenticated"),
                              ("denied_calls", "permission_denied"),
                              ("client_in_flight_refusals", "client_in_flight"),
                              ("client_rate_refusals", "client_rate"),
                              ("undecodable_requests", "undecodable"),
                              ("oversized_requests", "oversized")):
            assert getattr(stats, field) == after[("coopd_refused_calls_total",
                                                   (("reason", reason),))], field
    finally:
        assert daemon.stop() == 0, daemon.log()
