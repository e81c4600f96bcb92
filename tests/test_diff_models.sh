#!/usr/bin/env bash
# test_diff_models.sh - tgdb diff and tgdb dot on traces of the real runtime:
# F32 vs Q8_0 reference models (first divergence at inp_embd, the first node
# reading a quantized weight), the same model twice (exit 0), the runtime
# against another engine's per-node dump (evalcb-tiny-f32-p1.tsv, within
# 1e-3), and the SVG of a traced generation (parsed; one SVG node per graph
# node and leaf, one cluster per split; --around and --collapse smaller).
. "$(dirname "$0")/support/check.sh"
set -o pipefail
D=$DATA
expect() { if grep -qE -- "$2" "$work/out"; then ok "$1"; else bad "$1: no /$2/ in:"; sed 's/^/    /' "$work/out" | head -30; fi; }
P="Once upon a time, there was a little robot"   # prompt p1 of logits.tsv / evalcb-tiny-f32-p1.tsv
gen() { "$TGDB" generate -m "$1" -p "$P" -n 1 --temp 0 -t 2 --trace "$2" ${3:+--trace-dump "$3"} > "$work/gen.log" 2>&1 \
        || { bad "generate --trace $2 failed"; cat "$work/gen.log"; }; }
gen "$D/tiny-f32.gguf" "$work/f32.tgt" inp_embd
gen "$D/tiny-f32.gguf" "$work/f32-again.tgt"
gen "$D/tiny-q8_0.gguf" "$work/q8.tgt" inp_embd

g1=$("$TGDB" trace info "$work/f32.tgt" | grep -m1 -oE "^  graph [0-9]+" | grep -oE "[0-9]+")   # graph ids, as trace info prints them
"$TGDB" diff "$work/f32.tgt" "$work/q8.tgt" > "$work/out"; rc=$?
[ $rc = 1 ] && ok "F32 vs Q8_0: exit 1" || bad "F32 vs Q8_0 exited $rc"
expect "F32 vs Q8_0: the first divergent node is inp_embd" "^first divergent node: graph $g1, node 0 \(B: 0\) inp_embd \(GET_ROWS \[64,11,1,1\]\)"
expect "F32 vs Q8_0: errors from the recorded contents" "errors \(contents\): max abs [0-9.e-]+, mean abs [0-9.e-]+"
expect "F32 vs Q8_0: the nodes depending on it" "[0-9]+ nodes of A depend on it"
"$TGDB" diff "$work/f32.tgt" "$work/f32-again.tgt" > "$work/out"; rc=$?
[ $rc = 0 ] && ok "same model twice: exit 0" || bad "same model twice exited $rc"
expect "same model twice: every node has the same hash" "compared 1 graph, ([0-9]+) node pairs: \1 same"
"$TGDB" diff "$work/f32.tgt" "$D/evalcb-tiny-f32-p1.tsv" > "$work/out"; rc=$?
[ $rc = 0 ] && ok "runtime vs evalcb-tiny-f32-p1.tsv: exit 0" || bad "runtime vs evalcb TSV exited $rc"
expect "runtime vs the TSV dump: nodes compared, none beyond 1e-3" "no compared node differs beyond tolerance \(rtol 0.001"
n_near=$(grep -oE "[0-9]+ near" "$work/out" | grep -oE "[0-9]+")
[ "${n_near:-0}" -ge 40 ] && ok "runtime vs the TSV dump: $n_near nodes matched by name/op/shape and within 1e-3" || bad "only ${n_near:-0} nodes matched the TSV"
"$TGDB" diff "$work/f32.tgt" "$D/evalcb-tiny-f32-p1.tsv" --rtol 1e-9 --atol 0 > "$work/out"; rc=$?
[ $rc = 1 ] && ok "the TSV comparison can fail (rtol 1e-9 -> exit 1)" || bad "rtol 1e-9 should find differences (rc=$rc)"

# another engine's KV padding: llama.cpp's kq / kq_soft_max span 256 cache cells where ours span
# fewer; the dump's lines for them, shaped [256,T,H,1] with our own sums (the extra cells zeros),
# pair with our nodes and compare by sums ("padded"); wrong sums there are a DIFF
"$TGDB" trace node "$work/f32.tgt" kq-0 --json > "$work/kq.json" && "$TGDB" trace node "$work/f32.tgt" kq_soft_max-0 --json > "$work/sm.json" \
    || bad "trace node kq-0 / kq_soft_max-0"
