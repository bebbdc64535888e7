"""Installs coopd.coop's alias for ``cuda.coop`` when $COOPD_COOP_ALIAS is set (put first on
PYTHONPATH by ``python -m coopd.coop run``), then runs the environment's own sitecustomize, if
any. Where the alias is refused (a real cuda.coop is importable), the program does not start."""

import os
import sys


def _install() -> None:
    try:
        from coopd.coop._alias import AliasRefused, install_from_environment
    except ImportError as e:
        sys.stderr.write(f"coopd.coop: COOPD_COOP_ALIAS is set but coopd is not importable: "
                         f"{e}\n")
        sys.stderr.flush()
        os._exit(2)  # SystemExit while site imports this would be a fatal error
    try:
        install_from_environment()
    except (AliasRefused, ValueError) as e:
        sys.stderr.write(f"{e}\n")
        sys.stderr.flush()
        os._exit(2)  # SystemExit while site imports this would be a fatal error


def _chain() -> None:
    """Runs the next sitecustomize on sys.path (the one this file hides)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_install()
_chain()
