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
# what-if: the placement re-run offline reproduces the recording, and moving
# h to the CPU gives what a real run with h on the CPU recorded (16 columns:
# graph 1 puts h on BLAS, graph 2 (weights usage) keeps it on the CPU)
if ! grep -q "no BLAS backend" "$tmp/sample.out"; then
    TGDB_TRACE=$tmp/s16.tgt "$B/samples/sched-splits" 16 >/dev/null 2>&1 || bad "sched-splits 16 ran"
    out=$("$TGDB" splits "$tmp/s16.tgt" --graph 1); has "^graph 1: 2 splits, 15.0 KiB copied" "16 columns: h on BLAS, 2 splits"
    has "re-run on the recorded graph: 2 splits, 15.0 KiB copied, as recorded" "the offline re-run reproduces the recording"
    has "if 'y' ran on BLAS: not possible (node 'y' (ADD)" "what-if without --what-if: each opening node on the previous backend, refusals named"
    real=$("$TGDB" splits "$tmp/s16.tgt" --graph 2 | head -1)
    [ "$real" = "graph 2: 1 split, 0 B copied per computation" ] && ok "the real run with h on the CPU: $real" || bad "graph 2: $real"
    out=$("$TGDB" splits "$tmp/s16.tgt" --graph 1 --what-if h=CPU)
    has "if 'h' ran on CPU: 1 split, 0 B copied (saves 1 split and 15.0 KiB)" "--what-if h=CPU equals the real run"
    "$TGDB" splits "$tmp/s16.tgt" --graph 1 --what-if h=cpu --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
w = d["what_if"][0]
assert d["replanned"] == {"n_splits": 2, "copy_bytes": 15360}, d["replanned"]
assert (w["node"], w["backend"], w["n_splits"], w["copy_bytes"], w["splits_saved"], w["copy_bytes_saved"]) == ("h", "CPU", 1, 0, 1, 15360), w
' && ok "--what-if --json (backend names case-insensitive)" || bad "--what-if --json"
    err "what-if unknown node" "$TGDB" splits "$tmp/s16.tgt" --graph 1 --what-if nope=CPU
    err "what-if unknown backend" "$TGDB" splits "$tmp/s16.tgt" --graph 1 --what-if h=GPU
    err "what-if without =" "$TGDB" splits "$tmp/s16.tgt" --graph 1 --what-if h
fi
err "unknown graph" "$TGDB" splits "$tmp/s.tgt" --graph 77
err "missing file" "$TGDB" splits "$tmp/none.tgt"
"$TGDB" splits >/dev/null 2>"$tmp/err"; [ $? = 2 ] && grep -q "^usage: tgdb splits FILE" "$tmp/err" && ok "no file: usage, exit 2" || bad "no file"
echo "test_splits: $pass passed, $fail failed"
[ $fail = 0 ]
