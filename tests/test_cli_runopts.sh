#!/usr/bin/env bash
# test_cli_runopts.sh - the option tables from the outside: one parser for
# generate / perplexity / bench (unknown options, missing values, validated
# sampling and device parameters), strict numbers everywhere, the context
# limits checked before allocating (training context, memory), --json
# outputs that parse, trace dump slices, bench -d / -r, help per option.
set -u
TGDB="$TG_BUILD_DIR/inspect/tgdb"
MAKE_MODEL="$TG_BUILD_DIR/samples/make-model"
DATA="$TG_TEST_DATA"
M="$DATA/tiny-f32.gguf"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0
check() {  # check "what" command...
    local what=$1; shift
    if "$@"; then echo "ok   $what"; pass=$((pass+1)); else echo "FAIL $what"; fail=$((fail+1)); fi
}
# fails_with "what" REGEX args...: exit status 2, one line on stderr matching REGEX
fails_with() {
    local what=$1 re=$2; shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
    local lines; lines=$(wc -l <"$TMP/err")
    if [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -Eq -- "$re" "$TMP/err"; then
        echo "ok   $what: $(cat "$TMP/err")"; pass=$((pass+1))
    else
        echo "FAIL $what (exit $rc, $lines stderr lines, want /$re/: $(head -c 300 "$TMP/err"))"; fail=$((fail+1))
    fi
}
json_ok() { python3 -m json.tool "$1" >/dev/null 2>&1; }

# --- unknown options and missing values, the same for every command ---
for c in "generate -p hi" "perplexity -f x" "bench -p 8"; do
    fails_with "${c%% *} --bogus" "^tgdb: ${c%% *}: unknown option --bogus" "$TGDB" $c -m "$M" --bogus
    fails_with "${c%% *} -t (no value)" "^tgdb: ${c%% *}: --threads needs a value" "$TGDB" $c -m "$M" -t
done
fails_with "trace nodes --bogus" "unknown option --bogus" "$TGDB" trace nodes x.tgt --bogus
fails_with "dot --bogus" "unknown option --bogus" "$TGDB" dot x.tgt -o x.dot --bogus
fails_with "gguf --bogus" "unknown option --bogus" "$TGDB" gguf "$M" --bogus
fails_with "tokenize --bogus" "unknown option --bogus" "$TGDB" tokenize -m "$M" --bogus
fails_with "shell --bogus" "unknown option --bogus" "$TGDB" shell --bogus
fails_with "tui -n abc" "tui: --n-predict: 'abc' is not an integer" "$TGDB" tui -m "$M" -n abc

# --- sampling and device parameters ---
G=("$TGDB" generate -m "$M" -p hi -n 2)
fails_with "--temp -1" "generate: --temp: -1 is out of range \(must be in 0\.\.100\)" "${G[@]}" --temp -1
fails_with "--top-p 7" "generate: --top-p: 7 is out of range \(must be in 0\.\.1\)" "${G[@]}" --top-p 7
fails_with "--top-k -3" "generate: --top-k: -3 is out of range" "${G[@]}" --top-k -3
fails_with "--repeat-penalty 0" "generate: --repeat-penalty: 0 is out of range \(must be > 0\)" "${G[@]}" --repeat-penalty 0
fails_with "--temp nan" "generate: --temp: 'nan' is not a finite number" "${G[@]}" --temp nan
fails_with "--seed -1" "generate: --seed: '-1' is not a non-negative integer" "${G[@]}" --seed -1
fails_with "-t 0" "generate: --threads: 0 is out of range \(must be in 1\.\.512\)" "${G[@]}" -t 0
fails_with "-t 100000" "generate: --threads: 100000 is out of range" "${G[@]}" -t 100000
fails_with "-t 2x" "generate: --threads: '2x' is not an integer" "${G[@]}" -t 2x
fails_with "unknown device" "generate: --device: unknown device 'NOPE' \(this build has: CPU" "${G[@]}" -dev CPU,NOPE
fails_with "-fa maybe" "generate: --flash-attn: 'maybe' is not one of auto\|on\|off" "${G[@]}" -fa maybe
fails_with "-ctk q9" "generate: --cache-type-k: 'q9' is not one of f16\|f32" "${G[@]}" -ctk q9
fails_with "bench -p 32,abc" "bench: --n-prompt: 'abc' is not an integer" "$TGDB" bench -m "$M" -p 32,abc
fails_with "bench -fa on,x" "bench: --flash-attn: 'x' is not one of" "$TGDB" bench -m "$M" -fa on,x
"${G[@]}" -t 2 --temp 0.7 --top-p 0.9 --top-k 5 --repeat-penalty 1.3 --seed 0x10 -fa off -ctk f32 -dev CPU >"$TMP/out" 2>&1
check "generate accepts every valid option (exit $?)" [ $? = 0 ]

# --- the context checked against the model before allocating ---
fails_with "generate -c 1048576: more than the training context" \
    "context size 1048576 is more than the 512 tokens .* was trained for \(use -c 512 or less, or --allow-long-ctx\)" \
    "${G[@]}" -c 1048576
fails_with "generate -n 600 (no -c): the request is named" \
    "the request needs a context of 60[0-9] tokens, more than the 512 tokens .* \(ask for fewer tokens, or --allow-long-ctx\)" \
    "${G[@]}" -n 600
# a model trained for 1M tokens with many heads: the attention scores alone need far more than any machine has
"$MAKE_MODEL" --n-embd 256 --n-head 128 --n-head-kv 128 --n-layer 1 --n-ff 64 --n-ctx 1000000 -o "$TMP/long.gguf" >/dev/null 2>&1
check "make-model writes a model trained for 1000000 tokens" [ -s "$TMP/long.gguf" ]
fails_with "generate -c 1000000: says the memory it needs and what is available" \
    "context size 1000000 needs about [0-9.]+ GiB \(KV cache [0-9.]+ GiB \+ compute [0-9.]+ GiB\), only [0-9.]+ GiB of memory is available" \
    "$TGDB" generate -m "$TMP/long.gguf" -p hi -n 2 -c 1000000 -ub 8192
"$TGDB" generate -m "$M" -p hi -n 2 -t 2 -c 1024 --allow-long-ctx >"$TMP/out" 2>"$TMP/err"
check "--allow-long-ctx: a warning, and the run goes on" bash -c "test $? = 0 && grep -q 'warning: generate: context size 1024 is more than the 512' '$TMP/err'"

# --- strict numbers outside the run options ---
"$TGDB" generate -m "$M" -p "hello world" -n 2 -t 2 --trace "$TMP/t.tgt" --trace-dump 'result_norm' >/dev/null 2>&1
check "a trace with contents" [ -s "$TMP/t.tgt" ]
fails_with "trace nodes --graph abc" "trace: --graph: 'abc' is not an integer" "$TGDB" trace nodes "$TMP/t.tgt" --graph abc
fails_with "trace nodes --graph -5" "trace: --graph: -5 is out of range" "$TGDB" trace nodes "$TMP/t.tgt" --graph -5
fails_with "trace nodes --graph (no value)" "trace: --graph needs a value" "$TGDB" trace nodes "$TMP/t.tgt" --graph
fails_with "trace node --graph (not its option)" "trace node: only --compute and --json apply" "$TGDB" trace node "$TMP/t.tgt" result_norm --graph 1
fails_with "dot --layer 99: says which layers exist" "no layer 99 in graph [0-9]+ \(layers 0\.\.1\)" \
    "$TGDB" dot "$TMP/t.tgt" -o "$TMP/x.dot" --layer 99
fails_with "dot --depth x" "dot: --depth: 'x' is not an integer" "$TGDB" dot "$TMP/t.tgt" -o "$TMP/x.dot" --around result_norm --depth x
fails_with "gguf --items -1" "gguf: --items: -1 is out of range" "$TGDB" gguf "$M" --items -1
fails_with "diff --rtol x" "diff: --rtol: 'x' is not a number" "$TGDB" diff "$TMP/t.tgt" "$TMP/t.tgt" --rtol x
"$TGDB" shell "$TMP/t.tgt" -x 'break op NOSUCHOP' >"$TMP/out" 2>&1
check "shell: break op NOSUCHOP is rejected naming the op" grep -q "no op matches 'NOSUCHOP'" "$TMP/out"

# --- trace dump slices (the shell's syntax) ---
"$TGDB" trace dump "$TMP/t.tgt" 'result_norm[0:5]' --compute 0 >"$TMP/d1" 2>&1
check "trace dump NAME[0:5]: exit 0, 5 values" bash -c "test $? = 0 && grep -q '\[0,0,0\]\[0:5\]' '$TMP/d1' && test \$(tail -1 '$TMP/d1' | wc -w) = 5"
"$TGDB" trace dump "$TMP/t.tgt" result_norm --compute 0 --slice 0,3 >"$TMP/d2" 2>&1
check "trace dump --slice 0,3: one element, the 4th of row 0" bash -c "grep -q '\[3:4\]' '$TMP/d2' && test \"\$(tail -1 '$TMP/d2' | tr -d ' ')\" = \"\$(tail -1 '$TMP/d1' | awk '{print \$4}')\""
fails_with "trace dump slice out of range" "trace dump: slice 0:99999 out of range: the tensor has [0-9]+ elements" \
    "$TGDB" trace dump "$TMP/t.tgt" result_norm --compute 0 --slice 0:99999
fails_with "trace dump bad slice" "trace dump: bad slice '\\[1:x\\]'" "$TGDB" trace dump "$TMP/t.tgt" 'result_norm[1:x]' --compute 0

# --- JSON outputs parse ---
"$TGDB" trace info "$TMP/t.tgt" --json >"$TMP/j1"; check "trace info --json parses" json_ok "$TMP/j1"
"$TGDB" trace nodes "$TMP/t.tgt" --json --filter 'op=MUL_MAT' >"$TMP/j2"; check "trace nodes --json parses" json_ok "$TMP/j2"
check "trace nodes --json: only MUL_MAT rows" python3 -c "import json,sys; d=json.load(open('$TMP/j2')); sys.exit(not (d['shown'] > 0 and all(e['op']=='MUL_MAT' for e in d['evals'])))"
"$TGDB" trace node "$TMP/t.tgt" result_norm --compute 0 --json >"$TMP/j3"; check "trace node --json parses" json_ok "$TMP/j3"
"$TGDB" devices --json >"$TMP/j4"; check "devices --json parses and lists CPU" python3 -c "import json,sys; d=json.load(open('$TMP/j4')); sys.exit(not any(x['name']=='CPU' for x in d))"
"$TGDB" devices --bandwidth --json >"$TMP/j5" 2>/dev/null
check "devices --bandwidth --json: the CPU's measured copy bandwidth is a positive number" python3 -c "import json,sys; d=json.load(open('$TMP/j5')); sys.exit(not all(x['copy_bandwidth_gbs'] > 0 for x in d if x['name']=='CPU'))"
out=$("$TGDB" devices 2>&1)
check "devices says what it found of CUDA" grep -q '^(CUDA: ' <<<"$out"
# tgdb version: what a bug report needs, as text and as JSON
out=$("$TGDB" version); check "version: first line 'tgdb X.Y.Z'" grep -qE '^tgdb [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out"
check "version: the SIMD level this CPU runs and the trace format" \
    bash -c "grep -qE '^cpu: +SIMD level (scalar|avx|avx2|avx512|avx512vnni) ' <<<\"\$1\" && grep -qE '^trace: +format [0-9]+\.[0-9]+$' <<<\"\$1\"" _ "$out"
"$TGDB" version --json >"$TMP/jv"
check "version --json: the libraries' versions, the same SIMD level as TG_SIMD=scalar forces" python3 -c "
import json,os,subprocess,sys; d=json.load(open('$TMP/jv'))
libs=d['libraries']; ok=all(libs[k] and libs[k]!='unknown' for k in ('xxhash','zstd','pcre2','readline','curses','graphviz'))
s=json.loads(subprocess.run(['$TGDB','version','--json'],capture_output=True,text=True,env=dict(os.environ,TG_SIMD='scalar')).stdout)
sys.exit(not (ok and d['version'] and d['simd'] in ('avx','avx2','avx512','avx512vnni','scalar') and s['simd']=='scalar' and d['trace_format']))"
fails_with "version: an unknown option is a usage error" "unknown option" "$TGDB" version --bogus
if ! grep -q '^CUDA0 ' <<<"$out"; then   # -ngl without a GPU: refused, saying why
    out=$("$TGDB" generate -m "$TG_TEST_DATA/tiny-f32.gguf" -p hi -n 1 -ngl 99 2>&1); rc=$?
    check "-ngl 99 without a GPU exits 2" test $rc -eq 2
    check "-ngl 99 without a GPU says there is none and why" grep -q "asks for GPU layers, but there is no GPU: " <<<"$out"
fi
"$TGDB" perplexity -m "$M" -f "$DATA/apache-2.0.txt" -c 128 -b 128 -t 2 --json >"$TMP/j5" 2>"$TMP/ppl.err"
check "perplexity --json parses (ppl > 0)" python3 -c "import json,sys; d=json.load(open('$TMP/j5')); sys.exit(not (d['ppl'] > 0 and d['chunks'] == 21))"
check "perplexity: no progress lines when stderr is not a terminal" bash -c "! grep -q '^\[1/' '$TMP/ppl.err'"

# --- bench: depth, repetitions, lists, JSON ---
"$TGDB" bench -m "$M" -p 16 -n 4 -d 0,32 -r 3 -t 1,2 >"$TMP/b.txt" 2>&1
check "bench -d 0,32 -r 3 -t 1,2: mean ± sd per test" bash -c "grep -Eq '^pp16 @ d32 t=2: [0-9.]+ ± [0-9.]+ tok/s$' '$TMP/b.txt' && test \$(grep -c 'tok/s' '$TMP/b.txt') = 8"
"$TGDB" bench -m "$M" -p 16 -n 4 -d 32 -r 2 --json --progress >"$TMP/b.json" 2>"$TMP/b.err"
check "bench --json parses: 2 tests at depth 32, 2 samples each" python3 -c "
import json,sys; d=json.load(open('$TMP/b.json')); r=d['results']
sys.exit(not (len(r)==2 and all(x['n_depth']==32 and len(x['samples_ts'])==2 and x['avg_ts']>0 for x in r)))"
check "bench --json (CPU): weights_bytes_per_token, and read_bandwidth_gbs on the tg result only" python3 -c "
import json,sys; d=json.load(open('$TMP/b.json')); r=d['results']
sys.exit(not (d['weights_bytes_per_token']>0 and all(('read_bandwidth_gbs' in x)==(x['n_gen']>0) for x in r)
              and all(x['read_bandwidth_gbs']>0 for x in r if x['n_gen'])))"
check "bench --json (CPU): the read bandwidth after each repetition, read_bandwidth_gbs their mean" python3 -c "
import json,sys; r=[x for x in json.load(open('$TMP/b.json'))['results'] if x['n_gen']]
sys.exit(not (r and all(len(x['read_bandwidth_samples_gbs'])==x['repetitions']==2 and min(x['read_bandwidth_samples_gbs'])>0
                        and abs(sum(x['read_bandwidth_samples_gbs'])/2-x['read_bandwidth_gbs'])<0.002 for x in r)))"
"$TGDB" bench -m "$M" -p 0 -n 4 -d 0,32 -r 1 --json >"$TMP/bkv.json" 2>&1
check "bench --json: kv_bytes_per_token grows with the depth (cells attended: 2.5 at d0, 34.5 at d32)" python3 -c "
import json,sys; r=json.load(open('$TMP/bkv.json'))['results']
k=[x['kv_bytes_per_token'] for x in r]
sys.exit(not (len(k)==2 and k[0]>0 and abs(k[1]/k[0]-34.5/2.5)<1e-3))"
"$TGDB" bench -m "$M" -p 0 -n 4 -d 32 -r 1 >"$TMP/bkv.txt" 2>&1
check "bench -d 32 (CPU): '+ KV (X KiB|MiB a token): Y GB/s = Z%' after the weights' share" \
    grep -Eq '^tg4 @ d32 fa=auto: [0-9.]+ GB/s of weights = [0-9.]+% of [0-9.]+ GB/s \(.*\); \+ KV \([0-9.]+ [KM]iB a token\): [0-9.]+ GB/s = [0-9.]+%$' "$TMP/bkv.txt"
# --repack: packed Q4_0 matrices for the CPU's AVX2 / VNNI kernels, the same tokens either way
Q4="$DATA/tiny-q4_0.gguf"
fails_with "--repack maybe" "--repack: 'maybe' is not one of auto\|on\|off" "$TGDB" generate -m "$Q4" -p hi -n 2 --repack maybe
"$TGDB" generate -m "$Q4" -p "Once upon a time" -n 8 --temp 0 --repack off >"$TMP/rp-off.txt" 2>/dev/null
"$TGDB" generate -m "$Q4" -p "Once upon a time" -n 8 --temp 0 --repack on >"$TMP/rp-on.txt" 2>/dev/null
check "generate --repack on / off: the same 8 tokens" bash -c "test -s '$TMP/rp-on.txt' && cmp -s '$TMP/rp-on.txt' '$TMP/rp-off.txt'"
"$TGDB" bench -m "$Q4" -p 0 -n 2 -r 1 --repack on --json >"$TMP/rp.json" 2>/dev/null
"$TGDB" bench -m "$Q4" -p 0 -n 2 -r 1 --repack on >"$TMP/rp.txt" 2>/dev/null
# a trace says which weights the CPU read packed (allocation flag 64), text and --json
"$TGDB" generate -m "$Q4" -p hi -n 1 --repack on --trace "$TMP/rp-on.tgt" >/dev/null 2>&1
"$TGDB" generate -m "$Q4" -p hi -n 1 --repack off --trace "$TMP/rp-off.tgt" >/dev/null 2>&1
"$TGDB" trace node "$TMP/rp-on.tgt" blk.0.attn_q.weight@1 >"$TMP/rp-node.txt" 2>&1
"$TGDB" trace node "$TMP/rp-off.tgt" blk.0.attn_q.weight@1 >"$TMP/rp-node-off.txt" 2>&1
"$TGDB" trace node "$TMP/rp-on.tgt" blk.0.attn_norm.weight@1 --json >"$TMP/rp-norm.json" 2>&1
check "trace node of a weight with --repack off: no packed copy named; an f32 norm: \"packed\": false in --json" bash -c "
    grep -q '^  allocation: .*preallocated' '$TMP/rp-node-off.txt' && ! grep -q 'packed copy' '$TMP/rp-node-off.txt' &&
    python3 -c \"import json,sys; a=json.load(open('$TMP/rp-norm.json'))['allocation']; sys.exit(not (a['packed'] is False and a['preallocated'] is True))\""
if "$TGDB" devices | grep -Eq '(avx2|avx512|avx512vnni)$'; then
    check "bench --repack on (avx2 and above): '15 matrices packed for the CPU (+X MiB)' and packed_weights 15 in --json" bash -c "
        grep -Eq '; 15 matrices packed for the CPU \(\+[0-9.]+ MiB\)$' '$TMP/rp.txt' &&
        python3 -c \"import json,sys; d=json.load(open('$TMP/rp.json')); sys.exit(not (d['packed_weights']==15 and d['packed_bytes']>0))\""
    "$TGDB" trace node "$TMP/rp-on.tgt" blk.0.attn_q.weight@1 --json >"$TMP/rp-node.json" 2>&1
    check "trace node of a packed weight: 'the CPU reads a packed copy', \"packed\": true in --json" bash -c "
        grep -q '^  allocation: .*preallocated, the CPU reads a packed copy$' '$TMP/rp-node.txt' &&
        python3 -c \"import json,sys; sys.exit(not json.load(open('$TMP/rp-node.json'))['allocation']['packed'])\""
    check "traces with and without packed weights: equivalent, every node by hash" bash -c "
        '$TGDB' diff '$TMP/rp-on.tgt' '$TMP/rp-off.tgt' | grep -Eq '^compared ([0-9]+) of \\1 aligned nodes \\(\\1 by hash\\)$'"
else
    check "bench --repack on below avx2: nothing packed (packed_weights 0)" bash -c "
        ! grep -q 'packed' '$TMP/rp.txt' &&
        python3 -c \"import json,sys; d=json.load(open('$TMP/rp.json')); sys.exit(not (d['packed_weights']==0))\""
fi
check "bench --progress: a line per repetition on stderr" bash -c "test \$(grep -c 'repetition' '$TMP/b.err') = 4"
check "bench --progress: an unmeasured warm-up run before each test's repetitions" bash -c "test \$(grep -c ': warm-up\$' '$TMP/b.err') = 2 && grep -A1 'pp16 @ d32, t=[0-9]*: warm-up' '$TMP/b.err' | grep -q 'repetition 1/2'"
"$TGDB" bench -m "$M" -p 16 -n 4 -r 2 --no-warmup --progress >/dev/null 2>"$TMP/bnw.err"
check "bench --no-warmup: no warm-up run, the repetitions only" bash -c "! grep -q 'warm-up' '$TMP/bnw.err' && test \$(grep -c 'repetition' '$TMP/bnw.err') = 4"
"$TGDB" bench -m "$M" -p 0 -n 4 -r 1 >"$TMP/b0.txt" 2>&1
check "bench -p 0: generation only (the warm-up fits batches of one token)" grep -Eq '^tg4: [0-9.]+ tok/s$' "$TMP/b0.txt"
fails_with "bench -c smaller than depth + test" "bench: -c 16 is smaller than the largest test" "$TGDB" bench -m "$M" -p 16 -n 0 -d 32 -c 16

# --- help says what each option means, its range and its default ---
"$TGDB" help generate >"$TMP/h" 2>&1
# the default thread count: one a core of the CPUs the process may use, as `tgdb devices` says
"$TGDB" devices --json >"$TMP/dev.json"
DEF_T=$(python3 -c 'import json,sys; print([d for d in json.load(open(sys.argv[1])) if d["kind"] == "cpu"][0]["default_threads"])' "$TMP/dev.json")
N_CPU=$(python3 -c 'import json,sys; print([d for d in json.load(open(sys.argv[1])) if d["kind"] == "cpu"][0]["cpus_available"])' "$TMP/dev.json")
check "devices: default threads 1..CPUs available ($DEF_T of $N_CPU)" test "$DEF_T" -ge 1 -a "$DEF_T" -le "$N_CPU"
check "help generate: -t with range and the default devices reports" \
    grep -Eq "^  -t, --threads N +CPU threads; by default one a core .*\[1\.\.512\] \(default $DEF_T\)\$" "$TMP/h"
# a CPU quota (a container limited to 1 CPU) caps the CPUs and the default threads: a cgroup of our own
# with a quota of one CPU, where this machine lets us make one (root, cgroup v1 cpu or v2 with cpu)
CG=""
if [ -w /sys/fs/cgroup/cpu ] && [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    CG=/sys/fs/cgroup/cpu/tgdb-test-$$
    mkdir "$CG" 2>/dev/null && echo 100000 >"$CG/cpu.cfs_period_us" && echo 100000 >"$CG/cpu.cfs_quota_us" || CG=""
    CG_JOIN=tasks
elif [ -w /sys/fs/cgroup ] && grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    CG=/sys/fs/cgroup/tgdb-test-$$
    mkdir "$CG" 2>/dev/null && echo "100000 100000" >"$CG/cpu.max" || CG=""
    CG_JOIN=cgroup.procs
fi
if [ -n "$CG" ]; then
    out=$(bash -c "echo \$\$ >'$CG/$CG_JOIN' && '$TGDB' devices" 2>&1)
    rmdir "$CG" 2>/dev/null
    check "a cgroup with a quota of 1 CPU: devices says 1 CPU, 1 thread by default" grep -q '; 1 CPU, 1 thread by default' <<<"$out"
else
    echo "skipped: a CPU quota caps the default threads (no writable cgroup v1 cpu or v2 cpu controller here)"
fi
if [ "$N_CPU" -lt 512 ]; then   # more threads than CPUs: the same tokens, and a note that says why it is slow
    "$TGDB" generate -m "$M" -p "hello" -n 3 --temp 0 -t "$((N_CPU + 1))" >"$TMP/over.out" 2>"$TMP/over.err"; rc=$?
    "$TGDB" generate -m "$M" -p "hello" -n 3 --temp 0 >"$TMP/def.out" 2>/dev/null
    check "-t $((N_CPU + 1)) on $N_CPU CPUs: exit 0, the same text as the default, one note on stderr" \
        bash -c "test $rc = 0 && cmp -s '$TMP/over.out' '$TMP/def.out' && test \$(grep -c 'note: $((N_CPU + 1)) threads on $N_CPU CPU' '$TMP/over.err') = 1"
fi
check "help generate: sampling defaults" grep -Eq -- '--temp T .*\(default 0\.8\)$' "$TMP/h"
"$TGDB" help bench >"$TMP/h" 2>&1
check "help bench: -r default 3, the bench -t (a list) replaces the shared one" \
    bash -c "grep -Eq -- '-r, --repetitions N .*\(default 3\)' '$TMP/h' && test \$(grep -c -- '--threads' '$TMP/h') = 1"
for c in generate perplexity bench trace dot gguf tokenize quantize check diff shell tui devices; do
    "$TGDB" help $c >"$TMP/h" 2>&1
    check "help $c lists its options" grep -q '^options:' "$TMP/h"
done

echo "test_cli_runopts: $pass passed, $fail failed"
[ $fail = 0 ]
