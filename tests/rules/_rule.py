"""What every rule check in tests/rules shares: the repository root (argv[1], else this
checkout's), printing each violation, and the exit status ctest reads."""

from __future__ import annotations

import os
import sys
from typing import Callable, List


def run(name: str, check: Callable[[str], List[str]], ok: Callable[[str], str],
        failed: Callable[[int], str]) -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad = check(root)
    for b in bad:
        print(b)
    print(f"{name}: {failed(len(bad)) if bad else ok(root)}")
    return 1 if bad else 0
