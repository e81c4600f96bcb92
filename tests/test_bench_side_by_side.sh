#!/usr/bin/env bash
# test_bench_side_by_side.sh - tests/bench/side-by-side.sh against a stand-in
# llama-bench (a script printing llama-bench's CSV: bare header names, quoted
# rows, a comma inside a quoted field) and the real `tgdb bench` on the tiny
# model: one table row per model, test and -fa value; the llama.cpp column is
# the stand-in's median (its values change per round); the ratio is the
# medians' quotient; bad input gives exit 2 and a failing llama-bench exit 1,
# each with a message.
. "$(dirname "$0")/support/check.sh"
S=${TG_SOURCE_DIR:?}/tests/bench/side-by-side.sh
M=$DATA/tiny-f32.gguf
fake=$work/llama-bench
# rounds: the stand-in counts its calls in a file; round r reports r x the base figures
cat > "$fake" <<EOF
#!/usr/bin/env bash
n=\$(cat "$work/calls" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > "$work/calls"
echo 'build_commit,cpu_info,model_filename,n_threads,flash_attn,n_prompt,n_gen,n_depth,avg_ts,stddev_ts'
for fa in 1 0; do
    pp=\$((fa ? 100 : 80)); tg=\$((fa ? 10 : 8))
    echo "\"x\",\"Some CPU, rev 2\",\"m.gguf\",\"1\",\"\$fa\",\"8\",\"0\",\"0\",\"\$((pp * n)).000000\",\"0.0\""
    echo "\"x\",\"Some CPU, rev 2\",\"m.gguf\",\"1\",\"\$fa\",\"0\",\"2\",\"0\",\"\$((tg * n)).000000\",\"0.0\""
done
EOF
chmod +x "$fake"

bash "$S" -r 3 -p 8 -n 2 -t 1 --tgdb "$TGDB" "$fake" "$M" > "$work/out" 2> "$work/err"; rc=$?
[ $rc = 0 ] && ok "side-by-side runs (exit 0)" || bad "side-by-side: rc $rc $(tail -n 3 "$work/err")"
[ "$(cat "$work/calls")" = 3 ] && ok "llama-bench ran once a round" || bad "llama-bench calls: $(cat "$work/calls")"
rows=$(grep -c '^| tiny-f32 |' "$work/out")
[ "$rows" = 4 ] && ok "4 table rows (pp and tg, fa on and off)" || bad "rows: $rows: $(cat "$work/out")"
# the stand-in's medians over rounds 1..3 (values x1, x2, x3): 2 x the base
for want in "pp8 on 200.0" "tg2 on 20.0" "pp8 off 160.0" "tg2 off 16.0"; do
    set -- $want
    got=$(awk -F'|' -v t="$1" -v fa="$2" '{ gsub(/ /, "", $3); gsub(/ /, "", $4) } $3 == t && $4 == fa { gsub(/ /, "", $6); print $6 }' "$work/out")
    [ "$got" = "$3" ] && ok "llama.cpp median of $1 fa $2 is $3" || bad "llama.cpp median of $1 fa $2: '$got', want $3"
done
# ratio column = tgdb median / llama.cpp median (2 decimals; the table's medians are rounded to 0.1),
# and tgdb's medians are real figures
bad_ratio=$(awk -F'|' '/^\| tiny-f32 \|/ { o = $5 + 0; t = $6 + 0; r = $7; gsub(/[ *]/, "", r); d = o / t - r
    if (o <= 0 || d > 0.01 || d < -0.01) print $0 }' "$work/out")
[ -z "$bad_ratio" ] && ok "ratios are the medians' quotients" || bad "ratio rows: $bad_ratio"
grep -q 'p=8 n=2 depth=0, 3 interleaved rounds' "$work/out" && ok "the title names the settings" || bad "title: $(head -n 1 "$work/out")"

# bad input: exit 2 with a message, nothing run
bash "$S" -r 0 "$fake" "$M" > /dev/null 2> "$work/e1"; rc=$?
[ $rc = 2 ] && grep -q 'at least 1' "$work/e1" && ok "-r 0: exit 2" || bad "-r 0: rc $rc $(cat "$work/e1")"
bash "$S" --tgdb "$TGDB" "$work/none" "$M" > /dev/null 2> "$work/e2"; rc=$?
[ $rc = 2 ] && grep -q 'not an executable llama-bench' "$work/e2" && ok "missing llama-bench: exit 2" || bad "missing llama-bench: rc $rc $(cat "$work/e2")"
bash "$S" --tgdb "$TGDB" "$fake" "$work/none.gguf" > /dev/null 2> "$work/e3"; rc=$?
[ $rc = 2 ] && grep -q "cannot read model" "$work/e3" && ok "missing model: exit 2" || bad "missing model: rc $rc $(cat "$work/e3")"
bash "$S" -p x "$fake" "$M" > /dev/null 2> "$work/e4"; rc=$?
[ $rc = 2 ] && grep -q -- "-p needs a number" "$work/e4" && ok "-p x: exit 2" || bad "-p x: rc $rc $(cat "$work/e4")"
# a llama-bench that fails: exit 1, its output shown
printf '#!/usr/bin/env bash\necho "model load failed" >&2\nexit 1\n' > "$work/failing"; chmod +x "$work/failing"
bash "$S" -r 1 -p 8 -n 2 -t 1 --tgdb "$TGDB" "$work/failing" "$M" > /dev/null 2> "$work/e5"; rc=$?
[ $rc = 1 ] && grep -q 'llama-bench failed' "$work/e5" && ok "a failing llama-bench: exit 1 with a message" || bad "failing llama-bench: rc $rc $(cat "$work/e5")"
finish
