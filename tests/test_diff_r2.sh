#!/usr/bin/env bash
# test_diff_r2.sh - a traced run of the round-2 Qwen3 reference model
# (../shared/reference/r2/qwen3-tiny.gguf: BPE vocabulary, per-head Q/K norm,
# neox rope, head_dim 32 != n_embd/n_head) against the established runtime's
# per-node dump of the same prompt (tests/data/r2/evalcb-qwen3-tiny-p1.tsv):
# every node both have (name, op, shape) agrees within 1e-3, and the
# comparison can fail.
. "$(dirname "$0")/support/check.sh"
set -o pipefail
D=$DATA
S=${TG_SOURCE_DIR:?}
REF=${TG_REF_DIR:-$S/../shared/reference}/r2
M=$REF/qwen3-tiny.gguf
if [ ! -r "$M" ]; then echo "skipped: $M not found (reference data; set TG_REF_DIR)"; echo "test_diff_r2: 0 passed, 0 failed"; exit 0; fi
P="Once upon a time, there was a little robot"   # prompt p1 of r2/logits.tsv
"$TGDB" tokenize -m "$M" -p "$P" > "$work/ids"
[ "$(cat "$work/ids")" = "12522 5193 264 882 11 1052 572 264 2632 12305" ] && ok "the BPE tokenizer gives p1's ids" \
    || bad "tokenize p1: $(cat "$work/ids")"
"$TGDB" generate -m "$M" -p "$P" -n 1 --temp 0 -t 2 --trace "$work/q3.tgt" > "$work/gen.log" 2>&1 \
    || { bad "generate --trace failed"; cat "$work/gen.log"; }
"$TGDB" diff "$work/q3.tgt" "$D/r2/evalcb-qwen3-tiny-p1.tsv" > "$work/out"; rc=$?
[ $rc = 0 ] && ok "qwen3 run vs the reference dump: exit 0" || { bad "diff exited $rc"; cat "$work/out"; }
grep -qE "no (compared )?node differs beyond tolerance \(rtol 0.001" "$work/out" && ok "no shared node differs beyond 1e-3" \
    || { bad "a node differs:"; head -20 "$work/out"; }
n_near=$(grep -oE "[0-9]+ near" "$work/out" | grep -oE "[0-9]+")
[ "${n_near:-0}" -ge 40 ] && ok "$n_near nodes matched by name/op/shape (Qcur_normed, Kcur_normed, kqv_out, ffn_out, l_out ...)" \
    || bad "only ${n_near:-0} nodes matched"
"$TGDB" diff "$work/q3.tgt" "$D/r2/evalcb-qwen3-tiny-p1.tsv" --all > "$work/all"
grep -qE "Qcur_normed-1 +MUL .* near" "$work/all" && ok "the per-head Q norm of layer 1 is among the matched nodes" \
    || { bad "Qcur_normed-1 not matched"; grep Qcur_normed "$work/all"; }
grep -qE "kq_soft_max-1 +SOFT_MAX +\[[0-9]+,10,4,1\] +near +padded .*\(B \[256,10,4,1\]: padded\)" "$work/all" \
    && ok "kq_soft_max-1 paired across the reference's KV padding (256 cells) and within 1e-3 by its sums" \
    || { bad "kq_soft_max-1 not paired as padded"; grep -E "kq" "$work/all"; }
"$TGDB" diff "$work/q3.tgt" "$D/r2/evalcb-qwen3-tiny-p1.tsv" --rtol 1e-12 --atol 0 > "$work/out"; rc=$?
[ $rc = 1 ] && ok "the comparison can fail (rtol 1e-12 -> exit 1)" || bad "rtol 1e-12 should find differences (rc=$rc)"
finish
