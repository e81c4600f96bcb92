#!/usr/bin/env bash
# test_cli_diff_dot.sh - `tgdb diff` and `tgdb dot` on deterministic synthetic
# traces (tests/tools/mktrace): exit statuses, first divergence, dependents,
# TSV input, SVG well-formedness and node/cluster counts, selections, errors.
set -uo pipefail
B=${TG_BUILD_DIR:?}; DATA=${TG_TEST_DATA:?}
TGDB=$B/inspect/tgdb; MK=$B/tests/mktrace
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
pass=0; fail=0
ok()   { echo "ok   $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

"$MK" "$work/a.tgt" --nan && "$MK" "$work/same.tgt" --nan && "$MK" "$work/b.tgt" --nan --variant 2 \
  && "$MK" "$work/c.tgt" --nan --variant 1 || { echo "FAIL mktrace"; exit 1; }

# diff: identical runs -> exit 0
"$TGDB" diff "$work/a.tgt" "$work/same.tgt" > "$work/out"; rc=$?
check "diff of two identical runs exits 0 (rc=$rc)" test $rc = 0
check "identical runs: every pair has the same hash" grep -q "128 same, 0 near, 0 DIFF" "$work/out"
# diff: values change from node 32 of graph 0 on -> first divergence Qcur-2 with contents errors
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" > "$work/out"; rc=$?
check "diff of different runs exits 1 (rc=$rc)" test $rc = 1
check "first divergent node is Qcur-2 (node 32)" grep -q "first divergent node: graph 0, node 32 (B: 32) Qcur-2" "$work/out"
check "errors from recorded contents" grep -q "errors (contents): max abs 0.5" "$work/out"
check "its 31 dependents are reported" grep -q "31 nodes of A depend on it" "$work/out"
# --all / --json
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" --all > "$work/all"
check "--all lists every pair (128 rows + first mark)" test "$(grep -c -E '^ +[0-9]+ +[0-9-]+ +[0-9-]+  ' "$work/all")" = 128
check "--all marks the first divergence" grep -q "<- first divergence" "$work/all"
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" --json > "$work/json"
check "--json is valid JSON with first.name Qcur-2" python3 -c "import json,sys; d=json.load(open('$work/json')); sys.exit(0 if d['first']['name']=='Qcur-2' and d['differs'] and d['counts']['DIFF']==64 else 1)"
# loose tolerance turns contents differences into 'near'? (values differ by 50%: still DIFF)
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" --rtol 0.6 --atol 0.6 > "$work/out"; rc=$?
check "rtol/atol 0.6 accept a 50% change (exit 0, rc=$rc)" test $rc = 0
# structural difference: inserted node
"$TGDB" diff "$work/a.tgt" "$work/c.tgt" > "$work/out"; rc=$?
check "a renamed node is reported as only in A / only in B (exit 1)" test $rc = 1
check "structural difference explained" grep -q "only in A" "$work/out"
# TSV side
printf 'inp_embd\tGET_ROWS\t64,8,1,1\t1.5\t2.5\n' > "$work/b.tsv"
"$TGDB" diff "$work/a.tgt" "$work/b.tsv" > "$work/out"; rc=$?
check "TSV dump as B: sums that differ -> exit 1" test $rc = 1
printf 'oops\n' > "$work/bad.tsv"
"$TGDB" diff "$work/a.tgt" "$work/bad.tsv" 2> "$work/err"; rc=$?
check "malformed TSV: one line naming file and line, exit 2 ($(cat "$work/err"))" \
    bash -c "test $rc = 2 && test \$(wc -l < '$work/err') = 1 && grep -q 'bad.tsv:1' '$work/err'"
"$TGDB" diff "$work/missing.tgt" "$work/a.tgt" 2> "$work/err"; rc=$?
check "missing trace: one line, non-zero ($(cat "$work/err"))" bash -c "test $rc != 0 && test \$(wc -l < '$work/err') = 1"
"$TGDB" diff --bogus 2> "$work/err"; rc=$?
check "unknown option rejected" test $rc = 2

# dot: whole graph, SVG parsed as XML, one SVG node per graph node (+ leafs, + copies), one cluster per split
count() { grep -c "class=\"$1\"" "$2"; }
"$TGDB" dot "$work/a.tgt" -o "$work/g1.svg" 2> "$work/err"
check "dot writes a well-formed SVG" xmllint --noout "$work/g1.svg"
check "graph 1: 64 nodes + 2 leafs = 66 SVG nodes (got $(count node "$work/g1.svg"))" test "$(count node "$work/g1.svg")" = 66
check "graph 1: 1 split -> 1 cluster" test "$(count cluster "$work/g1.svg")" = 1
"$TGDB" dot "$work/a.tgt" --graph 0 -o "$work/g0.svg" 2> "$work/err"
check "graph 0: 34 splits -> 34 clusters" test "$(count cluster "$work/g0.svg")" = 34
check "graph 0: 66 tensors + 33 split-input copies = 99 SVG nodes" test "$(count node "$work/g0.svg")" = 99
check "graph 0: the NaN origin is highlighted" grep -q "NaN ORIGIN" "$work/g0.svg"
"$TGDB" dot "$work/a.tgt" --graph 0 --around Qcur-2 --depth 2 -o "$work/around.svg" 2>/dev/null
check "--around Qcur-2 --depth 2 gives 7 nodes" test "$(count node "$work/around.svg")" = 7
"$TGDB" dot "$work/a.tgt" --graph 0 --collapse -o "$work/fold.svg" 2>/dev/null
n=$(count node "$work/fold.svg")
check "--collapse folds layers 1..3 ($n nodes < 99)" test "$n" = 32
check "--collapse draws the folded node" grep -q "layers 1..3 folded" "$work/fold.svg"
"$TGDB" dot "$work/a.tgt" --graph 0 --layer 1 -o "$work/layer.svg" 2>/dev/null
check "--layer 1 keeps layer 1 (15 nodes + leaf + copies = 24)" test "$(count node "$work/layer.svg")" = 24
"$TGDB" dot "$work/a.tgt" --graph 0 --diff "$work/b.tgt" -o "$work/diff.dot" 2>/dev/null
check "--diff highlights the first divergence (.dot written directly)" grep -q "FIRST DIFF" "$work/diff.dot"
"$TGDB" dot "$work/a.tgt" -o "$work/g.png" 2>/dev/null
check "PNG rendered" bash -c "head -c 8 '$work/g.png' | od -c | grep -q 'P   N   G'"
"$TGDB" dot "$work/a.tgt" -o "$work/g.pdf" 2>/dev/null
check "PDF rendered" bash -c "head -c 4 '$work/g.pdf' | grep -q '%PDF'"
"$TGDB" dot "$work/a.tgt" --around nope -o "$work/x.svg" 2> "$work/err"; rc=$?
check "unknown node: one line, exit 1 ($(cat "$work/err"))" bash -c "test $rc = 1 && grep -q \"no node named 'nope'\" '$work/err'"
"$TGDB" dot "$work/a.tgt" --graph 7 -o "$work/x.svg" 2> "$work/err"; rc=$?
check "no such graph: exit 1 ($(cat "$work/err"))" test $rc = 1
"$TGDB" dot "$work/a.tgt" -o "$work/x.bmp" 2> "$work/err"; rc=$?
check "unknown format: exit 1 ($(cat "$work/err"))" test $rc = 1
echo "test_cli_diff_dot: $pass passed, $fail failed"
[ $fail = 0 ]
