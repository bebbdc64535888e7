"""server/'s units include only units below them (issue 30's dependency rule):

    daemon -> {rpc, metrics} -> service -> {engine, cache, plan} -> toolchain -> catalog -> util

daemon/ is the composition root and may include any unit; rpc/ and metrics/ sit beside each
other on service/; engine/, cache/ and plan/ beside each other on toolchain/. An #include of
"server/UNIT/..." from a unit at or below UNIT's level (a sibling, or upward) fails, naming
the file and line; so does a folder under server/ that this table does not place, and a level
in server/CMakeLists.txt's COOPD_UNIT_LEVELS (which CMake checks the libraries' links against)
that differs from this table's. Run by ctest (Rules.UnitsIncludeOnlyUnitsBelow) and by every
build (target coopd_unit_rule):

    python3 tests/rules/layering.py [ROOT]
"""

from __future__ import annotations

import os
import re
import sys
from typing import List

import _rule

LEVEL = {"util": 0, "catalog": 1, "toolchain": 2, "engine": 3, "cache": 3, "plan": 3,
         "service": 4, "rpc": 5, "metrics": 5, "daemon": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+"server/([a-z_]+)/')


# The unit whose library is named differently: daemon/ builds coopd_server.
LIBRARY = {"daemon": "coopd_server"}
CMAKE_LEVELS = re.compile(r"set\(COOPD_UNIT_LEVELS([^)]*)\)")


def cmake_violations(root: str) -> List[str]:
    """COOPD_UNIT_LEVELS in server/CMakeLists.txt must place each unit's library as LEVEL does."""
    path = os.path.join(root, "server", "CMakeLists.txt")
    with open(path, encoding="utf-8") as f:
        m = CMAKE_LEVELS.search(f.read())
    if not m:
        return [f"{os.path.relpath(path, root)}: no set(COOPD_UNIT_LEVELS ...) to check"]
    cmake = dict(item.split("=", 1) for item in m.group(1).split())
    want = {LIBRARY.get(unit, "coopd_" + unit): str(level) for unit, level in LEVEL.items()}
    if cmake == want:
        return []
    return [f"{os.path.relpath(path, root)}: COOPD_UNIT_LEVELS is {cmake}, but "
            f"tests/rules/layering.py's LEVEL gives {want}; keep them the same"]


def violations(root: str) -> List[str]:
    server = os.path.join(root, "server")
    bad = cmake_violations(root)
    for unit in sorted(os.listdir(server)):
        folder = os.path.join(server, unit)
        if not os.path.isdir(folder):
            continue
        if unit not in LEVEL:
            bad.append(f"server/{unit}/: a unit tests/rules/layering.py does not place; add it "
                       "to LEVEL where it belongs")
            continue
        for dirpath, _, files in os.walk(folder):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) == unit:
                            continue
                        target = m.group(1)
                        if target not in LEVEL or LEVEL[target] >= LEVEL[unit]:
                            bad.append(f"{os.path.relpath(path, root)}:{number}: {unit}/ includes "
                                       f"{target}/, which is not below it: {line.strip()}")
    return bad


def main() -> int:
    return _rule.run("layering", violations, lambda root: "ok (every include runs downward)",
                     lambda n: f"{n} include(s) run sideways or upward")


if __name__ == "__main__":
    sys.exit(main())
