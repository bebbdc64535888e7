"""Which CCCL coopd.coop asks coopd to compile against.

cuda.coop 1.1.1 compiles against the CCCL headers of the cuda-cccl wheel it comes in. So where
that wheel is installed, coopd.coop asks for the CCCL of the same version, when the daemon's
catalogue lists one (``coopd.Client.catalog().cccls``); otherwise (no cuda-cccl, headers without
a version, or a daemon that serves no CCCL of that version) it asks for the daemon's default.
Nothing is printed either way; :func:`cccl_for` says what was chosen.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import re
import sys
import threading
from typing import Any, Dict, Iterable, List, Optional

# Where the cuda-cccl wheel keeps the CCCL version, relative to site-packages (and to the
# cuda.cccl package, below).
_VERSION_H = ("headers", "include", "cuda", "std", "__cccl", "version.h")
_DEFINE = re.compile(r"^\s*#\s*define\s+CCCL_VERSION\s+(\d+)\s*$", re.MULTILINE)

_lock = threading.Lock()
_chosen: Dict[str, str] = {}  # socket -> what coopd.coop asks for there


def version_from_header(text: str) -> Optional[str]:
    """The CCCL version a version.h defines (``#define CCCL_VERSION 3005000`` -> "3.5.0":
    major * 1000000 + minor * 1000 + patch), or None when it defines none."""
    m = _DEFINE.search(text)
    if m is None:
        return None
    v = int(m.group(1))
    return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"


def _candidates() -> List[str]:
    """Paths of cuda.cccl's version.h: from the cuda-cccl distribution's metadata, then from
    a cuda/cccl package on sys.path. Imports nothing."""
    out = []
    try:
        dist = importlib.metadata.distribution("cuda-cccl")
        out.append(str(dist.locate_file(os.path.join("cuda", "cccl", *_VERSION_H))))
    except importlib.metadata.PackageNotFoundError:
        pass
    dirs = [os.path.join(p or os.getcwd(), "cuda") for p in sys.path if isinstance(p, str)]
    dirs = [d for d in dirs if os.path.isdir(d)]
    try:
        spec = importlib.machinery.PathFinder.find_spec("cuda.cccl", dirs) if dirs else None
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        out.append(os.path.join(location, *_VERSION_H))
    return out


def installed_version() -> Optional[str]:
    """The CCCL version of the installed cuda-cccl's headers ("3.5.0"), or None when cuda-cccl
    is not installed or its headers cannot be read."""
    for path in _candidates():
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                version = version_from_header(f.read())
        except OSError:
            continue
        if version is not None:
            return version
    return None


def choose(version: Optional[str], cccls: Iterable[Any]) -> str:
    """What to put in Spec.cccl for the cuda-cccl headers of ``version``, given the daemon's
    CCCLs (CcclInfo messages or anything with ``name``, ``version`` and ``is_default``): ""
    (the daemon's default) when ``version`` is None, when no CCCL has it, or when the default
    has it; else the name of the first CCCL that has it (a name, never ambiguous as a version
    served by two trees would be)."""
    if not version:
        return ""
    matches = [c for c in cccls if c.version == version]
    if not matches or any(c.is_default for c in matches):
        return ""
    return matches[0].name


def cccl_for(client: Any) -> str:
    """Spec.cccl for coopd.coop's specs on ``client``'s daemon (see the module's docstring);
    decided once per socket and process. A daemon whose catalogue cannot be read gets ""."""
    with _lock:
        if client.socket in _chosen:
            return _chosen[client.socket]
    version = installed_version()
    chosen = ""
    if version is not None:
        try:
            chosen = choose(version, client.catalog().cccls)
        except Exception:  # the spec's own request will report an unreachable daemon
            chosen = ""
    with _lock:
        _chosen[client.socket] = chosen
    return chosen
