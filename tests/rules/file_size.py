"""Source files stay short enough to read (issue 30): under server/service/, client/src/ and
client/coopctl/ at most 600 lines, the rest of server/ and client/ (C++, C and the Python
package) at most 700. Generated code is not in those folders (it is written to the build
directory). A file over its cap fails, naming its length and the cap; split it by what it does
rather than raise the cap.
Run by ctest (Rules.SourceFilesStayShort):

    python3 tests/rules/file_size.py [ROOT]
"""

from __future__ import annotations

import os
import sys
from typing import List

import _rule

# The first matching prefix sets the cap.
CAPS = [("server/service/", 600), ("client/src/", 600), ("client/coopctl/", 600),
        ("server/", 700), ("client/", 700)]
SOURCE = (".cc", ".h", ".c", ".py")


def violations(root: str) -> List[str]:
    bad = []
    for top in ("server", "client"):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs
                             if d not in ("build", "__pycache__") and not d.endswith(".egg-info"))
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                cap = next(c for prefix, c in CAPS if rel.startswith(prefix))
                with open(path, encoding="utf-8") as f:
                    lines = sum(1 for _ in f)
                if lines > cap:
                    bad.append(f"{rel}: {lines} lines, over the cap of {cap} for its folder")
    return bad


def main() -> int:
    return _rule.run("file_size", violations, lambda root: "ok (every file within its cap)",
                     lambda n: f"{n} file(s) over their cap")


if __name__ == "__main__":
    sys.exit(main())
