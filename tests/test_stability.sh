#!/usr/bin/env bash
# test_stability.sh - `tgdb stability`: two runs of the tiny model with 1 and 2
# threads are bitwise identical node by node (the engine is deterministic
# across thread counts: exit 0); adding a q8_0 run makes nodes variant, its
# first variant node is the embedding lookup (exit 1); --json; errors.
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
"$TGDB" stability "$tmp/f32-1.tgt" >/dev/null 2>"$tmp/err"; [ $? = 2 ] && grep -q "^tgdb: stability: give at least two" "$tmp/err" \
    && ok "one trace: error" || bad "one trace"
"$TGDB" stability "$tmp/f32-1.tgt" "$tmp/none.tgt" >/dev/null 2>"$tmp/err"; [ $? = 2 ] && ok "missing trace: exit 2" || bad "missing"
echo "test_stability: $pass passed, $fail failed"
[ $fail = 0 ]
