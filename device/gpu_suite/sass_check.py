#!/usr/bin/env python3
"""SASS checks on linked cubins (the work of sass_check.sh, which runs this).

One row per kernel (a kernel is an entry function of a cubin; its code, and the code of every
function that was not inlined into it, lives in its .text.<kernel> section):

  - temp-storage traffic is shared-memory instructions: kernels whose primitive keeps its
    TempStorage in shared memory have LDS/STS; those whose primitive uses none (see NO_SHARED)
    must have none;
  - no generic loads or stores (LD/ST/ATOM through generic addresses);
  - the wrapper is fully inlined. Every CALL's target is resolved: nvdisasm names it, or its
    offset is looked up in the cubin's symbol table. After nvJitLink -lto a function that was
    not inlined stays in the kernel's section under a local name, `$k_probe$coop_block_probe_..`,
    so names are matched anywhere, not only at their start. A CALL fails when its target
    contains `coop_` or is a user operator's symbol (SYMBOLS_FILE), and also when it is anything
    else that is not one of CUDA's own helpers on the allowlist below; a CALL through a register
    (a function pointer, or a driver function such as vprintf) passes only when the cubin imports
    nothing but allowlisted driver functions. Separately, a function whose name contains `coop_`
    or is a user operator's symbol, left anywhere in a kernel's code, fails it.
Local-memory instructions (LDL/STL) are counted and shown, not judged.

usage: sass_check.py CUBIN_DIR [SYMBOLS_FILE]
Prints a table, then one `RESULT sass <cubin>:<kernel> PASS|FAIL` line per kernel. Exit status
0 when every kernel passes, 1 when any check fails (each failure named in its row), 2 on a usage
error, an empty directory or a missing tool.
"""

import fnmatch
import os
import re
import shutil
import struct
import subprocess
import sys

# CUDA's out-of-line helpers that a kernel may CALL. ptxas emits these itself, for any kernel
# (CUB compiled in by nvcc gets the same): they are no wrapper and no user operator, and nothing
# can inline them. Matched against the name after its last `$` (ptxas names them
# `$__internal_<n>_$__cuda_sm20_div_u64`).
#   __cuda_sm*_div_*, _rem_*: IEEE-rounded float and double division (`x / y` without
#     -use_fast_math; the slow path runs only for denormal, huge or special operands) and 64-bit
#     integer division and remainder by a value unknown at compile time;
#   __cuda_sm*_sqrt_*, _dsqrt_*: IEEE-rounded sqrtf/sqrt, slow path for the same operands;
#   __cuda_sm*_rcp_*, _dblrcp_*: IEEE-rounded reciprocals (__frcp_rn, __drcp_rn, 1.0 / x).
HELPER_ALLOWLIST = re.compile(r"__cuda_sm[0-9]+x?_(div|rem|sqrt|dsqrt|rcp|dblrcp)_[a-z0-9_]+")
# Functions the CUDA driver supplies when it loads the module: the cubin imports them (an
# undefined symbol) and calls them through a register. Device-side printf and assert() are
# built on them; they can never be inlined, and say nothing about a wrapper's inlining.
DRIVER_ALLOWLIST = {"vprintf", "__assertfail"}

# Kernels (<cubin>:<kernel>) whose primitive uses no shared memory. warp_exchange (smem) and
# warp_load/warp_store transpose (a WarpExchange inside) keep theirs in shared memory.
SHARED_ANYWAY = ["warp_exchange_*", "warp_ls_transpose*"]
NO_SHARED = ["warp_*", "ls_direct:*", "ls_striped:*", "ls_vectorize:*"]

# `/*0070*/  @!P1 CALL.REL.NOINC `(target) ;`: offset, mnemonic (predicate dropped), operands.
INSTRUCTION = re.compile(
    r"^\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;?\s*$")
SECTION = re.compile(r'^\s*\.section\s+"?([^",]+)"?,')
LABEL = re.compile(r"^(\S+):\s*$")
STO_CUDA_ENTRY = 0x10
STT_FUNC = 2


class Symbol:
    def __init__(self, name, kind, other, shndx, value):
        self.name, self.kind, self.other, self.shndx, self.value = name, kind, other, shndx, value

    @property
    def is_func(self):
        return self.kind == STT_FUNC

    @property
    def is_entry(self):
        return self.is_func and self.shndx != 0 and bool(self.other & STO_CUDA_ENTRY)


