#!/usr/bin/env bash
# test_cli_diff_dot.sh - `tgdb diff` and `tgdb dot` on deterministic synthetic
# traces (tests/tools/mktrace): exit statuses, first divergence, dependents,
# TSV input, SVG well-formedness and node/cluster counts, selections, errors.
. "$(dirname "$0")/support/check.sh"
set -o pipefail

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
check "it says how many compared nodes agree" grep -q "the 126 compared nodes agree, but the graphs differ" "$work/out"
# TSV side
printf 'inp_embd\tGET_ROWS\t64,8,1,1\t1.5\t2.5\n' > "$work/b.tsv"
"$TGDB" diff "$work/a.tgt" "$work/b.tsv" > "$work/out"; rc=$?
check "TSV dump as B: sums that differ -> exit 1" test $rc = 1
printf 'oops\n' > "$work/bad.tsv"
"$TGDB" diff "$work/a.tgt" "$work/bad.tsv" 2> "$work/err"; rc=$?
check "malformed TSV: one line naming file and line, exit 2 ($(cat "$work/err"))" \
    bash -c "test $rc = 2 && test \$(wc -l < '$work/err') = 1 && grep -q 'bad.tsv:1' '$work/err'"
# a shape whose element count overflows, a name longer than a tensor name, a
# line longer than the old 1 KiB line buffer (its tail was read as a line of its own)
printf 'inp_embd\tGET_ROWS\t64,8,1,1\t1.5\t2.5\nx\tADD\t9223372036854775807,4,1,1\t1\t2\n' > "$work/huge.tsv"
"$TGDB" diff "$work/a.tgt" "$work/huge.tsv" 2> "$work/err"; rc=$?
check "TSV shape overflowing 64 bits: exit 2, named at huge.tsv:2 ($(cat "$work/err"))" \
    bash -c "test $rc = 2 && grep -q 'huge.tsv:2: the shape.s element count overflows' '$work/err'"
{ printf '%0100d\tADD\t4,1,1,1\t1\t2\n' 0; } > "$work/longname.tsv"
"$TGDB" diff "$work/a.tgt" "$work/longname.tsv" 2> "$work/err"; rc=$?
check "TSV name over 63 bytes: exit 2, named ($(cat "$work/err"))" \
    bash -c "test $rc = 2 && grep -q 'longname.tsv:1: the node name is longer' '$work/err'"
{ printf 'inp_embd\tGET_ROWS\t64,8,1,1\t1.5\t2.5'; printf '%01200d' 0; printf '\n'; } > "$work/longline.tsv"
"$TGDB" diff "$work/a.tgt" "$work/longline.tsv" 2> "$work/err"; rc=$?
check "TSV line over 1 KiB (sum 2.5000...) read whole: compared like b.tsv, exit 1, no error ($(cat "$work/err"))" \
    bash -c "test $rc = 1 && test ! -s '$work/err'"
"$TGDB" diff "$work/missing.tgt" "$work/a.tgt" 2> "$work/err"; rc=$?
check "missing trace: one line, non-zero ($(cat "$work/err"))" bash -c "test $rc != 0 && test \$(wc -l < '$work/err') = 1"
"$TGDB" diff --bogus 2> "$work/err"; rc=$?
check "unknown option rejected: usage error exits 2 (rc=$rc)" test $rc = 2
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" --rtol x 2> "$work/err"; rc=$?
check "bad --rtol: usage error exits 2 (rc=$rc)" test $rc = 2
"$TGDB" help diff > "$work/help" 2>&1
check "help diff documents the exit statuses" bash -c "grep -q '2 usage or input error' '$work/help' && grep -q '3 inconclusive' '$work/help'"

