#!/usr/bin/env bash
# test_shell.sh - `tgdb shell` driven by -x and by scripts on stdin:
# post-mortem (synthetic trace; a traced sample that makes a NaN on purpose)
# and live (the tiny sample model in-process): breakpoints by name, op and
# NaN, print, step, where; errors keep the shell running.
. "$(dirname "$0")/support/check.sh"
set -o pipefail
export TGDB_HISTORY=$work/history
# expect NAME PATTERN: the last output holds the (extended regex) pattern
expect() { if grep -qE -- "$2" "$work/out"; then ok "$1"; else bad "$1: no /$2/ in:"; sed 's/^/    /' "$work/out" | head -40; fi; }

"$MK" "$work/syn.tgt" --nan || { echo "FAIL mktrace"; exit 1; }

# --- post-mortem, -x
"$TGDB" shell "$work/syn.tgt" -x 'break attn_norm-1; continue; where; print; step; where' > "$work/out" 2>&1
expect "break by name stops at attn_norm-1" "breakpoint 1 \(attn_norm-1\) hit"
expect "where names graph, node, split, tokens and layer" "eval 17/128: graph 0 \(id 0\), node 16/64 attn_norm-1 \(RMS_NORM f32 \[64,8,1,1\]\), split 8 on CPU, tokens 0..7, layer 1"
expect "print without contents shows the summary" "no contents recorded .*summary"
expect "step moves to the next evaluated node" "eval 18/128: graph 0 \(id 0\), node 17/64 Qcur-1"
"$TGDB" shell "$work/syn.tgt" -x 'break op SOFT_MAX; continue; continue; info breaks' > "$work/out" 2>&1
expect "break by op stops at the first SOFT_MAX" "node 6/64 kq_soft_max-0"
expect "continue goes to the next one" "node 21/64 kq_soft_max-1"
expect "info breaks counts hits" "1: op SOFT_MAX  \(hit 2 times\)"
"$TGDB" shell "$work/syn.tgt" -x 'break nan; continue; print Qcur-2 [0:4]' > "$work/out" 2>&1
expect "break nan stops at the first NaN (Qcur-2)" "node 32/64 Qcur-2 .*"
expect "... whose summary shows it" "nan 1 inf 0  <-- non-finite"
expect "print with a slice reads recorded contents" "contents \(recorded, compute 0\):"
"$TGDB" shell "$work/syn.tgt" -x 'step 3; prev; goto 10; list 3; info node 10; graph 1; where' > "$work/out" 2>&1
expect "prev goes back" "eval 3/128: graph 0 .*node 2/64 Qcur-0"
expect "goto N" "eval 11/128: graph 0 .*node 10/64 ffn_norm-0"
expect "list marks the current node" "^=>    10  ffn_norm-0"
expect "info node shows the placement cause" "placement: CPU, because source inp_embd on CPU"
where=$("$TGDB" trace nodes "$work/syn.tgt" | awk '$4 == "ffn_norm-0" && w == "" { w = $8 } END { print w }')   # #uid@offset
expect "info node names the buffer and offset as tgdb trace nodes does ($where)" \
    "memory: buffer ${where%@*}, offset ${where#*@}, [0-9]+ bytes"
"$TGDB" shell "$work/syn.tgt" -x 'info buffers' > "$work/out" 2>&1
expect "info buffers lists the compute buffer by id (${where%@*})" "^  buffer ${where%@*}: CPU, type CPU, usage compute, [0-9]+ bytes"
"$TGDB" shell "$work/syn.tgt" -x 'step 3; prev; goto 10; list 3; info node 10; graph 1; where' > "$work/out" 2>&1
expect "graph G moves to its first evaluated node" "eval 65/128: graph 1 \(id 1\), node 0/64 inp_embd"

"$TGDB" shell "$work/syn.tgt" -x 'break op ADD; info breakpoints' > "$work/out" 2>&1
expect "info breakpoints (gdb spelling) lists them" "1: op ADD  \(hit 0 times\)"
"$TGDB" shell "$work/syn.tgt" -x 'break op NOSUCHOP; break op SOFTMAX; info breaks' > "$work/out" 2>&1
expect "break op rejects an unknown op" "no op matches 'NOSUCHOP'"
expect "... naming the closest" "did you mean SOFT_MAX"
expect "... and sets no breakpoint" "^no breakpoints"

