#!/usr/bin/env python3
"""Compares the SASS of the timed kernels, linked (coopd LTO-IR) vs native (CUB by nvcc).

usage: sass_diff.py LINKED.sass NATIVE.sass   (cuobjdump -sass output)
Prints, per kernel, the instruction totals and every opcode whose count differs, memory
instructions (LDG/STG/LDS/STS/LDL/STL) first: a ratio away from 1.0 starts here.
"""
import collections
import re
import sys

MEMORY = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST")


def parse(path):
    kernels, current = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = kernels.setdefault(m.group(1), collections.Counter())
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and current is not None:
            current[m.group(1).split(".")[0]] += 1
    return kernels


def main(linked_path, native_path):
    linked, native = parse(linked_path), parse(native_path)
    for name in sorted(linked):
        a, b = linked[name], native.get(name, collections.Counter())
        ops = sorted((op for op in set(a) | set(b) if a[op] != b[op]),
                     key=lambda op: (op not in MEMORY, op))
        same_mem = all(a[op] == b[op] for op in MEMORY)
        diff = ", ".join(f"{op} {a[op]} vs {b[op]}" for op in ops) or "identical opcode counts"
        print(f"  {name:14} {sum(a.values()):5} vs {sum(b.values()):5} instructions; memory "
              f"instructions {'the same' if same_mem else 'DIFFER'}; {diff}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
