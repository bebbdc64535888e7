#!/usr/bin/env bash
# Fails (listing the files) when any C++/CUDA source differs from .clang-format's style.
# Fix with: clang-format -i $(git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh')
set -euo pipefail
cd "$(dirname "$0")/.."
bad=()
while IFS= read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh')
if ((${#bad[@]})); then
  echo "check-format: clang-format would change: ${bad[*]}" >&2
  exit 1
fi
echo "check-format: ok" >&2
