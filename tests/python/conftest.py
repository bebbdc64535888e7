"""pytest fixtures: a real coopd on a temporary Unix socket and cache directory.

The daemon binary comes from $COOPD_BIN (ctest sets it), else ./build/server/coopd. Waiting for
it is a liveness deadline, never a speed check.
"""

import os
import signal
import subprocess
import tempfile
import time

import pytest

import coopd

# Clients in these tests never start a daemon of their own; the auto-start test clears this for
# the process it starts.
os.environ.setdefault("COOPD_NO_AUTOSTART", "1")



def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: runs kernels on a GPU (skips where there is none)")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def coopd_binary() -> str:
    path = os.environ.get("COOPD_BIN") or os.path.join(ROOT, "build", "server", "coopd")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no coopd binary at {path} (build first, or set COOPD_BIN)")
    return path


class Daemon:
    def __init__(self, directory: str, *args: str) -> None:
        self.dir = directory
        self.socket = os.path.join(directory, "coopd.sock")
        self.log_path = os.path.join(directory, "coopd.log")
        self.args = args
        self.proc = None

    def start(self) -> "Daemon":
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [coopd_binary(), "--socket", self.socket, "--cache-dir",
             os.path.join(self.dir, "cache"), *self.args], stdout=log, stderr=log)
        end = time.monotonic() + 120
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                pytest.fail(f"coopd exited during start-up:\n{self.log()}")
            if os.path.exists(self.socket):
                try:
                    with coopd.Client(self.socket, timeout=2, retries=0) as c:
                        c.stats()
                    return self
                except coopd.CoopdError as e:
                    if e.from_server:  # it answered (UNAUTHENTICATED with --tokens-unix)
                        return self
            time.sleep(0.05)
        pytest.fail(f"coopd did not become ready:\n{self.log()}")

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def client(self, **kwargs) -> coopd.Client:
        return coopd.Client(self.socket, **kwargs)


@pytest.fixture(scope="session")
def daemon():
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d:
        daemon = Daemon(d).start()
        yield daemon
        assert daemon.stop() == 0, daemon.log()


@pytest.fixture
def tmpdir_path():
    with tempfile.TemporaryDirectory(prefix="coopd-pytest-") as d:
        yield d
