#!/usr/bin/env bash
# Installs coopd's build into a temporary prefix (cmake --install), builds the consumers in
# tests/install/consumer outside the tree against it, once with find_package(coop) and once
# with pkg-config (coop.pc, coop_c.pc), and has each ask the installed coopd, running on a
# temporary socket, for a real specialization. libcoop_c is installed as libcoop_c.so.VERSION
# with SONAME libcoop_c.so.MAJOR, and the C consumers need it by that name.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/coopd-install-test.XXXXXX)
daemon=
cleanup() {
  if [[ -n $daemon ]] && kill -0 "$daemon" 2>/dev/null; then kill -KILL "$daemon" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "install_test: FAIL: $*" >&2
  [[ -f $tmp/coopd.log ]] && sed 's/^/  coopd: /' "$tmp/coopd.log" >&2
  exit 1
}

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || fail "cmake --install: $(cat "$tmp/install.log")"
libdir=$(dirname "$(find "$prefix" -name coopConfig.cmake -path '*/cmake/coop/*')")
libdir=${libdir%/cmake/coop}
for f in bin/coopd bin/coopctl include/coop/client.h include/coop/coop_c.h include/coop/paths.h; do
  [[ -e $prefix/$f ]] || fail "not installed: $f"
done
for f in libcoop_client.a libcoop_paths.a libcoop_proto.a libcoop_c.so cmake/coop/coopConfig.cmake \
         cmake/coop/coopConfigVersion.cmake cmake/coop/coopTargets.cmake pkgconfig/coop.pc \
         pkgconfig/coop_c.pc; do
  [[ -e $libdir/$f ]] || fail "not installed: ${libdir#"$prefix"/}/$f"
done
for f in share/coopd/systemd/system/coopd.service share/coopd/systemd/system/coopd.socket \
         share/coopd/systemd/user/coopd.service share/coopd/systemd/user/coopd.socket \
         share/coopd/coopd.env share/coopd/coopd.toml share/coopd/logrotate/coopd \
         share/doc/coopd/operators.md share/doc/coopd/LICENSE; do
  [[ -e $prefix/$f ]] || fail "not installed: $f"
done
cmp -s "$src/LICENSE" "$prefix/share/doc/coopd/LICENSE" ||
  fail "the installed LICENSE is not the repository's"
# libcoop_c.so.VERSION, a link libcoop_c.so.MAJOR (its SONAME) to it and the development link
# libcoop_c.so to that; VERSION is the package's (coopConfigVersion.cmake).
version=$(sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\)")$/\1/p' \
  "$libdir/cmake/coop/coopConfigVersion.cmake")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  fail "no package version in coopConfigVersion.cmake: '$version'"
soname=libcoop_c.so.${version%%.*}
[[ -f $libdir/libcoop_c.so.$version && ! -L $libdir/libcoop_c.so.$version ]] ||
  fail "libcoop_c.so.$version is not installed as a file"
[[ $(readlink "$libdir/$soname") == "libcoop_c.so.$version" ]] ||
  fail "$soname does not link to libcoop_c.so.$version: $(ls -l "$libdir"/libcoop_c.so*)"
[[ $(readlink "$libdir/libcoop_c.so") == "$soname" ]] ||
  fail "libcoop_c.so does not link to $soname: $(ls -l "$libdir"/libcoop_c.so*)"
got=$(readelf -d "$libdir/libcoop_c.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $got == "$soname" ]] || fail "libcoop_c.so.$version has SONAME '$got', not $soname"
grep -q '^ExecStart=/.*/coopd$' "$prefix/share/coopd/systemd/system/coopd.service" ||
  fail "the installed system unit's ExecStart does not name coopd by an absolute path"
echo "install_test: installed into $prefix"

# find_package(coop): coop::client and coop::c.
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/configure.log" 2>&1 || fail "configure the consumer: $(cat "$tmp/configure.log")"
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || fail "build the consumer: $(cat "$tmp/build.log")"
# pkg-config: the same sources, by hand.
export PKG_CONFIG_PATH=$libdir/pkgconfig
c++ -std=c++17 -o "$tmp/consumer_cpp_pc" "$src/tests/install/consumer/consumer.cc" \
  $(pkg-config --cflags --libs coop) || fail "c++ with pkg-config coop"
cc -std=c99 -o "$tmp/consumer_c_pc" "$src/tests/install/consumer/consumer.c" \
  $(pkg-config --cflags --libs coop_c) -Wl,-rpath,"$libdir" || fail "cc with pkg-config coop_c"
for c in consumer/consumer_c consumer_c_pc; do
  needed=$(readelf -d "$tmp/$c" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  grep -qxF "$soname" <<<"$needed" || fail "$c does not need $soname: $needed"
done
echo "install_test: consumers built (find_package and pkg-config), the C ones need $soname"

socket=$tmp/run/coopd.sock
"$prefix/bin/coopd" --socket "$socket" --cache-dir "$tmp/cache" --workers 1 >"$tmp/coopd.log" 2>&1 &
daemon=$!
for ((i = 0; i < 1200; i++)); do
  if "$prefix/bin/coopctl" --socket "$socket" --timeout 5 health >/dev/null 2>&1; then break; fi
  kill -0 "$daemon" 2>/dev/null || fail "the installed coopd exited during start-up"
  sleep 0.1
done
"$prefix/bin/coopctl" --socket "$socket" health >/dev/null || fail "the installed coopd did not become ready"

check() {  # check NAME EXPECTED-LINE...
  local name=$1 out
  shift
  out=$("$tmp/$name" "$socket") || fail "$name exited $?"
  for want in "$@"; do
    grep -qxF "$want" <<<"$out" || fail "$name printed no line \"$want\"; it printed: $out"
  done
  echo "install_test: $name: ok"
}
check consumer/consumer_cpp "health SERVING" "temp_storage 44 4"
check consumer/consumer_c "temp_storage 44 4"
check consumer_cpp_pc "health SERVING" "temp_storage 44 4"
check consumer_c_pc "temp_storage 44 4"
# The consumers' requests reached the installed daemon: one compile, three hits.
stats=$("$prefix/bin/coopctl" --socket "$socket" stats --json)
grep -q '"requests":4,' <<<"$stats" || fail "expected 4 requests in the daemon's stats: $stats"
grep -q '"compiles":1,' <<<"$stats" || fail "expected 1 compile in the daemon's stats: $stats"

kill -TERM "$daemon"
wait "$daemon" || fail "the installed coopd exited $? on SIGTERM"
daemon=
echo "install_test: PASS"
