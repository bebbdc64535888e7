"""Other local users (issue 27, docs/security.md "Other local users"), the Python side: the
client sends no token to a socket another user owns, auto-start refuses a planted directory and
a linked log, token files others could rewrite are refused, and coopd.cute's bitcode directory
is private and its files are re-checked before use. The other user is uid 65534 (nobody): the
tests that need one run as root (as CI does) and skip otherwise.
"""

import os
import select
import shutil
import socket
import stat
import tempfile

import grpc
import pytest

import coopd

OTHER = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root, to make files another user's (uid 65534)")

class ForeignListener:
    """A Unix socket listener run as the other user (a forked child, setresuid 65534), the
    attacker's stand-in for coopd: it accepts connections and reads them until finish(), which returns (connections, bytes,
    whether the token was among them)."""

    def __init__(self, path: str, token: str) -> None:
        ready_r, ready_w = os.pipe()
        self.stop_r, self.stop_w = os.pipe()
        self.result_r, result_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(ready_r)
                os.close(self.stop_w)
                os.close(self.result_r)
                os.setgroups([])
                os.setresgid(OTHER, OTHER, OTHER)
                os.setresuid(OTHER, OTHER, OTHER)
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(path)
                listener.listen(16)
                os.write(ready_w, b"r")
                conns, seen, n = [], b"", 0
                while True:
                    r, _, _ = select.select([listener, self.stop_r] + conns, [], [])
                    if self.stop_r in r:
                        break
                    if listener in r:
                        conns.append(listener.accept()[0])
                        # An HTTP/2 server's first frame (empty SETTINGS): gRPC sends a call
                        # once the server has spoken, as a real coopd would.
                        conns[-1].sendall(b"\0\0\0\4\0\0\0\0\0")
                        n += 1
                    for c in [c for c in conns if c in r]:
                        data = c.recv(4096)
                        if not data:
                            conns.remove(c)
                        seen += data
                os.write(result_w, f"{n} {len(seen)} {int(token.encode() in seen)}".encode())
            except BaseException as e:  # said on stderr; the parent then fails on "ready"
                os.write(2, f"foreign listener: {e!r}\n".encode())
            finally:
                os._exit(0)
        os.close(ready_w)
        os.close(self.stop_r)
        os.close(result_w)
        assert os.read(ready_r, 1) == b"r"
        os.close(ready_r)

    def finish(self):
        os.close(self.stop_w)
        out = b""
        while True:
            chunk = os.read(self.result_r, 128)
            if not chunk:
                break
            out += chunk
        os.close(self.result_r)
        os.waitpid(self.pid, 0)
        connections, nbytes, token_seen = (int(x) for x in out.split())
        return connections, nbytes, token_seen