def read_elf(path):
    """The section names (by index) and symbols of a 64-bit little-endian ELF cubin."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF cubin")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def string(table, offset):
        start = headers[table][4] + offset
        return data[start:data.index(b"\0", start)].decode()

    sections = [string(shstrndx, h[0]) for h in headers]
    symbols = []
    for h in headers:
        if h[1] != 2:  # SHT_SYMTAB
            continue
        link, offset, size, entsize = h[6], h[4], h[5], h[9]
        for pos in range(offset, offset + size, entsize):
            name, info, other, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, pos)
            symbols.append(Symbol(string(link, name), info & 0xF, other, shndx, value))
    return sections, symbols


def disassemble(path):
    """{section name: [(offset, mnemonic, operands)]} and {label: (section, offset)}."""
    out = subprocess.run(["nvdisasm", "-c", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError("nvdisasm failed: " + (out.stderr.strip() or f"exit {out.returncode}"))
    code, labels, pending = {}, {}, []
    section = None
    for line in out.stdout.splitlines():
        m = SECTION.match(line)
        if m:
            section, pending = m.group(1), []
            code.setdefault(section, [])
            continue
        if section is None:
            continue
        m = INSTRUCTION.match(line)
        if m:
            offset = int(m.group(1), 16)
            for label in pending:
                labels[label] = (section, offset)
            pending = []
            code[section].append((offset, m.group(2), m.group(3)))
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
    return code, labels


def base_name(name):
    """A symbol's own name: `$k_probe$coop_x` (a local copy in kernel k_probe) -> `coop_x`."""
    return name.rsplit("$", 1)[-1]


def forbidden(name, user_syms):
    """Why a function of this name must not be called or left in the cubin, or None."""
    if "coop_" in name:
        return "coop_ function"
    if base_name(name) in user_syms:
        return "user operator"
    return None


def judge_call(operands, mnemonic, section, sec_index, func_at, labels, imports, user_syms):
    """(failure or None, allowlisted target or None) for one CALL instruction."""
    register = re.match(r"U?R[0-9]+\b", operands)
    if register:
        reg = register.group(0)
        if ".ABS" in mnemonic and imports and imports <= DRIVER_ALLOWLIST:
            return None, " or ".join(sorted(imports)) + f" (through {reg})"
        if imports - DRIVER_ALLOWLIST:
            return (f"CALL through {reg}, and the cubin imports "
                    f"{', '.join(sorted(imports - DRIVER_ALLOWLIST))} (not on the allowlist)"), None
        return f"CALL through {reg}: a function pointer, target unknown", None
    m = re.search(r"`\(([^)]+)\)", operands)
    target = m.group(1) if m else None
    offset = None
    if target is None:
        m = re.match(r"(0x[0-9a-f]+)\b", operands)
        if not m:
            return f"CALL with an operand that was not understood: {operands!r}", None
        offset = int(m.group(1), 16)
    elif target.startswith(".L") and target in labels:
        label_section, offset = labels[target]
        if label_section != section:
            return f"CALL to {target} in another section ({label_section})", None
    if offset is not None:
        target = func_at.get((sec_index, offset))
        if target is None:
            return f"CALL to offset {offset:#x}, where the symbol table has no function", None
    why = forbidden(target, user_syms)
    if why:
        return f"CALL to {why} {target} (not inlined)", None
    if HELPER_ALLOWLIST.fullmatch(base_name(target)) and "__internal_" in target:
        return None, base_name(target)
    if target in DRIVER_ALLOWLIST and target in imports:
        return None, target
    return f"CALL to {target}, which is not one of CUDA's allowlisted helpers", None


def check_cubin(path, user_syms):
    """Rows (name, shared, local, generic, calls, failures, helpers) for each kernel of a cubin."""
    sections, symbols = read_elf(path)
    code, labels = disassemble(path)
    base = os.path.basename(path)[: -len(".cubin")]
    entries = [s for s in symbols if s.is_entry]
    entry_sections = {s.shndx for s in entries}
    func_at = {(s.shndx, s.value): s.name for s in symbols if s.is_func and s.shndx != 0}
    imports = {s.name for s in symbols if s.is_func and s.shndx == 0 and s.name}
    # Functions left in the cubin that must have been inlined: in a kernel's section they belong
    # to that kernel; in a section of their own (a link without -lto) to every kernel.
    leftovers = {}
    for s in symbols:
        if s.is_func and s.shndx != 0 and not s.is_entry and forbidden(s.name, user_syms):
            leftovers.setdefault(s.shndx if s.shndx in entry_sections else None, []).append(s)
    rows = []
    for entry in entries:
        section = sections[entry.shndx]
        body = code.get(section, [])
        count = lambda names: sum(1 for _, mn, _ in body if mn.split(".")[0] in names)
        name = f"{base}:{entry.name}"
        failures, helpers = [], []
        shared = count({"LDS", "STS", "ATOMS"})
        if any(fnmatch.fnmatchcase(name, p) for p in NO_SHARED) and not any(
                fnmatch.fnmatchcase(name, p) for p in SHARED_ANYWAY):
            if shared:
                failures.append("unexpected shared-memory traffic")
        elif not shared:
            failures.append("no LDS/STS: temp storage not in shared memory")
        generic = count({"LD", "ST", "ATOM"})
        if generic:
            failures.append(f"{generic} generic LD/ST")
        calls = [(mn, ops) for _, mn, ops in body if mn.split(".")[0] == "CALL"]
        for mnemonic, operands in calls:
            failure, helper = judge_call(operands, mnemonic, section, entry.shndx, func_at, labels,
                                         imports, user_syms)
            if failure and failure not in failures:
                failures.append(failure)
            if helper:
                helpers.append(helper)
        for s in leftovers.get(entry.shndx, []) + leftovers.get(None, []):
            failures.append(f"{forbidden(s.name, user_syms)} {s.name} left in the cubin")
        rows.append((name, shared, count({"LDL", "STL"}), generic, len(calls), failures, helpers))
    if not entries:
        rows.append((f"{base}:*", 0, 0, 0, 0, ["no kernel in the cubin"], []))
    return rows


