#!/usr/bin/env bash
# test_cli_fa.sh - -fa on|off|auto picks the attention path of generate and
# bench, and the trace says which one ran: with -fa on the layers have one
# FLASH_ATTN_EXT node (__fattn__-N), with -fa off (or auto while a trace is
# recording) the kq / kq_soft_max / kqv nodes; `trace info` counts the
# decodes of each path (also in --json). Both paths generate the same tokens
# on the tiny model.
. "$(dirname "$0")/support/check.sh"
M=$DATA/tiny-f32.gguf
for fa in on off auto; do
    if "$TGDB" generate -m "$M" -p "Once upon a time" -n 6 --temp 0 -fa $fa --trace "$work/$fa.tgt" > "$work/$fa.out" 2>&1
    then ok "generate -fa $fa runs"; else bad "generate -fa $fa: $(tail -n 2 "$work/$fa.out")"; fi
    "$TGDB" trace nodes "$work/$fa.tgt" > "$work/$fa.nodes" 2>&1
    "$TGDB" trace info "$work/$fa.tgt" > "$work/$fa.info" 2>&1
done
grep -q '__fattn__-0 .*FLASH_ATTN_EXT' "$work/on.nodes" && ! grep -q 'kq_soft_max-0' "$work/on.nodes" \
    && ok "-fa on: __fattn__-0 is a FLASH_ATTN_EXT node, no kq_soft_max" || bad "-fa on nodes: $(grep -c . "$work/on.nodes") lines"
for fa in off auto; do
    grep -q 'kq_soft_max-0' "$work/$fa.nodes" && ! grep -q 'FLASH_ATTN_EXT' "$work/$fa.nodes" \
        && ok "-fa $fa with a trace: the unfused kq_soft_max nodes" || bad "-fa $fa nodes"
done
grep -q '^attention: fused (' "$work/on.info" && ok "trace info: attention fused" || bad "trace info -fa on: $(grep attention "$work/on.info")"
grep -q '^attention: unfused (0 decodes fused' "$work/off.info" && ok "trace info: attention unfused" || bad "trace info -fa off: $(grep attention "$work/off.info")"
j=$("$TGDB" trace info "$work/on.tgt" --json | python3 -c 'import json,sys; a=json.load(sys.stdin)["attention"]; print(a["fused"] > 0 and a["unfused"] == 0)')
[ "$j" = True ] && ok "trace info --json: attention.fused counts the decodes" || bad "trace info --json attention: $j"
# the generated text (the line after the prompt) is the same on both paths
if cmp -s <(grep -v 'trace written' "$work/on.out") <(grep -v 'trace written' "$work/off.out"); then ok "-fa on and off generate the same text"
else bad "-fa on/off differ: $(head -c 200 "$work/on.out") / $(head -c 200 "$work/off.out")"; fi
# bench: one line per -fa value
"$TGDB" bench -m "$M" -p 8 -n 2 -r 1 -t 1 -fa on,off > "$work/bench" 2>&1
grep -q 'pp8 fa=on' "$work/bench" && grep -q 'pp8 fa=off' "$work/bench" && ok "bench -fa on,off measures both" || bad "bench: $(cat "$work/bench")"
! grep -q 'warning' "$work/bench" && ok "bench -fa: no 'not built' warning" || bad "bench warns: $(grep warning "$work/bench")"
"$TGDB" generate -m "$M" -p hi -n 1 -fa maybe > "$work/err" 2>&1; rc=$?
[ $rc = 2 ] && grep -q 'on|off|auto\|auto|on|off' "$work/err" && ok "-fa maybe: exit 2 naming the choices" || bad "-fa maybe: rc $rc $(cat "$work/err")"
finish
