#!/usr/bin/env python3
"""Derives the compile sandbox's syscall allowlist (server/engine/syscall_allowlist.cc).

Runs the integration tests that compile (NVRTC to LTO-IR, the layout query through nvJitLink,
Link to a cubin, clang to bitcode, user operators, the sandbox tests) under `strace -f -ff`,
with COOPD_SECCOMP_LOG=1 so that the workers' filter logs instead of refusing what is not on the
list (the dangerous calls stay refused). It keeps the calls each compile worker made after it
loaded its filter (its `seccomp(SECCOMP_SET_MODE_FILTER, ...)` call), and every call of the
processes such a worker started (clang and its children), then prints:

  * every call seen, with its count and how often it failed with EPERM, EACCES or ENOSYS;
  * the calls seen that are NOT on the allowlist (the list must grow, or the caller is wrong);
  * the refused calls that were tried (a compile that needs one breaks).

Exit status: 0 when every call seen is allowed, 1 when one is missing, 2 when the run failed.

  deploy/derive-syscall-allowlist.py [--build DIR] [--filter GTEST_FILTER] [--keep DIR]
  deploy/derive-syscall-allowlist.py --traces DIR   (the report again, from a --keep run)

Needs strace (Debian: strace) and a built tree (coopd, coopd_integration_tests). With --keep the
per-process traces stay in DIR for reading.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILTER = ("Specialize*:Bitcode*:Engine*:UserOp*:Sandbox*:*Link*:Plan*:ValueTypes*")

CALL = re.compile(r"^(?:\d+\.\d+ )?([a-z0-9_]+)\(")
RESUMED = re.compile(r"^(?:\d+\.\d+ )?<\.\.\. ([a-z0-9_]+) resumed>")
RESULT = re.compile(r"\)\s+= (-?\w+|\?)(?: ([A-Z][A-Z0-9_]*))?")


def allowlist():
    """(allowed, refused) names, read from the table in syscall_allowlist.cc."""
    text = open(os.path.join(ROOT, "server/engine/syscall_allowlist.cc")).read()

    def names(start):
        body = text[text.index(start):]
        body = body[:body.index("\n};")]
        return set(re.findall(r'\{"([a-z0-9_]+)",', body))

    return names("kAllowed = {"), names("kRefused = {")


def parse(path):
    """[(name, result errno or None)] of one per-process trace, in order."""
    calls = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("---", "+++")):
                continue
            m = CALL.match(line) or RESUMED.match(line)
            if not m:
                continue
            if "<unfinished ...>" in line:
                continue  # counted on its resumed line
            r = RESULT.search(line)
            err = r.group(2) if r and r.group(1) == "-1" else None
            calls.append((m.group(1), err, line))
    return calls


def child_pid(name, line):
    if name not in ("clone", "clone3", "fork", "vfork"):
        return None
    m = re.search(r"= (\d+)\s*$", line.rstrip())
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--filter", default=DEFAULT_FILTER)
    ap.add_argument("--keep", help="keep the traces in this directory")
    ap.add_argument("--traces", help="read the traces a --keep run left here; run nothing")
    args = ap.parse_args()
    if args.traces:
        return report(args.traces)
    if shutil.which("strace") is None:
        print("derive-syscall-allowlist: strace not found (apt-get install strace)",
              file=sys.stderr)
        return 2
    tests = os.path.join(args.build, "tests/coopd_integration_tests")
    out = args.keep or tempfile.mkdtemp(prefix="coopd-syscalls-")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, COOPD_SECCOMP_LOG="1", COOPD_NO_AUTOSTART="1")
    run = subprocess.run(["strace", "-f", "-ff", "-qq", "-s", "96", "-o",
                          os.path.join(out, "trace"), tests, "--gtest_filter=" + args.filter],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    summary = [l for l in run.stdout.splitlines() if l.startswith("[  PASSED") or
               l.startswith("[  FAILED")]
    print("\n".join(summary) or run.stdout[-2000:])
    status = report(out)
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return status


def report(out):
    """Prints what the confined processes traced in `out` called; the exit status."""
    traces = {}
    for name in os.listdir(out):
        if name.startswith("trace."):
            traces[int(name.split(".")[1])] = parse(os.path.join(out, name))
    # Workers: processes that exec'd coopd --worker-fd; confined from their seccomp() call on.
    confined = {}  # pid -> index of the first confined call
    for pid, calls in traces.items():
        if any(n == "execve" and '"--worker-fd"' in l for n, _, l in calls):
            for i, (n, err, l) in enumerate(calls):
                loads = (n == "seccomp" and "SECCOMP_SET_MODE_FILTER" in l) or (
                    n == "prctl" and "PR_SET_SECCOMP" in l)  # libseccomp; the old filter
                if loads and err is None:
                    confined[pid] = i + 1
                    break
    # Their children, and the children's children, are confined from their first call.
    queue = list(confined)
    while queue:
        pid = queue.pop()
        for n, _, l in traces.get(pid, [])[confined[pid]:]:
            child = child_pid(n, l)
            if child is not None and child not in confined:
                confined[child] = 0
                queue.append(child)

    seen = collections.Counter()
    failed = collections.defaultdict(collections.Counter)
    for pid, start in confined.items():
        for n, err, _ in traces.get(pid, [])[start:]:
            seen[n] += 1
            if err in ("EPERM", "EACCES", "ENOSYS"):
                failed[n][err] += 1
    allowed, refused = allowlist()
    print(f"{len(confined)} confined processes ({sum(1 for s in confined.values() if s)} "
          f"workers); {len(seen)} distinct calls")
    for n in sorted(seen):
        note = "" if n in allowed else ("  REFUSED" if n in refused else "  NOT ON THE LIST")
        errs = ", ".join(f"{e} {c}" for e, c in sorted(failed[n].items()))
        print(f"  {n:24} {seen[n]:8}{'  (' + errs + ')' if errs else ''}{note}")
    missing = sorted(n for n in seen if n not in allowed and n not in refused)
    tried = sorted(n for n in seen if n in refused)
    print("not on the allowlist: " + (", ".join(missing) or "none"))
    print("refused calls tried: " + (", ".join(tried) or "none"))
    if not confined:
        print("derive-syscall-allowlist: no confined worker was traced", file=sys.stderr)
        return 2
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
