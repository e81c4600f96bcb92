# test_cli_tokenize.sh - `tgdb tokenize` against tests/data/tokenizer-llama-spm.jsonl:
# -p output, --jsonl round trip of every case, and one-line errors with exit 1.
. "$(dirname "$0")/support/check.sh"
MODEL="$DATA/llama-spm-vocab.gguf"
REF="$DATA/tokenizer-llama-spm.jsonl"
TMP=$work

# -p: ids on one line, as in the reference file
out="$("$TGDB" tokenize -m "$MODEL" -p "Hello world")"
check "-p 'Hello world' -> '$out' (15043 3186)" test "$out" = "15043 3186"
out="$("$TGDB" tokenize -m "$MODEL" -p "naïve café résumé")"
check "-p 'naïve café résumé' -> '$out'" test "$out" = "1055 30085 345 274 28059 6896 398 29948"
out="$("$TGDB" tokenize -m "$MODEL" -p "Hello world" --bos)"
check "-p 'Hello world' --bos -> '$out' (1 15043 3186)" test "$out" = "1 15043 3186"
out="$("$TGDB" tokenize -m "$MODEL" -p "Hello" --pieces | sed -n 2p)"
check "--pieces prints id and piece: '$out'" test "$out" = "$(printf '15043\t" Hello"')"

# --jsonl: every ids array of the reference file, byte for byte
"$TGDB" tokenize -m "$MODEL" --jsonl "$REF" -o "$TMP/out.jsonl"
check "--jsonl -o exits 0" test $? -eq 0
check "--jsonl output equals the reference file ($(wc -l < "$REF") lines)" cmp -s "$TMP/out.jsonl" "$REF"
"$TGDB" tokenize -m "$MODEL" --jsonl "$REF" > "$TMP/stdout.jsonl"
check "--jsonl to stdout equals the reference file" cmp -s "$TMP/stdout.jsonl" "$REF"
# escapes: \uXXXX surrogate pair and \n decode to the same ids as the raw text
printf '{"text": "emoji \\ud83d\\ude42\\ud83d\\ude80\\ud83e\\udd99", "ids": []}\n{"text": "\\n\\n\\n"}\n' > "$TMP/esc.jsonl"
"$TGDB" tokenize -m "$MODEL" --jsonl "$TMP/esc.jsonl" > "$TMP/esc.out"
check "--jsonl decodes \\u surrogate pairs (emoji case)" \
    grep -qF '"ids": [953, 29877, 2397, 29871, 243, 162, 156, 133, 243, 162, 157, 131, 243, 162, 169, 156]' "$TMP/esc.out"
check "--jsonl decodes \\n escapes" grep -qF '{"text": "\n\n\n", "ids": [29871, 13, 13, 13]}' "$TMP/esc.out"

# errors: exit 1 and exactly one line on stderr
expect_error() {  # expect_error DESCRIPTION ARGS...
    local what="$1"; shift
    "$TGDB" tokenize "$@" > "$TMP/o" 2> "$TMP/e"
    local rc=$?
    local lines; lines=$(wc -l < "$TMP/e")
    check "$what: exit $rc, $lines stderr line(s): $(head -c 200 "$TMP/e")" test "$rc" -eq 2 -a "$lines" -eq 1
}
expect_error "missing -m" -p "hi"
expect_error "unreadable model" -m "$TMP/nope.gguf" -p "hi"
echo "not a gguf file" > "$TMP/bad.gguf"
expect_error "malformed model" -m "$TMP/bad.gguf" -p "hi"
expect_error "no input" -m "$MODEL"
expect_error "unknown option" -m "$MODEL" -p hi --frobnicate
printf '{"text": "ok"}\n{"text": "broken\n' > "$TMP/bad.jsonl"
expect_error "bad JSON line 2" -m "$MODEL" --jsonl "$TMP/bad.jsonl"
check "the bad-line error names line 2" grep -q "line 2" "$TMP/e"
printf '{"txt": "no text key"}\n' > "$TMP/nokey.jsonl"
expect_error "JSON line without text" -m "$MODEL" --jsonl "$TMP/nokey.jsonl"
printf '{"text": "lone \\ud83d"}\n' > "$TMP/lone.jsonl"
expect_error "lone surrogate" -m "$MODEL" --jsonl "$TMP/lone.jsonl"
expect_error "missing jsonl file" -m "$MODEL" --jsonl "$TMP/none.jsonl"
finish
