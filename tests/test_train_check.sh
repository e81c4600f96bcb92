#!/usr/bin/env bash
# test_train_check.sh - a traced training run of the tiny model read back by
# the tools: `trace info` shows the steps and the gradient links, `check` finds
# nothing wrong in it; the same run built with the gradient-of-gradient bug
# (--debug-grad-of-grad) makes `check` exit 1 naming the offending nodes (text
# and --json); the step graph holds the forward nodes, their gradients and
# the optimizer steps; --batch/--schedule change the run as asked; errors.
. "$(dirname "$0")/support/check.sh"
M=$DATA/tiny-f32.gguf
C=$TG_SOURCE_DIR/samples/corpus/apache-2.0.txt
args=(-m "$M" -f "$C" --steps 3 --ctx 16 --seed 3 -t 2)
"$TGDB" train "${args[@]}" --trace "$work/ok.tgt" > "$work/out" 2>&1 || bad "traced train: $(tail -3 "$work/out")"
grep -q "trace written to $work/ok.tgt" "$work/out" && ok "train --trace writes the trace" || bad "no trace message: $(tail -2 "$work/out")"
"$TGDB" trace info "$work/ok.tgt" > "$work/info" 2>&1
grep -Eq "^training: 3 steps, loss [0-9.]+ -> [0-9.]+, gradient norm .*; [0-9]+ gradient links" "$work/info" \
    && ok "trace info: $(grep ^training: "$work/info" | cut -c1-90)" || bad "trace info: $(cat "$work/info")"
"$TGDB" trace info "$work/ok.tgt" --json | python3 -c '
import json, sys
t = json.load(sys.stdin)["training"]
assert t["steps"] == 3 and t["grad_links"] > 50, t' && ok "trace info --json: training steps and links" || bad "trace info --json"
"$TGDB" check "$work/ok.tgt" > "$work/check" 2>&1; rc=$?
[ $rc = 0 ] && grep -q "0 problems" "$work/check" && ok "check on a healthy training trace: 0 problems, exit 0" || bad "check healthy (rc $rc): $(cat "$work/check")"
# the step graph: forward nodes, their gradients, grad_norm and the AdamW steps, in that order
"$TGDB" trace nodes "$work/ok.tgt" --graph 1 --json > "$work/nodes" 2>&1
python3 - "$work/nodes" <<'PY' && ok "step graph: forward, then 'grad of' nodes, grad_norm, 'adamw' steps" || bad "step graph order: $(head -5 "$work/nodes")"
import json, sys
names = [e["name"] for e in json.load(open(sys.argv[1]))["evals"] if e["compute"] == 0]
i_fwd = names.index("attn_norm-0"); i_grad = names.index("grad of attn_norm-0")
i_norm = names.index("grad_norm"); i_opt = next(i for i, n in enumerate(names) if n.startswith("adamw "))
assert i_fwd < i_grad < i_norm < i_opt, (i_fwd, i_grad, i_norm, i_opt)
assert "grad of blk.0.attn_q.weight" in names and "loss" in names
PY
# memory: the allocator reuses the step graph's intermediates; each parameter's gradient lives until its AdamW step
"$TGDB" mem "$work/ok.tgt" --graph 1 --json > "$work/mem.json" 2>&1
"$TGDB" trace nodes "$work/ok.tgt" --graph 1 --json > "$work/n1.json" 2>&1
python3 - "$work/mem.json" "$work/n1.json" <<'PY' && ok "mem: the step graph's memory is reused, gradients live until their optimizer step" || bad "mem: $(head -c 300 "$work/mem.json")"
import json, sys
b = json.load(open(sys.argv[1]))["buffers"][0]
ev = [e for e in json.load(open(sys.argv[2]))["evals"] if e["compute"] == 0]
assert b["peak_is_size"] and b["bytes_without_reuse"] > 1.5 * b["size"], b
print("     compute buffer %.2f MiB, %.2f MiB without reuse" % (b["size"] / 2**20, b["bytes_without_reuse"] / 2**20))
step = {e["name"]: e["node"] for e in ev}
assert step["adamw output.weight"] > step["grad of output.weight"], step
PY
# with BLAS first, the backward pass's matrix products run on BLAS
"$TGDB" train "${args[@]}" -dev BLAS,CPU --ctx 32 --steps 1 --trace "$work/blas.tgt" > /dev/null 2>&1
"$TGDB" trace nodes "$work/blas.tgt" --json 2>/dev/null | python3 -c '
import json, sys
ev = json.load(sys.stdin)["evals"]
b = [e["name"] for e in ev if e["backend"] == "BLAS" and e["op"] in ("MUL_MAT", "OUT_PROD") and e["name"].startswith("grad of")]
assert b, "no gradient on BLAS"
print("     %d gradient products on BLAS, e.g. %s" % (len(b), b[0]))' && ok "-dev BLAS,CPU: gradient products placed on BLAS" || bad "BLAS placement"
# the bug on purpose: every gradient gets a gradient of its own
"$TGDB" train "${args[@]}" --debug-grad-of-grad --trace "$work/bug.tgt" > /dev/null 2>&1 || bad "train --debug-grad-of-grad"
"$TGDB" check "$work/bug.tgt" > "$work/check" 2>&1; rc=$?
[ $rc = 1 ] && grep -q "PROBLEM \[grad-of-grad\] graph 1: [0-9]* gradient tensors have a gradient of their own" "$work/check" \
    && grep -q "'grad of grad of result_output' (#[0-9]*) is a gradient of the gradient 'grad of result_output'" "$work/check" \
    && ok "check names the gradients of gradients, exit 1" || bad "check bug (rc $rc): $(head -5 "$work/check")"