@pytest.fixture
def shared_tmp():
    # Under /tmp (pytest's tmp_path sits in a 0700 directory): the other user reaches its own
    # directory inside.
    d = tempfile.mkdtemp(prefix="coopd-local-users-", dir="/tmp")
    os.chmod(d, 0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _token_file(d, token):
    path = os.path.join(d, "token")
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return path


@needs_root
def test_the_client_sends_no_token_to_a_socket_another_user_owns(shared_tmp):
    token = "victims-token-0123456789abcdef0123456789"
    token_file = _token_file(str(shared_tmp), token)
    theirs = os.path.join(str(shared_tmp), "theirs")
    os.mkdir(theirs, 0o755)
    os.chown(theirs, OTHER, OTHER)
    mine = os.path.join(str(shared_tmp), "mine")
    os.mkdir(mine, 0o700)

    def client(socket, owner=None):
        return coopd.Client(socket, token_file=token_file, autostart=False, timeout=3,
                            retries=0, socket_owner=owner)

    # The other user's directory with its listener in it: refused by the directory's owner.
    listener = ForeignListener(os.path.join(theirs, "coopd.sock"), token)
    with pytest.raises(coopd.CoopdError) as e:
        client(os.path.join(theirs, "coopd.sock")).stats()
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert (f"socket {theirs}/coopd.sock: its directory {theirs}: owned by uid 65534, not you "
            "or root (0)") in e.value.message
    assert listener.finish() == (0, 0, 0)
    os.unlink(os.path.join(theirs, "coopd.sock"))

    # Its socket moved into the victim's own private directory (a socket keeps its owner).
    listener = ForeignListener(os.path.join(theirs, "coopd.sock"), token)
    os.rename(os.path.join(theirs, "coopd.sock"), os.path.join(mine, "coopd.sock"))
    with pytest.raises(coopd.CoopdError) as e:
        client(os.path.join(mine, "coopd.sock")).stats()
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert (f"socket {mine}/coopd.sock is owned by uid 65534, not you (0): refusing to send "
            "your token to it; if a shared coopd runs as that user on purpose, name it in "
            "COOPD_SOCKET_OWNER") in e.value.message
    assert listener.finish() == (0, 0, 0)

    # The control: with that user named as the socket's owner, the client connects and the
    # listener gets the token; so the refusals above are what kept it.
    os.unlink(os.path.join(mine, "coopd.sock"))
    listener = ForeignListener(os.path.join(theirs, "coopd.sock"), token)
    os.rename(os.path.join(theirs, "coopd.sock"), os.path.join(mine, "coopd.sock"))
    with pytest.raises(coopd.CoopdError) as e:
        client(os.path.join(mine, "coopd.sock"), owner="nobody").stats()
    assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    connections, _, token_seen = listener.finish()
    assert connections >= 1 and token_seen == 1


def _victims(d):
    keys, rc = os.path.join(d, "authorized_keys"), os.path.join(d, "bashrc")
    for path, text in ((keys, "ssh-ed25519 AAAAvictim victim@host\n"),
                       (rc, "export PATH=/usr/bin:/bin\n")):
        with open(path, "w") as f:
            f.write(text)
    return {keys: "ssh-ed25519 AAAAvictim victim@host\n", rc: "export PATH=/usr/bin:/bin\n"}


def _unchanged(victims):
    for path, text in victims.items():
        with open(path) as f:
            assert f.read() == text, f"{path} was written through a planted link"


@needs_root
def test_autostart_refuses_a_planted_directory_and_a_linked_log(shared_tmp, monkeypatch):
    from conftest import coopd_binary
    monkeypatch.delenv("COOPD_NO_AUTOSTART", raising=False)
    d = str(shared_tmp)
    victims = _victims(d)
    keys, rc = list(victims)
    # The other user's world-writable directory, with links as the lock and the log.
    run = os.path.join(d, "run")
    os.mkdir(run)
    os.chmod(run, 0o777)
    os.chown(run, OTHER, OTHER)
    os.symlink(keys, os.path.join(run, "coopd.sock.lock"))
    os.symlink(rc, os.path.join(run, "coopd.log"))
    with pytest.raises(coopd.CoopdError) as e:
        coopd.Client(os.path.join(run, "coopd.sock"), coopd_binary=coopd_binary(), timeout=10,
                     retries=0).stats()
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert f"its directory {run}: owned by uid 65534" in e.value.message
    # The user's own private directory, with a link where the log goes.
    own = os.path.join(d, "own")
    os.mkdir(own, 0o700)
    os.symlink(rc, os.path.join(own, "coopd.log"))
    with pytest.raises(coopd.CoopdError) as e:
        coopd.Client(os.path.join(own, "coopd.sock"), coopd_binary=coopd_binary(), timeout=10,
                     retries=0).stats()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE
    assert (f"(auto-start: {own}/coopd.log: cannot open: Too many levels of symbolic links (a "
            "symbolic link: refused, never followed))") in e.value.message
    assert not os.path.exists(os.path.join(own, "coopd.sock"))
    _unchanged(victims)


def test_a_token_file_others_could_rewrite_is_refused(tmp_path):
    path = _token_file(str(tmp_path), "0123456789abcdef0123456789abcdef")
    os.chmod(path, 0o660)
    with pytest.raises(coopd.CoopdError) as e:
        coopd.Client(str(tmp_path / "none.sock"), token_file=path)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.message == (f"token_file (COOPD_TOKEN_FILE) {path!r}: mode 0660 lets its "
                               "group write it; chmod 640 (or 600)")
    os.chmod(path, 0o640)
    coopd.Client(str(tmp_path / "none.sock"), token_file=path).close()
    if os.geteuid() == 0:
        os.chmod(path, 0o600)
        os.chown(path, OTHER, OTHER)
        with pytest.raises(coopd.CoopdError) as e:
            coopd.Client(str(tmp_path / "none.sock"), token_file=path)
        assert "owned by uid 65534, who may rewrite it" in e.value.message


# ---- coopd.cute's bitcode directory ---------------------------------------------------------

@pytest.fixture
def primitive(monkeypatch):
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    pytest.importorskip("cutlass.cute", reason="CuTe DSL is not installed (deploy/install-deps.sh "
                                               "installs nvidia-cutlass-dsl)")
    from coopd.cute import _primitive
    return _primitive


def test_cute_replaces_a_planted_bitcode_file_instead_of_returning_it(primitive, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("COOPD_CUTE_DIR", str(tmp_path / "cute"))
    real = b"BC\xc0\xde the real bitcode"
    path = primitive._bitcode_file(real, "block_reduce")
    assert open(path, "rb").read() == real
    assert stat.S_IMODE(os.stat(tmp_path / "cute").st_mode) == 0o700
    # Planted under the predictable name: other bytes, then a link to a victim's file.
    with open(path, "wb") as f:
        f.write(b"BC\xc0\xde planted")
    assert primitive._bitcode_file(real, "block_reduce") == path
    assert open(path, "rb").read() == real
    victim = tmp_path / "victim"
    victim.write_bytes(b"the victim's file")
    os.unlink(path)
    os.symlink(victim, path)
    assert primitive._bitcode_file(real, "block_reduce") == path
    assert not os.path.islink(path) and open(path, "rb").read() == real
    assert victim.read_bytes() == b"the victim's file"


def test_cute_refuses_a_bitcode_directory_others_may_write_or_own(primitive, tmp_path,
                                                                  monkeypatch):
    d = tmp_path / "cute"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("COOPD_CUTE_DIR", str(d))
    with pytest.raises(coopd.CoopdError) as e:
        primitive._bitcode_file(b"BC", "x")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert e.value.message == (f"coopd.cute: directory {d}: mode 0777 lets every user write it "
                               "(it must be writable by its owner alone); remove it, or choose "
                               "another directory with COOPD_CUTE_DIR")
    link = tmp_path / "link"
    os.symlink(tmp_path, link)
    monkeypatch.setenv("COOPD_CUTE_DIR", str(link))
    with pytest.raises(coopd.CoopdError) as e:
        primitive.bitcode_dir()
    assert "is a symbolic link" in e.value.message
    if os.geteuid() == 0:
        os.chmod(d, 0o755)
        os.chown(d, OTHER, OTHER)
        monkeypatch.setenv("COOPD_CUTE_DIR", str(d))
        with pytest.raises(coopd.CoopdError) as e:
            primitive.bitcode_dir()
        assert f"directory {d}: owned by uid 65534, not you (0)" in e.value.message
