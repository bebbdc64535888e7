"""The switch that makes ``import cuda.coop._experimental`` give coopd.coop.

:func:`install_alias` puts a finder first on ``sys.meta_path`` that answers for ``cuda.coop``
and every name under it: ``cuda.coop`` becomes a small package whose ``_experimental`` is
``coopd.coop``, and ``cuda.coop._experimental.<name>`` is ``coopd.coop.<name>``. Nothing else
under ``cuda`` (cuda.bindings, cuda.core) is touched. It is never installed by default, and it
refuses where a real cuda-cccl's ``cuda.coop`` is importable or imported, unless forced.

Programs that cannot be edited: ``python -m coopd.coop run -- CMD ...`` runs CMD with
``COOPD_COOP_ALIAS=1`` and this package's ``_boot`` directory first on ``PYTHONPATH``; the
``sitecustomize`` there installs the alias when (and only when) ``COOPD_COOP_ALIAS`` is set, then
runs any other ``sitecustomize`` the environment has.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
import types
from typing import Any, Optional

_log = logging.getLogger("coopd.coop")
ROOT = "cuda.coop"
EXPERIMENTAL = "cuda.coop._experimental"
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_boot")
ENV = "COOPD_COOP_ALIAS"


class AliasRefused(ImportError):
    """install_alias found a real cuda.coop and was not forced."""


def _target(fullname: str) -> Optional[str]:
    if fullname == EXPERIMENTAL:
        return "coopd.coop"
    if fullname.startswith(EXPERIMENTAL + "."):
        return "coopd.coop" + fullname[len(EXPERIMENTAL):]
    return None


class _Loader(importlib.abc.Loader):
    def __init__(self, fullname: str) -> None:
        self.fullname = fullname
        self.saved_spec: Any = None

    def create_module(self, spec: Any) -> Any:
        if spec.name == ROOT:
            root = types.ModuleType(ROOT, "cuda.coop, served by coopd.coop (coopd.coop."
                                          "install_alias)")
            root.__path__ = []  # a package: its submodules come from the finder
            setattr(root, "__coopd_alias__", True)
            return root
        module = importlib.import_module(_target(spec.name) or "")
        self.saved_spec = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        if self.saved_spec is not None:  # importlib gave the module the alias's spec
            module.__spec__ = self.saved_spec
        if self.fullname == ROOT:
            module.__all__ = []


class _Finder(importlib.abc.MetaPathFinder):
    """Answers for cuda.coop and the names under it."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != ROOT and not fullname.startswith(ROOT + "."):
            return None
        if fullname != ROOT and _target(fullname) is None:
            return None  # cuda.coop.<other>: nothing there
        if fullname != ROOT and importlib.util.find_spec(_target(fullname) or "") is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(fullname),
                                              is_package=fullname in (ROOT, EXPERIMENTAL))


_finder: Optional[_Finder] = None


def real_cuda_coop() -> Optional[str]:
    """Where a real cuda.coop (NVIDIA's, from cuda-cccl) is imported or importable from, or
    None. Imports nothing."""
    mod = sys.modules.get(ROOT)
    if mod is not None and not getattr(mod, "__coopd_alias__", False):
        return getattr(mod, "__file__", None) or repr(mod)
    dirs = [os.path.join(p or os.getcwd(), "cuda") for p in sys.path if isinstance(p, str)]
    dirs = [d for d in dirs if os.path.isdir(d)]
    spec = importlib.machinery.PathFinder.find_spec(ROOT, dirs) if dirs else None
    if spec is None:
        return None
    return spec.origin or ", ".join(spec.submodule_search_locations or []) or ROOT


def installed() -> bool:
    return _finder is not None and _finder in sys.meta_path


def install_alias(force: bool = False, quiet: bool = False) -> None:
    """Makes ``import cuda.coop._experimental`` (and ``cuda.coop``) give coopd.coop in this
    process. Raises :class:`AliasRefused` where a real cuda.coop is importable or already
    imported, unless ``force`` (then coopd.coop shadows it; an already imported one is dropped
    from ``sys.modules``). Logs one line saying which implementation is active (unless
    ``quiet``). Installing twice is harmless."""
    global _finder
    if installed():
        return
    real = real_cuda_coop()
    if real and not force:
        raise AliasRefused(
            f"coopd.coop.install_alias: a real cuda.coop (cuda-cccl) is importable from {real}; "
            "refusing to shadow it. Uninstall cuda-cccl's cuda.coop, or pass force=True "
            f"({ENV}=force) to use coopd.coop instead")
    for name in [n for n in sys.modules if n == ROOT or n.startswith(ROOT + ".")]:
        del sys.modules[name]
    _finder = _Finder()
    sys.meta_path.insert(0, _finder)
    if not quiet:
        shadowed = f"; it shadows the real one at {real}" if real else ""
        _log.warning("coopd.coop: import cuda.coop._experimental gives coopd.coop (cuda.coop "
                     "1.1.1's API on coopd)%s", shadowed)


def uninstall_alias() -> None:
    """Undoes :func:`install_alias` (the modules it gave are dropped from ``sys.modules``)."""
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None
    for name in [n for n in sys.modules if n == ROOT or n.startswith(ROOT + ".")]:
        del sys.modules[name]


def active() -> Optional[str]:
    """Which implementation ``import cuda.coop._experimental`` gives in this process:
    "coopd.coop" (the alias is installed), "cuda-cccl" (NVIDIA's is importable), or None."""
    if installed():
        return "coopd.coop"
    return "cuda-cccl" if real_cuda_coop() else None


def install_from_environment() -> bool:
    """Installs the alias when ``$COOPD_COOP_ALIAS`` is "1" (or "force"); what the
    ``sitecustomize`` of ``python -m coopd.coop run`` calls. True when installed."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "0", "no", "false", "off"):
        return False
    if value not in ("1", "yes", "true", "on", "force"):
        raise ValueError(f"{ENV} must be 1 or force; got {value!r}")
    install_alias(force=value == "force")
    return True
