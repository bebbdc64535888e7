"""coopd.Client(target=...) spreads calls over coopd replicas listening on TCP (round_robin)."""
import socket
import tempfile

import coopd
from conftest import Daemon


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_target_spreads_calls_over_replicas():
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d1, \
            tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d2:
        ports = [free_port(), free_port()]
        # Plaintext on loopback (--insecure); TLS and tokens: test_access.py.
        replicas = [Daemon(d, "--workers", "1", "--listen", f"127.0.0.1:{p}", "--insecure").start()
                    for d, p in zip((d1, d2), ports)]
        try:
            target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)
            spec = coopd.Spec(family="block_reduce", dtype="float32", threads=256, arch="sm_90")
            with coopd.Client(target=target, timeout=120) as c:
                assert not c.autostart
                artifacts = [c.specialize(spec) for _ in range(6)]
            assert len({a.ltoir for a in artifacts}) == 1
            # No shared tier here: each replica that got a call compiled the spec once.
            for r in replicas:
                with r.client() as c:
                    s = c.stats()
                assert s.compiles == 1 and s.requests >= 1, (s.compiles, s.requests)
                assert "WITHOUT TLS OR AUTHENTICATION" in r.log()
        finally:
            for r in replicas:
                assert r.stop() == 0, r.log()
