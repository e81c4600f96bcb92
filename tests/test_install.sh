#!/usr/bin/env bash
# test_install.sh - the installed tree works for a program built by hand:
# `cmake --install` into a temporary prefix, compile a small C program with
# `pkg-config --cflags --libs tgtrace` (static libraries), run it with
# TGDB_TRACE=x.tgt and check the trace exists and `tgdb trace info` reads it.
# Also: every installed library exports only tg_-prefixed globals.
set -euo pipefail
B=${TG_BUILD_DIR:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$B" --prefix "$tmp/prefix" >/dev/null || fail "cmake --install"
pcdir=$(dirname "$(find "$tmp/prefix" -name tgtrace.pc | head -1)")
[ -f "$pcdir/tgtrace.pc" ] || fail "tgtrace.pc not installed"
[ -f "$pcdir/tg.pc" ] || fail "tg.pc not installed"
ls "$tmp/prefix"/lib*/libtgtrace.a >/dev/null || fail "libtgtrace not installed"
[ -f "$tmp/prefix/include/tg/trace.h" ] || fail "tgtrace headers not installed"

# The program references nothing of libtgtrace: tracing must still work.
cat > "$tmp/prog.c" <<'C'
#include <stdio.h>
#include "tg/core.h"
#include "tg/backend.h"
#include "tg/sched.h"
int main(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 1 << 20, .no_alloc = true });
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 8);
    tg_set_input(a);
    struct tg_tensor * b = tg_add(ctx, a, a);
    struct tg_graph * g = tg_graph_new(ctx, 16);
    struct tg_backend * cpu = tg_backend_cpu_init();
    struct tg_sched * s = tg_sched_new(&cpu, 1, 0);
    if (!g || !s || tg_graph_build_forward(g, b) != TG_OK || tg_sched_graph_compute(s, g) != TG_OK) {
        fprintf(stderr, "%s\n", tg_last_error());
        return 1;
    }
    tg_sched_free(s);
    tg_backend_free(cpu);
    tg_context_free(ctx);
    puts("ok");
    return 0;
}
C
export PKG_CONFIG_PATH="$pcdir"
flags=$(pkg-config --static --cflags --libs tgtrace) || fail "pkg-config tgtrace"
san=""   # a sanitizer build's libraries need the sanitizer runtime in the program too
if nm "$B/engine/libtg.a" 2>/dev/null | grep -c __asan_ >/dev/null; then san="-fsanitize=address,undefined"; fi
cc -std=gnu11 $san -o "$tmp/prog" "$tmp/prog.c" $flags || fail "compile with: $flags"
TGDB_TRACE="$tmp/x.tgt" "$tmp/prog" >/dev/null || fail "prog failed"
[ -s "$tmp/x.tgt" ] || fail "TGDB_TRACE wrote no trace"
"$tmp/prefix/bin/tgdb" trace info "$tmp/x.tgt" > "$tmp/info.txt" || fail "tgdb trace info"
cat "$tmp/info.txt"
grep -q "^graphs: 1" "$tmp/info.txt" || fail "trace info shows no graph"
grep -q "^computations: 1 begun, 1 ok" "$tmp/info.txt" || fail "trace info shows no computation"
# one version everywhere: the command's and the trace RUN record's
ver=$("$tmp/prefix/bin/tgdb" --version | awk '{print $2}')
grep -q "engine $ver," "$tmp/info.txt" || fail "RUN record's version is not tgdb's ($ver)"
grep -q "^Version: $ver$" "$pcdir/tgtrace.pc" && grep -q "^Version: $ver$" "$pcdir/tg.pc" || fail ".pc versions differ from $ver"

# Exported globals of the installed libraries, and of the libraries a program
# may link from the build tree (libtgtui, libtgdot): tg_ only. KNOWN lists
# symbols whose files belong to other branches (being renamed there); it may
# only shrink.
KNOWN=" "
bad=""
n_libs=0
for lib in "$tmp/prefix"/lib*/lib*.a "$B/tui/libtgtui.a" "$B/dot/libtgdot.a"; do
  [ -f "$lib" ] || continue
  n_libs=$((n_libs + 1))
  for sym in $(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF==3 {print $3}' | sort -u); do
    case "$sym" in tg_*|__odr_asan.tg_*) continue;; esac  # (ASan adds __odr_asan.<global>)
    case "$KNOWN" in *" $sym "*) continue;; esac
    bad="$bad $(basename "$lib"):$sym"
  done
done
[ "$n_libs" -ge 5 ] || fail "only $n_libs libraries found to check (libtg, libtgtrace, libtglive, libtgtui, libtgdot)"
[ -z "$bad" ] || fail "non-tg_ globals exported:$bad"
echo "exported globals: tg_ only in $n_libs libraries"
echo "test_install: ok"
