#!/usr/bin/env bash
# test_tui.sh - drives `tgdb tui` in tmux at fixed sizes with key scripts and
# compares the captured screens with tests/data/tui/*.txt.
# TG_TUI_UPDATE=1 rewrites the expected screens (review the diff!).
set -euo pipefail
. "$(dirname "$0")/support/check.sh"
EXP=$DATA/tui
command -v tmux >/dev/null || { echo "FAIL tmux is not installed (apt-get install tmux)"; exit 1; }
n_sessions=0
sock=tgdb-test-$$-0
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$MK" "$work/syn.tgt" --nan
"$MK" "$work/other.tgt" --nan --variant 2

start() {  # start COLS ROWS ARGS...: a fresh session running tgdb tui
    local cols=$1 rows=$2; shift 2
    tmux -L "$sock" kill-server 2>/dev/null || true
    n_sessions=$((n_sessions + 1)); sock=tgdb-test-$$-$n_sessions   # a fresh server each time
    (cd "$work" && tmux -L "$sock" -f /dev/null new-session -d -s t -x "$cols" -y "$rows" \
        "env TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 $TGDB tui $*; echo EXITED=\$?; sleep 30")
}

keys() { tmux -L "$sock" send-keys -t t "$@"; }

capture() {  # prints the screen once it stopped changing for 0.4 s
    local prev="" cur i same=0
    for i in $(seq 1 100); do
        sleep 0.05
        cur=$(tmux -L "$sock" capture-pane -p -t t)
        if [ -n "$cur" ] && [ "$cur" = "$prev" ]; then same=$((same + 1)); else same=0; fi
        [ $same -ge 8 ] && break
        prev=$cur
    done
    printf '%s\n' "$cur"
}

check() {  # check NAME: the screen must become $EXP/NAME.txt (polled up to 5 s)
    local name=$1 got="" i
    if [ "${TG_TUI_UPDATE:-0}" = 1 ]; then
        mkdir -p "$EXP"; capture > "$EXP/$name.txt"
    fi
    for i in $(seq 1 100); do
        got=$(tmux -L "$sock" capture-pane -p -t t)
        [ -f "$EXP/$name.txt" ] && [ "$got" = "$(cat "$EXP/$name.txt")" ] && break
        sleep 0.05
    done
    if [ -f "$EXP/$name.txt" ] && diff -u "$EXP/$name.txt" <(printf '%s\n' "$got") > "$work/diff"; then
        echo "ok   screen $name"; pass=$((pass + 1))
    else
        echo "FAIL screen $name differs from tests/data/tui/$name.txt:"; cat "$work/diff" 2>/dev/null || printf '%s\n' "$got"
        fail=$((fail + 1))
    fi
}

# 80x24: the acceptance tour
start 80 24 syn.tgt --diff other.tgt
check 80x24-open
keys j j j;                      check 80x24-move
keys / attn_norm-1 Enter;        check 80x24-search
keys n;                          check 80x24-search-next
keys Enter;                      check 80x24-detail
keys Down Down Down Down Down Down Down Enter; check 80x24-detail-jump
keys 1 g t;                      check 80x24-tensor
keys f D;                        check 80x24-tensor-dims
keys q m;                        check 80x24-memory
keys q s;                        check 80x24-splits
keys q d;                        check 80x24-diff
keys q !;                        check 80x24-next-nan
keys ]; keys G;                  check 80x24-graph2-end
keys ?;                          check 80x24-help
keys q x;                        check 80x24-unbound-key
tmux -L "$sock" resize-window -t t -x 20 -y 5
check 20x5-too-small
tmux -L "$sock" resize-window -t t -x 80 -y 24
check 80x24-restored
keys Q;                          check 80x24-quit

# 200x60: wide layout (buffer column), detail and memory map
start 200 60 syn.tgt
check 200x60-open
keys Enter;                      check 200x60-detail
keys q m;                        check 200x60-memory

