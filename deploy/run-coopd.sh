#!/usr/bin/env bash
# Sets everything up, builds, and runs coopd in the foreground with its defaults: the SQLite
# cache in ~/.cache/coopd (or $XDG_CACHE_HOME/coopd), listening on
# $XDG_RUNTIME_DIR/coopd/coopd.sock (or /tmp/coopd-$UID/coopd.sock). Arguments go to coopd.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build.sh >&2
exec "${BUILD_DIR:-build}/server/coopd" "$@"
