"""The package as users install it: its frontends' extras, and its types.

Importing a frontend (coopd.numba, coopd.cute) without its pip extra names the extra. Each such
case runs a fresh interpreter whose first finder on sys.meta_path refuses some modules as if they
were not installed (ModuleNotFoundError, what Python raises for an absent module), then imports
the frontend for real and reports what it raised.

mypy, at the version deploy/install-deps.sh pins, finds nothing in coopd and its frontends as
client/python/pyproject.toml's [tool.mypy] configures it (numba-cuda and CuTe DSL read as Any).
(The wheel itself is built and checked by test_stubs.py.)
"""

import json
import os
import re
import subprocess
import sys
from typing import List, Optional

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "client", "python")

# argv[1]: comma-separated top-level names to hide; argv[2]: "missing" (hide them as absent) or
# "broken" (a plain ImportError, as from an installed module that fails); argv[3]: the module to
# import. Prints the outcome as JSON.
_PROBE = r"""
import importlib, json, sys

hidden = set(filter(None, sys.argv[1].split(",")))
broken = sys.argv[2] == "broken"


class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in hidden:
            return None
        if broken:
            raise ImportError(f"{name} is installed but fails to load", name=name)
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, Hide())
try:
    importlib.import_module(sys.argv[3])
    print(json.dumps({"ok": True, "hidden_loaded": sorted(hidden & set(sys.modules))}))
except ImportError as e:
    print(json.dumps({"ok": False, "type": type(e).__name__, "message": str(e), "name": e.name,
                      "cause": type(e.__cause__).__name__ if e.__cause__ else None}))
"""


def _import(module: str, hidden: List[str], mode: str = "missing") -> dict:
    env = dict(os.environ, PYTHONPATH=PACKAGE)
    out = subprocess.run([sys.executable, "-c", _PROBE, ",".join(hidden), mode, module],
                         check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout
    return json.loads(out)


def _installed(module: str) -> Optional[str]:
    """None when ``module`` imports here, else why not."""
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    return None if r.returncode == 0 else r.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("frontend, extra, hidden, name", [
    ("coopd.numba", "numba", ["numpy"], "numpy"),
    ("coopd.numba", "numba", ["numba_cuda"], "numba_cuda"),
    ("coopd.numba", "numba", ["numba"], "numba"),  # numba-cuda's own import of numba
    ("coopd.numba", "numba", ["numpy", "numba", "numba_cuda", "cuda"], "numpy"),
    ("coopd.cute", "cute", ["cutlass"], "cutlass"),
    ("coopd.cute", "cute", ["numpy"], "numpy"),
])
def test_a_frontend_without_its_extra_names_the_extra(frontend, extra, hidden, name):
    r = _import(frontend, hidden)
    assert not r["ok"], f"{frontend} imported with {hidden} hidden"
    assert r["message"].startswith(
        f"{frontend} needs the '{extra}' extra: pip install 'coopd[{extra}]'"), r["message"]
    assert r["name"] == name and f"'{name}'" in r["message"], r
    assert r["cause"] == "ModuleNotFoundError"


def test_coopd_alone_needs_no_extra():
    r = _import("coopd", ["numpy", "numba", "numba_cuda", "cuda", "cutlass"])
    assert r == {"ok": True, "hidden_loaded": []}


def test_an_installed_module_that_fails_keeps_its_own_error():
    # Not a missing extra: the error is the module's own, not rewritten.
    r = _import("coopd.cute", ["cutlass"], mode="broken")
    assert not r["ok"] and r["type"] == "ImportError"
    assert r["message"] == "cutlass is installed but fails to load", r["message"]
    assert "extra" not in r["message"]


@pytest.mark.parametrize("frontend, dependency", [("coopd.numba", "numba_cuda"),
                                                  ("coopd.cute", "cutlass.cute")])
def test_with_the_extra_the_frontend_imports(frontend, dependency):
    # The control for the cases above: with nothing hidden, the same probe imports the frontend.
    why = _installed(dependency)
    if why is not None:
        pytest.skip(f"{dependency} is not installed here ({why})")
    r = _import(frontend, [])
    assert r == {"ok": True, "hidden_loaded": []}, r


def test_mypy_finds_nothing_in_the_package(tmp_path):
    # The pinned mypy, not whatever is on PATH: a newer one may judge differently.
    pinned = _pinned_mypy()
    try:
        import mypy.version
    except ModuleNotFoundError:
        pytest.fail(f"no mypy: run deploy/install-deps.sh (it installs mypy=={pinned})")
    assert mypy.version.__version__ == pinned, (
        f"mypy {mypy.version.__version__}, not the pinned {pinned}: run deploy/install-deps.sh")
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                        "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"],
                       cwd=PACKAGE, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stdout.strip(), f"mypy:\n{r.stdout}{r.stderr}"


def _pinned_mypy() -> str:
    with open(os.path.join(ROOT, "deploy", "install-deps.sh")) as f:
        pins = re.findall(r"\bmypy==([0-9][0-9.]*)", f.read())
    assert pins, "deploy/install-deps.sh pins no mypy version"
    return pins[0]
