#!/usr/bin/env bash
# test_cli_llama.sh - `tgdb generate`, `tgdb perplexity`, `tgdb bench` and the
# make-model sample from the outside: JSON output against the reference ids,
# --logits-out against the reference logits, the result lines, error exits.
. "$(dirname "$0")/support/check.sh"
MAKE_MODEL="$TG_BUILD_DIR/samples/make-model"
TMP=$work
# fails_cleanly "what" args...: exit status 2 (want=N to change) and exactly one line on stderr
fails_cleanly() {
    local what=$1; shift
    "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
    local lines; lines=$(wc -l <"$TMP/err")
    if [ "$rc" = "${want:-2}" ] && [ "$lines" = 1 ]; then echo "ok   $what: $(cat "$TMP/err")"; pass=$((pass+1))
    else echo "FAIL $what (exit $rc, $lines stderr lines: $(head -c 300 "$TMP/err"))"; fail=$((fail+1)); fi
}

# generate --json: prompt ids and greedy continuation of the reference
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time, there was a little robot" -n 4 --temp 0 -t 2 --json \
    --logits-out "$TMP/logits.f32" >"$TMP/gen.json" 2>"$TMP/gen.err"
check "generate --json exits 0" [ $? = 0 ]
check "prompt_ids are the reference's" grep -q '"prompt_ids": \[1, 9038, 2501, 263, 931, 29892, 727, 471, 263, 2217, 19964\]' "$TMP/gen.json"
check "generated_ids are the reference's greedy tokens" grep -q '"generated_ids": \[23232, 12682, 3679, 18522\]' "$TMP/gen.json"
check "JSON has a text field" grep -q '"text": "' "$TMP/gen.json"
# --logits-out: 32000 little-endian floats close to the reference
check "--logits-out wrote 128000 bytes" [ "$(stat -c %s "$TMP/logits.f32" 2>/dev/null)" = 128000 ]
err=$(paste <(od -An -v -f -w4 "$TMP/logits.f32") <(od -An -v -f -w4 "$DATA/logits-tiny-f32-p1.f32") |
      awk '{d=$1-$2; n+=d*d; r+=$2*$2} END {if (r>0) printf "%.3g", sqrt(n/r); else print "nan"}')
check "--logits-out vs reference: relative L2 error $err < 1e-3" awk -v e="$err" 'BEGIN {exit !(e+0 < 1e-3 && e != "nan")}'

# plain text generation starts with the prompt
"$TGDB" generate -m "$DATA/tiny-q8_0.gguf" -p "The capital of France is" -n 3 -t 2 --seed 3 >"$TMP/gen.txt" 2>&1
check "generate (sampling, q8_0) prints the prompt and more" grep -q '^The capital of France is.' "$TMP/gen.txt"
"$TGDB" generate -m "$DATA/tiny-q8_0.gguf" -p "The capital of France is" -n 3 -t 2 --seed 3 >"$TMP/gen2.txt" 2>&1
check "same seed, same text" cmp -s "$TMP/gen.txt" "$TMP/gen2.txt"

# bench lines
"$TGDB" bench -m "$DATA/tiny-f32.gguf" -p 32 -n 8 -t 2 -r 1 >"$TMP/bench.txt" 2>&1
check "bench prints 'pp32: X tok/s'" grep -Eq '^pp32: [0-9]+(\.[0-9]+)? tok/s$' "$TMP/bench.txt"
check "bench prints 'tg8: X tok/s'" grep -Eq '^tg8: [0-9]+(\.[0-9]+)? tok/s$' "$TMP/bench.txt"
# CPU run: weights per token and each tg test's weight traffic against the host's read bandwidth (2 threads)
check "bench prints the weights a token reads" grep -Eq '^CPU: [0-9]+\.[0-9] MiB of weights read per generated token; % = ' "$TMP/bench.txt"
check "bench prints 'tg8 fa=auto: X GB/s of weights = Y% of Z GB/s (sums over 256 MiB, 2 threads)'" \
    grep -Eq '^tg8 fa=auto: [0-9]+\.[0-9] GB/s of weights = [0-9]+\.[0-9]% of [0-9]+\.[0-9] GB/s \(sums over 256 MiB, 2 threads\)$' "$TMP/bench.txt"