# names with control characters and invalid UTF-8 are shown escaped
"$MK" "$work/weird.tgt" --weird
start 80 24 weird.tgt
for i in $(seq 1 100); do tmux -L "$sock" capture-pane -p -t t | grep -qF 'bad\x01name\xFF' && break; sleep 0.05; done
if tmux -L "$sock" capture-pane -p -t t | grep -qF 'bad\x01name\xFF'; then echo "ok   a name with a control byte and invalid UTF-8 is shown escaped"; pass=$((pass + 1));
else echo "FAIL escaped name:"; tmux -L "$sock" capture-pane -p -t t | head -5; fail=$((fail + 1)); fi

screen_has() { local i; for i in $(seq 1 100); do tmux -L "$sock" capture-pane -p -t t | grep -qE -- "$1" && return 0; sleep 0.05; done; return 1; }
expect_screen() {  # expect_screen REGEX WHAT
    if screen_has "$1"; then echo "ok   $2"; pass=$((pass + 1));
    else echo "FAIL $2 (no line matching '$1'):"; tmux -L "$sock" capture-pane -p -t t; fail=$((fail + 1)); fi
}
expect_no_screen() {  # expect_no_screen REGEX WHAT (after the screen settled)
    capture > /dev/null
    if tmux -L "$sock" capture-pane -p -t t | grep -qE -- "$1"; then
        echo "FAIL $2 (a line matches '$1'):"; tmux -L "$sock" capture-pane -p -t t; fail=$((fail + 1))
    else echo "ok   $2"; pass=$((pass + 1)); fi
}

start 200 60 syn.tgt
# the buffer column names buffers and offsets as `tgdb trace nodes` does (#uid@offset)
where=$("$TGDB" trace nodes "$work/syn.tgt" | awk '$4 == "attn_norm-0" && w == "" { w = $8 } END { print w }')
case "$where" in
'#'*@*) expect_screen " attn_norm-0 .* ${where} " "nodes view: attn_norm-0 at $where, as tgdb trace nodes prints it" ;;
*) echo "FAIL tgdb trace nodes gave no buffer@offset for attn_norm-0 ('$where')"; fail=$((fail + 1)) ;;
esac

# stale reads: the graph-reuse sample's trace; the TUI marks what `tgdb check`
# finds (tests/test_trace_reuse.sh checks the same trace on the command line)
if TGDB_TRACE="$work/reuse.tgt" "$B/samples/graph-reuse" > /dev/null 2>&1; then
    start 100 30 reuse.tgt
    expect_screen "^nodes: graph 1: 4 nodes" "reuse: the title shows the trace's graph id (graph 1, as trace info)"
    expect_screen "^│ +1 mid .* STALE " "reuse: the node list marks the stale 'mid'"
    expect_screen "^│ +2 act .* STALE " "reuse: the node list marks 'act', which overwrote it"
    expect_no_screen " x2 .* STALE " "reuse: x2 is not marked"
    keys e
    expect_screen "graph 1 node 1 mid: stale read: host read of 'mid'" "reuse: e jumps to the stale read and says what check says"
    keys Enter
    expect_screen "^PROBLEM \[stale-read\] this tensor is read after its bytes were reused" "reuse: the detail view shows the finding"
    expect_screen "were handed to 'act' \(graph 1 node 2, SILU\)" "reuse: the detail view explains who overwrote it"
    keys q E
    expect_screen "^problems: 1 findings of tgdb check" "reuse: E lists check's findings"
    expect_screen "^PROBLEM +stale-read +graph 1 #1 +stale read: host read of 'mid'" "reuse: the finding row names the graph and node"
    keys G Enter
    expect_screen "^nodes: graph 1: " "reuse: Enter on a finding goes back to the node list"
    keys : 2 Enter
    expect_screen "^nodes: graph 2: 4 nodes" "reuse: ':' goes to graph 2 by its id"
    keys : 7 Enter
    expect_screen "no graph 7 \(graphs 1\.\.2\)" "reuse: ':' names the graphs there are"
    keys F "op=SQR,y3" Enter
    expect_screen "filter 'op=SQR,y3': 2 of 4 nodes" "reuse: the filter takes tgdb trace nodes --filter's syntax (op=, lists)"
    expect_screen "^. +0 y3 " "reuse: the filter keeps y3"
    expect_screen "^. +1 y3sq +SQR" "reuse: the filter keeps the SQR node"
    keys F "op=sqr,type=q4_0" Enter
    expect_screen "filter 'op=sqr,type=q4_0': 1 of 4 nodes" "reuse: op= compares case-insensitively, type= works (tg_trace_filter_match)"
    keys F "shape=3" Enter
    expect_screen "filter 'shape=3': .*shape=" "reuse: a filter with an unknown key is refused with the reason"
