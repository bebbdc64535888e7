"""coopd.Client's access options against a real coopd: TLS (tls_ca), client certificates
(tls_cert, tls_key), bearer tokens (token_file), the same from the environment, and the errors
for each. The CA and certificates are made here with the openssl CLI (no key is checked in)."""
import os
import re
import subprocess
import tempfile

import grpc
import pytest

import coopd
from conftest import Daemon
from coopd._proto.coop.v1 import coop_pb2


def purge_all(c: coopd.Client):
    """An admin RPC (the Python client has no maintenance calls: its own transport, raw)."""
    return c._call("Purge", coop_pb2.PurgeRequest(all=True))


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki():
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-pki-") as d:
        p = lambda name: os.path.join(d, name)  # noqa: E731
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        openssl("req", "-x509", *ec, "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
                "-subj", "/CN=coopd pytest ca")
        for name, cn, ext in (("server", "localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
                              ("client", "pytest client", "extendedKeyUsage=clientAuth")):
            openssl("req", *ec, "-keyout", p(name + ".key"), "-out", p(name + ".csr"), "-subj",
                    "/CN=" + cn)
            with open(p(name + ".ext"), "w") as f:
                f.write(ext + "\n")
            openssl("x509", "-req", "-in", p(name + ".csr"), "-CA", p("ca.pem"), "-CAkey",
                    p("ca.key"), "-CAcreateserial", "-out", p(name + ".pem"), "-days", "2",
                    "-extfile", p(name + ".ext"))
        tokens = {}
        for role in ("read", "admin"):
            tokens[role] = os.urandom(24).hex()
            with open(p(role + ".token"), "w") as f:
                f.write(tokens[role] + "\n")
        with open(p("tokens"), "w") as f:
            f.write(f"read reader {tokens['read']}\nadmin ops {tokens['admin']}\n")
        for name in ("ca.key", "server.key", "client.key", "tokens", "read.token", "admin.token"):
            os.chmod(p(name), 0o600)
        yield p, tokens


def port_of(daemon: Daemon) -> int:
    m = re.search(r"listening on tcp 127\.0\.0\.1:(\d+)", daemon.log())
    assert m, daemon.log()
    return int(m.group(1))


def test_tls_and_tokens(pki):
    p, tokens = pki
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d:
        daemon = Daemon(d, "--workers", "1", "--listen", "127.0.0.1:0", "--tls-cert",
                        p("server.pem"), "--tls-key", p("server.key"), "--tokens-file",
                        p("tokens")).start()
        try:
            target = f"localhost:{port_of(daemon)}"
            with coopd.Client(target=target, tls_ca=p("ca.pem"), token_file=p("read.token"),
                              retries=0) as c:
                stats = c.stats()
                tcp = [l for l in stats.listeners if l.address.startswith("tcp ")]
                assert len(tcp) == 1 and tcp[0].tls and tcp[0].tokens and not tcp[0].insecure
                with pytest.raises(coopd.CoopdError) as e:
                    purge_all(c)
                assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
                assert e.value.message == 'Purge: token "reader" has role read; Purge needs role admin'
                # A miss: the read role fetches, never compiles.
                with pytest.raises(coopd.CoopdError) as e:
                    c.specialize(family="block_reduce", dtype="float32", threads=256, arch="sm_90")
                assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
                assert "has role read, which fetches cached artifacts but cannot compile" in \
                    e.value.message
            with coopd.Client(target=target, tls_ca=p("ca.pem"), retries=0) as c:
                with pytest.raises(coopd.CoopdError) as e:
                    c.stats()
                # Refused on the headers, before coopd's handler (docs/security.md, Network
                # peers): gRPC's auth processor adds no trailers, so the status's own message is
                # what shows that coopd refused it.
                assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
                assert "token" in e.value.message, e.value.message
            # The same from the environment.
            env = {"COOPD_TARGET": target, "COOPD_TLS_CA": p("ca.pem"),
                   "COOPD_TOKEN_FILE": p("admin.token")}
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                with coopd.Client(retries=0) as c:
                    assert c.target == target
                    purge_all(c)
            finally:
                for k, v in old.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            log = daemon.log()
            for secret in tokens.values():
                assert secret not in log
        finally:
            assert daemon.stop() == 0, daemon.log()


def test_client_certificates(pki):
    p, _ = pki
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d:
        daemon = Daemon(d, "--workers", "1", "--listen", "127.0.0.1:0", "--tls-cert",
                        p("server.pem"), "--tls-key", p("server.key"), "--tls-client-ca",
                        p("ca.pem")).start()
        try:
            target = f"localhost:{port_of(daemon)}"
            with coopd.Client(target=target, tls_ca=p("ca.pem"), tls_cert=p("client.pem"),
                              tls_key=p("client.key"), retries=0) as c:
                assert c.stats().listeners[1].client_certificates
            with coopd.Client(target=target, tls_ca=p("ca.pem"), retries=0, timeout=10) as c:
                with pytest.raises(coopd.CoopdError) as e:
                    c.stats()
                assert e.value.code == grpc.StatusCode.UNAVAILABLE and not e.value.from_server
        finally:
            assert daemon.stop() == 0, daemon.log()


def test_bad_access_options_name_the_option(pki):
    p, _ = pki
    with pytest.raises(coopd.CoopdError) as e:
        coopd.Client(token_file=p("missing.token"))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "token_file (COOPD_TOKEN_FILE)" in e.value.message and "cannot read" in e.value.message
    os.chmod(p("read.token"), 0o644)
    try:
        with pytest.raises(coopd.CoopdError) as e:
            coopd.Client(token_file=p("read.token"))
        assert "others may access it (mode 0644)" in e.value.message
    finally:
        os.chmod(p("read.token"), 0o600)
    with pytest.raises(coopd.CoopdError) as e:
        coopd.Client(target="localhost:1", tls_cert=p("client.pem"))
    assert e.value.message.startswith("tls_cert and tls_key (COOPD_TLS_CERT, COOPD_TLS_KEY) go")