# 16.3: runs recorded without hashes, summaries or contents compare nothing: never "equivalent"
"$MK" "$work/n1.tgt" --data none && "$MK" "$work/n2.tgt" --data none && "$MK" "$work/s1.tgt" --data summary \
  && "$MK" "$work/s2.tgt" --data summary --variant 2 && "$MK" "$work/tok.tgt" --nan --tokens 77 || { echo "FAIL mktrace"; exit 1; }
"$TGDB" diff "$work/n1.tgt" "$work/n2.tgt" > "$work/out"; rc=$?
check "diff of two traces without data exits 3, not 0 (rc=$rc)" test $rc = 3
check "it says it compared nothing and why" grep -q "compared 0 of 128 aligned nodes: neither trace has hashes, summaries or contents; record with --trace-hash all" "$work/out"
check "it never claims equivalence" bash -c "! grep -q equivalent '$work/out' && grep -q 'result: INCONCLUSIVE' '$work/out'"
"$TGDB" diff "$work/n1.tgt" "$work/c.tgt" > "$work/out"; rc=$?
check "no data on one side and the graphs differ: exit 1, no claim that values agree (rc=$rc)" \
    bash -c "test $rc = 1 && grep -q 'no values compared, and the graphs differ' '$work/out' && ! grep -q 'agree' '$work/out'"
"$TGDB" diff "$work/a.tgt" "$work/n1.tgt" --json > "$work/json"; rc=$?
check "one side without data: exit 3, JSON result inconclusive (rc=$rc)" python3 -c "import json,sys; d=json.load(open('$work/json')); sys.exit(0 if $rc==3 and d['result']=='inconclusive' and d['compared']==0 and d['aligned']==128 else 1)"
# 16.6: evidence per row; relative L2 and max abs only from contents; '-' when unknown
"$TGDB" diff "$work/a.tgt" "$work/same.tgt" > "$work/out"
check "hash evidence counted" grep -q "compared 128 of 128 aligned nodes (128 by hash)" "$work/out"
"$TGDB" diff "$work/s1.tgt" "$work/s2.tgt" --all > "$work/out"; rc=$?
check "summary-only traces: DIFF found (rc=$rc)" test $rc = 1
check "summary rows say 'summary' and show '-' for rel_l2 and max_abs" \
    grep -qE "Qcur-2 +MUL_MAT +\[64,8,1,1\] +DIFF +summary +- +- +0\.47" "$work/out"
check "first divergence says element errors are unknown" grep -q "element errors unknown (no contents recorded)" "$work/out"
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" --all > "$work/out"
check "rows equal by hash show 0 and evidence hash" \
    grep -qE "inp_embd +GET_ROWS +\[64,8,1,1\] +same +hash +0 +0 +-" "$work/out"
