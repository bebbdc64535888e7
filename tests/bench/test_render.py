"""bench/render.py, the checker bench/run.sh --quick relies on: it renders a good results
directory, and refuses each bad input with a message naming the file and the field."""
import json
import os
import subprocess
import sys

import pytest

RENDER = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "render.py")
BEGIN = "<!-- bench/run.sh begin: generated, do not edit by hand -->"
END = "<!-- bench/run.sh end -->"


def run(*args):
    p = subprocess.run([sys.executable, RENDER, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def figures(baseline="alone", rows=None):
    return {
        "schema": "coopd-bench-figures-1", "tool": "t", "args": "",
        "figures": [{
            "id": "f", "title": "A figure", "unit": "ms", "baseline": baseline,
            "rows": rows if rows is not None else [
                {"name": "alone", "samples": [2.0, 4.0, 3.0]},
                {"name": "together", "samples": [6.0], "values": {"compiles": 1}},
            ],
        }],
    }


def write_results(tmp_path, report, status="ok", name="sec", other=None, run="today"):
    res = tmp_path / "results"
    res.mkdir(exist_ok=True)
    (res / "meta.json").write_text(json.dumps({"date": "today", "commit": "abc", "cores": 2}))
    (res / (name + ".status.json")).write_text(json.dumps({
        "order": 1, "title": "The section", "command": "bench x", "status": status,
        "load": "1.00 1.00 1.00", "seconds": 1.5, "run": run, "date": run, "commit": "old"}))
    if report is not None:
        (res / (name + ".json")).write_text(report if isinstance(report, str) else json.dumps(report))
    if other is not None:
        (res / "other.status.json").write_text(json.dumps({
            "order": 2, "title": "Other tool", "command": "other", "status": "ok"}))
        (res / "other.json").write_text(json.dumps(other))
    return res


def render(tmp_path, res, doc_text="# Benchmarks\n\nIntro.\n\n## Hand written\n\nKept.\n"):
    doc = tmp_path / "doc.md"
    doc.write_text(doc_text)
    out = tmp_path / "out.md"
    rc, msg = run("render", str(res), str(doc), str(out))
    return rc, msg, out


def test_renders_ratios_medians_and_spreads_and_keeps_the_hand_written_part(tmp_path):
    res = write_results(tmp_path, figures(), other={
        "p50_us": 12.5, "clients": [1, 8],
        "latency": [{"threads": 1, "p50_us": 300.0}, {"threads": 8, "p50_us": 900.0, "x": 1}],
        "daemon": {"rss_mib": {"median": 70.5, "p10": 70}, "start_ms": {"median": 98},
                   "warm_mib": 95.1},
        "ratios": {"hit / true": 1.5}})
    rc, msg, out = render(tmp_path, res)
    assert rc == 0, msg
    text = out.read_text()
    assert "## Hand written\n\nKept." in text
    assert text.index(BEGIN) < text.index("## Hand written")
    # median 3 (baseline), 6 -> ratio 2
    assert "| alone (baseline) | 3.00 | min-max: 2.00 to 4.00 | 3 | 1 |" in text
    assert "| together - compiles 1 | 6.00 | one sample | 1 | 2 |" in text
    assert "| p50_us | 12.5 |" in text and "| clients | 1, 8 |" in text
    # labels (strings, integers) before measurements
    assert "| threads | x | p50_us |\n| --- | --- | --- |\n| 1 |  | 300 |\n| 8 | 1 | 900 |" in text
    assert "|  | median | p10 |\n| --- | --- | --- |\n| rss_mib | 70.5 | 70 |\n| start_ms | 98 |  |" \
        in text
    assert "| hit / true | 1.50 |" in text and "| warm_mib | 95.1 |" in text
    rc, msg = run("check", str(res), str(out))
    assert rc == 0, msg
    # Rendering again replaces the generated part instead of adding a second one.
    rc, msg = run("render", str(res), str(out), str(out))
    assert rc == 0, msg
    assert out.read_text().count(BEGIN) == 1


def test_a_missing_baseline_is_refused_naming_it(tmp_path):
    res = write_results(tmp_path, figures(baseline="nobody"))
    rc, msg, _ = render(tmp_path, res)
    assert rc == 1
    assert 'the baseline row "nobody" is missing or has no samples (rows: alone, together)' in msg


def test_an_empty_baseline_is_refused(tmp_path):
    res = write_results(tmp_path, figures(rows=[{"name": "alone", "samples": []}]))
    rc, msg, _ = render(tmp_path, res)
    assert rc == 1 and 'baseline row "alone" is missing or has no samples' in msg


@pytest.mark.parametrize("bad,expected", [
    ("{not json", "not JSON"),
    (json.dumps({"schema": "other-1", "figures": []}),
     'field "schema" must be "coopd-bench-figures-1", got \'other-1\''),
    (json.dumps(figures(rows=[{"name": "alone", "samples": ["3"]}])),
     '"samples" must hold finite numbers, got \'3\''),
    (json.dumps(figures(rows=[{"name": "alone"}])), 'rows[0]: missing field "samples"'),
])
def test_malformed_reports_are_refused_naming_the_field(tmp_path, bad, expected):
    res = write_results(tmp_path, bad)
    rc, msg, _ = render(tmp_path, res)
    assert rc == 1
    assert "sec.json" in msg and expected in msg


def test_a_bad_status_is_refused(tmp_path):
    res = write_results(tmp_path, figures(), status="fine")
    rc, msg, _ = render(tmp_path, res)
    assert rc == 1 and 'field "status" must be ok, "skipped: WHY" or "failed: WHY"' in msg


def test_check_fails_on_a_failed_section_and_passes_a_skipped_one(tmp_path):
    res = write_results(tmp_path, None, status="failed: exit status 1 (log: x)")
    rc, msg, out = render(tmp_path, res)
    assert rc == 0, msg  # the document says what failed ...
    assert "Not in this run: failed: exit status 1" in out.read_text()
    rc, msg = run("check", str(res), str(out))  # ... and the check fails
    assert rc == 1 and "sections failed: sec (failed: exit status 1" in msg
    res = write_results(tmp_path, None, status="skipped: hit_bench not built")
    rc, msg, out = render(tmp_path, res)
    assert rc == 0 and "Not in this run: skipped: hit_bench not built." in out.read_text()
    rc, msg = run("check", str(res), str(out))
    assert rc == 0, msg


def test_check_fails_when_the_document_lacks_a_section(tmp_path):
    res = write_results(tmp_path, figures())
    rc, msg, out = render(tmp_path, res)
    assert rc == 0, msg
    out.write_text(out.read_text().replace("### The section", "### Renamed"))
    rc, msg = run("check", str(res), str(out))
    assert rc == 1 and 'section "The section" is not in the generated part' in msg


def test_unbalanced_markers_are_refused(tmp_path):
    res = write_results(tmp_path, figures())
    rc, msg, _ = render(tmp_path, res, "# B\n" + BEGIN + "\nno end\n")
    assert rc == 1 and "once each or not at all (found 1 and 0)" in msg


def test_a_section_from_an_earlier_run_says_when(tmp_path):
    res = write_results(tmp_path, figures(), run="yesterday")
    rc, msg, out = render(tmp_path, res)
    assert rc == 0, msg
    assert "(load average at start 1.00 1.00 1.00, 2 s; run on yesterday at commit old)" in \
        out.read_text()
    res = write_results(tmp_path, figures(), run="today")
    rc, msg, out = render(tmp_path, res)
    assert "run on" not in out.read_text()