padded_tsv() {   # $1: scale applied to kq-0's sums
  python3 - "$work/kq.json" "$work/sm.json" "$1" <<'PY'
import json, sys
for f, scale in ((sys.argv[1], float(sys.argv[3])), (sys.argv[2], 1.0)):
    d = json.load(open(f)); s = d["evals"][0]["summary"]; ne = d["shape"]; n = ne[0] * ne[1] * ne[2] * ne[3]
    print("%s\t%s\t256,%d,%d,%d\t%.9g\t%.9g" % (d["name"], d["op"], ne[1], ne[2], ne[3], s["mean"] * n * scale, s["rms"] ** 2 * n * scale))
PY
}
{ grep -E "^(inp_embd|attn_norm-0|Qcur-0)\s" "$D/evalcb-tiny-f32-p1.tsv"; padded_tsv 1; grep -E "^kqv_out-0\s" "$D/evalcb-tiny-f32-p1.tsv"; } > "$work/pad.tsv"
"$TGDB" diff "$work/f32.tgt" "$work/pad.tsv" --all > "$work/out"; rc=$?
[ $rc = 0 ] && ok "padded dump: exit 0" || { bad "padded dump: exit $rc"; cat "$work/out"; }
expect "padded dump: kq-0 paired across its KV padding, compared by sums" "kq-0 +MUL_MAT +\[[0-9]+,[0-9]+,[0-9]+,1\] +near +padded .*\(B \[256,"
expect "padded dump: kq_soft_max-0 too" "kq_soft_max-0 +SOFT_MAX .* near +padded "
expect "padded dump: the count by evidence" "compared [0-9]+ of [0-9]+ aligned nodes \(.*2 by padded"
{ padded_tsv 1.01; } > "$work/pad-bad.tsv"
"$TGDB" diff "$work/f32.tgt" "$work/pad-bad.tsv" > "$work/out"; rc=$?
[ $rc = 1 ] && ok "padded dump with kq-0's sums 1% off: exit 1" || bad "padded dump, wrong sums: exit $rc"
expect "padded dump, wrong sums: kq-0 is the first divergence, by its sums" "^first divergent node: .* kq-0 .*" 
expect "padded dump, wrong sums: says the padded cells were taken as zeros" "padded cells taken as zeros"
expect "padded dump, wrong sums: the growth of the sums' difference marks where it is introduced" \
    "divergence introduced .* at 1 node: kq-0 \(MUL_MAT, graph [0-9]+ #[0-9]+, stat_rel 0\.0(09|1|2)"


# another engine's order and names: its dump lines for layer 0 with Vcur-0 before Kcur-0 (llama.cpp's
# order), the embedding as "embd" (its newer name for inp_embd): all still paired and compared
awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "inp_embd" { $1 = "embd" } { print }' "$D/evalcb-tiny-f32-p1.tsv" \
  | awk -F'\t' '$1 == "Kcur-0" && $2 == "MUL_MAT" { k = $0; next } { print } $1 == "Vcur-0" && $2 == "MUL_MAT" && k != "" { print k }' \
  > "$work/order.tsv"
order=$(awk -F'\t' '$2 == "MUL_MAT" && ($1 == "Kcur-0" || $1 == "Vcur-0") { printf "%s ", $1 }' "$work/order.tsv")
[ "$order" = "Vcur-0 Kcur-0 " ] && grep -q "^embd" "$work/order.tsv" && ok "reordered dump: Vcur-0 before Kcur-0, embd for inp_embd" \
  || bad "reordered dump not built: '$order'"
"$TGDB" diff "$work/f32.tgt" "$work/order.tsv" --all > "$work/out"; rc=$?
[ $rc = 0 ] && ok "reordered dump: exit 0" || { bad "reordered dump: exit $rc"; head -20 "$work/out"; }
expect "reordered dump: Kcur-0 (MUL_MAT) still paired and near" "^ +[0-9]+ +[0-9]+ +[0-9]+  Kcur-0 +MUL_MAT .* near "
expect "reordered dump: Vcur-0 (MUL_MAT) too" "^ +[0-9]+ +[0-9]+ +[0-9]+  Vcur-0 +MUL_MAT .* near "
expect "reordered dump: inp_embd paired with the dump's embd" "^ +[0-9]+ +0 +0  inp_embd +GET_ROWS .* near "
n_b=$("$TGDB" diff "$work/f32.tgt" "$D/evalcb-tiny-f32-p1.tsv" | grep -oE "[0-9]+ only in B" | grep -oE "[0-9]+")
n_b2=$(grep -oE "[0-9]+ only in B" "$work/out" | grep -oE "[0-9]+")
[ "$n_b2" = "$n_b" ] && ok "reordered dump: no more nodes only in the dump than in its own order ($n_b2)" \
  || bad "reordered dump: $n_b2 nodes only in B, $n_b in the original order"

# --trace-hash none: nothing to compare -> inconclusive (exit 3), never "equivalent";
# --trace-hash computed: the unhashed views do not make it inconclusive
for mode in none computed; do
  for k in 1 2; do
    "$TGDB" generate -m "$D/tiny-f32.gguf" -p "$P" -n 1 --temp 0 -t 2 --trace-hash $mode --trace "$work/$mode$k.tgt" > "$work/gen.log" 2>&1 \
      || { bad "generate --trace-hash $mode failed"; cat "$work/gen.log"; }
  done
