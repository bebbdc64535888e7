"""The checked-in stubs (client/python/coopd/_proto) match proto/coop/v1/coop.proto.

Regenerates them with the pinned grpcio-tools (deploy/install-deps.sh puts it in
.deps/protoc-venv) and compares byte for byte: editing the .proto without running
client/python/generate_stubs.py fails here.
"""

import filecmp
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "client", "python")
VENV_PYTHON = os.path.join(ROOT, ".deps", "protoc-venv", "bin", "python")


def test_checked_in_stubs_match_the_proto():
    if not os.access(VENV_PYTHON, os.X_OK):
        pytest.fail(f"no {VENV_PYTHON}: run deploy/install-deps.sh (it installs grpcio-tools there)")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([VENV_PYTHON, os.path.join(PACKAGE, "generate_stubs.py"), out], check=True)
        for name in ("coop_pb2.py", "coop_pb2.pyi", "coop_pb2_grpc.py"):
            fresh = os.path.join(out, "coop", "v1", name)
            checked_in = os.path.join(PACKAGE, "coopd", "_proto", "coop", "v1", name)
            assert filecmp.cmp(fresh, checked_in, shallow=False), (
                f"{checked_in} drifted from proto/coop/v1/coop.proto; run "
                f"{VENV_PYTHON} client/python/generate_stubs.py")


def test_pip_installs_the_package(tmp_path):
    venv = tmp_path / "venv"
    # Without the PYTHONPATH the tests run under, so the import finds the installed copy.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(["python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    # From a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
           "--no-build-isolation", "--disable-pip-version-check", str(source)]
    subprocess.run(pip, check=True, env=env)
    code = ("import coopd, os; import coopd._proto.coop.v1.coop_pb2 as p; "
            "print(os.path.dirname(coopd.__file__)); print(p.PrimitiveSpec(family='x').family); "
            "print(os.path.exists(os.path.join(os.path.dirname(coopd.__file__), 'py.typed')))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True, cwd=str(tmp_path),
                         env=env, capture_output=True, text=True).stdout.split()
    assert out[0].startswith(str(venv)), "imported the installed copy, not the source tree"
    assert out[1:] == ["x", "True"]
