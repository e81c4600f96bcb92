#!/usr/bin/env bash
# test_trace_reuse.sh - acceptance: the graph-reuse sample traced through
# TGDB_TRACE; `tgdb check` reports the stale read of 'mid' naming the tensor,
# its graph and the tensors that overwrote it (exit 1); the --correct variant
# reports nothing (exit 0).
set -u
B=${TG_BUILD_DIR:?}
SAMPLE=$B/samples/graph-reuse
TGDB=$B/inspect/tgdb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
expect() { echo "$out" | grep -q -- "$1" && ok "$2" || bad "$2 (missing '$1')"; }

[ -x "$SAMPLE" ] || { echo "FAIL samples/graph-reuse not built"; exit 1; }
TGDB_TRACE=$tmp/bug.tgt "$SAMPLE" >/dev/null || bad "graph-reuse ran"
out=$("$TGDB" check "$tmp/bug.tgt" 2>&1); rc=$?
echo "$out" | sed 's/^/    | /'
[ $rc = 1 ] && ok "tgdb check exits 1 on the buggy run" || bad "tgdb check exit $rc"
expect "PROBLEM \[stale-read\] stale read: host read of 'mid'" "names the stale tensor 'mid'"
expect "'mid' (graph 1 node 1, SQR)" "names mid's graph and node"
expect "were handed to 'act' (graph 1 node 2, SILU)" "names the first tensor that overwrote it (in place, same graph)"
expect "overwritten by 'y3' (graph 2 node 0, SCALE)" "names the tensor of the later graph that overwrote it"
expect "reads bytes \[[0-9]*, [0-9]*) of buffer #" "names the buffer and byte range"
expect "1 problem" "exactly one problem"

TGDB_TRACE=$tmp/ok.tgt "$SAMPLE" --correct >/dev/null || bad "graph-reuse --correct ran"
out=$("$TGDB" check "$tmp/ok.tgt" 2>&1); rc=$?
[ $rc = 0 ] && ok "tgdb check exits 0 on the correct run" || bad "correct run: exit $rc: $out"
expect "0 problems" "the correct run has no problem"
expect "host reads: 0 problems\|1 host reads" "the correct run's host read was checked"

echo "test_trace_reuse: $pass passed, $fail failed"
[ $fail = 0 ]
