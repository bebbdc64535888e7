#!/usr/bin/env python3
"""bench/render.py: the reporting half of bench/run.sh (Python standard library only).

  render.py meta OUT.json             the machine and the toolchain, and the load average now
  render.py render RESULTS DOC OUT    renders RESULTS/ (what run.sh collected) into the generated
                                      part of DOC, written to OUT (OUT may be DOC)
  render.py check RESULTS OUT         checks that every section in RESULTS/ ran or says why not,
                                      that every report parses, and that OUT holds exactly one
                                      generated part with every section; judges no number

RESULTS/ holds meta.json and, per section, SECTION.status.json (written by run.sh: title,
command, status "ok" / "skipped: why" / "failed: why", start load, seconds) and SECTION.json (the
benchmark's --json report). A report in the figures schema (bench/report.h) is rendered with
medians, spreads and ratios against its baseline row; any other JSON object is shown as its
flattened keys and values, as the tool reported them.

Exit status: 0 on success; 1 when an input is bad (the message names the file and the field).
"""
import ctypes
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys

BEGIN = "<!-- bench/run.sh begin: generated, do not edit by hand -->"
END = "<!-- bench/run.sh end -->"
SCHEMA = "coopd-bench-figures-1"


class BadInput(Exception):
    pass


# ---- meta -------------------------------------------------------------------------------------


