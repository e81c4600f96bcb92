#!/usr/bin/env bash
# test_stability.sh - `tgdb stability`: two runs of the tiny model with 1 and 2
# threads are bitwise identical node by node (the engine is deterministic
# across thread counts: exit 0); adding a q8_0 run makes nodes variant, its
# first variant node is the embedding lookup (exit 1); --json; errors. The
# runner form (-m MODEL) runs the variants itself: thread counts, repeats and
# micro-batch sizes (per token), catching BLAS-vs-CPU by batch size.
D=${TG_TEST_DATA:?}
. "$(dirname "$0")/support/check.sh"
tmp=$work
for x in "f32 1" "f32 2" "q8_0 2"; do
    set -- $x
    "$TGDB" generate -m "$D/tiny-$1.gguf" -p "Once upon a time" -n 2 --temp 0 -t $2 --trace "$tmp/$1-$2.tgt" >/dev/null 2>&1 \
        || bad "generate $1 -t $2"
done
out=$("$TGDB" stability "$tmp/f32-1.tgt" "$tmp/f32-2.tgt"); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "bitwise stable, 0 variant" && echo "$out" | grep -q "identical to run 0" \
    && ok "1 vs 2 threads: every node bitwise stable (exit 0)" || bad "threads: rc=$rc $out"
out=$("$TGDB" stability "$tmp/f32-1.tgt" "$tmp/f32-2.tgt" "$tmp/q8_0-2.tgt"); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "run 2 (.*): first variant node: eval 0, 'inp_embd'" \
    && ok "q8_0 run: variant from the embedding lookup (exit 1)" || bad "q8_0: rc=$rc $out"
"$TGDB" stability "$tmp/f32-1.tgt" "$tmp/f32-2.tgt" "$tmp/q8_0-2.tgt" --json >"$tmp/s.json"
python3 - "$tmp/s.json" "$(grep -cE '^ *[0-9]+ +[0-9]+ +[0-9]+ ' <("$TGDB" trace nodes "$tmp/f32-1.tgt"))" <<'PY' \
    && ok "--json: counts add up, first variant per run" || bad "--json: $(head -c 300 "$tmp/s.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["compared"] == d["stable"] + d["variant"] == int(sys.argv[2]), d
assert d["first_variant"] == [-1, 0]
PY
# the runner form: repeated runs, thread counts and micro-batch sizes of the tiny model
out=$("$TGDB" stability -m "$D/tiny-f32.gguf" --threads 1,2,3 --ubatch 512,1,3 2>"$tmp/progress"); rc=$?
[ $rc = 0 ] && ok "runner: every variant bitwise stable (exit 0)" || bad "runner: rc=$rc $out"
echo "$out" | grep -q "nodes compared over 4 runs: .* 0 variant" && ok "runner: repeat + 2 thread counts node by node" || bad "runner nodes: $out"
echo "$out" | grep -q "^micro-batch 1: [1-9][0-9]* token rows compared, all bitwise identical to micro-batch 512" \
    && echo "$out" | grep -q "^micro-batch 3: [1-9][0-9]* token rows compared, all bitwise identical" \
    && ok "runner: micro-batch 1 and 3 give the same token rows as 512" || bad "runner ubatch: $out"
[ "$(grep -c '^stability: run [0-9]/6' "$tmp/progress")" = 6 ] && ok "runner: a progress line per run" || bad "progress: $(cat "$tmp/progress")"
# a variant the batch axis must catch: with BLAS, a long prompt's matrix products go to BLAS in one
# micro-batch of 512 but stay on the CPU in micro-batches of 4
P="In a quiet village at the edge of the forest the old clockmaker spent his days repairing the clocks of everyone in the valley and listening to the stories they told him about the world beyond the hills"
if "$TGDB" devices | grep -q '^BLAS'; then
    out=$("$TGDB" stability -m "$D/tiny-f32.gguf" -p "$P" -n 1 --threads 1 --repeat 0 --ubatch 512,4 -dev BLAS,CPU 2>/dev/null); rc=$?
    [ $rc = 1 ] && echo "$out" | grep -q "^micro-batch 4: .* differ; first variant node: 'Qcur-0' at position 0" \
        && ok "BLAS vs CPU by micro-batch: variant from Qcur-0 at position 0 (exit 1)" || bad "BLAS ubatch: rc=$rc $out"
else
    echo "skipped: no BLAS backend in this build (the batch-axis variant check needs one)"
fi
"$TGDB" stability -m "$D/tiny-q8_0.gguf" --threads 1,2 --ubatch 512,2 --keep "$tmp/kept" --json >"$tmp/r.json" 2>/dev/null
python3 - "$tmp/r.json" <<'PY' && ok "runner --json: variants, node-by-node runs, per-token ubatch results" || bad "runner --json: $(head -c 300 "$tmp/r.json")"
import json, sys, os
d = json.load(open(sys.argv[1]))
assert [v["axis"] for v in d["variants"]] == ["baseline", "repeat", "threads", "ubatch"], d["variants"]
assert all(os.path.exists(v["trace"]) for v in d["variants"])
assert d["runs"]["variant"] == 0 and d["runs"]["compared"] > 0
u = d["ubatch"][0]
assert u["ubatch"] == 2 and u["rows_compared"] > 0 and u["rows_variant"] == 0 and u["first_variant"] is None
PY
"$TGDB" stability -m "$tmp/none.gguf" >/dev/null 2>"$tmp/err"; [ $? = 2 ] && grep -q "^tgdb: stability: the run with 1 thread and micro-batch 512 failed: .*none.gguf" "$tmp/err" \
    && ok "runner, missing model: exit 2 naming the failed run" || bad "runner missing model: $(cat "$tmp/err")"
"$TGDB" stability "$tmp/f32-1.tgt" "$tmp/f32-2.tgt" -p hi >/dev/null 2>"$tmp/err"; [ $? = 2 ] && grep -q "runner form" "$tmp/err" \
    && ok "-p without -m: exit 2" || bad "-p without -m: $(cat "$tmp/err")"
"$TGDB" stability "$tmp/f32-1.tgt" >/dev/null 2>"$tmp/err"; [ $? = 2 ] && grep -q "^tgdb: stability: give at least two" "$tmp/err" \
    && ok "one trace: error" || bad "one trace"
"$TGDB" stability "$tmp/f32-1.tgt" "$tmp/none.tgt" >/dev/null 2>"$tmp/err"; [ $? = 2 ] && ok "missing trace: exit 2" || bad "missing"
echo "test_stability: $pass passed, $fail failed"
[ $fail = 0 ]