done
"$TGDB" diff "$work/none1.tgt" "$work/none2.tgt" > "$work/out"; rc=$?
[ $rc = 3 ] && ok "--trace-hash none twice: exit 3 (inconclusive)" || bad "--trace-hash none twice exited $rc"
expect "--trace-hash none: says nothing was compared and why" "^compared 0 of [0-9]+ aligned nodes: neither trace has hashes, summaries or contents; record with --trace-hash all"
expect "--trace-hash none: result inconclusive" "^result: INCONCLUSIVE"
"$TGDB" diff "$work/computed1.tgt" "$work/computed2.tgt" > "$work/out"; rc=$?
[ $rc = 0 ] && ok "--trace-hash computed twice: exit 0" || bad "--trace-hash computed twice exited $rc"
expect "--trace-hash computed: the views without data are named as such" "[0-9]+ views, reshapes and permutes recorded without data \(--trace-hash computed\) not compared"
"$TGDB" diff "$work/f32.tgt" "$work/none1.tgt" > "$work/out"; rc=$?
[ $rc = 3 ] && ok "all vs none: exit 3" || bad "all vs none exited $rc"
expect "all vs none: names the side without data" "B has no hashes, summaries or contents; record it with --trace-hash all"

# DOT/SVG of a traced generation, split across CPU and BLAS (a prompt long enough for BLAS)
LONG="In a quiet village at the edge of the forest, the old clockmaker spent his days repairing watches that nobody remembered owning. Every evening he wrote a letter"
"$B/samples/make-model" --n-layer 4 -o "$work/l4.gguf" > /dev/null
"$TGDB" generate -m "$work/l4.gguf" -p "$LONG" -n 1 --temp 0 --device BLAS,CPU --trace "$work/l4.tgt" > /dev/null 2>&1
"$TGDB" trace info "$work/l4.tgt" > "$work/info"
read -r gid n_nodes n_leafs n_splits < <(grep -m1 -oE "^  graph [0-9]+ \(sched [0-9]+\): [0-9]+ nodes, [0-9]+ leafs, [0-9]+ splits" "$work/info" \
    | sed -E 's/^  graph ([0-9]+) .*: ([0-9]+) nodes, ([0-9]+) leafs, ([0-9]+) splits/\1 \2 \3 \4/')
"$TGDB" dot "$work/l4.tgt" --graph $gid -o "$work/g.svg" 2> "$work/dot.log"
if xmllint --noout "$work/g.svg" 2> "$work/xml.err"; then ok "SVG of the traced generation is well-formed XML"; else bad "SVG not well-formed: $(head -3 "$work/xml.err")"; fi
nodes=$(grep -c 'class="node"' "$work/g.svg"); clusters=$(grep -c 'class="cluster"' "$work/g.svg")
[ "$nodes" = $((n_nodes + n_leafs)) ] && ok "one SVG node per graph node and leaf ($n_nodes + $n_leafs = $nodes)" || bad "SVG nodes $nodes != $n_nodes + $n_leafs"
[ "$clusters" = "$n_splits" ] && [ "$n_splits" -gt 1 ] && ok "one cluster per split ($clusters splits across CPU and BLAS)" || bad "clusters $clusters vs splits $n_splits"
"$TGDB" dot "$work/l4.tgt" --graph $gid --around Kcur-1 --depth 1 -o "$work/around.svg" 2>/dev/null
a=$(grep -c 'class="node"' "$work/around.svg")
[ "$a" -lt 20 ] && [ "$a" -gt 2 ] && ok "--around Kcur-1 --depth 1: $a nodes (whole graph $nodes)" || bad "--around gave $a nodes"
"$TGDB" dot "$work/l4.tgt" --graph $gid --collapse -o "$work/fold.svg" 2>/dev/null
f=$(grep -c 'class="node"' "$work/fold.svg")
[ "$f" -lt "$nodes" ] && grep -q "layers 1..2 folded" "$work/fold.svg" && ok "--collapse folds layers 1..2: $f nodes < $nodes" || bad "--collapse gave $f nodes"
stray=$(grep -oE '>(Qcur|Kcur|Vcur|kqv)&#45;[12] \((reshaped|permuted|transposed)\)<|>cache_[kv]_l[12] \(view\)<' "$work/fold.svg" | head -3 | tr '\n' ' ')
[ -z "$stray" ] && grep -q '>Qcur&#45;0 (reshaped)<' "$work/fold.svg" && grep -q '>cache_k_l3 (view)<' "$work/fold.svg" \
    && ok "--collapse folds the views, reshapes and permutes of layers 1..2 with them (layers 0 and 3 keep theirs)" || bad "--collapse left views of folded layers outside: $stray"
"$TGDB" dot --live -m "$work/l4.gguf" -p "Hello world" -o "$work/live.svg" 2> "$work/out"
l=$(grep -c 'class="node"' "$work/live.svg" 2>/dev/null || echo 0)
[ "$l" -gt 100 ] && xmllint --noout "$work/live.svg" && ok "dot --live renders a model's graph without a trace file ($l nodes)" || { bad "dot --live"; cat "$work/out"; }
finish
