#!/usr/bin/env bash
# test_trace_cli.sh - `tgdb trace info|nodes|node|dump` and `tgdb check` on a
# trace of the graph-reuse sample (contents of 'mid' and every ADD recorded):
# listings, filters, one node in full, printed and .npy contents, clean
# one-line errors with exit 1.
. "$(dirname "$0")/support/check.sh"
tmp=$work
has() { echo "$out" | grep -q -- "$1" && ok "$2" || bad "$2 (missing '$1' in: $(echo "$out" | head -3))"; }
# err NAME CMD...: exit $want (2: usage or input error, the trace commands'
# status) and exactly one line on stderr starting with "tgdb:"
want=2
err() {
    local name=$1; shift
    "$@" >/dev/null 2>"$tmp/err"; local rc=$?
    if [ $rc = $want ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^tgdb: " "$tmp/err"; then ok "$name: $(cat "$tmp/err")"
    else bad "$name: rc=$rc stderr=$(cat "$tmp/err")"; fi
}

T=$tmp/r.tgt
TGDB_TRACE=$T TGDB_TRACE_DUMP='mid,op=ADD' "$B/samples/graph-reuse" >/dev/null || bad "sample ran"
out=$("$TGDB" trace info "$T"); has "^status: complete" "info: complete trace"
has "^graphs: 2" "info: two graphs"; has "contents: 3 tensors" "info: 3 contents (mid, out1, out2)"
out=$("$TGDB" trace nodes "$T"); has "^8 of 8 evaluated nodes" "nodes: all 8 evaluations"
has " mid  *SQR *CPU" "nodes: mid row with op and backend"
out=$("$TGDB" trace nodes "$T" --graph 2); has "^4 of 8 evaluated nodes" "nodes --graph 2"
out=$("$TGDB" trace nodes "$T" --filter 'op=SQR'); has "^2 of 8 evaluated nodes" "nodes --filter op=SQR"
out=$("$TGDB" trace nodes "$T" --filter 'y*'); has "^2 of 8 evaluated nodes" "nodes --filter y* (glob)"
out=$("$TGDB" trace node "$T" mid)
has "^'mid': graph 1 (sched 1), node 1, op SQR" "node: header"; has "placement: CPU, cause" "node: placement cause"
has "allocation: buffer #" "node: allocation"; has "shares memory with:" "node: tensors sharing its memory"
has "'act' (node 2, SILU)" "node: names act among them"; has "contents recorded" "node: contents flagged"
out2=$("$TGDB" trace node "$T" 1:1); [ "$out" = "$out2" ] && ok "node: 1:1 is mid" || bad "node 1:1 differs from mid"
out=$("$TGDB" trace node "$T" '#1'); has "^'mid'" "node: #1 (eval index) is mid"
out=$("$TGDB" trace dump "$T" mid); has "f32 \[256,1,1,1\]" "dump: type and shape"; has "^  \[0,0,0\]" "dump: values printed"
"$TGDB" trace dump "$T" out2 --npy "$tmp/o.npy" >/dev/null && [ "$(head -c 6 "$tmp/o.npy" | tail -c 5)" = "NUMPY" ] \
    && [ "$(stat -c %s "$tmp/o.npy")" = $((128 + 256 * 4)) ] && ok "dump --npy: NumPy file of 256 float32" || bad "dump --npy"
err "dump without contents" "$TGDB" trace dump "$T" x2
err "unknown node" "$TGDB" trace node "$T" nope
err "missing file" "$TGDB" trace info "$tmp/missing.tgt"
err "not a trace" "$TGDB" trace info "$TGDB"
err "unknown subcommand" "$TGDB" trace bogus "$T"
err "bad option" "$TGDB" trace nodes "$T" --bogus
err "no such graph" "$TGDB" trace nodes "$T" --graph 9
# strict numbers, one filter syntax (trace/pattern.c), exit codes in the help
err "--graph -5" "$TGDB" trace nodes "$T" --graph -5
err "--graph abc" "$TGDB" trace nodes "$T" --graph abc
err "--compute 1x" "$TGDB" trace nodes "$T" --compute 1x
err "node --compute abc" "$TGDB" trace node "$T" mid --compute abc
err "unknown filter key" "$TGDB" trace nodes "$T" --filter 'shape=1'
err "empty filter item" "$TGDB" trace nodes "$T" --filter 'mid,,x2'
out=$("$TGDB" trace nodes "$T" --filter 'type=F32,op=sqr'); has "^8 of 8 evaluated nodes" "filter type= (any f32), op= case-insensitive"
out=$("$TGDB" trace nodes "$T" --filter 'name=y*,op=NEG'); has "^3 of 8 evaluated nodes" "filter name= and op= alternatives"
out=$("$TGDB" help trace 2>&1; "$TGDB" trace 2>&1); has "exit status: 0 success, 2 usage or input error" "help: exit codes"
has "NAME@G" "help: NAME@G documented"

# graph ids as recorded; a name held by two graphs (synthetic trace, contents
# of Qcur-0 recorded in computations 0 and 1 of graphs 0 and 1)
S=$tmp/syn.tgt
"$B/tests/mktrace" "$S" --nan >/dev/null || bad "mktrace"
out=$("$TGDB" trace dump "$S" Qcur-0 --compute 0); has "^'Qcur-0' graph 0 node 2, computation 0: f32 \[64,8,1,1\]" "dump --compute 0 (not the last)"
out=$("$TGDB" trace dump "$S" Qcur-0 --compute 1); has "^'Qcur-0' graph 1 node 2, computation 1: f32 \[64,1,1,1\]" "dump --compute 1"
out=$("$TGDB" trace dump "$S" Qcur-0@1); has "^'Qcur-0' graph 1 node 2, computation 1" "dump NAME@GRAPH"
out=$("$TGDB" trace node "$S" Qcur-0@0); has "^'Qcur-0': graph 0 (sched 1), node 2, op MUL_MAT" "node NAME@GRAPH"
err "ambiguous name" "$TGDB" trace dump "$S" Qcur-0
grep -q "ambiguous, 2 tensors: 0:2 (graph 0 node 2, MUL_MAT), 1:2 (graph 1 node 2, MUL_MAT)" "$tmp/err" \
    && ok "ambiguous name lists the candidates" || bad "ambiguous candidates: $(cat "$tmp/err")"
err "NAME@ unknown graph" "$TGDB" trace node "$S" Qcur-0@7
err "no such computation" "$TGDB" trace dump "$S" Qcur-0 --compute 5
finish
