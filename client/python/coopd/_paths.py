"""Where coopd listens by default (the same rule as the C++ client and the daemon)."""

from __future__ import annotations

import os


def default_socket_path() -> str:
    """``$COOPD_SOCKET``, else ``$XDG_RUNTIME_DIR/coopd/coopd.sock``, else
    ``/tmp/coopd-$UID/coopd.sock``."""
    env = os.environ.get("COOPD_SOCKET")
    if env:
        return env
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "coopd", "coopd.sock")
    return f"/tmp/coopd-{os.getuid()}/coopd.sock"
