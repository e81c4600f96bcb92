#!/usr/bin/env bash
# test_mem.sh - `tgdb mem`: on perplexity runs of the tiny model (context 64,
# micro-batches of 8 and 16: the last micro-batch of a chunk, every token an
# output, is the worst case the allocator reserves for) the reported peak
# equals the compute buffer size recorded in the trace; `--what-if ubatch=N`
# replans that graph offline and its peak equals the buffer size of a real run
# with micro-batches of N (8 -> 16, 16 -> 8, 16 -> 32); the tensors live at the
# peak, timeline and errors.
M=${TG_TEST_DATA:?}/tiny-f32.gguf
TEXT=$TG_TEST_DATA/apache-2.0.txt
. "$(dirname "$0")/support/check.sh"
tmp=$work
err() {
    local name=$1; shift
    "$@" >/dev/null 2>"$tmp/err"; local rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^tgdb: " "$tmp/err"; then ok "$name: $(cat "$tmp/err")"
    else bad "$name: rc=$rc stderr=$(cat "$tmp/err")"; fi
}
for b in 8 16 32; do
    "$TGDB" perplexity -m "$M" -f "$TEXT" -c 64 -b $b -t 2 --trace "$tmp/p$b.tgt" >/dev/null 2>&1 || bad "perplexity -b $b"
    "$TGDB" mem "$tmp/p$b.tgt" --json >"$tmp/m$b.json" || bad "mem --json -b $b"
done
# the buffer size each run reserved, straight from the trace (trace info lists the buffers)
size16=$("$TGDB" trace info "$tmp/p16.tgt" | grep -m1 -o 'CPU compute #[0-9]* [0-9.]* [KM]iB')
python3 - "$tmp/m8.json" "$tmp/m16.json" <<'PY' && ok "peak = reserved compute buffer size (b=8 and b=16)" || bad "peak vs size"
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    b = [x for x in d["buffers"] if x["size"] > 0]
    assert len(b) == 1, b
    assert b[0]["peak"] == b[0]["size"] and b[0]["peak_is_size"], (f, b[0]["peak"], b[0]["size"])
    assert b[0]["max_live"] <= b[0]["peak"] and len(b[0]["timeline"]) > 0 and max(b[0]["timeline"]) == b[0]["max_live"]
    assert b[0]["live_at_peak"] and b[0]["live_at_peak"][0]["size"] >= b[0]["live_at_peak"][-1]["size"]
PY
out=$("$TGDB" mem "$tmp/p16.tgt"); echo "$out" | grep -q "= the buffer size the allocator reserved" \
    && ok "text: says the peak is the reserved size ($size16)" || bad "text: $out"
echo "$out" | grep -q "^  live at node [0-9]* (.* tensors, largest first)" && ok "text: tensors live at the peak" || bad "live list"
echo "$out" | grep -q "^  timeline" && ok "text: timeline table" || bad "timeline"
for w in "8 16" "16 8" "16 32"; do
    set -- $w
    "$TGDB" mem "$tmp/p$1.tgt" --what-if ubatch=$2 --json >"$tmp/w.json" || bad "what-if $1 -> $2"
    python3 - "$tmp/w.json" "$tmp/m$2.json" <<'PY' && ok "what-if ubatch=$2 on the b=$1 run: peak = the b=$2 run's buffer size" \
        || bad "what-if ubatch=$2 on b=$1: $(cat "$tmp/w.json" | head -c 300)"
import json, sys
w = json.load(open(sys.argv[1]))["what_if"]
real = [x for x in json.load(open(sys.argv[2]))["buffers"] if x["size"] > 0][0]["size"]
assert w["buffers"][0]["replanned_as_recorded"] == w["buffers"][0]["recorded_peak"], w
assert w["buffers"][0]["peak"] == real and not w["approximate"], (w, real)
PY
done
out=$("$TGDB" mem "$tmp/p16.tgt" --what-if ctx=128)
echo "$out" | grep -q "approximate: every dimension equal to 64" && ok "what-if ctx=64 on a model with 64-wide weights: says approximate" \
    || bad "ctx what-if: $out"
err "what-if syntax" "$TGDB" mem "$tmp/p16.tgt" --what-if batch=3
err "what-if value" "$TGDB" mem "$tmp/p16.tgt" --what-if ubatch=0
err "unknown graph" "$TGDB" mem "$tmp/p16.tgt" --graph 9999
err "missing file" "$TGDB" mem "$tmp/none.tgt"
TGDB_TRACE=$tmp/n.tgt "$B/samples/nan-origin" >/dev/null 2>&1
"$TGDB" mem "$tmp/n.tgt" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "no compute buffers\|no allocation" "$tmp/err" || [ $rc = 0 ] \
    && ok "a trace without graph-allocator plans: explained or reported (rc=$rc)" || bad "nan-origin trace: rc=$rc $(cat "$tmp/err")"
echo "test_mem: $pass passed, $fail failed"
[ $fail = 0 ]
