#!/usr/bin/env bash
# test_trace_reuse.sh - acceptance: the graph-reuse sample traced through
# TGDB_TRACE; `tgdb check` reports the stale read of 'mid' naming the tensor,
# its graph and the tensors that overwrote it (exit 1); the --correct variant
# reports nothing (exit 0).
. "$(dirname "$0")/support/check.sh"
SAMPLE=$B/samples/graph-reuse
tmp=$work
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
expect "then last overwritten by 'out2' (graph 2 node 3, ADD) in computation #1" "names the last writer before the read"
expect "then also overwritten by 'neg' (graph 2 node 2, NEG)" "names every writer in between"
expect "6 writes to these bytes between the tensor's own write and the read" "counts every writer"
json=$("$TGDB" check "$tmp/bug.tgt" --json); rc=$?
[ $rc = 1 ] && ok "check --json exits 1 on a problem" || bad "check --json exit $rc"
echo "$json" | python3 -c "
import json,sys; d=json.load(sys.stdin); f=[x for x in d['findings'] if x['kind']=='stale-read']
assert d['problems']==1 and len(f)==1, d
f=f[0]
assert f['severity']=='problem' and f['tensor']=={'graph':1,'node':1,'name':'mid'}, f
assert f['writer']['name']=='act' and f['last_writer']=={'graph':2,'node':3,'name':'out2'} and f['writers']==6, f
assert f['end']-f['begin']==1024 and 'stale read' in f['text'], f
" && ok "check --json: kind, severity, tensors by graph id, writers, byte range" || bad "check --json content: $json"
"$TGDB" check "$tmp/bug.tgt" --bogus 2>/dev/null; rc=$?
[ $rc = 2 ] && ok "unknown option: usage error exits 2" || bad "unknown option exit $rc"
"$TGDB" check "$tmp/missing.tgt" 2>/dev/null; rc=$?
[ $rc = 2 ] && ok "missing trace: input error exits 2" || bad "missing trace exit $rc"
"$TGDB" check "$TGDB" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && ok "not a trace: one line, exit 2" || bad "not a trace: exit $rc: $(cat "$tmp/err")"
"$TGDB" help check 2>&1 | grep -q "exit 0 no problem, 1 a problem found, 2 usage or input error" && ok "help documents exit statuses" || bad "help check"

TGDB_TRACE=$tmp/ok.tgt "$SAMPLE" --correct >/dev/null || bad "graph-reuse --correct ran"
out=$("$TGDB" check "$tmp/ok.tgt" 2>&1); rc=$?
[ $rc = 0 ] && ok "tgdb check exits 0 on the correct run" || bad "correct run: exit $rc: $out"
expect "0 problems" "the correct run has no problem"
"$TGDB" check "$tmp/ok.tgt" --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['problems']==0 and d['findings']==[] else 1)" \
    && ok "check --json of the correct run: no findings" || bad "check --json of the correct run"
expect "host reads: 0 problems\|1 host reads" "the correct run's host read was checked"
finish
