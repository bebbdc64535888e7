#!/usr/bin/env bash
# The footprint benchmark (issue 17, item 3): coopctl's start-up and hit against /bin/true and a
# ccache direct hit, coopd's start to ready and RSS, a worker's RSS idle and warm.
#   bench/footprint.sh [--build DIR] [--quick] [--json FILE] [--rounds N] [--starts N]
#                      [--before-coopctl PATH] [--before-coopd PATH]
# bench/footprint.py documents every option and figure; bench/ccache_baseline.py the baseline.
set -euo pipefail
exec python3 "$(dirname "$0")/footprint.py" "$@"
