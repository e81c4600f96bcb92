#!/usr/bin/env bash
# test_trace_kill.sh - traces survive crashes: a program traced through
# TGDB_TRACE is killed with SIGKILL at several points (before any graph,
# inside a graph from its eval callback, between graphs at random times) or
# aborts inside a graph; `tgdb trace info` reads every trace, reports the
# truncation, and finds the records written before the crash.
. "$(dirname "$0")/support/check.sh"
VICTIM=$B/tests/test_trace_record
tmp=$work

# check_info NAME TRACE MIN_EVALS: tgdb trace info exits 0, says truncated,
# and lists at least MIN_EVALS evaluated nodes.
check_info() {
    local name=$1 trace=$2 min=$3 out rc evals
    out=$("$TGDB" trace info "$trace" 2>&1); rc=$?
    [ $rc = 0 ] && ok "$name: tgdb trace info reads it" || { bad "$name: trace info exit $rc: $out"; return; }
    echo "$out" | grep -q "^truncated: yes" && ok "$name: truncation reported ($(echo "$out" | grep '^status:'))" \
        || bad "$name: no truncation reported: $out"
    evals=$(echo "$out" | sed -n 's/^evaluated nodes: \([0-9]*\).*/\1/p')
    [ "${evals:-0}" -ge "$min" ] && ok "$name: $evals evaluated nodes recovered (>= $min)" \
        || bad "$name: $evals evaluated nodes recovered, expected >= $min"
}

# 1. SIGKILL right after the scheduler exists (only RUN/SCHED records).
{ TGDB_TRACE=$tmp/before.tgt "$VICTIM" victim kill-before >/dev/null 2>&1; } 2>/dev/null
rc=$?
[ $rc = 137 ] && ok "kill-before: killed by SIGKILL" || bad "kill-before: exit $rc"
check_info kill-before "$tmp/before.tgt" 0

# 2. SIGKILL inside the second graph, at several nodes (from the eval callback).
for k in 0 2 4; do
    { TGDB_TRACE=$tmp/kill$k.tgt "$VICTIM" victim kill-at $k >/dev/null 2>&1; } 2>/dev/null
    rc=$?
    [ $rc = 137 ] && ok "kill-at $k: killed inside graph 2" || bad "kill-at $k: exit $rc"
    # graph 1 complete (6 nodes incl. the view) + the nodes of graph 2 before the kill
    check_info "kill-at $k" "$tmp/kill$k.tgt" 6
    out=$("$TGDB" trace info "$tmp/kill$k.tgt")
    echo "$out" | grep -q "computations: 2 begun, 1 ok" && ok "kill-at $k: graph 2 begun, not finished" \
        || bad "kill-at $k: $(echo "$out" | grep computations)"
done

# 2b. the same kill with the recorder's hashing thread off and forced on (the victim computes on
# one thread, so on a machine of 2 CPUs the thread is on by default). Off, every node of graph 2
# up to the kill (graph 1: 6; graph 2: k + 1) has its EVAL, hashed: each is written before the
# next node runs. On, the thread writes each node's EVAL as soon as it sees the node, then its
# hash in a RESULT: the nodes of a graph cut short that it had not reached are missing (here the
# kill comes microseconds after the node), but graph 1 is whole and every EVAL present is either
# hashed or says it is not.
for mode in 0 1; do
    for k in 2 4; do
        { TGDB_TRACE_HASH_THREAD=$mode TGDB_TRACE=$tmp/kt$mode$k.tgt "$VICTIM" victim kill-at $k >/dev/null 2>&1; } 2>/dev/null
        rc=$?
        [ $rc = 137 ] && ok "hash thread $mode, kill-at $k: killed inside graph 2" || bad "hash thread $mode, kill-at $k: exit $rc"
        if [ "$mode" = 0 ]; then min=$((6 + k + 1)); else min=6; fi
        check_info "hash thread $mode, kill-at $k" "$tmp/kt$mode$k.tgt" $min
        out=$("$TGDB" trace info "$tmp/kt$mode$k.tgt")
        nh=$(echo "$out" | sed -n 's/^evaluated nodes: [0-9]* (\([0-9]*\) hashed.*/\1/p')
        np=$(echo "$out" | sed -n 's/^  \([0-9]*\) of them not hashed.*/\1/p')
        ne=$(echo "$out" | sed -n 's/^evaluated nodes: \([0-9]*\).*/\1/p')
        [ "$((${nh:-0} + ${np:-0}))" = "${ne:-x}" ] && ok "hash thread $mode, kill-at $k: $ne nodes = $nh hashed + ${np:-0} whose hash the thread had not written" \
            || bad "hash thread $mode, kill-at $k: $ne nodes, $nh hashed, ${np:-0} pending: $out"
        if [ "$mode" = 0 ]; then
            [ -z "$np" ] && ok "hash thread 0, kill-at $k: nothing pending without the thread" \
                || bad "hash thread 0, kill-at $k: $np nodes pending without a thread"
        fi
    done
done

# 3. abort() inside a graph.
{ TGDB_TRACE=$tmp/abort.tgt "$VICTIM" victim abort-at 1 >/dev/null 2>&1; } 2>/dev/null
rc=$?
[ $rc = 134 ] && ok "abort-at 1: aborted (SIGABRT)" || bad "abort-at 1: exit $rc"
check_info abort "$tmp/abort.tgt" 6
"$TGDB" trace nodes "$tmp/abort.tgt" --graph 1 >/dev/null 2>&1 && ok "abort: trace nodes reads graph 1" \
    || bad "abort: trace nodes --graph 1 failed"

# 4. SIGKILL from outside at random moments of a long run.
for delay in 0.05 0.2 0.5; do
    TGDB_TRACE=$tmp/ext.tgt "$VICTIM" victim loop 0 >"$tmp/ext.out" 2>&1 &
    pid=$!
    for _ in $(seq 1 1000); do grep -q computed "$tmp/ext.out" 2>/dev/null && break; sleep 0.01; done
    sleep $delay
    kill -9 $pid 2>/dev/null
    { wait $pid; } 2>/dev/null
    done_n=$(grep -c computed "$tmp/ext.out")
    check_info "external kill after ${delay}s ($done_n graphs done)" "$tmp/ext.tgt" $((done_n * 6))
done

# 5. the same program run to completion leaves a complete trace.
TGDB_TRACE=$tmp/full.tgt "$VICTIM" victim loop 3 >/dev/null 2>&1
out=$("$TGDB" trace info "$tmp/full.tgt")
echo "$out" | grep -q "^status: complete" && ok "normal exit: trace complete (closed at exit)" \
    || bad "normal exit: $(echo "$out" | head -3)"
echo "$out" | grep -q "evaluated nodes: 18 " && ok "normal exit: 18 evaluated nodes" \
    || bad "normal exit: $(echo "$out" | grep evaluated)"
finish