def _run(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def _lib_version(lib, func):
    try:
        f = getattr(ctypes.CDLL(lib), func)
        major, minor = ctypes.c_int(), ctypes.c_int()
        if f(ctypes.byref(major), ctypes.byref(minor)) == 0:
            return "%d.%d" % (major.value, minor.value)
    except (OSError, AttributeError):
        pass
    return ""


def _cccl_version(cuda):
    path = os.path.join(cuda, "include/cccl/cuda/std/__cccl/version.h")
    try:
        m = re.search(r"#define CCCL_VERSION (\d+)", open(path).read())
    except OSError:
        return ""
    if not m:
        return ""
    v = int(m.group(1))  # MMMmmmppp
    return "%d.%d.%d" % (v // 1000000, v // 1000 % 1000, v % 1000)


def meta(out_path):
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = ""
    try:
        kib = int(open("/proc/meminfo").readline().split()[1])
        mem_gib = "%.0f GiB" % (kib / 1048576)
    except (OSError, ValueError, IndexError):
        pass
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = _run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"])
    dirty = _run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"])
    m = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem_gib,
        "load_at_start": "%.2f %.2f %.2f" % os.getloadavg(),
        "kernel": platform.release(),
        "os": _run(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        "nvrtc": _lib_version(os.path.join(cuda, "lib64/libnvrtc.so"), "nvrtcVersion"),
        "nvjitlink": _lib_version(os.path.join(cuda, "lib64/libnvJitLink.so"), "nvJitLinkVersion"),
        "nvcc": _run(["sh", "-c", cuda + "/bin/nvcc --version | grep -o 'release .*'"]),
        "cccl": _cccl_version(cuda),
        "grpc": _run(["pkg-config", "--modversion", "grpc++"]),
        "protobuf": _run(["pkg-config", "--modversion", "protobuf"]),
        "clang": _run(["clang++-22", "--version"]),
        "gcc": _run(["c++", "--version"]),
        "redis_server": _run(["redis-server", "--version"]).split(" sha=")[0],
        "ccache": _run(["ccache", "--version"]),
    }
    with open(out_path, "w") as f:
        json.dump(m, f, indent=1)


# ---- statistics and formatting ------------------------------------------------------------------


def pct(sorted_values, p):
    """Nearest-rank percentile of already sorted values."""
    i = int(round(p * (len(sorted_values) - 1)))
    return sorted_values[max(0, min(i, len(sorted_values) - 1))]


def num(x):
    if x is None:
        return ""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return "{:,}".format(x)
    if not isinstance(x, float) or not math.isfinite(x):
        return str(x)

    a = abs(x)
    if a >= 1000:
        return "{:,.0f}".format(x)
    if a >= 100:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    if a >= 1:
        return "%.2f" % x
    return "%.3g" % x


def ratio(x):
    return "%.3g" % x if abs(x) < 100 else "{:,.0f}".format(x)


def _need(obj, key, kind, where):
    if not isinstance(obj, dict) or key not in obj:
        raise BadInput("%s: missing field \"%s\"" % (where, key))
    if not isinstance(obj[key], kind):
        raise BadInput("%s: field \"%s\" must be %s, got %s" %
                       (where, key, kind.__name__ if isinstance(kind, type) else
                        " or ".join(k.__name__ for k in kind), type(obj[key]).__name__))
    return obj[key]


def validate_figures(report, where):
    """Raises BadInput unless `report` is a well-formed figures report."""
    if report.get("schema") != SCHEMA:
        raise BadInput("%s: field \"schema\" must be \"%s\", got %r" %
                       (where, SCHEMA, report.get("schema")))
    figures = _need(report, "figures", list, where)
    if not figures:
        raise BadInput("%s: \"figures\" is empty" % where)
    for i, fig in enumerate(figures):
        w = "%s: figures[%d]" % (where, i)
        for key in ("id", "title", "unit", "baseline"):
            _need(fig, key, str, w)
        rows = _need(fig, "rows", list, w)
        names = []
        for j, row in enumerate(rows):
            rw = "%s (%s): rows[%d]" % (w, fig["id"], j)
            names.append(_need(row, "name", str, rw))
            samples = _need(row, "samples", list, rw)
            for s in samples:
                if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                    raise BadInput("%s: \"samples\" must hold finite numbers, got %r" % (rw, s))
            if "values" in row:
                _need(row, "values", dict, rw)
        base = [r for r in rows if r["name"] == fig["baseline"]]
        if not base or not base[0]["samples"]:
            raise BadInput("%s (%s): the baseline row \"%s\" is missing or has no samples "
                           "(rows: %s)" % (w, fig["id"], fig["baseline"], ", ".join(names)))
        if statistics.median(base[0]["samples"]) == 0:
            raise BadInput("%s (%s): the baseline's median is 0" % (w, fig["id"]))


def render_figures(report):
    lines = []
    for fig in report["figures"]:
        rows = [r for r in fig["rows"] if r["samples"]]
        base = statistics.median(next(r for r in rows if r["name"] == fig["baseline"])["samples"])
        with_p99 = any(len(r["samples"]) >= 100 for r in rows)
        lines.append("**%s**" % fig["title"])
        lines.append("")
        head = ["", "median " + fig["unit"], "spread", "n"]
        if with_p99:
            head.append("p99")
        head.append("ratio")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + " --- |" * len(head))
        for r in rows:
            v = sorted(r["samples"])
            med = statistics.median(v)
            if len(v) >= 10:
                spread = "p10-p90: %s to %s" % (num(pct(v, 0.1)), num(pct(v, 0.9)))
            elif len(v) > 1:
                spread = "min-max: %s to %s" % (num(v[0]), num(v[-1]))
            else:
                spread = "one sample"
            name = r["name"] + (" (baseline)" if r["name"] == fig["baseline"] else "")
            extra = "; ".join("%s %s" % (k, num(int(x) if float(x).is_integer() else x))
                              for k, x in sorted(r.get("values", {}).items()))
            if extra or r.get("note"):
                name += " - " + "; ".join(x for x in (extra, r.get("note", "")) if x)
            cells = [name, num(med), spread, str(len(v))]
            if with_p99:
                cells.append(num(pct(v, 0.99)) if len(v) >= 100 else "")
            cells.append(ratio(med / base))
            lines.append("| " + " | ".join(cells) + " |")
        empty = [r["name"] for r in fig["rows"] if not r["samples"]]
        if empty:
            lines.append("")
            lines.append("Not measured in this run: %s." % ", ".join(empty))
        if fig.get("note"):
            lines.append("")
            lines.append(fig["note"])
        lines.append("")
    return lines


def flatten(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten(v, "%s.%s" % (prefix, k) if prefix else str(k))
    elif isinstance(obj, list) and not all(isinstance(x, (int, float, str)) for x in obj):
        for i, v in enumerate(obj):
            yield from flatten(v, "%s[%d]" % (prefix, i))
    else:
        yield prefix, obj


def is_scalar(x):
    return x is None or isinstance(x, (bool, int, float, str))


def cell(x):
    if isinstance(x, list) and all(is_scalar(v) for v in x):
        return ", ".join(num(v) for v in x)
    if is_scalar(x):
        return num(x).replace("|", "\\|")
    return "; ".join("%s %s" % (k, num(v)) for k, v in flatten(x))


def table(records, first=None):
    """Markdown rows for a list of flat dicts, columns in order of first appearance."""
    cols = []
    for r in records:
        cols += [k for k in r if k not in cols and k != first]

    # Labels first, measurements after (tools that write JSON objects through a sorted map lose
    # their own column order): string columns, then, in a list of records without a label
    # column, integer columns such as a thread count.
    def rank(c):
        xs = [r[c] for r in records if c in r]
        if all(isinstance(x, str) for x in xs):
            return 0
        ints = all(isinstance(x, int) and not isinstance(x, bool) for x in xs)
        return 1 if ints and first is None else 2
    cols = ([first] if first is not None else []) + sorted(cols, key=rank)
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in records:
        lines.append("| " + " | ".join(cell(r.get(c, "")) for c in cols) + " |")
    return lines


def is_record(x):
    return isinstance(x, dict) and bool(x) and all(
        is_scalar(v) or (isinstance(v, list) and all(is_scalar(e) for e in v)) for v in x.values())


def render_other(report):
    """Another tool's JSON object: its lists of records and its maps of records as tables (a row
    per record), its other values as field/value tables. Nothing is computed."""
    lines = ["As the tool reported it (its own format, not bench/report.h's; ratios are the "
             "tool's):", ""]
    loose = []
    for key, v in report.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines += ["`%s`:" % key, ""] + table(v) + [""]
        elif isinstance(v, dict) and v:
            records = {k: x for k, x in v.items() if is_record(x)}
            rest = [(k, x) for k, x in v.items() if k not in records]
            lines += ["`%s`:" % key, ""]
            if records:
                lines += table([dict({"": k}, **x) for k, x in records.items()], first="") + [""]
            if rest:
                fields = [(k2, x2) for k, x in rest for k2, x2 in flatten(x, k)]
                lines += table([{"field": k, "value": x} for k, x in fields]) + [""]
        else:
            loose += list(flatten(v, key)) if isinstance(v, (list, dict)) else [(key, v)]
    if loose:
        lines += table([{"field": k, "value": x} for k, x in loose]) + [""]
    return lines


# ---- the results directory ----------------------------------------------------------------------


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise BadInput("%s: cannot read: %s" % (path, e.strerror))
    except json.JSONDecodeError as e:
        raise BadInput("%s: not JSON: %s" % (path, e))


def sections(results):
    """[(name, status, report or None)] in the order run.sh ran them."""
    out = []
    for name in sorted(os.listdir(results)):
        if not name.endswith(".status.json"):
            continue
        path = os.path.join(results, name)
        st = load_json(path)
        for key in ("order", "title", "command", "status"):
            if key not in st:
                raise BadInput("%s: missing field \"%s\"" % (path, key))
        if not re.match(r"^(ok|skipped: .+|failed: .+)$", st["status"]):
            raise BadInput("%s: field \"status\" must be ok, \"skipped: WHY\" or \"failed: WHY\", "
                           "got %r" % (path, st["status"]))
        report = None
        if st["status"] == "ok":
            rpath = path[:-len(".status.json")] + ".json"
            report = load_json(rpath)
            if not isinstance(report, dict):
                raise BadInput("%s: must be a JSON object" % rpath)
            if "schema" in report or "figures" in report:
                validate_figures(report, rpath)
        out.append((name[:-len(".status.json")], st, report))
    out.sort(key=lambda s: s[1]["order"])
    return out


def generated(results):
    m = load_json(os.path.join(results, "meta.json"))
    secs = sections(results)
    total = sum(st.get("seconds", 0) for _, st, _ in secs)
    quick = any(st.get("quick") for _, st, _ in secs)
    g = m.get
    lines = [BEGIN, "", "## The suite (bench/run.sh%s)" % (" --quick" if quick else ""), "",
             "Generated by `bench/run.sh%s` on %s at commit %s, in %.0f s (a section run "
             "earlier, by `--only`, says when). Every ratio divides a row's median by its "
             "figure's baseline, measured in the same run; spreads are p10-p90 (10 or more "
             "samples) or min-max." %
             (" --quick" if quick else "", g("date"), g("commit"), total), "",
             "- Machine: %s, %s cores, %s, %s, kernel %s; load average at start %s (1, 5, 15 "
             "min)." % (g("cpu"), g("cores"), g("memory"), g("os"), g("kernel"),
                        g("load_at_start")),
             "- Toolchain: NVRTC %s, nvJitLink %s, CCCL %s (nvcc %s); gRPC %s, protobuf %s; %s; %s; "
             "%s; %s." % (g("nvrtc"), g("nvjitlink"), g("cccl"), g("nvcc"), g("grpc"),
                          g("protobuf"), g("clang") or "no clang-22", g("gcc"),
                          g("redis_server") or "no redis-server", g("ccache") or "no ccache"),
             ""]
    for name, st, report in secs:
        lines.append("### %s" % st["title"])
        lines.append("")
        when = ""
        if st.get("run") and st["run"] != g("date"):
            when = "; run on %s at commit %s" % (st["date"], st.get("commit", "?"))
        lines.append("`%s` (load average at start %s, %.0f s%s)" %
                     (st["command"], st.get("load", "?"), st.get("seconds", 0), when))
        lines.append("")
        if st["status"] != "ok":
            lines.append("Not in this run: %s." % st["status"])
            lines.append("")
            continue
        if report.get("schema") == SCHEMA:
            lines.extend(render_figures(report))
        else:
            lines.extend(render_other(report))
    lines.append(END)
    return "\n".join(lines) + "\n"


def splice(doc_text, block):
    """Replaces the generated part of `doc_text` (or inserts it before the first ## heading)."""
    b, e = doc_text.count(BEGIN), doc_text.count(END)
    if b != e or b > 1:
        raise BadInput("the document must hold the markers %r and %r once each or not at all "
                       "(found %d and %d)" % (BEGIN, END, b, e))
    if b == 1:
        i, j = doc_text.index(BEGIN), doc_text.index(END) + len(END)
        if j < i:
            raise BadInput("the end marker comes before the begin marker")
        return doc_text[:i] + block.rstrip("\n") + doc_text[j:]
    i = doc_text.find("\n## ")
    if i < 0:
        return doc_text.rstrip("\n") + "\n\n" + block
    return doc_text[:i + 1] + block + "\n" + doc_text[i + 1:]


def check(results, out_path):
    secs = sections(results)
    if not secs:
        raise BadInput("%s: no section ran (no *.status.json)" % results)
    failed = ["%s (%s)" % (n, st["status"]) for n, st, _ in secs if st["status"].startswith("failed")]
    if failed:
        raise BadInput("sections failed: " + ", ".join(failed))
    text = open(out_path).read()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise BadInput("%s: expected one generated part between the markers" % out_path)
    part = text[text.index(BEGIN):text.index(END)]
    for _, st, report in secs:
        if "### " + st["title"] not in part:
            raise BadInput("%s: section \"%s\" is not in the generated part" % (out_path, st["title"]))
        if report is not None and report.get("schema") == SCHEMA:
            for fig in report["figures"]:
                if "**%s**" % fig["title"] not in part:
                    raise BadInput("%s: figure %s is not rendered" % (out_path, fig["id"]))
    ran = sum(1 for _, st, _ in secs if st["status"] == "ok")
    print("render.py: %d sections (%d ran, %d skipped), every report parsed and rendered" %
          (len(secs), ran, len(secs) - ran))


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == "meta":
            meta(argv[2])
        elif len(argv) == 5 and argv[1] == "render":
            doc = open(argv[3]).read() if os.path.exists(argv[3]) else "# Benchmarks\n"
            text = splice(doc, generated(argv[2]))
            with open(argv[4], "w") as f:
                f.write(text)
        elif len(argv) == 4 and argv[1] == "check":
            check(argv[2], argv[3])
        else:
            sys.stderr.write(__doc__)
            return 2
    except BadInput as e:
        sys.stderr.write("render.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