[ "$(grep -c 'PROBLEM \[grad-of-grad\]' "$work/check")" = 1 ] && ok "one finding for the three identical step graphs" || bad "findings: $(grep -c PROBLEM "$work/check")"
"$TGDB" check "$work/bug.tgt" --json > "$work/check.json" 2>&1
python3 - "$work/check.json" <<'PY' && ok "check --json: kind grad-of-grad naming 'grad of grad of' nodes" || bad "check --json: $(head -c 300 "$work/check.json")"
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["findings"] if x["kind"] == "grad-of-grad"]
assert len(f) == 1 and f[0]["severity"] == "problem" and "grad of grad of" in f[0]["text"], f
assert f[0]["gradient"]["name"].startswith("grad of grad of") and f[0]["tensor"]["name"].startswith("grad of "), f[0]
PY
# batch and schedule: two sequences per step; the cosine rate falls to --lr-min
"$TGDB" train "${args[@]}" --batch 2 --schedule cosine --lr 0.01 --lr-min 0.001 --warmup 1 --json > "$work/b.json" 2>/dev/null
python3 - "$work/b.json" <<'PY' && ok "--batch 2, --warmup 1, cosine to --lr-min: the rates per step" || bad "batch/schedule: $(head -c 300 "$work/b.json")"
import json, sys
d = json.load(open(sys.argv[1]))
lr = [s["lr"] for s in d["steps"]]
assert d["batch"] == 2 and d["schedule"] == "cosine", d
assert abs(lr[0] - 0.01) < 1e-9 and abs(lr[2] - 0.001) < 1e-9 and lr[0] > lr[1] > lr[2], lr
PY
"$TGDB" train "${args[@]}" --ctx 4096 --batch 4 > /dev/null 2>"$work/err"; [ $? = 2 ] && grep -q "more than 8192 tokens" "$work/err" \
    && ok "--ctx x --batch over 8192: exit 2" || bad "ctx x batch: $(cat "$work/err")"
"$TGDB" train "${args[@]}" --schedule linear > /dev/null 2>"$work/err"; [ $? = 2 ] && ok "--schedule linear: exit 2 ($(head -1 "$work/err"))" || bad "bad schedule"
"$TGDB" train "${args[@]}" -dev NOPE > /dev/null 2>"$work/err"; [ $? = 2 ] && grep -qi "NOPE" "$work/err" && ok "unknown device: exit 2 naming it" || bad "device: $(cat "$work/err")"
finish
