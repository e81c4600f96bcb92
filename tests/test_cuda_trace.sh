#!/bin/bash
# test_cuda_trace.sh - traces of runs on CUDA0: node events deferred to the end
# of each GPU split (the default: snapshots of every node, one copy to the
# host) must record the same bytes as node-by-node events (TG_CUDA_DEFER=0):
# `tgdb diff` of the two finds every node the same by hash; a CUDA trace and
# a CPU trace of one prompt are equivalent within the diff's tolerance; the
# deferred trace's node times are the device's (non-zero, summing to less
# than the run). Without a CUDA device: "skipped".
. "$(dirname "$0")/support/check.sh"
TGDB=${TGDB_BIN:-$TGDB}
if ! "$TGDB" devices 2>/dev/null | grep -q '^CUDA0 '; then
    echo "skipped: $("$TGDB" devices 2>/dev/null | grep '^(CUDA' || echo 'no tgdb')"
    finish; exit
fi
M=${DATA:-$TG_TEST_DATA}/tiny-f32.gguf
gen() { "$TGDB" generate -m "$M" -p "the quick brown fox" -n 6 --temp 0 -fa off "$@" >/dev/null 2>"$work/err" || cat "$work/err"; }
gen --trace "$work/cpu.tgt"
gen -ngl 99 --trace "$work/defer.tgt"
TG_CUDA_DEFER=0 gen -ngl 99 --trace "$work/sync.tgt"
out=$("$TGDB" diff "$work/defer.tgt" "$work/sync.tgt" 2>&1); rc=$?
check "deferred vs node-by-node CUDA traces: diff exits 0" test $rc -eq 0
check "deferred vs node-by-node: every node the same by hash" grep -qE ' 0 near, 0 DIFF, 0 only in A, 0 only in B, 0 without data' <<<"$out"
check "deferred vs node-by-node: compared by hash only" grep -qE 'aligned nodes \([0-9]+ by hash\)' <<<"$out"
out=$("$TGDB" diff "$work/cpu.tgt" "$work/defer.tgt" 2>&1); rc=$?
check "CPU vs deferred CUDA trace: equivalent (diff exits 0)" test $rc -eq 0
"$TGDB" trace nodes "$work/defer.tgt" --json >"$work/n.json" 2>/dev/null
check "deferred trace: node times are the device's (recorded, some non-zero, none negative)" python3 -c "
import json,sys
d=json.load(open('$work/n.json')); rows=d['evals']
ts=[r['time_us'] for r in rows if r.get('time_us') is not None]
sys.exit(not (ts and any(t>0 for t in ts) and all(t>=0 for t in ts)))"
finish
