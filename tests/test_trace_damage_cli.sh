#!/usr/bin/env bash
# test_trace_damage_cli.sh - one damaged byte in the middle of a trace:
# every command that reads it says so on stderr (one line naming the file,
# the record and its offset), later records are still read, and `tgdb check`
# reports the damage as a problem (exit 1). The same with the index destroyed
# (the reader resynchronises on the record framing), and for a trace cut by
# `truncate`.
. "$(dirname "$0")/support/check.sh"
tmp=$work

u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }          # u32 at offset (little-endian host)
flip() { printf "\\x$(printf %02x $(( $(od -An -tu1 -j "$2" -N1 "$1") ^ 0x10 )))" |
         dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }  # flips one bit of the byte at offset

good=$tmp/good.tgt
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 4 --temp 0 -t 1 --trace "$good" > /dev/null 2>&1 \
    || { echo "FAIL generate"; exit 1; }
# record offsets: frames after the 32-byte header, 16 bytes + payload each
offs=(); off=32; size=$(stat -c %s "$good")
while [ $off -lt $size ]; do offs+=("$off"); off=$(( off + 16 + $(u32 "$good" $((off + 8))) )); done
n=${#offs[@]}
mid=$(( n / 2 )); moff=${offs[$mid]}
evals_good=$("$TGDB" trace info "$good" | sed -n 's/^evaluated nodes: \([0-9]*\).*/\1/p')
[ "$n" -gt 20 ] && [ "${evals_good:-0}" -gt 10 ] && ok "sample trace: $n records, $evals_good evaluated nodes" \
    || bad "sample trace: $n records, $evals_good evals"

# one line on stderr naming the file, the record and the offset
warns() {   # warns LABEL STDERR_FILE RECORD OFFSET
    local lines; lines=$(grep -c "warning: trace '.*$(basename "$dam")'" "$2")
    if [ "$lines" = 1 ] && grep -q "record $3.*offset $4" "$2"; then ok "$1: one warning line: $(grep warning "$2")"
    else bad "$1: stderr: $(cat "$2")"; fi
}

dam=$tmp/damaged.tgt
cp "$good" "$dam"
flip "$dam" $(( moff + 16 ))   # a payload byte of the middle record

"$TGDB" trace info "$dam" > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 0 ] && ok "trace info reads the damaged trace" || bad "trace info exit $rc"
warns "trace info" "$tmp/err" "$mid" "$moff"
evals=$(sed -n 's/^evaluated nodes: \([0-9]*\).*/\1/p' "$tmp/out")
[ "${evals:-0}" -ge $(( evals_good - 1 )) ] && ok "records after the damaged one are read ($evals of $evals_good evaluated nodes)" \
    || bad "only $evals of $evals_good evaluated nodes read"

"$TGDB" check "$dam" > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 1 ] && ok "check exits 1 on a damaged trace" || bad "check exit $rc: $(tail -1 "$tmp/out")"
grep -q "^PROBLEM \[damage\] .*record $mid .*at offset $moff: bad checksum" "$tmp/out" && ok "check reports the damage as a problem" \
    || bad "check output: $(grep -i "damage\|problem" "$tmp/out")"
warns "check" "$tmp/err" "$mid" "$moff"

"$TGDB" diff "$good" "$dam" > "$tmp/out" 2> "$tmp/err"
warns "diff" "$tmp/err" "$mid" "$moff"
"$TGDB" shell "$dam" -x 'where' > "$tmp/out" 2> "$tmp/err"
warns "shell" "$tmp/err" "$mid" "$moff"
"$TGDB" dot "$dam" -o "$tmp/g.dot" > "$tmp/out" 2> "$tmp/err"
warns "dot" "$tmp/err" "$mid" "$moff"
"$TGDB" trace info "$good" > /dev/null 2> "$tmp/err"
[ ! -s "$tmp/err" ] && ok "a complete trace gives no warning" || bad "warning on a good trace: $(cat "$tmp/err")"

# the index destroyed as well: the scan resynchronises after the damaged record
ioff=${offs[$((n - 2))]}
flip "$dam" $(( ioff + 20 ))
"$TGDB" trace info "$dam" > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 0 ] && ok "no index: trace info reads it" || bad "no index: exit $rc"
warns "no index: trace info" "$tmp/err" "$mid" "$moff"
evals=$(sed -n 's/^evaluated nodes: \([0-9]*\).*/\1/p' "$tmp/out")
[ "${evals:-0}" -ge $(( evals_good - 1 )) ] && ok "no index: records after the damage are read ($evals of $evals_good)" \
    || bad "no index: only $evals of $evals_good evaluated nodes read"
"$TGDB" check "$dam" > "$tmp/out" 2>&1; rc=$?
[ $rc = 1 ] && [ "$(grep -c '^PROBLEM \[damage\]' "$tmp/out")" = 2 ] && ok "no index: check reports both damaged records" \
    || bad "no index: check exit $rc: $(grep PROBLEM "$tmp/out")"

# cut by truncate in the middle of a record
cp "$good" "$dam"
truncate -s $(( moff + 20 )) "$dam"
"$TGDB" trace info "$dam" > "$tmp/out" 2> "$tmp/err"
grep -q "warning: trace '.*damaged.tgt': trace truncated: .*record $mid at offset $moff is cut mid-record" "$tmp/err" \
    && ok "truncated: one warning line" || bad "truncated: stderr: $(cat "$tmp/err")"
"$TGDB" check "$dam" > "$tmp/out" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^PROBLEM \[damage\] .*cut mid-record.*(to the end of the file)" "$tmp/out" \
    && ok "truncated: check exits 1 and says what was cut" || bad "truncated: check exit $rc: $(grep PROBLEM "$tmp/out")"
finish