else
    echo "FAIL graph-reuse sample"; fail=$((fail + 1))
fi

# live mode: step through the first layer of the sample model, print a tensor
if "$B/samples/make-model" --preset tiny -o "$work/tiny.gguf" > /dev/null 2>&1; then
    start 100 30 -m tiny.gguf -p Hello
    if screen_has "stopped: node 0 inp_embd"; then echo "ok   live: starts stopped after inp_embd"; pass=$((pass + 1));
    else echo "FAIL live: not stopped at the first node"; tmux -L "$sock" capture-pane -p -t t; fail=$((fail + 1)); fi
    steps=0
    status() { tmux -L "$sock" capture-pane -p -t t | grep -oE "stopped(:| after) node [0-9]+ [^ ,]+" | head -1 || true; }
    while [ $steps -lt 80 ] && ! status | grep -q " l_out-0$"; do
        before=$(status); keys S; steps=$((steps + 1))
        for i in $(seq 1 100); do [ "$(status)" != "$before" ] && break; sleep 0.02; done
    done
    if screen_has "stopped(:| after) node [0-9]+ l_out-0"; then echo "ok   live: stepped through layer 0 to l_out-0 ($steps steps)"; pass=$((pass + 1));
    else echo "FAIL live: never reached l_out-0"; tmux -L "$sock" capture-pane -p -t t; fail=$((fail + 1)); fi
    keys t
    if screen_has "^tensor l_out-0 f32 \[64,2\]" && screen_has "^ +0 +-?[0-9]"; then echo "ok   live: tensor pager shows l_out-0's values"; pass=$((pass + 1));
    else echo "FAIL live: tensor pager"; tmux -L "$sock" capture-pane -p -t t; fail=$((fail + 1)); fi
    keys q c
    if screen_has "done: 2 prompt tokens"; then echo "ok   live: continue runs to the end"; pass=$((pass + 1));
    else echo "FAIL live: continue"; tmux -L "$sock" capture-pane -p -t t; fail=$((fail + 1)); fi
    # into token generation one decode at a time; breakpoint list and delete
    start 120 30 -m tiny.gguf -p Hello -n 3
    expect_screen "stopped: node 0 inp_embd" "live: a new run starts stopped"
    keys ">"
    expect_screen "^next token: decode at pos 2, generated so far: 1" "live: > stops at the first decode after the prompt"
    expect_screen "^nodes: live: decode of 1 token at pos 2, paused after node 0 \\| generated 1: \"[^\"]+\"" "live: the title shows the generated text"
    keys k   # clears the message: the status bar shows where the run is
    expect_screen "graph 1 \\(1/1\\) +row 1/[0-9]+ +stopped: node 0 inp_embd, token 2" "live: the status names the decode and token"
    keys ">"
    expect_screen "^next token: decode at pos 3, generated so far: 2" "live: > again: the next generated token"
    keys b "Kcur-*" Enter
    expect_screen "^breakpoint 1: Kcur-\\*" "live: b sets a name breakpoint"
    keys b "op MUL_MAT" Enter
    expect_screen "^breakpoint 2: op MUL_MAT" "live: b sets an op breakpoint"
    expect_screen "^│ +[0-9]+ Qcur-0 +MUL_MAT .* B( |$)" "live: the node list marks nodes with a breakpoint"
    keys B
    expect_screen "^breakpoints: 2 " "live: B lists the breakpoints"
    expect_screen "^ +1  name  Kcur-\\*" "live: the list shows breakpoint 1"
    expect_screen "^ +2  op    MUL_MAT" "live: the list shows breakpoint 2"
    keys X
    expect_screen "^deleted breakpoint 1: name +Kcur-\\*" "live: X deletes the selected breakpoint"
    expect_screen "^breakpoints: 1 " "live: one breakpoint left"
    expect_screen "^ +1  op    MUL_MAT" "live: the other one moved up"
    keys q c
    expect_screen "^breakpoint 1 \\(MUL_MAT\\) at node [0-9]+ Qcur-0" "live: c stops at the remaining breakpoint (not at Kcur-*)"
    keys B X q c
    expect_screen "done: 2 prompt tokens, 3 generated" "live: with no breakpoint left, c runs to the end of the generation"
    expect_screen "^nodes: live: done: .* \\| generated: \"[^\"]+\"" "live: the finished run still shows the generated text"
