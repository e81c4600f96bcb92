#!/usr/bin/env bash
# test_cli_train.sh - `tgdb train` on the shipped corpus (samples/corpus/
# apache-2.0.txt) with the tiny model: the loss of the last steps is less than
# half the first one's, two runs with one seed give the same losses bit for
# bit (--json), the written model reloads (perplexity over the corpus, whose
# mean NLL is within 5% of the last steps' mean loss) and generates text made
# of corpus words; errors.
. "$(dirname "$0")/support/check.sh"
M=$DATA/tiny-f32.gguf
C=$TG_SOURCE_DIR/samples/corpus/apache-2.0.txt
args=(-m "$M" -f "$C" --steps 80 --ctx 32 --lr 0.003 --seed 7 -t 2)
"$TGDB" train "${args[@]}" -o "$work/t.gguf" --json > "$work/a.json" 2>"$work/err" || bad "train: $(cat "$work/err")"
"$TGDB" train "${args[@]}" --json > "$work/b.json" 2>/dev/null || bad "train again"
python3 - "$work/a.json" "$work/b.json" <<'PY' && ok "loss falls by more than half; two runs bit for bit the same" || bad "train json: $(head -c 300 "$work/a.json")"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
la = [s["loss"] for s in a["steps"]]
assert len(la) == 80 and a["tokens"] > 2000
first, last = la[0], sum(la[-10:]) / 10
print("     loss %.4f -> %.4f (mean of the last 10 steps), %.1f s" % (first, last, a["seconds"]))
assert last < 0.5 * first, (first, last)
assert [s["loss"] for s in b["steps"]] == la and [s["grad_norm"] for s in b["steps"]] == [s["grad_norm"] for s in a["steps"]]
open(sys.argv[1] + ".last", "w").write("%.6f" % last)
PY
nll=$("$TGDB" perplexity -m "$work/t.gguf" -f "$C" -c 32 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])')
last=$(cat "$work/a.json.last" 2>/dev/null)
python3 -c "import sys; n, l = float('$nll'), float('$last'); print('     corpus NLL %.4f, last training loss %.4f' % (n, l)); sys.exit(0 if abs(n - l) / n < 0.05 else 1)" \
    && ok "the trained model reloads: its NLL on the corpus is within 5% of the last training loss" || bad "perplexity of the trained model: '$nll' vs '$last'"
# what the trained model writes is text from the corpus: every word of the continuation is one of its words
"$TGDB" generate -m "$work/t.gguf" -p "Licensed under the" -n 16 --temp 0 --json 2>/dev/null > "$work/gen.json"
python3 - "$work/gen.json" "$C" <<'PY' && ok "the trained model's continuation is made of corpus words" || bad "generated words: $(head -c 300 "$work/gen.json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
text = d.get("text") or d.get("generated") or d.get("output") or ""
cont = text.split("Licensed under the", 1)[-1]
words = re.findall(r"[A-Za-z]+", cont)
corpus = set(w.lower() for w in re.findall(r"[A-Za-z]+", open(sys.argv[2]).read()))
print("     continuation: %r" % cont[:120])
assert words, "no words"
assert all(w.lower() in corpus for w in words), [w for w in words if w.lower() not in corpus]
PY
"$TGDB" train -m "$M" -f "$work/none.txt" >/dev/null 2>"$work/err"; [ $? = 2 ] && grep -q "cannot open .*none.txt: No such file" "$work/err" && ok "missing text: exit 2 naming it and why" || bad "missing text: $(cat "$work/err")"
"$TGDB" train -m "$M" -f "$work" >/dev/null 2>"$work/err"; [ $? = 2 ] && grep -q "is a directory" "$work/err" && ok "a directory for the text: exit 2 saying so" || bad "directory text: $(cat "$work/err")"
echo "short" > "$work/short.txt"
"$TGDB" train -m "$M" -f "$work/short.txt" --ctx 32 >/dev/null 2>"$work/err"; [ $? = 2 ] && grep -q "fewer than --ctx 32" "$work/err" && ok "a text shorter than the context: exit 2 naming it" || bad "short text: $(cat "$work/err")"
"$TGDB" train -f "$C" >/dev/null 2>"$work/err"; [ $? = 2 ] && grep -q "\-m MODEL" "$work/err" && ok "no model: exit 2" || bad "no model: $(cat "$work/err")"
finish
