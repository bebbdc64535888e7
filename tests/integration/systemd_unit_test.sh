#!/usr/bin/env bash
# The installed system units (share/coopd/systemd/system/coopd.{service,socket}), hardening and
# all, run by a real systemd: Debian's /lib/systemd/systemd booted as PID 1 of new PID, mount,
# cgroup, UTS and IPC namespaces (the network is the host's, for Redis on loopback). It knows
# only these units, a journald and empty targets (SYSTEMD_UNIT_PATH), so it starts nothing of
# the host's; /run, /tmp, /home, /var/cache, /var/log and /var/lib/systemd are tmpfs in its
# namespace, and the users coopd and coopd-test-user exist only there (/etc/passwd and
# /etc/group are bound over with copies).
#
# The one edit to the installed services: ExecStart names the coopd installed here (the units
# name the configured prefix's). A drop-in adds what an operator's coopd.env would: Redis, and
# debug logging so that several journal priorities appear. Checked through the socket unit:
# socket activation; LTO-IR and bitcode compiles (NVRTC in the workers, clang forked by them)
# and a link to a cubin (nvJitLink);
# each worker in a user and mount namespace of its own, in its private root, under its own
# seccomp filter stacked on the unit's, with its memory limit; the cache directory surviving a
# restart; Redis over TCP; the watchdog fed; priorities in the journal; a clean stop. Then the
# user units under a user manager (what user@.service runs, without PAM) for a second user: a
# compile through its socket, its workers' confinement, its ~/.cache/coopd.
#
# Skips (77) where systemd cannot be booted: not root, no systemd, no cgroup v2 hierarchy, or a
# systemd that never comes up (its console log is printed).
#   systemd_unit_test.sh BUILD_DIR COOPCTL (COOPCTL is checked to exist; the installed copy runs)
set -euo pipefail
build=$(cd "$1" && pwd)
[[ -x $2 ]] || { echo "systemd_unit_test: no coopctl at $2" >&2; exit 1; }
skip() {
  echo "systemd_unit_test: SKIP: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root (it boots systemd in namespaces of its own)"
systemd=/lib/systemd/systemd
[[ -x $systemd ]] || skip "no $systemd (apt-get install systemd)"
for tool in unshare nsenter setpriv pgrep systemctl systemd-run journalctl redis-server redis-cli \
  python3; do
  command -v "$tool" >/dev/null || skip "no $tool"
done
if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
  cgroot=/sys/fs/cgroup
elif [[ $(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null) == cgroup2fs ]]; then
  cgroot=/sys/fs/cgroup/unified  # a hybrid host: systemd gets the v2 hierarchy alone
else
  skip "no cgroup v2 hierarchy to give systemd"
fi

# Not under /tmp, /var, /run or /home, which the namespace covers with tmpfs and the unit hides
# (PrivateTmp=, ProtectHome=): not in the build directory either, which may be anywhere (a CI
# clone under /tmp made this test skip). /opt stays visible and is only read.
mkdir -p /opt
t=$(mktemp -d /opt/coopd-systemd-test.XXXXXX)
chmod 0755 "$t"  # the user coopd runs the installed coopd from here
cg=$cgroot$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
cg=${cg%/}/coopd-systemd-test-$$
upid='' sd='' redis_pid=''
cleanup() {
  [[ -n $sd ]] && kill -KILL "$sd" 2>/dev/null || true  # PID 1 of the namespace: all go
  [[ -n $upid ]] && wait "$upid" 2>/dev/null || true
  [[ -n $redis_pid ]] && kill -KILL "$redis_pid" 2>/dev/null || true
  if [[ -d $cg ]]; then
    for ((i = 0; i < 50; i++)); do
      find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null && break
      sleep 0.1
    done
  fi
  rm -rf "$t"
}
trap cleanup EXIT
fail() {
  echo "systemd_unit_test: FAIL: $*" >&2
  if [[ -n $sd ]] && kill -0 "$sd" 2>/dev/null; then
    in_ns systemctl status --no-pager coopd.service coopd.socket >&2 || true
    in_ns journalctl --no-pager -o short-monotonic | tail -80 | sed 's/^/  journal: /' >&2 || true
  fi
  sed 's/^/  systemd: /' "$t/console" >&2 || true
  exit 1
}
in_ns() { nsenter -t "$sd" -m -p -- "$@"; }
sctl() { in_ns systemctl "$@"; }
prop() { sctl show -p "$2" --value "$1"; }

# Install as a packager would, then take the installed units.
cmake --install "$build" --prefix "$t/prefix" >"$t/install.log" ||
  fail "cmake --install: $(cat "$t/install.log")"
# The installed coopctl, the same build as COOPCTL: the build directory may be under /tmp, which
# the namespace covers.
[[ -x $t/prefix/bin/coopctl ]] || fail "cmake --install put no coopctl in $t/prefix/bin"
coopctl=$t/prefix/bin/coopctl
# take_units SCOPE DIR TARGETS...: SCOPE's installed coopd.{service,socket} into DIR, coopd.service
# running the coopd installed here, and the named targets, empty.
take_units() {
  local from=$t/prefix/share/coopd/systemd/$1 dir=$2 target
  shift 2
  mkdir "$dir"
  [[ $(grep -c '^ExecStart=.*/coopd$' "$from/coopd.service") == 1 ]] ||
    fail "the installed $from/coopd.service has no single ExecStart=.../coopd"
  sed "s|^ExecStart=.*/coopd\$|ExecStart=$t/prefix/bin/coopd|" "$from/coopd.service" \
    >"$dir/coopd.service"
  cp "$from/coopd.socket" "$dir/"
  for target in "$@"; do
    printf '[Unit]\nDescription=%s (empty)\nDefaultDependencies=no\n' "$target" \
      >"$dir/$target.target"
  done
}
take_units system "$t/units" sysinit basic sockets network shutdown
cp /lib/systemd/system/systemd-journald.service /lib/systemd/system/systemd-journald.socket \
  "$t/units/"
printf '[Unit]\nDescription=coopd test\nWants=systemd-journald.socket coopd.socket\n' \
  >"$t/units/coopd-test.target"
# The user units, for a user manager.
take_units user "$t/user-units" basic sockets shutdown default paths timers
printf '[Unit]\nDescription=coopd test\nWants=coopd.socket\n' >"$t/user-units/coopd-test.target"

# Redis on loopback, for the farm tier.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  >"$t/redis.log" 2>&1 &
redis_pid=$!
for ((i = 0; i < 100; i++)); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
redis-cli -p "$port" ping >/dev/null 2>&1 || fail "redis-server did not start: $(cat "$t/redis.log")"
mkdir "$t/units/coopd.service.d"
cat >"$t/units/coopd.service.d/test.conf" <<EOF
[Service]
Environment=COOPD_REMOTE_CACHE=redis://127.0.0.1:$port COOPD_LOG_LEVEL=debug
EOF

# The user and group coopd, in the namespace only.
uid=64990
while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null; do uid=$((uid - 1)); done
cp /etc/passwd "$t/passwd"
cp /etc/group "$t/group"
getent passwd coopd >/dev/null ||
  echo "coopd:x:$uid:$uid:coopd:/var/cache/coopd:/usr/sbin/nologin" >>"$t/passwd"
getent group coopd >/dev/null || echo "coopd:x:$uid:" >>"$t/group"
# A user for the user unit, with a home in the namespace's /home.
user_uid=$((uid - 1))
while getent passwd "$user_uid" >/dev/null || getent group "$user_uid" >/dev/null; do
  user_uid=$((user_uid - 1))
done
echo "coopd-test-user:x:$user_uid:$user_uid::/home/coopd-test-user:/bin/sh" >>"$t/passwd"
echo "coopd-test-user:x:$user_uid:" >>"$t/group"
: >"$t/console"
# A journal in the namespace's /run only, without the kernel's messages.
printf '[Journal]\nStorage=volatile\nReadKMsg=no\n' >"$t/journald.conf"

cat >"$t/boot.sh" <<'EOF'
# PID 1 of the new namespaces, until it becomes systemd.
set -e
t=$1
mount --make-rprivate /
mount -t proc proc /proc
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for d in /run /tmp /home /var/cache /var/log /var/lib/systemd; do
  mkdir -p "$d"
  mount -t tmpfs -o mode=0755 tmpfs "$d"
done
chmod 1777 /tmp
mount --bind "$t/passwd" /etc/passwd
mount --bind "$t/group" /etc/group
mkdir -m 0700 "/home/$2" && chown "$3:$3" "/home/$2"
mount --bind "$t/console" /dev/console
mount --bind "$t/journald.conf" /etc/systemd/journald.conf
export SYSTEMD_UNIT_PATH=$t/units container=coopd-test
exec /lib/systemd/systemd --system --unit=coopd-test.target --log-target=journal \
  --show-status=no </dev/null >>"$t/console" 2>&1
EOF
mkdir "$cg" || skip "cannot make a cgroup under $cgroot"
(
  echo "$BASHPID" >"$cg/cgroup.procs"
  exec unshare --pid --fork --kill-child --mount --cgroup --uts --ipc bash "$t/boot.sh" "$t" \
    coopd-test-user "$user_uid"
) &
upid=$!
for ((i = 0; i < 100; i++)); do
  sd=$(pgrep -P "$upid" || true)
  [[ -n $sd ]] && break
  sleep 0.1
done
[[ -n $sd ]] || skip "the namespaces could not be made: $(cat "$t/console")"
# Up when it answers on its private bus; one that dies or never answers could not be booted.
for ((i = 0; i < 300; i++)); do
  kill -0 "$sd" 2>/dev/null || break
  sctl is-active coopd-test.target >/dev/null 2>&1 && break
  sleep 0.1
done
if ! sctl is-active coopd-test.target >/dev/null 2>&1; then
  sed 's/^/  systemd: /' "$t/console"
  sd=
  skip "systemd could not be booted in namespaces here (its log is above)"
fi
echo "systemd_unit_test: systemd is up (host pid $sd)"

[[ $(sctl is-active coopd.socket) == active ]] || fail "coopd.socket is not listening"
[[ $(sctl is-active coopd.service || true) == inactive ]] ||
  fail "coopd.service runs before any connection"
socket=/run/coopd/coopd.sock
ctl() { in_ns env COOPD_NO_AUTOSTART=1 "$coopctl" --socket "$socket" --timeout 300 "$@"; }

# The first connection starts coopd; workers compile through NVRTC.
out=$(ctl specialize block_reduce --dtype float32 --threads 256 --arch sm_90) ||
  fail "the first request failed: $out"
grep -q '^origin: *compiled' <<<"$out" || fail "the first request was not compiled: $out"
grep -q '^temp storage: *44 bytes, align 4' <<<"$out" || fail "unexpected artifact: $out"
[[ $(sctl is-active coopd.service) == active ]] || fail "coopd.service is not active"
log=$(in_ns journalctl -u coopd.service -o cat)
grep -q 'ready: listening on inherited fd 3' <<<"$log" ||
  fail "coopd did not serve the socket unit's socket"

# confined MAINPID: the unit's restrictions hold for coopd (no capabilities, no new privileges,
# a seccomp filter, a user namespace of its own: PrivateUsers=), and each of its compile workers
# confined itself: its own user and mount namespace, a private root holding only the sandbox's
# roots (no /etc/passwd, the CUDA headers present), its own seccomp filter on top of the unit's,
# and its memory limit (so setrlimit was allowed).
confined() {
  local main=$1 status main_filters workers w filters
  status=$(in_ns cat "/proc/$main/status")
  grep -q '^CapBnd:[[:space:]]*0000000000000000$' <<<"$status" ||
    fail "coopd ($main) has a capability bounding set: $status"
  grep -q '^NoNewPrivs:[[:space:]]*1$' <<<"$status" || fail "coopd ($main) may gain privileges"
  grep -q '^Seccomp:[[:space:]]*2$' <<<"$status" || fail "coopd ($main) has no seccomp filter"
  main_filters=$(awk '/^Seccomp_filters:/ { print $2 }' <<<"$status")
  [[ $(in_ns readlink "/proc/$main/ns/user") != $(in_ns readlink /proc/1/ns/user) ]] ||
    fail "coopd ($main) shares systemd's user namespace (PrivateUsers= not applied)"
  workers=$(in_ns pgrep -P "$main") || fail "coopd ($main) has no compile workers"
  for w in $workers; do
    [[ $(in_ns readlink "/proc/$w/ns/user") != $(in_ns readlink "/proc/$main/ns/user") ]] ||
      fail "worker $w did not enter a user namespace of its own"
    [[ $(in_ns readlink "/proc/$w/ns/mnt") != $(in_ns readlink "/proc/$main/ns/mnt") ]] ||
      fail "worker $w did not enter a mount namespace of its own"
    in_ns test ! -e "/proc/$w/root/etc/passwd" || fail "worker $w sees /etc/passwd: no private root"
    in_ns test -d "/proc/$w/root/usr/local/cuda/include" ||
      fail "worker $w's private root lacks the CUDA headers"
    filters=$(in_ns awk '/^Seccomp_filters:/ { print $2 }' "/proc/$w/status")
    ((filters > main_filters)) || fail "worker $w loaded no seccomp filter of its own ($filters)"
    in_ns grep -Eq '^Max address space +[0-9]+ ' "/proc/$w/limits" ||
      fail "worker $w has no memory limit: $(in_ns cat "/proc/$w/limits")"
  done
}
confined "$(prop coopd.service MainPID)"

# Link: nvJitLink turns a kernel (PTX) and the cached artifact into a cubin, in a worker.
printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n' \
  >"$t/kernel.ptx"
key=$(sed -n 's/^key: *//p' <<<"$out")
[[ ${#key} == 64 ]] || fail "no key in the reply: $out"
out=$(ctl link --arch sm_90 --ptx "$t/kernel.ptx" --artifact "$key" --out "$t/kernel.cubin") ||
  fail "link failed: $out"
[[ -s $t/kernel.cubin ]] || fail "link wrote no cubin: $out"

# clang, forked by a worker, makes bitcode.
if command -v clang++-22 >/dev/null; then
  out=$(ctl specialize block_scan --dtype int32 --threads 128 --arch sm_90 --format bitcode) ||
    fail "the bitcode request failed: $out"
  grep -q '^origin: *compiled' <<<"$out" || fail "the bitcode request was not compiled: $out"
  grep -qi 'bitcode' <<<"$out" || fail "no bitcode in the reply: $out"
else
  echo "systemd_unit_test: no clang++-22: the bitcode compile is not tried"
fi

# The cache directory: coopd's, private, and still there after a restart (a disk hit).
cache_stat=$(in_ns stat -c '%U %a' /var/cache/coopd)
[[ $cache_stat == "coopd 700" ]] || fail "/var/cache/coopd is '$cache_stat', not 'coopd 700'"
in_ns test -s /var/cache/coopd/cache.db || fail "no cache database in /var/cache/coopd"

# Redis over TCP: the compiles reached the farm tier.
for ((i = 0; i < 100; i++)); do
  keys=$(redis-cli -p "$port" dbsize)
  ((keys > 0)) && break
  sleep 0.1
done
((keys > 0)) || fail "nothing was written to Redis on 127.0.0.1:$port"

# The watchdog: systemd expects a notification every minute and gets them (the self-probe's).
[[ $(prop coopd.service WatchdogUSec) == 1min ]] ||
  fail "WatchdogUSec is $(prop coopd.service WatchdogUSec)"
first=$(prop coopd.service WatchdogTimestampMonotonic)
for ((i = 0; i < 300; i++)); do
  [[ $(prop coopd.service WatchdogTimestampMonotonic) != "$first" ]] && break
  sleep 0.1
done
[[ $(prop coopd.service WatchdogTimestampMonotonic) != "$first" ]] ||
  fail "no watchdog notification in 30 s (WatchdogTimestamp stays $first)"

sctl restart coopd.service || fail "systemctl restart coopd.service"
out=$(ctl specialize block_reduce --dtype float32 --threads 256 --arch sm_90) ||
  fail "the request after the restart failed: $out"
grep -q '^origin: *disk' <<<"$out" || fail "after a restart the artifact is not a disk hit: $out"

# Journal priorities from the "<N>" prefixes: nothing at warning or worse so far, then Redis
# goes away and coopd's warning is one; info lines are 6, debug lines 7, and no prefix is left
# in the messages.
warnings=$(in_ns journalctl -u coopd.service -p warning -o cat)
[[ -z $warnings ]] || fail "coopd logged warnings in normal operation: $warnings"
kill -KILL "$redis_pid"
wait "$redis_pid" 2>/dev/null || true
redis_pid=
out=$(ctl specialize block_reduce --dtype int32 --threads 64 --arch sm_90) ||
  fail "a request with Redis gone failed (the farm tier should fail open): $out"
for ((i = 0; i < 100; i++)); do
  warnings=$(in_ns journalctl -u coopd.service -p warning -o cat)
  [[ -n $warnings ]] && break
  sleep 0.1
done
grep -Eq 'remote cache: redis .* is (unreachable|not answering in time)' <<<"$warnings" ||
  fail "journalctl -p warning does not show the Redis warning: '$warnings'"
journal=$(in_ns journalctl -u coopd.service -o json --output-fields=PRIORITY,MESSAGE)
python3 - "$journal" <<'EOF' || fail "journal priorities"
import json, sys
entries = [json.loads(line) for line in sys.argv[1].splitlines() if line.strip()]
coopd = [e for e in entries if " coopd: " in e.get("MESSAGE", "")]
def prio(word):
    return {e["PRIORITY"] for e in coopd if f" {word} coopd: " in e["MESSAGE"]}
problems = []
for word, want in (("debug", {"7"}), ("info", {"6"}), ("warning", {"4"})):
    if prio(word) != want:
        problems.append(f"{word} lines have priorities {prio(word)}, not {want}")
left = [e["MESSAGE"] for e in coopd if e["MESSAGE"].startswith("<")]
if left:
    problems.append(f"prefixes left in messages: {left[:3]}")
if problems:
    sys.exit("; ".join(problems))
EOF

# The user unit, under a user manager of its own: what user@.service runs (without PAM, so
# the runtime directory comes from RuntimeDirectory=), with a delegated cgroup.
in_ns systemd-run --quiet --unit=coopd-test-user-manager --uid="$user_uid" --gid="$user_uid" \
  -p Delegate=yes -p Type=notify -p "RuntimeDirectory=user/$user_uid" \
  -p RuntimeDirectoryMode=0700 --setenv="XDG_RUNTIME_DIR=/run/user/$user_uid" \
  --setenv="SYSTEMD_UNIT_PATH=$t/user-units" --setenv=HOME=/home/coopd-test-user \
  /lib/systemd/systemd --user --unit=coopd-test.target ||
  fail "the user manager did not start"
usocket=/run/user/$user_uid/coopd/coopd.sock
for ((i = 0; i < 100; i++)); do
  in_ns test -S "$usocket" && break
  sleep 0.1
done
in_ns test -S "$usocket" || fail "the user's coopd.socket is not listening on $usocket"
out=$(in_ns setpriv --reuid="$user_uid" --regid="$user_uid" --clear-groups \
  env HOME=/home/coopd-test-user COOPD_NO_AUTOSTART=1 \
  "$coopctl" --socket "$usocket" --timeout 300 specialize block_reduce --dtype float32 \
  --threads 256 --arch sm_90) || fail "the user's first request failed: $out"
grep -q '^origin: *compiled' <<<"$out" || fail "the user's first request was not compiled: $out"
umain=$(in_ns pgrep -u "$user_uid" -x coopd) || fail "no coopd runs as the user"
confined "$umain"
cache_stat=$(in_ns stat -c '%U %a' /home/coopd-test-user/.cache/coopd)
[[ $cache_stat == "coopd-test-user 700" ]] ||
  fail "the user's .cache/coopd is '$cache_stat', not 'coopd-test-user 700'"
in_ns test -s /home/coopd-test-user/.cache/coopd/cache.db || fail "no cache database in ~/.cache/coopd"
sctl stop coopd-test-user-manager.service || fail "stopping the user manager"

# A clean stop; the socket stays systemd's.
sctl stop coopd.service || fail "systemctl stop coopd.service"
[[ $(prop coopd.service Result) == success ]] || fail "coopd stopped with $(prop coopd.service Result)"
[[ $(sctl is-active coopd.socket) == active ]] || fail "coopd.socket stopped with the service"
in_ns test -S "$socket" || fail "the socket is gone after coopd stopped"
echo "systemd_unit_test: PASS"
