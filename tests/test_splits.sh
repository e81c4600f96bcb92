#!/usr/bin/env bash
# test_splits.sh - `tgdb splits`: on samples/sched-splits (CPU+BLAS, 64
# columns: a matmul on BLAS, adds on CPU) every split is listed with its
# backend, node range, input copies and the placement cause that opened it,
# ranked by copy bytes; --json agrees with the SPLITS record; errors.
. "$(dirname "$0")/support/check.sh"
tmp=$work
has() { echo "$out" | grep -q -- "$1" && ok "$2" || bad "$2 (missing '$1' in: $(echo "$out" | head -4))"; }
err() {
    local name=$1; shift
    "$@" >/dev/null 2>"$tmp/err"; local rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^tgdb: " "$tmp/err"; then ok "$name: $(cat "$tmp/err")"
    else bad "$name: rc=$rc stderr=$(cat "$tmp/err")"; fi
}
TGDB_TRACE=$tmp/s.tgt "$B/samples/sched-splits" 64 >"$tmp/sample.out" 2>&1 || bad "sched-splits ran"
if grep -q "no BLAS backend" "$tmp/sample.out"; then
    out=$("$TGDB" splits "$tmp/s.tgt"); has "^graph 1: 1 split, 0 B copied" "CPU only: one split, nothing copied"
else
    out=$("$TGDB" splits "$tmp/s.tgt")
    has "^graph 1: 2 splits, 24.0 KiB copied per computation" "header: 2 splits, copy bytes"
    has "^split 0: BLAS, nodes 0..0 (1)" "split 0 on BLAS"
    has "opened by 'h' on BLAS: src: BLAS supports MUL_MAT" "split 0 cause: src"
    has "^split 1: CPU, nodes 1..2 (2)" "split 1 on CPU"
    has "opened by 'y' on CPU: unsupported: ADD not supported by BLAS" "split 1 cause: BLAS lacks ADD"
    has "input 'h' from BLAS: 12.0 KiB" "split 1 copies h from BLAS"
    has "^ranked by cost" "ranking"
    "$TGDB" splits "$tmp/s.tgt" --json >"$tmp/s.json" && python3 - "$tmp/s.json" <<'PY' && ok "--json: splits cover the graph, bytes add up, ranked" || bad "--json"
import json, sys
d = json.load(open(sys.argv[1]))
sp = d["splits"]
assert d["n_splits"] == len(sp) == 2
assert sp[0]["node_begin"] == 0 and all(a["node_end"] == b["node_begin"] for a, b in zip(sp, sp[1:]))
assert d["copy_bytes"] == sum(i["bytes"] for s in sp for i in s["inputs"]) == 2 * 48 * 64 * 4
assert sorted(d["ranked"]) == [0, 1] and all(s["cause"] for s in sp)
PY
fi
out=$("$TGDB" splits "$tmp/s.tgt" --graph 2); has "^graph 2: " "--graph picks the graph"
err "unknown graph" "$TGDB" splits "$tmp/s.tgt" --graph 77
err "missing file" "$TGDB" splits "$tmp/none.tgt"
"$TGDB" splits >/dev/null 2>"$tmp/err"; [ $? = 2 ] && grep -q "^usage: tgdb splits FILE" "$tmp/err" && ok "no file: usage, exit 2" || bad "no file"
echo "test_splits: $pass passed, $fail failed"
[ $fail = 0 ]
