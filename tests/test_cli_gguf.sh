#!/usr/bin/env bash
# test_cli_gguf.sh - `tgdb gguf`: text and JSON output on tiny-f32.gguf, and
# one-line errors (exit 1) on malformed, missing and directory paths.
. "$(dirname "$0")/support/check.sh"
tmp=$work

"$TGDB" gguf "$DATA/tiny-f32.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "text: exit 0, nothing on stderr" test "$rc" = 0 -a ! -s "$tmp/err"
check "text: header version 3"           grep -Eq '^version: +3$' "$tmp/out"
check "text: alignment 32"               grep -Eq '^alignment: +32$' "$tmp/out"
check "text: 21 tensors, 22 key/values"  bash -c "grep -Eq '^tensors: +21$' '$tmp/out' && grep -Eq '^key/values: +22$' '$tmp/out'"
check "text: data offset 725088"         grep -Eq '^data offset: +725088$' "$tmp/out"
check "text: file size 17454432"         grep -Eq '^file size: +17454432$' "$tmp/out"
check "text: general.architecture"       grep -Eq '^ +general\.architecture +string +"llama"$' "$tmp/out"
check "text: embedding_length 64"        grep -Eq '^ +llama\.embedding_length +uint32 +64$' "$tmp/out"
check "text: tokens elided"              grep -Eq '^ +tokenizer\.ggml\.tokens +array\[string\] +\["<unk>", "<s>", .*\.\.\. \(32000 items\)\]$' "$tmp/out"
check "text: token_embd row"             grep -Eq '^ +0 +token_embd\.weight +f32 +\[64, 32000\] +0 +8192000$' "$tmp/out"
check "text: output.weight row"          grep -Eq '^ +[0-9]+ +output\.weight +f32 +\[64, 32000\] +[0-9]+ +8192000$' "$tmp/out"

"$TGDB" gguf "$DATA/tiny-f32.gguf" --json --items 2 >"$tmp/json" 2>"$tmp/err"; rc=$?
check "json: exit 0" test "$rc" = 0
check "json: header fields" grep -q '"version": 3,' "$tmp/json"
check "json: elided array" grep -q '"key": "tokenizer.ggml.tokens", "type": "array", "elem_type": "string", "count": 32000, "elided": true, "value": \["<unk>", "<s>"\]' "$tmp/json"
check "json: tensor" grep -q '{"name": "token_embd.weight", "type": "f32", "type_id": 0, "shape": \[64, 32000\], "offset": 0, "file_offset": 725088, "bytes": 8192000, "data_present": true}' "$tmp/json"
if command -v python3 >/dev/null; then
    check "json: parses (python3)" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['tensor_count']==21 and len(d['tensors'])==21 and d['kv'][4]['value']==64" "$tmp/json"
fi
# Escaping: a token with a quote, a backslash and a newline (fuzz seed valid-0.gguf).
"$TGDB" gguf "$TG_SOURCE_DIR/tests/fuzz/corpus_gguf/valid-0.gguf" --json >"$tmp/json0" 2>&1
check "json: strings escaped" grep -qF '"a\"b\\c\n"' "$tmp/json0"

bad="$DATA/gguf-bad/dim-zero.gguf"
"$TGDB" gguf "$bad" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "malformed: exit 2" test "$rc" = 2
check "malformed: nothing on stdout" test ! -s "$tmp/out"
check "malformed: one line" test "$(wc -l <"$tmp/err")" = 1
check "malformed: message" grep -qF "tgdb: $bad: gguf: tensor 'blk.0.attn_q.weight' (info at offset 69): dimension 1 at offset 108 is 0" "$tmp/err"
cat "$tmp/err"

"$TGDB" gguf "$tmp/missing.gguf" >/dev/null 2>"$tmp/err"; rc=$?
check "missing file: exit 2, one line" bash -c "test $rc = 2 && test \$(wc -l <'$tmp/err') = 1 && grep -q 'No such file' '$tmp/err'"
"$TGDB" gguf "$tmp" >/dev/null 2>"$tmp/err"; rc=$?
check "directory: exit 2, one line" bash -c "test $rc = 2 && test \$(wc -l <'$tmp/err') = 1 && grep -q 'directory' '$tmp/err'"
"$TGDB" gguf "$DATA/gguf-bad/data-cut-short.gguf" >"$tmp/out" 2>&1; rc=$?
check "cut-short data: exit 0, says INCOMPLETE, marks the tensor" bash -c "test $rc = 0 && grep -q 'INCOMPLETE: gguf: data section cut short' '$tmp/out' && grep -q '(missing)' '$tmp/out'"
"$TGDB" gguf >/dev/null 2>&1; rc=$?
check "no file: exit 2" test "$rc" = 2
finish
