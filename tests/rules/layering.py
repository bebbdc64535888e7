"""server/'s units include only units below them (issue 30's dependency rule):

    daemon -> {rpc, metrics} -> service -> {engine, cache, plan} -> toolchain -> catalog -> util

daemon/ is the composition root and may include any unit; rpc/ and metrics/ sit beside each
other on service/; engine/, cache/ and plan/ beside each other on toolchain/. An #include of
"server/UNIT/..." from a unit at or below UNIT's level (a sibling, or upward) fails, naming
the file and line; so does a folder under server/ that this table does not place. Run by ctest
(Rules.UnitsIncludeOnlyUnitsBelow):

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


def violations(root: str) -> List[str]:
    server = os.path.join(root, "server")
    bad = []
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