else
    echo "FAIL make-model"; fail=$((fail + 1))
fi

# diff view title when no value diverges: a renamed node (the graphs differ), a trace without data
"$MK" "$work/renamed.tgt" --nan --variant 1 && "$MK" "$work/nodata.tgt" --data none
start 100 24 syn.tgt --diff renamed.tgt
keys d
expect_screen "^diff: graph 0, the graphs differ \(1 node only in A, 1 only in B\); the 63 compared agree" \
    "diff title: a structural difference is said, with how many compared nodes agree"
start 100 24 syn.tgt --diff nodata.tgt
keys d
expect_screen "^diff: graph 0, nothing compared \(64 nodes without hashes, summaries or contents\)" \
    "diff title: nothing compared is not called 'no divergence'"
start 100 24 syn.tgt --diff syn.tgt
keys d
expect_screen "^diff: graph 0, no divergence \(64 compared\)" "diff title: identical traces, how many were compared"

# --mono: no colour escapes at all; without it the title bar is coloured
start 80 24 syn.tgt --mono
expect_screen "^nodes: graph 0" "mono: started"
if tmux -L "$sock" capture-pane -e -p -t t | grep -qE $'\e\\[[0-9;]*(3[0-7]|4[0-7]|38;5;[0-9]+|48;5;[0-9]+)m'; then
    echo "FAIL mono: the screen has colours"; fail=$((fail + 1)); else echo "ok   mono: no colours"; pass=$((pass + 1)); fi
start 80 24 syn.tgt
expect_screen "^nodes: graph 0" "colour: started"
if tmux -L "$sock" capture-pane -e -p -t t | grep -qE $'\e\\[[0-9;]*(3[0-7]|4[0-7]|38;5;[0-9]+|48;5;[0-9]+)m'; then
    echo "ok   colour: the screen has colours"; pass=$((pass + 1)); else echo "FAIL colour: no colours"; fail=$((fail + 1)); fi

# help lists the new keys
start 200 60 syn.tgt
keys "?"
expect_screen "^: +goto-graph +go to graph N" "help: : goes to a graph"
expect_screen "^E +problems +list tgdb check's findings" "help: E lists check's findings"
expect_screen "^B +breakpoints +live: list breakpoints" "help: B lists breakpoints"
expect_screen "^X Del +delete +delete the selected item" "help: X deletes"
expect_screen "^> +next-token +live: finish this decode" "help: > steps to the next token"
expect_screen "^v +gradient +jump between a node and its gradient" "help: v jumps between a node and its gradient"

# errors: one line, exit 1
if "$TGDB" tui "$work/missing.tgt" 2> "$work/err"; then
    echo "FAIL tui on a missing file exited 0"; fail=$((fail + 1))
elif [ "$(wc -l < "$work/err")" = 1 ] && grep -q "missing.tgt" "$work/err"; then
    echo "ok   missing trace: $(cat "$work/err")"; pass=$((pass + 1))
else
    echo "FAIL missing trace message: $(cat "$work/err")"; fail=$((fail + 1))
fi
if "$TGDB" tui "$work/syn.tgt" </dev/null > "$work/out" 2> "$work/err"; then
    echo "FAIL tui without a terminal exited 0"; fail=$((fail + 1))
else
    echo "ok   no terminal: $(cat "$work/err")"; pass=$((pass + 1))
fi
finish