# perplexity line
"$TGDB" perplexity -m "$DATA/tiny-f32.gguf" -f "$DATA/apache-2.0.txt" -c 128 -t 2 --progress >"$TMP/ppl.txt" 2>"$TMP/ppl.err"
check "perplexity exits 0" [ $? = 0 ]
ppl=$(awk '/^perplexity: /{print $2}' "$TMP/ppl.txt")
check "perplexity line 'perplexity: $ppl' within 0.5% of 236210.206731" \
    awk -v p="$ppl" 'BEGIN {d=(p-236210.206731)/236210.206731; if (d<0) d=-d; exit !(p != "" && d < 5e-3)}'
check "perplexity progress per chunk on stderr" grep -q '^\[21/21\]' "$TMP/ppl.err"

# make-model: a tiny random model that generate can run
"$MAKE_MODEL" --type q4_0 --seed 5 -o "$TMP/m.gguf" >/dev/null 2>"$TMP/mm.err"
check "make-model --type q4_0 writes a model" [ -s "$TMP/m.gguf" ]
"$TGDB" generate -m "$TMP/m.gguf" -p "Hello" -n 4 -t 2 --temp 0 --json >"$TMP/mm.json" 2>&1
check "generate runs on the made model" grep -q '"generated_ids": \[[0-9]*, [0-9]*, [0-9]*, [0-9]*\]' "$TMP/mm.json"

# --trace: a trace of the run that `tgdb trace info` reads
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 3 --temp 0 -t 2 --trace "$TMP/g.tgt" \
    --trace-dump 'result_output' >/dev/null 2>&1
check "generate --trace writes a trace" [ -s "$TMP/g.tgt" ]
trace_info() { "$TGDB" trace info "$1" >/dev/null 2>&1; }
check "tgdb trace info reads it" trace_info "$TMP/g.tgt"
# --trace-hash computed: views (no computation) carry no hash; the default hashes every node
"$TGDB" trace info "$TMP/g.tgt" >"$TMP/all.info" 2>&1
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 3 --temp 0 -t 2 --trace "$TMP/c.tgt" \
    --trace-hash computed >/dev/null 2>&1
"$TGDB" trace info "$TMP/c.tgt" >"$TMP/c.info" 2>&1
hashed() { sed -n 's/^evaluated nodes: \([0-9]*\) (\([0-9]*\) hashed.*/\1 \2/p' "$1"; }
read -r n_all h_all <<<"$(hashed "$TMP/all.info")"
read -r n_c h_c <<<"$(hashed "$TMP/c.info")"
check "default: every evaluated node hashed ($h_all of $n_all)" [ -n "$n_all" ] && [ "$h_all" = "$n_all" ]
check "--trace-hash computed: views skipped ($h_c of $n_c hashed)" [ -n "$n_c" ] && [ "$n_c" = "$n_all" ] && [ "$h_c" -lt "$n_c" ] && [ "$h_c" -gt 0 ]
"$TGDB" trace nodes "$TMP/c.tgt" --graph 1 >"$TMP/c.nodes" 2>&1
check "--trace-hash computed: a VIEW row shows no hash, a MUL_MAT row one" \
    bash -c "grep -E ' VIEW ' '$TMP/c.nodes' | head -1 | grep -qv '[0-9a-f]\{16\}' && grep -E ' MUL_MAT ' '$TMP/c.nodes' | head -1 | grep -q '[0-9a-f]\{16\}'"
TGDB_TRACE="$TMP/e.tgt" TGDB_TRACE_HASH=computed "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 3 --temp 0 -t 2 >/dev/null 2>&1
"$TGDB" trace info "$TMP/e.tgt" >"$TMP/e.info" 2>&1
read -r n_e h_e <<<"$(hashed "$TMP/e.info")"
check "TGDB_TRACE_HASH=computed: the same through the environment ($h_e of $n_e)" [ -n "$n_e" ] && [ "$h_e" = "$h_c" ]

# --trace-thread: on (here: -t 1 leaves a CPU on most machines; on forces it anyway) the close line
# gives the hashing thread's time and the trace says the thread was on; off, neither; the node
# hashes are the same either way (tgdb diff: equivalent, by hash); bad values and a missing --trace
# are refused
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 3 --temp 0 -t 1 --trace "$TMP/ton.tgt" \
    --trace-thread on >/dev/null 2>"$TMP/ton.err"
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 3 --temp 0 -t 1 --trace "$TMP/toff.tgt" \
    --trace-thread off >/dev/null 2>"$TMP/toff.err"
