"""The checked-in stubs (client/python/coopd/_proto) match proto/coop/v1/coop.proto, and the
package builds into a wheel that pip installs.

Regenerates the stubs with the pinned grpcio-tools (deploy/install-deps.sh puts it in
.deps/protoc-venv) and compares byte for byte: editing the .proto without running
client/python/generate_stubs.py fails here. The wheel carries the repository's LICENSE and
names its license as an SPDX expression.
"""

import email.message
import email.parser
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

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


def _wheel_metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.BytesParser().parsebytes(wheel.read(name))


def test_pip_builds_a_wheel_with_the_license_and_installs_it(tmp_path):
    venv = tmp_path / "venv"
    # Without the PYTHONPATH the tests run under, so the import finds the installed copy.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(["python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    # From a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    # The wheel, built offline by this interpreter's setuptools (pyproject.toml's build
    # requirement, which deploy/install-deps.sh installs; the venv has an older one of its own).
    quiet = ["--quiet", "--no-deps", "--no-build-isolation", "--disable-pip-version-check"]
    subprocess.run([sys.executable, "-m", "pip", "wheel", *quiet, "--wheel-dir",
                    str(tmp_path / "dist"), str(source)], check=True, env=env)
    [wheel_path] = (tmp_path / "dist").glob("coopd-*.whl")
    with zipfile.ZipFile(wheel_path) as wheel:
        metadata = _wheel_metadata(wheel)
        licenses = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert licenses, f"no LICENSE in {wheel_path.name}: {wheel.namelist()}"
        with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
            assert wheel.read(licenses[0]) == f.read(), "the wheel's LICENSE is not the repository's"
    assert metadata["License-Expression"] == "Apache-2.0", metadata.items()
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["License"] is None, "the deprecated License field is written as well"
    classifiers = metadata.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and not any(c.startswith("License ::")
                                                        for c in classifiers), classifiers
    # The description is the README, which PyPI shows without the repository around it: no
    # relative links (they would point nowhere).
    relative = re.findall(r"\]\((?!https?://|#)([^)]*)\)", metadata.get_payload())
    assert not relative, f"the README has links that break once published: {relative}"
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", *quiet, str(wheel_path)],
                   check=True, env=env)
    code = ("import coopd, os; import coopd._proto.coop.v1.coop_pb2 as p; "
            "print(os.path.dirname(coopd.__file__)); print(p.PrimitiveSpec(family='x').family); "
            "print(os.path.exists(os.path.join(os.path.dirname(coopd.__file__), 'py.typed')))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True, cwd=str(tmp_path),
                         env=env, capture_output=True, text=True).stdout.split()
    assert out[0].startswith(str(venv)), "imported the installed copy, not the source tree"
    assert out[1:] == ["x", "True"]
