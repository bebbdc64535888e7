#!/usr/bin/env bash
# The installed units' exposure as `systemd-analyze security --offline=yes` rates it (0 is
# fully confined, 10 not at all): the system coopd.service at most 2.5 (issue 28), the user
# coopd.service at most 2.5 too. The units are the ones `cmake --install` puts under
# share/coopd/systemd/, with the configured paths filled in. Skips (77) without systemd-analyze
# (Debian's systemd package).
#   systemd_unit_security_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
max=2.5
command -v systemd-analyze >/dev/null || {
  echo "systemd_unit_security_test: SKIP: no systemd-analyze (apt-get install systemd)"
  exit 77
}
tmp=$(mktemp -d /tmp/coopd-unit-security.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "systemd_unit_security_test: FAIL: $*" >&2
  exit 1
}
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
  fail "cmake --install: $(cat "$tmp/install.log")"
units=$tmp/prefix/share/coopd/systemd
# The user manager's offline analysis looks up a runtime directory.
mkdir -m 0700 "$tmp/xdg"

# rate SCOPE UNIT: the overall exposure, after printing the whole report.
rate() {
  local scope=$1 unit=$2 report
  report=$(cd "$(dirname "$unit")" &&
    XDG_RUNTIME_DIR=$tmp/xdg systemd-analyze security "$scope" --offline=yes --no-pager \
      "./$(basename "$unit")" 2>&1) || true
  echo "$report" >&2
  sed -n 's/^→ Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' <<<"$report"
}
for scope in --system --user; do
  unit=$units/${scope#--}/coopd.service
  [[ -f $unit ]] || fail "not installed: $unit"
  grep -q '@COOPD_' "$unit" && fail "$unit still holds a placeholder"
  score=$(rate "$scope" "$unit")
  [[ $score =~ ^[0-9]+\.[0-9]$ ]] || fail "no overall exposure for $unit ($scope)"
  echo "systemd_unit_security_test: $scope coopd.service: exposure $score (at most $max)"
  awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }' ||
    fail "$scope coopd.service: exposure $score is above $max"
done
echo "systemd_unit_security_test: PASS"
