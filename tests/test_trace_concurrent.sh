#!/usr/bin/env bash
# test_trace_concurrent.sh - runs and readers sharing a trace path:
# 1. two `tgdb generate --trace SAME` runs at once both exit 0 (the writer
#    used to truncate in place a file the other run had mapped: SIGBUS), the
#    name holds one complete trace, and no temporary file is left beside it;
# 2. a `tgdb shell TRACE` reading the trace survives a re-run writing the same
#    path and a `truncate -s 100` of it, and keeps showing the trace it opened;
# 3. a `tgdb shell -m MODEL` survives its model file being truncated;
# 4. a trace path that cannot be created leaves nothing behind.
. "$(dirname "$0")/support/check.sh"
trap "" PIPE   # a reader that died must fail the checks below, not kill this script
tmp=$work
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT

gen() {   # gen TRACE LOG: a traced generate that writes a few MB of records
    "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 40 --temp 0 -t 1 \
        --trace-dump '*' --trace "$1" > "$2" 2>&1
}

# --- 1. two writers at once, a few rounds
for round in 1 2 3 4; do
    t=$tmp/same.tgt
    gen "$t" "$tmp/a.log" & a=$!
    gen "$t" "$tmp/b.log" & b=$!
    wait $a; ra=$?
    wait $b; rb=$?
    if [ $ra = 0 ] && [ $rb = 0 ]; then ok "round $round: both concurrent writers exit 0"
    else bad "round $round: exits $ra and $rb: $(cat "$tmp/a.log" "$tmp/b.log" | tail -3)"; fi
    out=$("$TGDB" trace info "$t" 2>&1); rc=$?
    if [ $rc = 0 ] && echo "$out" | grep -q "^status: complete: .* indexed"; then ok "round $round: the name holds a complete trace"
    else bad "round $round: trace info exit $rc: $(echo "$out" | head -3)"; fi
    left=$(find "$tmp" -name '*tgdb-tmp*' | wc -l)
    [ "$left" = 0 ] && ok "round $round: no temporary file left" || bad "round $round: $left temporary files left"
done

# --- 2. a reader (tgdb shell on stdin) while the trace is re-written and cut
t=$tmp/read.tgt
gen "$t" "$tmp/g.log" || bad "first generate failed"
mkfifo "$tmp/in"
"$TGDB" shell "$t" < "$tmp/in" > "$tmp/shell.out" 2>&1 & sh=$!
pids+=("$sh")
exec 3> "$tmp/in"
printf 'step 3\nwhere\n' >&3
for _ in $(seq 50); do grep -q "^eval 3/" "$tmp/shell.out" 2>/dev/null && break; sleep 0.1; done
before=$(grep -c "^eval " "$tmp/shell.out")
truncate -s 100 "$t"   # the very file the shell has open
printf 'goto 40\nlist 3\nprint\n' >&3
gen "$t" "$tmp/g2.log" || bad "second generate failed: $(tail -2 "$tmp/g2.log")"
printf 'open %s\nstep 2\n' "$t" >&3   # the new trace at the name
for _ in $(seq 50); do grep -q "^eval 2/" "$tmp/shell.out" 2>/dev/null && break; sleep 0.1; done
gen "$t" "$tmp/g2.log" && ok "re-run writing the trace a shell has open exits 0" || bad "re-run failed: $(tail -2 "$tmp/g2.log")"
printf 'goto 60\nprint\ninfo node 5\nwhere\nquit\n' >&3
exec 3>&-
wait $sh; rc=$?
pids=()
[ $rc = 0 ] && ok "the shell survives the re-run and truncate -s 100 (exit 0)" || bad "shell exit $rc: $(tail -3 "$tmp/shell.out")"
[ $rc != 135 ] && ok "shell: no SIGBUS" || bad "the shell died with SIGBUS"
after=$(grep -c "^eval " "$tmp/shell.out")
[ "$after" -gt "$before" ] && grep -q "^eval 61/2882: .*node 60/" "$tmp/shell.out" && ok "the shell kept reading its version after the file was cut ($before, then $after positions shown)" \
    || bad "no output after the truncation: $(tail -5 "$tmp/shell.out")"
