"""Generic clients against a real coopd: grpcio's standard health-checking stub and its
server-reflection client (what grpcurl and grpc_health_probe use), and the Prometheus endpoint
(--metrics) parsed by prometheus_client's parser, its counters and histograms moving with
requests."""

import re
import tempfile
import urllib.error
import urllib.request

import grpc
import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase)
from prometheus_client.parser import text_string_to_metric_families

from conftest import Daemon

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
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {}
    for f in families.values():
        for s in f.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return families, samples


@pytest.fixture(scope="module")
def metrics_daemon():
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d:
        daemon = Daemon(d, "--workers", "1", "--metrics", "127.0.0.1:0").start()
        m = re.search(r"metrics: (http://127\.0\.0\.1:\d+/metrics)", daemon.log())
        assert m, daemon.log()
        daemon.metrics_url = m.group(1)
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