# --- errors: one clear line each, and the shell keeps running
"$TGDB" shell "$work/syn.tgt" -x 'frobnicate; goto nosuchnode; print nosuch; open /nonexistent.tgt; info bogus; step 0; where' > "$work/out" 2> "$work/err"
rc=$?
cp "$work/err" "$work/errs"; cp "$work/out" "$work/o2"
cp "$work/errs" "$work/out"
expect "unknown command" "^error: unknown command 'frobnicate' \(type 'help' for the list\)$"
expect "bad node name" "^error: no node named 'nosuchnode' in graph 0"
expect "unreadable file" "^error: .*nonexistent.tgt"
expect "bad info topic" "^error: info: unknown topic 'bogus'"
expect "bad count" "^error: step: '0' is not a count >= 1"
cp "$work/o2" "$work/out"
expect "the shell kept running after the errors" "at the start of the trace"
if [ $rc = 1 ]; then ok "a script with errors exits 1"; else bad "script with errors exited $rc"; fi
if [ "$(wc -l < "$work/errs")" = 6 ]; then ok "six errors, six lines"; else bad "expected 6 error lines, got $(wc -l < "$work/errs")"; fi
# graph G counts from 0; a trace whose graph ids start at 5 (as `tgdb trace info` prints them)
"$MK" "$work/g5.tgt" --graph-base 5 || { echo "FAIL mktrace"; exit 1; }
"$TGDB" shell "$work/g5.tgt" -x 'graph 5; graph 9; graph 1; where' > "$work/out" 2>&1
expect "an id given to graph: says which index it is" "^error: no graph '5' \(the trace has 2: 0..1; graph id 5, as .tgdb trace info. names it, is 'graph 0' here\)"
expect "no such index or id: names the range of both" "^error: no graph '9' \(the trace has 2: 0..1, ids 5..6; 'info graphs' lists them\)"
expect "graph 1 is the second graph (id 6)" "graph 1 \(id 6\), node 0/"

# --- a script on standard input, help
printf 'help\nbreak op MUL_MAT\n# a comment\ncontinue\nhelp print\nquit\nstep\n' | "$TGDB" shell "$work/syn.tgt" > "$work/out" 2>&1
expect "stdin script: help lists commands" "^  continue .*run to the next breakpoint"
expect "stdin script: breakpoint by op" "node 2/64 Qcur-0 \(MUL_MAT"
expect "help COMMAND" "^print \[NODE\] \[SLICE\]"
if grep -q "(tgdb) step" "$work/out"; then bad "commands after quit ran"; else ok "quit ends the script"; fi

# --- a traced sample that makes a NaN on purpose
if [ -x "$B/samples/nan-origin" ]; then
    TGDB_TRACE="$work/nan.tgt" "$B/samples/nan-origin" > "$work/out" 2>&1
    expect "nan-origin produces a NaN" "total = nan"
    "$TGDB" shell "$work/nan.tgt" -x 'break nan; continue; where' > "$work/out" 2>&1
    expect "break nan stops at log_x, where the NaN starts" "node 1/6 log_x \(LOG f32 \[64,8,1,1\]\)"
    expect "... and shows the NaN count" "nan 128 inf 5  <-- non-finite"
else
    bad "samples/nan-origin was not built"
fi

# --- live: the tiny sample model in-process
model=$work/tiny.gguf
if "$B/samples/make-model" --preset tiny -o "$model" > /dev/null 2>&1; then
    "$TGDB" shell -m "$model" -x 'break attn_norm-1; run Hello world; where; print [0:4]; step; where; list 3; break op SOFT_MAX; continue; print; finish; continue' > "$work/out" 2>&1
    expect "live: break by name during run" "breakpoint 1 \(attn_norm-1\) at node [0-9]+ attn_norm-1"
    expect "live: where" "stopped after node [0-9]+/[0-9]+ attn_norm-1 \(MUL \[64,3,1,1\] f32\) of graph 0; decode of 3 tokens at pos 0 \(token 2\), layer 1"
    expect "live: print reads the real tensor" "attn_norm-1: MUL \[64,3,1,1\] f32 \(read from its backend buffer\)"
    expect "live: step computes the next node" "stopped after node [0-9]+ Qcur-1 \(MUL_MAT\)"
    expect "live: list marks nodes not computed yet" "\(not computed yet\)"
    expect "live: break by op" "breakpoint 2 \(SOFT_MAX\) at node [0-9]+ kq_soft_max-1"
    expect "live: finish stops at the graph's last node" "result_output \(MUL_MAT\)"
    expect "live: continue to the end" "done: 3 prompt tokens"
    "$TGDB" shell -m "$model" -x 'break nan; run Hello; step' > "$work/out" 2>&1
    expect "live: no NaN in a healthy model, run ends" "done: 2 prompt tokens"
    expect "live: step after the end explains" "error: .*run finished"
    "$TGDB" shell -m "$work/missing.gguf" -x 'where' > "$work/out" 2>&1; rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$work/out")" = 1 ]; then ok "live: missing model, one line: $(cat "$work/out")"; else bad "missing model (rc=$rc)"; cat "$work/out"; fi
else
    bad "make-model failed"
fi
finish
