"""Cross-check of the resolution rule's two implementations (docs/tuning.md): the daemon's
(server/catalog/tuning.cc, through `coopd_tuning_check --resolve`) and the tuning suite's mirror
(device/tuning/rule.py), which validate.py used to pick and judge its out-of-table shapes. Both
must choose the same algorithm for every query: every cell of the table, and shapes around and
outside it (other thread counts, including ones that are not multiples of 32, odd item counts,
dtype sizes the table lacks, sm_90a, an arch without a table, non-commutative reductions).

usage: tuning_rule_cross_check.py CHECKER TUNING_DIR TABLE [--rule-margin M]
  --rule-margin: replace rule.py's NEAREST_MARGIN (the self-test: with the contract's first 1.05
  the two must disagree, and this script must say where).
"""
import json
import subprocess
import sys

checker, tuning_dir, table_path = sys.argv[1:4]
sys.path.insert(0, tuning_dir)
import families  # noqa: E402
import rule  # noqa: E402

if len(sys.argv) == 6 and sys.argv[4] == "--rule-margin":
    rule.NEAREST_MARGIN = float(sys.argv[5])

table = json.load(open(table_path))
queries = []
for name, f in families.FAMILIES.items():
    threads = [1, 2, 4, 8, 16, 32] if f["warp"] else [32, 48, 64, 80, 96, 128, 160, 200, 256,
                                                      320, 384, 448, 512, 768, 1024]
    for t in threads:
        for n in list(range(1, 21)) + [24, 32, 48, 64]:
            for s in [1, 2, 3, 4, 8, 16]:
                for arch in ["sm_90", "sm_90a"]:
                    queries.append((name, t, n, s, arch, 1))
                if name == "block_reduce":
                    queries.append((name, t, n, s, "sm_90", 0))
            queries.append((name, t, n, 4, "sm_80", 1))

text = "".join("%s %d %d %d %s %d\n" % q for q in queries)
out = subprocess.run([checker, "--resolve", table_path], input=text, capture_output=True,
                     text=True, check=True).stdout.split("\n")
mismatches = []
for q, line in zip(queries, out):
    name, t, n, s, arch, commutative = q
    cpp = line.split()[0]
    py, _, _ = rule.resolve(table, name, t, n, s, arch=arch, commutative=bool(commutative))
    if cpp != py:
        mismatches.append("%s T=%d N=%d S=%d %s commutative=%d: server %s, rule.py %s (%s)" %
                          (name, t, n, s, arch, commutative, cpp, py, line))
assert len(out) >= len(queries), "the checker answered %d of %d queries" % (len(out), len(queries))
print("%d queries, %d mismatches" % (len(queries), len(mismatches)))
for m in mismatches[:20]:
    print("MISMATCH", m)
sys.exit(1 if mismatches else 0)
