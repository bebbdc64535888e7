"""A pytest plugin for device/coop111/run.sh (COOP111_PROFILE=1): profiles each pytest process
(each xdist worker) with cProfile from start to end and writes DIR/<pid>.pstats, DIR from
COOP111_PROFILE_DIR. device/coop111/profile_report.py merges them."""

import cProfile
import os

_profiler = cProfile.Profile()


def pytest_configure(config):
    _profiler.enable()


def pytest_unconfigure(config):
    _profiler.disable()
    out = os.environ.get("COOP111_PROFILE_DIR")
    if out:
        os.makedirs(out, exist_ok=True)
        _profiler.dump_stats(os.path.join(out, f"{os.getpid()}.pstats"))
