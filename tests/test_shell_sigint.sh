#!/usr/bin/env bash
# test_shell_sigint.sh - Ctrl-C in the interactive shell (tmux): at the prompt
# it drops the typed line and gives a new prompt, the process stays alive;
# `break op` rejects unknown ops naming the closest one.
. "$(dirname "$0")/support/check.sh"
set -o pipefail
command -v tmux >/dev/null || { echo "FAIL tmux is not installed (apt-get install tmux)"; exit 1; }
sock=tgsig$$
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$MK" "$work/syn.tgt" >/dev/null || { echo "FAIL mktrace"; exit 1; }
screen() { tmux -L "$sock" capture-pane -p -t t 2>/dev/null; }
# wait_for PATTERN [TRIES]: up to TRIES x 0.05 s (default 100: 5 s)
wait_for() { local i; for i in $(seq 1 "${2:-100}"); do screen | grep -qE -- "$1" && return 0; sleep 0.05; done; return 1; }
tmux -L "$sock" -f /dev/null new-session -d -s t -x 100 -y 30 \
    "TGDB_HISTORY=$work/h $TGDB shell $work/syn.tgt; echo SHELL-EXITED rc=\$?; sleep 30"
wait_for '^\(tgdb\)' && ok "prompt" || bad "no prompt: $(screen)"
tmux -L "$sock" send-keys -t t 'quit-not-typed-fully'
wait_for 'quit-not-typed-fully' || bad "typed text not shown"
tmux -L "$sock" send-keys -t t C-c
sleep 0.3
tmux -L "$sock" send-keys -t t 'where' Enter
if wait_for 'at the start of the trace' && ! screen | grep -q 'SHELL-EXITED'; then ok "Ctrl-C at the prompt: shell alive, next command runs"
else bad "after Ctrl-C: $(screen)"; fi
screen | grep -q 'quit-not-typed-fullywhere' && bad "Ctrl-C did not drop the typed line" || ok "Ctrl-C drops the typed line"
tmux -L "$sock" send-keys -t t C-c C-c
sleep 0.3
tmux -L "$sock" send-keys -t t 'break op SOFTMAX' Enter
wait_for "no op matches 'SOFTMAX'; did you mean SOFT_MAX" && ok "break op with an unknown op names the closest" || bad "break op: $(screen)"
tmux -L "$sock" send-keys -t t 'quit' Enter
wait_for 'SHELL-EXITED rc=0' && ok "quit exits 0 after Ctrl-Cs" || bad "quit: $(screen)"

# Live: Ctrl-C during `run` stops the model after its current node (as a
# breakpoint would); the shell stays, `where` shows the stop, `continue` ends
# the run. The run lasts ~0.5 s here (break nan reads every node), so the
# Ctrl-C is sent 0.1 s after the command; retried in case a loaded machine
# finished the run first.
model=$TG_TEST_DATA/tiny-f32.gguf
tmux -L "$sock" kill-server 2>/dev/null || true
sock=tgsigl$$   # a fresh server for the live shell
tmux -L "$sock" -f /dev/null new-session -d -s t -x 160 -y 40 \
    "TGDB_HISTORY=$work/h $TGDB shell -m $model; echo SHELL-EXITED rc=\$?; sleep 30"
wait_for '^\(tgdb\)' || bad "live shell: no prompt: $(screen)"
tmux -L "$sock" send-keys -t t 'break nan' Enter
got=0
for try in 1 2 3 4 5; do
    tmux -L "$sock" send-keys -t t 'run Once upon a time -n 500' Enter
    sleep 0.1
    tmux -L "$sock" send-keys -t t C-c
    for i in $(seq 1 100); do screen | grep -qE 'interrupted after node|done: 5 prompt' && break; sleep 0.05; done
    if screen | grep -q 'interrupted after node'; then got=1; break; fi
    tmux -L "$sock" send-keys -t t 'clear-not-a-command' Enter; tmux -L "$sock" send-keys -t t C-l
done
if [ $got = 1 ]; then ok "Ctrl-C during a live run: interrupted after a node (try $try)"
else bad "live run never interrupted: $(screen)"; fi
tmux -L "$sock" send-keys -t t 'where' Enter
wait_for 'stopped after node' && ok "where after the interrupt shows the node" || bad "where: $(screen)"
tmux -L "$sock" send-keys -t t 'delete 1' Enter
tmux -L "$sock" send-keys -t t 'continue' Enter
# the rest of the 500 tokens with every node read: seconds under ASan on a loaded machine
wait_for 'done: 5 prompt tokens, 500 generated' 1200 && ok "continue after the interrupt ends the run" || bad "continue: $(screen)"
screen | grep -q 'SHELL-EXITED' && bad "live shell exited" || ok "live shell alive after Ctrl-C"
tmux -L "$sock" send-keys -t t 'quit' Enter
wait_for 'SHELL-EXITED rc=0' && ok "live shell quits with 0" || bad "live quit: $(screen)"
finish
