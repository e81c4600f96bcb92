#!/usr/bin/env bash
# test_quantize.sh - make-model --type with the quantization presets (per-tensor
# mixtures like the established quantizer's: q4_k_m = Q4_K + Q6_K for the
# output and some attn_v/ffn_down) and `tgdb quantize`: requantizing the F32
# model gives the same bytes as making it quantized; the models load and
# generate; bad types and paths are clear errors.
. "$(dirname "$0")/support/check.sh"
set -o pipefail
TGDB=$B/inspect/tgdb; MM=$B/samples/make-model
mix() { "$TGDB" gguf "$1" | grep -oE " (q[0-9]_[0-9Kk]|iq4_(nl|xs)) " | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}'; }
S=${TG_SOURCE_DIR:-}
# A small vocabulary keeps the embedding matrices (256 x n_vocab) quick to
# quantize: the first 8000 tokens of the default Llama 2 one (make-model --n-vocab).
V=(--n-vocab 8000)
TYPES="q4_k_m q5_k_m q6_k q4_k_s q3_k_m q2_k iq4_nl iq4_xs q4_1 q5_0 q5_1"
if grep -q "TG_SANITIZE:BOOL=ON" "$B/CMakeCache.txt" 2>/dev/null; then
    TYPES="q4_k_m iq4_xs"   # sanitizers (-O1): two presets (the release run checks all eleven)
    echo "note: sanitizer build: presets $TYPES only"
fi
"$MM" --n-embd 256 --n-ff 768 "${V[@]}" -o "$work/f32.gguf" > /dev/null || bad "make-model f32"
for t in $TYPES; do
    "$MM" --n-embd 256 --n-ff 768 "${V[@]}" --type $t -o "$work/$t.gguf" > /dev/null || { bad "make-model --type $t"; continue; }
    m=$(mix "$work/$t.gguf")
    case $t in
      q4_k_m) want="q4_K:13 q6_K:3 " ;;
      q3_k_m) want="q3_K:9 q4_K:4 q5_K:2 q6_K:1 " ;;
      q2_k)   want="q2_K:9 q3_K:6 q6_K:1 " ;;
      q6_k)   want="q6_K:16 " ;;
      iq4_xs) want="iq4_xs:15 q6_K:1 " ;;
      q4_1|q5_0|q5_1) want="$t:16 " ;;
      *)      want="$m" ;;
    esac
    [ "$m" = "$want" ] && ok "make-model --type $t: tensor types $m" || bad "make-model --type $t: $m (want $want)"
    out=$("$TGDB" generate -m "$work/$t.gguf" -p "Hello" -n 4 --temp 0 2>&1) && ok "$t model generates: $(echo "$out" | tail -1 | head -c 60)" \
        || bad "$t generate: $out"
done
# Rows that 256 does not divide (n_embd 384, like Qwen2.5-0.5B's 896) fall back
# to 32-element types as the established quantizer's do: Q4_K -> Q5_0, Q6_K -> Q8_0.
"$MM" --n-embd 384 --n-ff 768 "${V[@]}" --type q4_k_m -o "$work/k384.gguf" > /dev/null || bad "make-model n_embd 384"
m=$(mix "$work/k384.gguf")
[ "$m" = "q4_K:1 q5_0:12 q6_K:1 q8_0:2 " ] && ok "q4_k_m with n_embd 384: $m (only ffn_down, k = n_ff, stays a K-quant)" \
    || bad "q4_k_m with n_embd 384: $m"
out=$("$TGDB" generate -m "$work/k384.gguf" -p "Hello" -n 4 --temp 0 2>&1) && ok "it generates: $(echo "$out" | tail -1 | head -c 60)" \
    || bad "n_embd 384 generate: $out"
"$TGDB" quantize "$work/f32.gguf" "$work/req.gguf" q4_k_m > "$work/out" 2>&1 && cmp -s "$work/req.gguf" "$work/q4_k_m.gguf" \
    && ok "tgdb quantize f32 -> q4_k_m gives the bytes of make-model --type q4_k_m" || { bad "quantize differs"; cat "$work/out"; }
"$TGDB" quantize "$work/f32.gguf" "$work/x.gguf" q9 > "$work/out" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "unknown type 'q9' (known: .*q4_k_m" "$work/out" && [ ! -e "$work/x.gguf" ] \
    && ok "an unknown type is an error naming the known ones, nothing written" || bad "quantize q9: rc $rc: $(cat "$work/out")"
"$TGDB" quantize "$work/missing.gguf" "$work/x.gguf" q6_k > "$work/out" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "missing.gguf" "$work/out" && ok "a missing input is named" || bad "missing input: rc $rc"
"$MM" --type q9 -o "$work/y.gguf" > "$work/out" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "unknown type 'q9'" "$work/out" && ok "make-model --type q9 is an error" || bad "make-model q9: rc $rc"
# --n-vocab: the token arrays cut alike, the matrices n_vocab wide; ids past it and BPE vocabularies refused
m=$("$TGDB" gguf "$work/f32.gguf" | grep -cE "(tokenizer.ggml.(tokens|scores|token_type) .*\(8000 items\)|llama.vocab_size +uint32 +8000|token_embd.weight +f32 +\[256, 8000\])")
[ "$m" = 5 ] && ok "make-model --n-vocab 8000: tokens, scores, token types, vocab_size and token_embd agree" \
    || bad "make-model --n-vocab 8000: $m of 5 fields"
"$MM" --n-vocab 2 -o "$work/v2.gguf" > "$work/out" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "tokenizer.ggml.eos_token_id is past --n-vocab 2" "$work/out" && [ ! -e "$work/v2.gguf" ] \
    && ok "make-model --n-vocab 2 is an error (eos id 2)" || bad "make-model --n-vocab 2: rc $rc $(cat "$work/out")"
"$MM" --n-vocab 0 -o "$work/v0.gguf" > "$work/out" 2>&1; rc=$?
[ $rc != 0 ] && grep -q "bad value '0' for --n-vocab" "$work/out" && ok "make-model --n-vocab 0 is an error" || bad "--n-vocab 0: rc $rc"
finish