truncate -s 100 "$t"
out=$("$TGDB" trace info "$t" 2>&1)
echo "$out" | grep -q "^status: trace truncated" && ok "reopening the cut file reports it: $(echo "$out" | head -1)" \
    || bad "reopening the cut trace: $out"

# --- 2b. the TUI (in tmux) on a trace that is re-written and cut under it
if command -v tmux > /dev/null; then
    sock=tgdb-conc-$$
    t=$tmp/tui.tgt
    gen "$t" "$tmp/g3.log" || bad "generate for the TUI failed"
    tmux -L "$sock" -f /dev/null new-session -d -s t -x 100 -y 30 \
        "env TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 $TGDB tui $t 2> $tmp/tui.err; echo EXITED=\$?; sleep 30"
    sleep 1
    truncate -s 100 "$t"   # the file the TUI has open
    gen "$t" "$tmp/g4.log" || bad "re-run under the TUI failed"
    for k in j j NPage NPage End Home Enter Tab Tab Tab NPage End; do tmux -L "$sock" send-keys -t t "$k"; sleep 0.05; done
    sleep 0.5
    tmux -L "$sock" send-keys -t t q
    screen=""
    for _ in $(seq 50); do
        screen=$(tmux -L "$sock" capture-pane -p -t t)
        echo "$screen" | grep -q "EXITED=" && break
        sleep 0.1
    done
    tmux -L "$sock" kill-server 2> /dev/null
    echo "$screen" | grep -q "EXITED=0" && ok "the TUI survives a re-run and truncate -s 100 of its trace" \
        || bad "TUI: $(echo "$screen" | tail -5) $(cat "$tmp/tui.err" 2> /dev/null)"
else
    bad "tmux is not installed (apt-get install tmux)"
fi

# --- 3. shell -m MODEL while the model file is truncated
cp "$DATA/tiny-f32.gguf" "$tmp/model.gguf"
mkfifo "$tmp/in2"
"$TGDB" shell -m "$tmp/model.gguf" < "$tmp/in2" > "$tmp/live.out" 2>&1 & sh=$!
pids+=("$sh")
exec 3> "$tmp/in2"
printf 'break op MUL_MAT\nrun Hello\nwhere\n' >&3
for _ in $(seq 50); do grep -q "stopped" "$tmp/live.out" 2>/dev/null && break; sleep 0.1; done
truncate -s 100 "$tmp/model.gguf"
printf 'delete\ncontinue\nrun Once upon\nwhere\nquit\n' >&3
exec 3>&-
wait $sh; rc=$?
pids=()
[ $rc != 135 ] && ok "shell -m: no SIGBUS after the model was truncated" || bad "shell -m died with SIGBUS"
[ $rc = 0 ] || [ $rc = 1 ] && ok "shell -m exits normally ($rc)" || bad "shell -m exit $rc: $(tail -3 "$tmp/live.out")"
n=$(grep -c "stopped\|finished\|generated\|decode" "$tmp/live.out")
[ "$n" -ge 2 ] && ok "shell -m kept running the model it loaded" || bad "shell -m output: $(tail -5 "$tmp/live.out")"

# --- 4. a trace that cannot be created leaves nothing behind
mkdir "$tmp/ro"
if "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p hi -n 1 --trace "$tmp/ro/missing-dir/x.tgt" > "$tmp/e.log" 2>&1; then
    bad "a trace in a missing directory should fail"
else
    grep -q "missing-dir/x.tgt" "$tmp/e.log" && ok "the error names the trace path" || bad "error: $(cat "$tmp/e.log")"
fi
[ -z "$(ls -A "$tmp/ro")" ] && ok "nothing left in the directory" || bad "left: $(ls -A "$tmp/ro")"
finish
