#!/usr/bin/env bash
# Packs the coopd built here (./build, or $BUILD_DIR) with the shared libraries `ldd` lists for
# it, so that it runs on the GPU machine, which has the CUDA toolkit but no gRPC, protobuf,
# abseil, spdlog or SQLite libraries. Leaves out what every Linux has (glibc, libstdc++,
# libgcc_s) and what the CUDA toolkit there provides (NVRTC, nvJitLink).
#   device/bundle_coopd.sh [DEST]     (default .device-carry/coopd)
# DEST/coopd is a wrapper that sets LD_LIBRARY_PATH and runs the stripped DEST/bin/coopd; point
# COOPD_BIN at it. Carry DEST (the device tool's `carry`); it is about 20 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
dest=${1:-.device-carry/coopd}
[[ -x $build/server/coopd ]] || { echo "bundle_coopd: build coopd first (deploy/build.sh)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
strip -o "$dest/bin/coopd" "$build/server/coopd"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|librt|libdl|libstdc\+\+|libgcc_s|libnvrtc|libnvJitLink)'
ldd "$build/server/coopd" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$dest/lib/$name"
done
cat >"$dest/coopd" <<'WRAP'
#!/usr/bin/env bash
# coopd with the shared libraries it was packed with (device/bundle_coopd.sh).
here=$(dirname "$(readlink -f "$0")")
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/coopd" "$@"
WRAP
chmod +x "$dest/coopd"
echo "bundle_coopd: $dest ($(du -sh "$dest" | cut -f1), $(ls "$dest/lib" | wc -l) libraries)"
