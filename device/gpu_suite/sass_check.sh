#!/usr/bin/env bash
# SASS checks on the linked cubins gpu_suite writes (--cubins DIR), one row per kernel:
#   - temp-storage traffic is shared-memory instructions: kernels whose primitive keeps its
#     TempStorage in shared memory have LDS/STS (the warp families but warp_exchange and warp
#     load/store transpose, and the direct, striped and vectorize load/store algorithms use none,
#     and must have none either);
#   - no generic loads or stores (LD/ST/ATOM through generic addresses) anywhere;
#   - the wrapper is fully inlined: no CALL to a coop_ symbol and no coop_ function left in the
#     cubin; nor to (or of) a user operator's symbol listed in SYMBOLS_FILE (one per line;
#     make_artifacts.sh writes user_op_symbols.txt): user operators must be inlined too.
# Local-memory instructions (LDL/STL) are counted and shown, not judged.
# usage: sass_check.sh CUBIN_DIR [SYMBOLS_FILE]   exit 1 when any check fails (each failure named)
set -euo pipefail
dir=$1
# Symbols no kernel may call or keep: coop_ wrappers (coop_op_ source operators among them) and
# the user operators' own symbols.
syms='coop_[A-Za-z0-9_]*'
if [[ -n ${2:-} && -s $2 ]]; then
  while read -r s; do [[ -n $s ]] && syms+="|$s"; done <"$2"
fi
for tool in cuobjdump nvdisasm; do
  command -v $tool >/dev/null || { echo "sass_check: $tool not on PATH" >&2; exit 2; }
done
generic='^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T]+[[:space:]]+)?(LD|ST|ATOM)(\.[A-Z0-9_.]+)?[[:space:]]'
# The patterns must catch what they are meant to catch (and not global/shared/local forms).
printf '        /*0090*/                   LD.E R2, desc[UR4][R2.64] ;\n' | grep -qE "$generic"
printf '        /*0090*/              @!P1 ST.E.64 desc[UR4][R2.64], R4 ;\n' | grep -qE "$generic"
! printf '        /*0090*/                   LDG.E R2, desc[UR4][R2.64] ;\n' | grep -qE "$generic"
! printf '        /*0090*/                   STS [R6+0x8], R13 ;\n' | grep -qE "$generic"
printf '        /*0090*/       CALL.REL.NOINC `(coop_op_0123abcd) ;\n' | grep -qE "CALL[^\`]*\`\\(($syms)\\)"

# Kernels (cubin:function) whose primitive uses no shared memory. warp_exchange (smem) and
# warp_load/warp_store transpose (a WarpExchange inside) keep theirs in shared memory.
no_shared() {
  case $1 in
    warp_exchange_*|warp_ls_transpose*) return 1 ;;
    warp_*|ls_direct:*|ls_striped:*|ls_vectorize:*) return 0 ;;
    *) return 1 ;;
  esac
}
fail=0
printf '%-36s %6s %6s %7s %5s  %s\n' kernel LDS/STS LDL/STL generic CALL result
for cubin in "$dir"/*.cubin; do
  base=$(basename "$cubin" .cubin)
  sass=$(cuobjdump -sass "$cubin")
  dis=$(nvdisasm "$cubin")
  wrapper_calls=$(grep -cE "CALL[^\`]*\`\\(($syms)\\)" <<<"$dis" || true)
  leftover=$(grep -cE "^\\.text\\.($syms)([^A-Za-z0-9_]|$)" <<<"$dis" || true)
  for fn in $(awk '/Function :/ {print $3}' <<<"$sass"); do
    body=$(awk -v f="$fn" '/Function :/ {on = ($3 == f)} on' <<<"$sass")
    shared=$(grep -cE '[[:space:]](LDS|STS|ATOMS)(\.[A-Z0-9_.]+)?[[:space:]]' <<<"$body" || true)
    local_mem=$(grep -cE '[[:space:]](LDL|STL)(\.[A-Z0-9_.]+)?[[:space:]]' <<<"$body" || true)
    gen=$(grep -cE "$generic" <<<"$body" || true)
    calls=$(grep -cE '[[:space:]]CALL\.' <<<"$body" || true)
    name="$base:$fn"
    why=()
    if no_shared "$name"; then
      ((shared == 0)) || why+=("unexpected shared-memory traffic")
    else
      ((shared > 0)) || why+=("no LDS/STS: temp storage not in shared memory")
    fi
    ((gen == 0)) || why+=("$gen generic LD/ST")
    ((wrapper_calls == 0)) || why+=("CALL to a coop_ wrapper or user operator")
    ((leftover == 0)) || why+=("coop_ or user operator function left in the cubin")
    if ((${#why[@]})); then
      fail=1
      result="FAIL: $(IFS=';'; echo "${why[*]}")"
    else
      result=PASS
    fi
    printf '%-36s %6d %6d %7d %5d  %s\n' "$name" "$shared" "$local_mem" "$gen" "$calls" "$result"
    echo "RESULT sass $name $([[ $result == PASS ]] && echo PASS || echo FAIL)"
  done
done
if ((fail)); then
  echo "sass_check: FAILED" >&2
  exit 1
fi
echo "sass_check: all kernels pass"
