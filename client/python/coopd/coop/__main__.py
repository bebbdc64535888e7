"""``python -m coopd.coop run [--force] -- CMD [ARGS...]``: runs CMD with ``import
cuda.coop._experimental`` giving coopd.coop (CMD ending in .py runs with this Python);
``python -m coopd.coop boot-path``: the directory to put first on PYTHONPATH, with
COOPD_COOP_ALIAS=1, to do the same by hand; ``python -m coopd.coop active``: which
implementation ``cuda.coop._experimental`` is here."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from coopd.coop._alias import BOOT_DIR, ENV, active


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coopd.coop", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a command with cuda.coop served by coopd.coop")
    run.add_argument("--force", action="store_true",
                     help="shadow a real cuda.coop (cuda-cccl) if one is importable")
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...] or SCRIPT.py ARGS")
    sub.add_parser("boot-path", help="print the directory the switch puts on PYTHONPATH")
    sub.add_parser("active", help="print which implementation cuda.coop._experimental is")
    args = parser.parse_args(argv)
    if args.command == "boot-path":
        print(BOOT_DIR)
        return 0
    if args.command == "active":
        print(active() or "none")
        return 0
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("run: give a command (python -m coopd.coop run -- CMD ...)")
    if cmd[0].endswith(".py"):
        cmd = [sys.executable, *cmd]
    env = dict(os.environ)
    env[ENV] = "force" if args.force else "1"
    paths = [BOOT_DIR] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(BOOT_DIR)))
    if os.path.basename(package_root) not in ("site-packages", "dist-packages"):
        paths.append(package_root)  # a source tree: the child must find coopd too
    env["PYTHONPATH"] = os.pathsep.join(paths)
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        print(f"python -m coopd.coop run: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
