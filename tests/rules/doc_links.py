"""Every relative link in README.md and docs/*.md resolves: the file exists and, for a
#fragment, the target has a heading with that anchor (GitHub's rule: lower case, punctuation
but '-' and '_' dropped, spaces to '-', a '-N' suffix for repeats). And README.md stays a front
page of at most 250 lines (issue 30): what does not fit goes to docs/. Run by ctest
(Rules.DocLinksResolve):

    python3 tests/rules/doc_links.py [ROOT]
"""

from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Set

import _rule

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def anchors(path: str, cache: Dict[str, Set[str]]) -> Set[str]:
    if path in cache:
        return cache[path]
    seen: Dict[str, int] = {}
    out: Set[str] = set()
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            text = re.sub(r"`([^`]*)`", r"\1", m.group(2))
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    cache[path] = out
    return out


README_MAX_LINES = 250


def check(root: str) -> List[str]:
    docs = [os.path.join(root, "README.md")]
    bad = []
    with open(docs[0], encoding="utf-8") as f:
        count = sum(1 for _ in f)
    if count > README_MAX_LINES:
        bad.append(f"README.md: {count} lines, over the front page's {README_MAX_LINES}: move "
                   "detail to docs/ and link it")
    docs += sorted(os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs"))
                   if f.endswith(".md"))
    cache: Dict[str, Set[str]] = {}
    for doc in docs:
        fenced = False
        with open(doc, encoding="utf-8") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                path, _, fragment = target.partition("#")
                where = os.path.relpath(doc, root)
                resolved = doc if not path else os.path.normpath(
                    os.path.join(os.path.dirname(doc), path))
                if not os.path.exists(resolved):
                    bad.append(f"{where}:{number}: {target}: no such file")
                    continue
                if fragment and resolved.endswith(".md") and \
                        fragment not in anchors(resolved, cache):
                    bad.append(f"{where}:{number}: {target}: no heading with that anchor in "
                               f"{os.path.relpath(resolved, root)}")
    return bad


def main() -> int:
    return _rule.run("doc_links", check, lambda root: "ok",
                     lambda n: f"{n} link(s) do not resolve")


if __name__ == "__main__":
    sys.exit(main())
