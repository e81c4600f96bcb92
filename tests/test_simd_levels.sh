#!/usr/bin/env bash
# test_simd_levels.sh - TG_SIMD=LEVEL forces each SIMD level this CPU has
# (scalar, avx, avx2, avx512, avx512vnni; `tgdb devices` names the level in use), and the
# op suite (test_ops), the matrix tests (test_mul_mat) and the determinism
# test pass at every one of them.
. "$(dirname "$0")/support/check.sh"
unset TG_SIMD TG_NO_SIMD   # this test sets the level itself (a cap from outside would skew "detected")
all="scalar avx avx2 avx512 avx512vnni"
top=$("$TGDB" devices | awk '$1 == "CPU" {print $NF}')
case " $all " in *" $top "*) ;; *) bad "tgdb devices names no SIMD level ('$top')"; finish; exit;; esac
for lvl in $all; do
    got=$(TG_SIMD=$lvl "$TGDB" devices | awk '$1 == "CPU" {print $NF}')
    [ "$got" = "$lvl" ] && ok "TG_SIMD=$lvl selects $lvl" || bad "TG_SIMD=$lvl selects '$got'"
    for t in test_ops test_mul_mat test_determinism; do
        if TG_SIMD=$lvl "$B/tests/$t" > "$work/$t-$lvl.out" 2>&1; then ok "$t at $lvl ($(tail -n 1 "$work/$t-$lvl.out"))"
        else bad "$t at $lvl: $(grep -m 3 FAIL "$work/$t-$lvl.out")"; fi
    done
    [ "$lvl" = "$top" ] && break
done
got=$(TG_SIMD=nonsense "$TGDB" devices | awk '$1 == "CPU" {print $NF}')
[ "$got" = "$top" ] && ok "an unknown TG_SIMD value leaves the detected level ($top)" || bad "TG_SIMD=nonsense gives '$got'"
finish
