"""Client.plan against a real coopd: spec uses sized as specialize reports, layouts checked byte by
byte against the contract (docs/plan.md), errors, determinism."""

import grpc
import pytest

import coopd
from coopd._proto.coop.v1 import coop_pb2

SCAN = coopd.Spec(family="block_scan", method="exclusive_sum", dtype="int32", threads=128,
                  items_per_thread=4, arch="sm_90")
REDUCE = coopd.Spec(family="block_reduce", dtype="float32", threads=128, arch="sm_90")
WARP = coopd.Spec(family="warp_reduce", dtype="int32", arch="sm_90")


def violations(plan, regions, base_offset=0):
    """What is wrong with ``plan`` for ``regions``: {name: (bytes, align, count, first, last,
    reservation)} with each element's bytes. Computed from the contract alone."""
    bad = []
    placed = {r.name: r for r in plan.uses + plan.reservations}
    if sorted(placed) != sorted(regions):
        return ["the plan does not have one region per request region"]
    end_max, reserved, points = base_offset, base_offset, 0
    for name, (size, align, count, first, last, reservation) in regions.items():
        r = placed[name]
        stride = -(-size // align) * align
        if (r.count, r.stride, r.bytes, r.align) != (count, stride, (count - 1) * stride + size,
                                                     align):
            bad.append(f"{name}: count/stride/bytes/align")
        if r.offset % align or r.offset < base_offset or r.padding >= align:
            bad.append(f"{name}: offset {r.offset} / padding {r.padding}")
        end_max = max(end_max, r.offset + r.bytes)
        reserved += r.bytes if reservation else 0
        points = max(points, last + 1)
    for t in range(points):
        owner = {}
        for name, (_, _, _, first, last, reservation) in regions.items():
            if not reservation and not first <= t <= last:
                continue
            r = placed[name]
            for b in range(r.offset, r.offset + r.bytes):
                if b in owner:
                    bad.append(f"{owner[b]} and {name} share byte {b} at point {t}")
                    break
                owner[b] = name
    order = sorted(placed.values(), key=lambda r: (-r.align, -r.bytes))  # stable: request order
    end = base_offset
    for r in order:
        end = -(-end // r.align) * r.align + r.bytes
    if plan.dynamic_shared_bytes != end_max:
        bad.append("dynamic_shared_bytes is not the highest end")
    if plan.dynamic_shared_bytes < reserved or plan.reserved_bytes != reserved:
        bad.append("reservations")
    if plan.no_reuse_bytes != end or plan.dynamic_shared_bytes > end:
        bad.append("no-reuse bound")
    if plan.base_align != max([1] + [a for _, a, *_ in regions.values()]):
        bad.append("base_align")
    return bad


def test_spec_uses_take_the_temp_storage_specialize_reports_and_reuse_bytes(daemon):
    with daemon.client() as c:
        scan, reduce, warp = c.specialize(SCAN), c.specialize(REDUCE), c.specialize(WARP)
        plan = c.plan([("scan", SCAN, 0, 1), coopd.PlanUse("reduce", REDUCE, first=2),
                       coopd.PlanUse("warps", WARP, 1, 2, count=4), ("mine", (100, 8), 1, 2)],
                      {"tile": (512, 16)})
    assert plan["scan"].artifact_key == scan.key and plan["reduce"].artifact_key == reduce.key
    assert plan["scan"].bytes == scan.temp_storage_bytes
    assert plan["reduce"].bytes == reduce.temp_storage_bytes
    assert plan["warps"].count == 4 and plan["warps"].align == warp.temp_storage_align
    assert plan["mine"].artifact_key == ""
    regions = {"scan": (scan.temp_storage_bytes, scan.temp_storage_align, 1, 0, 1, False),
               "reduce": (reduce.temp_storage_bytes, reduce.temp_storage_align, 1, 2, 2, False),
               "warps": (warp.temp_storage_bytes, warp.temp_storage_align, 4, 1, 2, False),
               "mine": (100, 8, 1, 1, 2, False), "tile": (512, 16, 1, 0, 0, True)}
    assert violations(plan, regions) == []
    # scan is dead when reduce starts: the reduction takes bytes the scan used.
    s, r = plan["scan"], plan["reduce"]
    assert r.offset < s.offset + s.bytes and s.offset < r.offset + r.bytes
    assert plan.dynamic_shared_bytes < plan.no_reuse_bytes
    assert plan.offsets["tile"] == plan["tile"].offset


def test_sizes_objects_and_reservations_in_every_form(daemon):
    with daemon.client() as c:
        artifact = c.specialize(REDUCE)
        plan = c.plan([coopd.PlanUse("r", artifact, 0, 0)],
                      [coopd.PlanReservation("a", 7, 1), ("b", 64, 64, 2)], base_offset=3)
    assert plan["r"].bytes == artifact.temp_storage_bytes and plan["r"].artifact_key == ""
    assert plan["b"].count == 2 and plan["b"].offset % 64 == 0
    assert plan.reserved_bytes == 3 + 7 + 128
    regions = {"r": (artifact.temp_storage_bytes, artifact.temp_storage_align, 1, 0, 0, False),
               "a": (7, 1, 1, 0, 0, True), "b": (64, 64, 2, 0, 0, True)}
    assert violations(plan, regions, base_offset=3) == []
    with pytest.raises(KeyError):
        plan["nobody"]


def test_the_same_request_gets_the_same_plan(daemon):
    uses = [(f"u{i}", (16 * (i % 5 + 1), 1 << (i % 5)), i % 7, i % 7 + i % 3) for i in range(30)]
    with daemon.client() as c:
        a = c.plan(uses + [("scan", SCAN, 2, 4)], {"mine": (40, 8)})
        b = c.plan(uses + [("scan", SCAN, 2, 4)], {"mine": (40, 8)})
    assert a.proto.SerializeToString(deterministic=True) == \
        b.proto.SerializeToString(deterministic=True)


def test_bad_plans_name_the_use_and_the_field(daemon):
    with daemon.client() as c:
        bad_scan = coopd.Spec(family="block_scan", dtype="int32", threads=128,
                              algorithm="warp_reductions", arch="sm_90")
        with pytest.raises(coopd.CoopdError) as e:
            c.plan([("reduce", REDUCE), ("scan", bad_scan)])
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and e.value.from_server
        assert e.value.message.startswith(
            'plan: uses[1] "scan": spec: block_scan: algorithm must be one of raking, ')
        with pytest.raises(coopd.CoopdError) as e:
            c.plan([("a", (8, 8)), ("a", (8, 8))])
        assert 'uses[1].name "a" is already uses[0]' in e.value.message
        with pytest.raises(coopd.CoopdError) as e:
            c.plan([("a", (8, 12))])
        assert e.value.message == ('plan: uses[0] "a": temp_storage.align must be a power of '
                                   'two, 1..65536, got 12')
        with pytest.raises(coopd.CoopdError) as e:
            c.plan([("a", (8, 8), 4, 1)])
        assert "last must be >= first" in e.value.message
        # A use that says neither what it is nor how big (only a raw request can).
        with pytest.raises(coopd.CoopdError) as e:
            c._call("Plan", coop_pb2.PlanRequest(uses=[coop_pb2.PlanUse(name="vague")]))
        assert e.value.message == ('plan: uses[0] "vague": give spec (a primitive whose temp '
                                   'storage coopd resolves) or temp_storage (bytes and align)')
        with pytest.raises(TypeError, match='use "x" needs a coopd.Spec'):
            c.plan([("x", "block_reduce")])
        assert c.plan([("fine", (8, 8))]).dynamic_shared_bytes == 8  # the daemon stays up
