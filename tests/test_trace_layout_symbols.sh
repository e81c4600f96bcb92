#!/usr/bin/env bash
# test_trace_layout_symbols.sh - every external symbol that libtgtrace's
# writer, reader and recorder objects define carries the tg_ prefix (no
# clashes with a host program's names). Runs in build*/tests.
set -euo pipefail
lib=../trace/libtgtrace.a
[ -f "$lib" ] || { echo "FAIL: $lib not found"; exit 1; }
command -v nm >/dev/null || { echo "FAIL: nm not found"; exit 1; }
bad=$(nm -g --defined-only -A "$lib" |
      awk '$(NF-1) ~ /^[TDBR]$/ { print $1, $NF }' |
      grep -E '(writer|reader|recorder)[^:]*\.o:' |
      grep -vE ' tg_' || true)
n=$(nm -g --defined-only -A "$lib" | awk '$(NF-1) ~ /^[TDBR]$/' | grep -cE '(writer|reader|recorder)[^:]*\.o:' || true)
[ "$n" -gt 20 ] || { echo "FAIL: only $n symbols seen in the writer/reader/recorder objects"; exit 1; }
if [ -n "$bad" ]; then
    echo "FAIL: unprefixed exported symbols:"; echo "$bad"; exit 1
fi
echo "ok: $n exported symbols of the writer/reader/recorder objects, all tg_-prefixed"
