#!/usr/bin/env bash
# test_train_views.sh - the views of a training trace (2 steps of the tiny
# model, tgdb train --trace): the TUI's detail view shows a node's gradient
# and the v key jumps between the two (detail view and node list); `tgdb dot
# --around X --grad` draws X, its gradient and a dashed "grad" edge; both say
# so on a forward-only trace (no gradient links).
. "$(dirname "$0")/support/check.sh"
set -o pipefail
M=$DATA/tiny-f32.gguf
C=$TG_SOURCE_DIR/samples/corpus/apache-2.0.txt
command -v tmux >/dev/null || { echo "FAIL tmux is not installed (apt-get install tmux)"; exit 1; }
sock=tgdb-train-views-$$-0
n_sessions=0
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$TGDB" train -m "$M" -f "$C" --steps 2 --ctx 16 -t 2 --trace "$work/t.tgt" > /dev/null 2> "$work/err" \
    || { bad "tgdb train --trace: $(cat "$work/err")"; finish; exit 1; }
"$TGDB" generate -m "$M" -p hi -n 1 -t 2 --trace "$work/g.tgt" > /dev/null 2> "$work/err" \
    || { bad "tgdb generate --trace: $(cat "$work/err")"; finish; exit 1; }

# ---- TUI (tmux at 120x40, as tests/test_tui.sh drives it) ----
start() {  # start ARGS...: a fresh tmux server running tgdb tui ARGS
    tmux -L "$sock" kill-server 2>/dev/null || true
    n_sessions=$((n_sessions + 1)); sock=tgdb-train-views-$$-$n_sessions
    (cd "$work" && tmux -L "$sock" -f /dev/null new-session -d -s t -x 120 -y 40 \
        "env TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 $TGDB tui $*; echo EXITED=\$?; sleep 30")
}
keys() { tmux -L "$sock" send-keys -t t "$@"; }
screen() { tmux -L "$sock" capture-pane -p -t t; }
screen_has() { local i; for i in $(seq 1 100); do screen | grep -qE -- "$1" && return 0; sleep 0.05; done; return 1; }
expect_screen() {  # expect_screen REGEX WHAT: the screen shows a line matching REGEX within 5 s
    if screen_has "$1"; then ok "$2"; else bad "$2 (no line matching '$1'):"; screen; fi
}

start t.tgt
expect_screen "^nodes: graph 1: [0-9]+ nodes" "tui: opens the training trace"
keys / attn_norm-0 Enter
expect_screen "^/attn_norm-0: row " "tui: search finds attn_norm-0"
keys Enter
expect_screen "^node #[0-9]+ attn_norm-0$" "tui: Enter opens attn_norm-0's detail view"
expect_screen "^  gradient: grad of attn_norm-0 \(#[0-9]+\)$" "tui: the detail view shows its gradient 'grad of attn_norm-0 (#N)'"
fwd=$(screen | sed -nE 's/^node #([0-9]+) attn_norm-0$/\1/p')
grad=$(screen | sed -nE 's/^  gradient: grad of attn_norm-0 \(#([0-9]+)\)$/\1/p')
keys v
expect_screen "^node #${grad:-X} grad of attn_norm-0$" "tui: v in the detail view jumps to the gradient (#${grad:-?})"
expect_screen "^  gradient of: attn_norm-0 \(#${fwd:-X}\)$" "tui: the gradient's detail view says what it is the gradient of (#${fwd:-?})"
keys v
expect_screen "^grad of attn_norm-0 is the gradient of attn_norm-0 \(#${fwd:-X}\)" "tui: v on the gradient says what it is the gradient of"
expect_screen "^node #${fwd:-X} attn_norm-0$" "tui: v again jumps back to attn_norm-0"
keys q v
expect_screen "^gradient of attn_norm-0: grad of attn_norm-0 \(#${grad:-X}\)" "tui: v in the node list says where it jumped"
keys Enter
expect_screen "^node #${grad:-X} grad of attn_norm-0$" "tui: v in the node list selected the gradient"
keys q v
expect_screen "^grad of attn_norm-0 is the gradient of attn_norm-0 \(#${fwd:-X}\)" "tui: v on the gradient in the node list jumps back"
keys Enter
expect_screen "^node #${fwd:-X} attn_norm-0$" "tui: v on the gradient in the node list selects attn_norm-0 again"
keys q / "adamw output.weight" Enter v
expect_screen "^no gradient recorded for adamw output.weight" "tui: a node without a gradient says so"

