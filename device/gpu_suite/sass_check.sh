#!/usr/bin/env bash
# SASS checks on the linked cubins gpu_suite writes (--cubins DIR), one row per kernel:
#   - temp-storage traffic is shared-memory instructions: kernels whose primitive keeps its
#     TempStorage in shared memory have LDS/STS (the warp families but warp_exchange and warp
#     load/store transpose, and the direct, striped and vectorize load/store algorithms use none,
#     and must have none either);
#   - no generic loads or stores (LD/ST/ATOM through generic addresses) anywhere;
#   - the wrapper is fully inlined, and so are user operators (their symbols listed in
#     SYMBOLS_FILE, one per line; make_artifacts.sh writes user_op_symbols.txt). Every CALL's
#     target is resolved, by nvdisasm's name for it or through the cubin's symbol table, because
#     a function that nvJitLink -lto did not inline stays in the kernel's code under a local name
#     (`$k_probe$coop_block_probe_f32_0123`) that cuobjdump shows only as an offset
#     (`CALL.REL.NOINC 0xa0`). A CALL to a coop_ function or a user operator fails; so does a
#     CALL to anything else that is not on the short allowlist of CUDA's own helpers (the
#     division, remainder, sqrt and reciprocal slow paths ptxas emits; vprintf and __assertfail,
#     which the driver supplies); so does a coop_ or user-operator function left in the cubin.
#     sass_check.py says why each allowlisted name is there.
# Local-memory instructions (LDL/STL) are counted and shown, not judged.
# tests/integration/device/sass_check_test.sh proves in CI that a wrapper which was not inlined
# fails this check (and that inlined code and CUDA's helpers pass).
# usage: sass_check.sh CUBIN_DIR [SYMBOLS_FILE]   exit 1 when any check fails (each failure named),
#   2 on a usage error, a directory without cubins or a missing tool (nvdisasm, python3)
set -euo pipefail
for tool in nvdisasm python3; do
  command -v $tool >/dev/null || { echo "sass_check: $tool not on PATH" >&2; exit 2; }
done
exec python3 "$(dirname "$0")/sass_check.py" "$@"