"$TGDB" diff "$work/a.tgt" "$work/b.tgt" --json --all > "$work/json"
check "JSON rows carry evidence, rel_l2 null when unknown" python3 -c "
import json,sys; d=json.load(open('$work/json')); n={x['name']:x for x in d['nodes'] if x['graph']==0}
q=n['ffn_out-2']; sys.exit(0 if q['evidence']=='summary' and q['rel_l2'] is None and q['max_abs'] is None and q['stat_rel']>0.4 and n['inp_embd']['evidence']=='hash' else 1)"
# contents on both sides: relative L2 from the elements (variant 2 scales nodes n/2.. by 1.5 -> rel L2 0.5/1.5)
"$MK" "$work/cn1.tgt" --nodes 4 && "$MK" "$work/cn2.tgt" --nodes 4 --variant 2 || { echo "FAIL mktrace"; exit 1; }
"$TGDB" diff "$work/cn1.tgt" "$work/cn2.tgt" > "$work/out"
check "contents: relative L2 reported ($(grep errors "$work/out"))" grep -q "errors (contents): max abs .*, relative L2 0.3333" "$work/out"
"$TGDB" diff "$work/a.tgt" "$work/tok.tgt" > "$work/out"
check "different input tokens are noted" grep -q "note: the runs were fed different tokens: decode call 0, position 1: A token 9038, B token 77" "$work/out"

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
check "unknown node: one line, input error exits 2 ($(cat "$work/err"))" bash -c "test $rc = 2 && grep -q \"no node named 'nope'\" '$work/err'"
"$TGDB" dot "$work/a.tgt" --graph 7 -o "$work/x.svg" 2> "$work/err"; rc=$?
check "no such graph: exit 2, names the ids ($(cat "$work/err"))" bash -c "test $rc = 2 && grep -q 'ids 0..1' '$work/err'"
"$TGDB" dot "$work/a.tgt" -o "$work/x.bmp" 2> "$work/err"; rc=$?
check "unknown format: exit 2 ($(cat "$work/err"))" test $rc = 2
check "no output file after errors" test ! -e "$work/x.svg"
# 16.12: a layer the graph does not have is an error naming the valid range, not an empty graph
"$TGDB" dot "$work/a.tgt" --graph 0 --layer 99 -o "$work/x.svg" 2> "$work/err"; rc=$?
check "--layer 99: exit 2 naming the range ($(cat "$work/err"))" bash -c "test $rc = 2 && grep -q 'no layer 99 in graph 0 (layers 0..4)' '$work/err' && test ! -e '$work/x.svg'"
"$TGDB" help dot > "$work/help" 2>&1
check "help dot documents the exit statuses" grep -q "exit 0 written, 1 could not write or render the output, 2 usage or input error" "$work/help"

# graph numbers are the ids the trace records (trace info's "graph N"), not positions
"$MK" "$work/g5a.tgt" --graph-base 5 && "$MK" "$work/g5b.tgt" --graph-base 5 --variant 2 || { echo "FAIL mktrace"; exit 1; }
"$TGDB" trace info "$work/g5a.tgt" > "$work/info" 2>&1
check "trace info calls them graph 5 and 6" bash -c "grep -q 'graph 5 ' '$work/info' && grep -q 'graph 6 ' '$work/info'"
"$TGDB" dot "$work/g5a.tgt" --graph 6 -o "$work/g6.dot" 2> "$work/err"; rc=$?
check "dot --graph 6 draws graph id 6 (rc=$rc)" bash -c "test $rc = 0 && grep -q 'label=\"graph 6: 64 nodes' '$work/g6.dot'"
"$TGDB" dot "$work/g5a.tgt" --graph 0 -o "$work/g0x.dot" 2> "$work/err"; rc=$?
check "dot --graph 0 (a position, not an id): exit 2 naming ids 5..6" bash -c "test $rc = 2 && grep -q 'ids 5..6' '$work/err'"
"$TGDB" diff "$work/g5a.tgt" "$work/g5b.tgt" > "$work/out"
check "diff names the first divergence by graph id" grep -q "first divergent node: graph 5, node 32" "$work/out"
"$TGDB" diff "$work/g5a.tgt" "$work/g5b.tgt" --json --all > "$work/json"
check "diff --json graph fields are ids" python3 -c "import json,sys; d=json.load(open('$work/json')); sys.exit(0 if d['first']['graph']==5 and {x['graph'] for x in d['nodes']}=={5,6} else 1)"

# 16.11: names cut inside a UTF-8 character, control bytes, stray bytes: valid DOT text and SVG
"$MK" "$work/u.tgt" --utf8 && "$MK" "$work/w.tgt" --weird || { echo "FAIL mktrace"; exit 1; }
for t in u w; do
  "$TGDB" dot "$work/$t.tgt" -o "$work/$t.svg" 2>/dev/null && "$TGDB" dot "$work/$t.tgt" -o "$work/$t.dot" 2>/dev/null
  check "$t: SVG parses as XML" python3 -c "import xml.etree.ElementTree as E; E.parse('$work/$t.svg')"
  check "$t: DOT text is valid UTF-8 without control bytes" python3 -c "
