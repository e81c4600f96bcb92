#!/usr/bin/env bash
# test_trace_export.sh - `tgdb trace export FILE --format perfetto -o OUT`:
# the Chrome trace-event JSON of a multi-split run (sched-splits: CPU+BLAS,
# copies between backends) and of a tiny-model generation (decode markers,
# buffer counters, views without times) is valid trace-event JSON (every
# event has ph/ts/pid/tid, slices nest per track) holding every evaluated
# node once (tests/tools/check_trace_events.py); clean errors.
CHECK="python3 ${TG_SOURCE_DIR:?}/tests/tools/check_trace_events.py"
. "$(dirname "$0")/support/check.sh"
tmp=$work
has() { grep -q -- "$1" "$3" && ok "$2" || bad "$2 (missing '$1')"; }
err() {
    local name=$1; shift
    "$@" >/dev/null 2>"$tmp/err"; local rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^tgdb: " "$tmp/err"; then ok "$name: $(cat "$tmp/err")"
    else bad "$name: rc=$rc stderr=$(cat "$tmp/err")"; fi
}
validate() {  # validate NAME TRACE
    "$TGDB" trace export "$2" --format perfetto -o "$tmp/$1.json" >"$tmp/$1.out" || { bad "$1: export failed"; return; }
    "$TGDB" trace nodes "$2" >"$tmp/$1.nodes" || { bad "$1: trace nodes failed"; return; }
    if $CHECK "$tmp/$1.json" "$tmp/$1.nodes" >"$tmp/$1.check"; then ok "$1: $(tail -1 "$tmp/$1.check")"
    else bad "$1: $(grep FAIL "$tmp/$1.check")"; fi
}

# multi-split run: copies between backends as slices with their bytes
TGDB_TRACE=$tmp/s.tgt "$B/samples/sched-splits" 64 >/dev/null || bad "sched-splits ran"
validate splits "$tmp/s.tgt"
if "$B/samples/sched-splits" 64 2>&1 | grep -q "no BLAS backend"; then
    echo "note: built without BLAS: no copies to check"
else
    python3 - "$tmp/splits.json" <<'PY' && ok "splits: copies as slices with bytes on the BLAS and CPU tracks" || bad "splits: copy slices"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
cp = [e for e in ev if e["ph"] == "X" and e.get("cat") == "copy"]
assert cp and all(e["args"]["bytes"] == 48 * 64 * 4 for e in cp), cp
assert {names[(e["pid"], e["tid"])] for e in cp} == {"BLAS", "CPU"}
mm = [e for e in ev if e["ph"] == "X" and e.get("cat") == "MUL_MAT"]
assert mm and all(names[(e["pid"], e["tid"])] == "BLAS" and e["args"]["shape"] == "[48,64,1,1]" for e in mm)
assert all("hash" in e["args"] and "@" in e["args"]["buffer"] for e in mm)
PY
fi

# a generation: markers per decode call, counters per compute buffer
"$TGDB" generate -m "$TG_TEST_DATA/tiny-f32.gguf" -p "Once upon a time" -n 3 --temp 0 -t 2 --trace "$tmp/g.tgt" \
    >/dev/null 2>&1 || bad "generate ran"
validate generate "$tmp/g.tgt"
python3 - "$tmp/generate.json" <<'PY' && ok "generate: 3 decode markers, counters that rise and fall to 0" || bad "generate: markers/counters"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
mk = [e for e in ev if e["ph"] == "i"]
assert len(mk) == 3 and mk[0]["args"]["pos"] == 0 and mk[1]["args"]["n_tokens"] == 1, mk
c = [e["args"]["live bytes"] for e in ev if e["ph"] == "C"]
assert c and max(c) > 0 and c[-1] == 0
PY
has "computations" "summary names what was written" "$tmp/generate.out"
"$TGDB" trace export "$tmp/g.tgt" -o "$tmp/j.json" --json >"$tmp/sum.json" && python3 -c "
import json; d = json.load(open('$tmp/sum.json')); ev = json.load(open('$tmp/j.json'))['traceEvents']
assert d['events'] == len(ev) and d['node_slices'] == $(grep -cE '^ *[0-9]+ +[0-9]+ +[0-9]+ ' "$tmp/generate.nodes") and d['markers'] == 3" \
    && ok "--json summary counts what the file holds" || bad "--json summary"
"$TGDB" trace export "$tmp/s.tgt" | python3 -c "import json,sys; json.load(sys.stdin)" && ok "no -o: JSON on stdout" || bad "stdout"

# the validator does fail on overlapping slices and on a missing node
printf '{"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "name": "a", "args": {"graph": 1, "node": 0, "compute": 0}},
 {"ph": "X", "pid": 1, "tid": 1, "ts": 3, "dur": 5, "name": "b", "args": {"graph": 1, "node": 1, "compute": 0}}]}' >"$tmp/bad.json"
printf '     0     1     0  a\n     1     1     1  b\n     2     1     2  c\n' >"$tmp/bad.nodes"
$CHECK "$tmp/bad.json" "$tmp/bad.nodes" >"$tmp/bad.out"
[ $? = 1 ] && grep -q "FAIL X slices nest" "$tmp/bad.out" && grep -q "FAIL every evaluated node" "$tmp/bad.out" \
    && ok "validator rejects overlapping slices and a missing node" || bad "validator: $(cat "$tmp/bad.out")"

err "unknown format" "$TGDB" trace export "$tmp/s.tgt" --format svg
err "missing trace" "$TGDB" trace export "$tmp/none.tgt" -o "$tmp/x.json"
err "unwritable output" "$TGDB" trace export "$tmp/s.tgt" -o "$tmp/no/such/dir.json"
err "two files" "$TGDB" trace export "$tmp/s.tgt" "$tmp/g.tgt"
echo "test_trace_export: $pass passed, $fail failed"
[ $fail = 0 ]
