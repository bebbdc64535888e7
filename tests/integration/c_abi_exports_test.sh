#!/usr/bin/env bash
# c_abi_exports_test.sh LIBCOOP_C HEADER C_TEST_BINARY
#
# libcoop_c.so exports exactly the functions coop/coop_c.h declares (every one of them, nothing
# else: the C++ client and protobuf code inside stay local), and the C test binary, built
# against the library alone, needs no library but it (by its versioned SONAME) and libc.
set -euo pipefail
lib=$1 header=$2 binary=$3
fail=0

exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)
declared=$(grep -oE '\bcoop_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)
if [[ -z $exported || -z $declared ]]; then
  echo "nothing exported or nothing declared" >&2
  exit 1
fi
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [[ -n $extra ]]; then
  echo "exported but not declared in $(basename "$header"):" >&2
  echo "$extra" | head -20 >&2
  fail=1
fi
if [[ -n $missing ]]; then
  echo "declared but not exported (not implemented?):" >&2
  echo "$missing" >&2
  fail=1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if ! [[ $soname =~ ^libcoop_c\.so\.[0-9]+$ ]]; then
  echo "$(basename "$lib") has no versioned SONAME libcoop_c.so.N: '$soname'" >&2
  fail=1
fi
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
others=$(echo "$needed" | grep -vxF -e "$soname" -e libc.so.6 || true)
if [[ -z $soname ]] || ! echo "$needed" | grep -qxF "$soname"; then
  echo "$(basename "$binary") does not link libcoop_c.so by its SONAME ($soname): $needed" >&2
  fail=1
fi
if [[ -n $others ]]; then
  echo "$(basename "$binary") needs more than libcoop_c.so and libc: $others" >&2
  fail=1
fi
((fail == 0)) && echo "$(echo "$exported" | wc -l) coop_* functions exported, all declared;" \
  "$(basename "$binary") needs only: $(echo $needed)"
exit $fail
