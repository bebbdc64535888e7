"""The rule issue 11 set and issue 30 restated: a family is named only in its own file.

server/catalog/families/ defines each family (its name, methods, checks and rendering);
everything else reads the Family description and names no family. A family name written as a
string literal in C++ code outside those files (server/, client/src, client/coopctl; comments
aside) is a special case that the next family would miss, so this check fails on it, naming
the file and line. Run by ctest (Rules.FamilyNamesOnlyInFamilyFiles):

    python3 tests/rules/family_names.py [ROOT]
"""

from __future__ import annotations

import os
import re
import sys
from typing import Iterator, List, Tuple

import _rule

FAMILIES_DIR = os.path.join("server", "catalog", "families")
SCANNED = ["server", os.path.join("client", "src"), os.path.join("client", "coopctl"),
           os.path.join("client", "include")]


def family_names(root: str) -> List[str]:
    """Each family file's `static const Family f{ .name = "..." }`: the first .name after it."""
    names = []
    folder = os.path.join(root, FAMILIES_DIR)
    for entry in sorted(os.listdir(folder)):
        if not entry.endswith(".cc"):
            continue
        with open(os.path.join(folder, entry), encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"\bFamily\s+\w+\s*\{\s*\.name\s*=\s*\"([a-z0-9_]+)\"", text):
            names.append(m.group(1))
    return names


def code_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, the line with comments removed): // to the end of a line and /* ... */,
    outside string literals."""
    out, i, n, line = [], 0, len(text), 1
    in_block = False
    current = []
    while i < n:
        c = text[i]
        if in_block:
            if text.startswith("*/", i):
                in_block = False
                i += 2
                continue
            if c == "\n":
                out.append((line, "".join(current)))
                current, line = [], line + 1
            i += 1
            continue
        if text.startswith("/*", i):
            in_block = True
            i += 2
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == '"' or c == "'":
            # a string or character literal, escapes included (raw strings are not used here)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            current.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "\n":
            out.append((line, "".join(current)))
            current, line = [], line + 1
        else:
            current.append(c)
        i += 1
    out.append((line, "".join(current)))
    return iter(out)


def violations(root: str) -> List[str]:
    names = family_names(root)
    if len(names) < 10:
        return [f"found only {len(names)} families in {FAMILIES_DIR} ({names}): the parse broke"]
    literal = re.compile(r"\"(" + "|".join(map(re.escape, names)) + r")\"")
    found = []
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == FAMILIES_DIR or rel_dir.startswith(FAMILIES_DIR + os.sep):
                continue
            for name in sorted(files):
                if not name.endswith((".cc", ".h", ".c")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for number, code in code_lines(text):
                    for m in literal.finditer(code):
                        found.append(f"{os.path.relpath(path, root)}:{number}: names the family "
                                     f"{m.group(0)} outside {FAMILIES_DIR}/: {code.strip()}")
    return found


def main() -> int:
    return _rule.run(
        "family_names", violations,
        lambda root: f"ok ({len(family_names(root))} families, named only in {FAMILIES_DIR}/)",
        lambda n: f"{n} place(s) name a family outside its file; read the Family description "
                  "instead (server/catalog/family.h)")


if __name__ == "__main__":
    sys.exit(main())