start g.tgt
expect_screen "^nodes: graph 1: " "tui: opens a forward-only trace"
keys v
expect_screen "^no gradients in graph 1: a forward-only graph, or a trace older than format 1.3" "tui: v on a trace without gradient links says so"
tmux -L "$sock" kill-server 2>/dev/null || true

# ---- dot --grad ----
"$TGDB" dot "$work/t.tgt" --around attn_norm-0 --depth 1 --grad -o "$work/x.svg" 2> "$work/err"; rc=$?
check "dot --around attn_norm-0 --depth 1 --grad exits 0 (rc=$rc)" test $rc = 0
check "dot --grad writes a well-formed SVG (xmllint)" xmllint --noout "$work/x.svg"
svg_check() {  # svg_check SVG: attn_norm-0, its gradient (styled) and a dashed grad edge between them
    python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as E
ns = {"s": "http://www.w3.org/2000/svg"}
root = E.parse(sys.argv[1]).getroot()
ids = {}
for g in root.iter("{http://www.w3.org/2000/svg}g"):
    texts = [t.text or "" for t in g.findall("s:text", ns)]
    if g.get("class") == "node" and texts:
        ids[texts[0]] = (g.find("s:title", ns).text, texts)
fwd, grad = ids.get("attn_norm-0"), ids.get("grad of attn_norm-0")
assert fwd, "no node attn_norm-0"
assert grad, "no node 'grad of attn_norm-0'"
assert "\u2207 gradient" in grad[1], "the gradient is not marked: %r" % grad[1]
want = "%s->%s" % (fwd[0], grad[0])
for g in root.iter("{http://www.w3.org/2000/svg}g"):
    if g.get("class") == "edge" and g.find("s:title", ns).text == want:
        path = g.find("s:path", ns)
        label = [t.text for t in g.findall("s:text", ns)]
        assert path is not None and path.get("stroke-dasharray"), "edge %s is not dashed" % want
        assert label == ["grad"], "edge %s is labelled %r" % (want, label)
        print("     grad edge %s: dashed, labelled 'grad'" % want)
        sys.exit(0)
sys.exit("no edge %s" % want)
PY
}
check "the SVG holds attn_norm-0, 'grad of attn_norm-0' marked as a gradient, and a dashed 'grad' edge between them" svg_check "$work/x.svg"
"$TGDB" dot "$work/t.tgt" --around attn_norm-0 --depth 1 -o "$work/nograd.svg" 2>/dev/null
check "without --grad the same neighbourhood has no gradient of attn_norm-0" bash -c "! grep -q '>grad of attn_norm-0<' '$work/nograd.svg'"
"$TGDB" dot "$work/g.tgt" --around attn_norm-0 --depth 1 --grad -o "$work/y.svg" 2> "$work/err"; rc=$?
check "dot --grad on a forward-only trace: exit 2 ($(cat "$work/err"))" \
    bash -c "test $rc = 2 && grep -q 'the trace has no gradient links: record a training run (tgdb train --trace)' '$work/err'"
check "dot --grad on a forward-only trace writes no output" test ! -e "$work/y.svg"
"$TGDB" help dot > "$work/help" 2>&1
check "help dot lists --grad" grep -qE "^ +--grad +training traces: with --around NODE" "$work/help"
finish