def self_check():
    """The patterns must catch what they are meant to catch (and not global/shared/local forms)."""
    def mnemonic(line):
        m = INSTRUCTION.match(line)
        return m.group(2).split(".")[0] if m else None
    assert mnemonic("        /*0090*/                   LD.E R2, desc[UR4][R2.64] ;") == "LD"
    assert mnemonic("        /*0090*/              @!P1 ST.E.64 desc[UR4][R2.64], R4 ;") == "ST"
    assert mnemonic("        /*0090*/                   LDG.E R2, desc[UR4][R2.64] ;") == "LDG"
    assert mnemonic("        /*0090*/                   STS [R6+0x8], R13 ;") == "STS"
    m = INSTRUCTION.match("  /*0070*/    CALL.REL.NOINC `($k_probe$coop_block_probe_f32_0123) ;")
    assert m.group(2) == "CALL.REL.NOINC"
    assert m.group(3) == "`($k_probe$coop_block_probe_f32_0123)"
    assert forbidden(base_name("$k_probe$coop_block_probe_f32_0123"), set()) == "coop_ function"
    assert forbidden("$k$clamp_add_lto", {"clamp_add_lto"}) == "user operator"
    assert HELPER_ALLOWLIST.fullmatch(
        base_name("$__internal_5_$__cuda_sm3x_div_rn_noftz_f32_slowpath"))
    assert not HELPER_ALLOWLIST.fullmatch(base_name("$k$my_div_helper"))
    # A target given as an offset (or a label) is looked up in the symbol table, by section.
    funcs = {(13, 0xA0): "$k_probe$coop_block_probe_f32_0123", (13, 0x200): "$k_probe$helper"}
    call = lambda ops, labels={}: judge_call(ops, "CALL.REL.NOINC", ".text.k_probe", 13, funcs,
                                             labels, set(), set())
    assert call("0xa0")[0] == \
        "CALL to coop_ function $k_probe$coop_block_probe_f32_0123 (not inlined)"
    assert call("`(.L_x_3)", {".L_x_3": (".text.k_probe", 0x200)})[0].startswith(
        "CALL to $k_probe$helper, which is not")
    assert "no function" in call("0x1f0")[0]


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: sass_check.sh CUBIN_DIR [SYMBOLS_FILE]", file=sys.stderr)
        return 2
    self_check()
    if shutil.which("nvdisasm") is None:
        print("sass_check: nvdisasm not on PATH", file=sys.stderr)
        return 2
    directory = argv[1]
    user_syms = set()
    if len(argv) == 3 and os.path.isfile(argv[2]):
        with open(argv[2]) as f:
            user_syms = {line.strip() for line in f if line.strip()}
    cubins = sorted(f for f in os.listdir(directory) if f.endswith(".cubin")) \
        if os.path.isdir(directory) else []
    if not cubins:
        print(f"sass_check: no .cubin files in {directory}", file=sys.stderr)
        return 2
    failed = False
    print(f"{'kernel':<36} {'LDS/STS':>6} {'LDL/STL':>6} {'generic':>7} {'CALL':>5}  result")
    for cubin in cubins:
        try:
            rows = check_cubin(os.path.join(directory, cubin), user_syms)
        except (OSError, ValueError) as e:
            rows = [(f"{cubin[:-len('.cubin')]}:*", 0, 0, 0, 0, [f"cannot be read: {e}"], [])]
        for name, shared, local, generic, calls, failures, helpers in rows:
            if failures:
                failed = True
                result = "FAIL: " + "; ".join(failures)
            else:
                result = "PASS"
                if helpers:
                    result += " (CALLs to CUDA's own " + ", ".join(sorted(set(helpers))) + ")"
            print(f"{name:<36} {shared:>6} {local:>6} {generic:>7} {calls:>5}  {result}")
            print(f"RESULT sass {name} {'FAIL' if failures else 'PASS'}")
    if failed:
        print("sass_check: FAILED", file=sys.stderr)
        return 1
    print("sass_check: all kernels pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
