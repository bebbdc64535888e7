"""The optional dependencies of coopd's frontends, checked when a frontend is imported."""

from __future__ import annotations

import importlib
from typing import Sequence


def require_extra(frontend: str, extra: str, modules: Sequence[str]) -> None:
    """Imports ``modules`` in order. When one of them, or something it imports, is not
    installed, raises ImportError naming the pip extra that installs them, instead of the bare
    error of the first missing module. An installed module that fails for another reason raises
    its own error."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            missing = e.name or module
            raise ImportError(f"{frontend} needs the '{extra}' extra: pip install 'coopd[{extra}]' "
                              f"(no module named '{missing}')", name=missing) from e