check "--trace-thread on: the close line gives the thread's hashing time" grep -q "ms on the recorder's own thread" "$TMP/ton.err"
check "--trace-thread off: it does not" bash -c "! grep -q \"recorder's own thread\" '$TMP/toff.err'"
check "--trace-thread on: trace info says the node hashes came from the thread" \
    bash -c "'$TGDB' trace info '$TMP/ton.tgt' | grep -q 'computed on the recorder.s own thread'"
"$TGDB" diff "$TMP/toff.tgt" "$TMP/ton.tgt" >"$TMP/tdiff.out" 2>&1
check "--trace-thread on and off: the same hashes (tgdb diff: $(tail -1 "$TMP/tdiff.out"))" \
    bash -c "grep -q 'by hash' '$TMP/tdiff.out' && grep -q '^result: equivalent' '$TMP/tdiff.out'"
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "x" -n 1 --trace "$TMP/tbad.tgt" --trace-thread sometimes >/dev/null 2>"$TMP/tbad.err"
check "--trace-thread sometimes: refused, naming the choices" grep -q "expected on, off or auto" "$TMP/tbad.err"
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "x" -n 1 --trace-thread on >/dev/null 2>"$TMP/tnot.err"
check "--trace-thread without --trace: refused" grep -q -- "--trace-thread needs --trace FILE" "$TMP/tnot.err"

# --poison: freed ranges become NaN as they are freed; a correct runtime generates the same tokens,
# and the trace says the mode was on
ids_of() { grep -o '"generated_ids": \[[^]]*\]' "$1"; }
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 6 --temp 0 -t 2 --json >"$TMP/np.json" 2>&1
"$TGDB" generate -m "$DATA/tiny-f32.gguf" -p "Once upon a time" -n 6 --temp 0 -t 2 --json --poison \
    --trace "$TMP/p.tgt" >"$TMP/p.json" 2>&1
check "generate --poison: the same tokens ($(ids_of "$TMP/p.json"))" \
    bash -c "[ -n \"\$(grep -o generated_ids '$TMP/np.json')\" ] && [ \"\$(grep -o '\"generated_ids\": \[[^]]*\]' '$TMP/np.json')\" = \"\$(grep -o '\"generated_ids\": \[[^]]*\]' '$TMP/p.json')\" ]"
check "generate --poison --trace: trace info shows the poison event" \
    bash -c "'$TGDB' trace info '$TMP/p.tgt' | grep -q 'event poison (info): poison mode on'"

# errors: one line on stderr, exit 1
echo "not a gguf file" >"$TMP/bad.gguf"
fails_cleanly "generate with a missing model" "$TGDB" generate -m "$TMP/none.gguf" -p hi
fails_cleanly "generate with a malformed model" "$TGDB" generate -m "$TMP/bad.gguf" -p hi
fails_cleanly "generate without a prompt" "$TGDB" generate -m "$DATA/tiny-f32.gguf"
fails_cleanly "generate with a bad -n" "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p hi -n abc
fails_cleanly "generate --trace-dump without --trace" "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p hi --trace-dump x
fails_cleanly "generate --trace-hash with an unknown mode" "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p hi --trace "$TMP/x.tgt" --trace-hash some
fails_cleanly "generate --trace into a missing directory" "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p hi --trace "$TMP/no/such/dir.tgt"
fails_cleanly "generate with an unknown option" "$TGDB" generate -m "$DATA/tiny-f32.gguf" -p hi --bogus 1
fails_cleanly "perplexity with a missing text" "$TGDB" perplexity -m "$DATA/tiny-f32.gguf" -f "$TMP/none.txt" -c 128
fails_cleanly "perplexity with a directory for its text" "$TGDB" perplexity -m "$DATA/tiny-f32.gguf" -f "$TMP" -c 128
grep -q "is a directory" "$TMP/err" || { echo "FAIL the directory's message: $(cat "$TMP/err")"; fail=$((fail+1)); }
fails_cleanly "perplexity with too little text" "$TGDB" perplexity -m "$DATA/tiny-f32.gguf" -f "$TMP/bad.gguf" -c 128
fails_cleanly "bench with a missing model" "$TGDB" bench -m "$TMP/none.gguf"
fails_cleanly "bench with a bad -t" "$TGDB" bench -m "$DATA/tiny-f32.gguf" -t 0
want=1 fails_cleanly "make-model with a bad type" "$MAKE_MODEL" --type q9 -o "$TMP/x.gguf"
finish