import sys; t=open('$work/$t.dot','rb').read().decode('utf-8'); sys.exit(1 if any(ord(c)<32 and c not in '\n' for c in t) else 0)"
done
check "the cut character is replaced, the whole ones kept" grep -q 'label="{ééééé*?|' "$work/u.dot"
check "control and stray bytes shown as '?'" grep -q 'label="{bad?name??-0|' "$work/w.dot"

# 16.9: -o writes whole or not at all; errors are reported (file size limit: writes fail with EFBIG)
echo "previous" > "$work/keep.svg"
(trap '' XFSZ; ulimit -f 4; exec "$TGDB" dot "$work/a.tgt" --graph 0 -o "$work/keep.svg") 2> "$work/err"; rc=$?
check "write failure: exit 1 with a message ($(cat "$work/err"))" bash -c "test $rc = 1 && grep -q 'keep.svg: write failed: File too large (.*keep.svg was not written)' '$work/err'"
check "write failure: the old file is untouched" grep -qx previous "$work/keep.svg"
check "write failure: no partial or temporary file left" test -z "$(ls "$work" | grep 'keep.svg.')"
(trap '' XFSZ; ulimit -f 4; exec "$TGDB" dot "$work/a.tgt" --graph 0 -o "$work/part.dot") 2> "$work/err"; rc=$?
check "DOT text write failure: exit 1, nothing left ($(cat "$work/err"))" bash -c "test $rc = 1 && test ! -e '$work/part.dot' && test -z \"\$(ls '$work' | grep part.dot)\""

# 16.7: --layer keeps the views, reshapes and permutes of the layer (KV cache views included): every
# data-flow edge into a drawn node from a node of that layer, a view or a leaf is drawn
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "hello" -n 2 --temp 0 --trace "$work/tiny.tgt" > /dev/null 2>&1 \
  || { echo "FAIL generate tiny trace"; exit 1; }
"$TGDB" dot "$work/tiny.tgt" -o "$work/full.dot" 2>/dev/null && "$TGDB" dot "$work/tiny.tgt" --layer 0 -o "$work/l0.dot" 2>/dev/null
cat > "$work/edges.py" <<'PY'
import re, sys
def load(p):
    t = open(p, encoding='utf-8').read()
    nodes = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(r'"(t\d+)" \[shape=record, label="\{((?:[^|\\]|\\.)*)\|(\w+)', t)}
    edges = set(re.findall(r'"(t\d+)" -> "(t\d+)"', t))
    return nodes, edges
fn, fe = load(sys.argv[1]); ln, le = load(sys.argv[2])
views = {'VIEW', 'RESHAPE', 'PERMUTE', 'TRANSPOSE'}
def layer0(name): return re.search(r'-0( \(.*\))?$', name) is not None or re.search(r'_l0( \(.*\))?$', name) is not None
missing = [(fn[s][0], fn[d][0]) for s, d in fe if d in ln and s in fn and (layer0(fn[s][0]) or fn[s][1] in views or fn[s][1] == 'NONE') and (s, d) not in le]
nviews = sum(1 for k, v in ln.items() if v[1] in views)
print('layer 0: %d nodes, %d views/reshapes/permutes, missing edges: %s' % (len(ln), nviews, missing[:6]))
sys.exit(0 if not missing and nviews >= 8 else 1)
PY
check "--layer 0 keeps every data-flow edge through its views ($(python3 "$work/edges.py" "$work/full.dot" "$work/l0.dot"))" \
    python3 "$work/edges.py" "$work/full.dot" "$work/l0.dot"
"$TGDB" dot "$work/tiny.tgt" --layer 1 -o "$work/l1.dot" 2>/dev/null
check "--layer 1 draws layer 1's KV cache views" grep -q 'cache_k_l1 (view)' "$work/l1.dot"
check "--layer 1 draws no layer-0 node" bash -c "! grep -q 'label=\"{[A-Za-z_]*-0[ |]' '$work/l1.dot'"
finish
