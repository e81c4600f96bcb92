#!/bin/bash
# device-checks.sh - the CUDA acceptance checks, for a machine with a GPU.
# Usage: tests/gpu/device-checks.sh BIN_DIR OUT_DIR
#   BIN_DIR holds tgdb, test_ops, test_cuda, make-model and sched-splits from a
#   TG_CUDA=ON build (tests/gpu/pack.sh makes one with the shared libraries
#   they need); OUT_DIR gets one log per step and summary.txt.
# Steps: the device, the op suite on CUDA0, CPU-vs-CUDA logits on the tiny
# models, the sched-splits sample, a CPU and a CUDA trace of one prompt and
# their diff, then pp512/tg128 on the ~100M model (F16, Q8_0, Q4_0) with
# -ngl 99, untraced and traced (hashes and summaries on every node).
set -u
BIN=$(cd "$1" && pwd); OUT=$2
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export TG_TEST_DATA=$ROOT/tests/data
S=$OUT/summary.txt
: >"$S"
step() {   # step NAME SECONDS CMD...: runs CMD with a time limit, output to OUT/NAME.log
    local name=$1 secs=$2; shift 2
    local t0=$SECONDS
    timeout "$secs" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    printf '== %-14s rc=%-3d %3ds\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$S"
    return $rc
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee -a "$S"
step devices 30 "$BIN/tgdb" devices
cat "$OUT/devices.log" >>"$S"
step test_ops 240 "$BIN/test_ops" --backend CUDA0
{ tail -2 "$OUT/test_ops.log"; grep '^FAIL' "$OUT/test_ops.log" | head -40; grep '^skip' "$OUT/test_ops.log" | sed 's/^skip \[[^]]*\] //; s/:.*does not compute/ -> no/' | sort | uniq -c | head -40; } >>"$S"
step test_cuda 120 "$BIN/test_cuda"
grep -E '^(FAIL|#)|passed' "$OUT/test_cuda.log" >>"$S"
grep -E 'relative L2' "$OUT/test_cuda.log" | head -12 >>"$S"
step splits 30 "$BIN/sched-splits" --device CUDA0
grep -E 'split|summary|node|leaf' "$OUT/splits.log" >>"$S"
step splits64 30 "$BIN/sched-splits" --device CUDA0 64
grep -E 'summary' "$OUT/splits64.log" >>"$S"
M=$ROOT/tests/data/tiny-f32.gguf
step trace_cpu 60 "$BIN/tgdb" generate -m "$M" -p "the quick brown fox" -n 4 --temp 0 -fa off --trace "$OUT/cpu.tgt"
step trace_cuda 60 "$BIN/tgdb" generate -m "$M" -p "the quick brown fox" -n 4 --temp 0 -fa off -ngl 99 --trace "$OUT/cuda.tgt"
step diff 60 "$BIN/tgdb" diff "$OUT/cpu.tgt" "$OUT/cuda.tgt"
tail -15 "$OUT/diff.log" >>"$S"
rm -f "$OUT/cpu.tgt" "$OUT/cuda.tgt"
python3 - >>"$S" 2>&1 <<'PY'
import torch, time
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize(); t = time.time()
for _ in range(20): y.copy_(x)
torch.cuda.synchronize(); dt = (time.time() - t) / 20
print(f"device copy: {2 * x.numel() / dt / 1e9:.0f} GB/s read+write ({x.numel() / dt / 1e9:.0f} GB/s each way)")
PY
for ty in f16 q8_0 q4_0; do
    step "model_$ty" 120 "$BIN/make-model" --preset 100m --type "$ty" -o "/tmp/100m-$ty.gguf"
    ls -l "/tmp/100m-$ty.gguf" | awk '{print "model bytes:", $5, $9}' >>"$S"
    step "bench_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 512 -n 128 -r 3 -fa on,off
    grep -E 'pp|tg|model' "$OUT/bench_$ty.log" >>"$S"
    step "btrace_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 512 -n 128 -r 3 -fa off --trace /tmp/b.tgt
    grep -E 'pp|tg' "$OUT/btrace_$ty.log" >>"$S"
    rm -f /tmp/b.tgt
done
