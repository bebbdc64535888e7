#!/usr/bin/env bash
# Socket activation: systemd-socket-activate (Debian's systemd package; what a socket unit does)
# listens on a Unix socket and starts coopd only when the first client connects, handing it the
# listening socket (LISTEN_FDS=1, fd 3). The first request is served by that coopd; the socket
# stays systemd's (coopd does not remove it on exit).
#   socket_activation_test.sh COOPD COOPCTL
set -euo pipefail
coopd=$1
coopctl=$2
command -v systemd-socket-activate >/dev/null || { echo "no systemd-socket-activate (apt-get install systemd)"; exit 77; }
tmp=$(mktemp -d /tmp/coopd-activation-test.XXXXXX)
pid=
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "socket_activation_test: FAIL: $*" >&2
  [[ -f $tmp/coopd.log ]] && sed 's/^/  log: /' "$tmp/coopd.log" >&2
  exit 1
}
socket=$tmp/coopd.sock
# --socket names another path: an activated coopd must serve the inherited socket instead.
systemd-socket-activate -l "$socket" -E COOPD_NO_AUTOSTART=1 \
  "$coopd" --socket "$tmp/unused.sock" --cache-dir "$tmp/cache" --workers 1 >"$tmp/coopd.log" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do
  [[ -S $socket ]] && break
  sleep 0.1
done
[[ -S $socket ]] || fail "systemd-socket-activate did not create $socket"
# Nothing has connected: the process is still systemd-socket-activate, not coopd.
exe=$(readlink "/proc/$pid/exe")
[[ $(basename "$exe") == systemd-socket-activate ]] || fail "before the first connection, pid $pid is $exe"

# The first connection starts coopd, which answers it.
out=$("$coopctl" --socket "$socket" --timeout 300 specialize block_reduce --dtype float32 \
  --threads 256 --arch sm_90) || fail "the first request failed"
grep -q '^origin: *compiled' <<<"$out" || fail "the first request was not compiled: $out"
grep -q '^temp storage: *44 bytes, align 4' <<<"$out" || fail "unexpected artifact: $out"
exe=$(readlink "/proc/$pid/exe")
[[ $(basename "$exe") == coopd ]] || fail "after the first connection, pid $pid is $exe, not coopd"
grep -q "ready: listening on inherited fd 3 (unix:$socket)" "$tmp/coopd.log" ||
  fail "coopd did not say it serves the inherited socket"
[[ ! -e $tmp/unused.sock ]] || fail "an activated coopd listened on --socket too"
# Later connections reach the same daemon: the artifact is now a memory hit.
out=$("$coopctl" --socket "$socket" specialize block_reduce --dtype float32 --threads 256 --arch sm_90)
grep -q '^origin: *memory' <<<"$out" || fail "the second request was not a hit: $out"
"$coopctl" --socket "$socket" health >/dev/null || fail "coopctl health on the activated coopd"

kill -TERM "$pid"
wait "$pid" || fail "coopd exited $? on SIGTERM"
pid=
[[ -S $socket ]] || fail "coopd removed the socket that systemd owns"
echo "socket_activation_test: PASS"
