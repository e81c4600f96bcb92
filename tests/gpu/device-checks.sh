#!/bin/bash
# device-checks.sh - the CUDA acceptance checks, for a machine with a GPU.
# Usage: tests/gpu/device-checks.sh BIN_DIR OUT_DIR
#   TG_GPU_TYPES="f16 q8_0" limits the ~100M model types (default: f16 q8_0
#   q4_0 q4_k_m q6_k; the K-quant models take a minute each to make).
#   BIN_DIR holds tgdb, test_ops, test_cuda, make-model and sched-splits from a
#   TG_CUDA=ON build (tests/gpu/pack.sh makes one with the shared libraries
#   they need); OUT_DIR gets one log per step and summary.txt.
# Steps: the device, the op suite on CUDA0, CPU-vs-CUDA logits on the tiny
# models, the sched-splits sample, a CPU and a CUDA trace of one prompt and
# their diff, then pp512/tg128 on the ~100M model (F16, Q8_0, Q4_0) with
# -ngl 99, untraced and traced (hashes and summaries on every node), and
# generation with every graph built (TG_GRAPH_REUSE=0) beside the default;
# last the host CPU's packed-weight kernels (test_mul_mat, CPU bench with --repack off/on).
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
TG_CUDA_GRAPHS=1 step test_cuda_graphs 120 "$BIN/test_cuda"
grep -E '^FAIL|passed' "$OUT/test_cuda_graphs.log" | sed 's/^/with CUDA graphs: /' >>"$S"
grep -E 'relative L2' "$OUT/test_cuda.log" | head -12 >>"$S"
step splits 30 "$BIN/sched-splits" --device CUDA0
grep -E 'split|summary|node|leaf' "$OUT/splits.log" >>"$S"
step splits64 30 "$BIN/sched-splits" --device CUDA0 64
grep -E 'summary' "$OUT/splits64.log" >>"$S"
step reuse 30 "$BIN/graph-reuse" --device CUDA0
grep -E 'pinned|after graph|read of' "$OUT/reuse.log" >>"$S"
step reuse_ok 30 "$BIN/graph-reuse" --device CUDA0 --correct
grep -E 'read of' "$OUT/reuse_ok.log" >>"$S"
M=$ROOT/tests/data/tiny-f32.gguf
step trace_cpu 60 "$BIN/tgdb" generate -m "$M" -p "the quick brown fox" -n 4 --temp 0 -fa off --trace "$OUT/cpu.tgt"
step trace_cuda 60 "$BIN/tgdb" generate -m "$M" -p "the quick brown fox" -n 4 --temp 0 -fa off -ngl 99 --trace "$OUT/cuda.tgt"
step diff 60 "$BIN/tgdb" diff "$OUT/cpu.tgt" "$OUT/cuda.tgt"
tail -15 "$OUT/diff.log" >>"$S"
rm -f "$OUT/cpu.tgt" "$OUT/cuda.tgt"
TG_BUILD_DIR=$BIN TGDB_BIN=$BIN/tgdb step cuda_trace 120 bash "$ROOT/tests/test_cuda_trace.sh"
grep -E '^(ok|FAIL|skipped)|passed' "$OUT/cuda_trace.log" >>"$S"
python3 - >>"$S" 2>&1 <<'PY'
import torch, time
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize(); t = time.time()
for _ in range(20): y.copy_(x)
torch.cuda.synchronize(); dt = (time.time() - t) / 20
print(f"device copy: {2 * x.numel() / dt / 1e9:.0f} GB/s read+write ({x.numel() / dt / 1e9:.0f} GB/s each way)")
PY
P="The capital of France is a city that"
for ty in ${TG_GPU_TYPES:-f16 q8_0 q4_0 q4_k_m q6_k}; do
    step "model_$ty" 120 "$BIN/make-model" --preset 100m --type "$ty" -o "/tmp/100m-$ty.gguf"
    ls -l "/tmp/100m-$ty.gguf" | awk '{print "model bytes:", $5, $9}' >>"$S"
    step "lg_cpu_$ty" 60 "$BIN/tgdb" generate -m "/tmp/100m-$ty.gguf" -p "$P" -n 1 --temp 0 -t 8 --logits-out /tmp/lc.f32
    step "lg_gpu_$ty" 60 "$BIN/tgdb" generate -m "/tmp/100m-$ty.gguf" -p "$P" -n 1 --temp 0 -ngl 99 --logits-out /tmp/lg.f32
    python3 -c "
import numpy as np
a=np.fromfile('/tmp/lc.f32',dtype=np.float32); b=np.fromfile('/tmp/lg.f32',dtype=np.float32)
print('$ty last logits CUDA vs CPU rel L2 %.3g, argmax %d vs %d' % (np.linalg.norm(a-b)/np.linalg.norm(a), a.argmax(), b.argmax()))" >>"$S" 2>&1
    case $ty in f16|q8_0|q4_0) ;; *) continue ;; esac
    step "bench_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 512 -n 128 -r 5 -fa on,off
    grep -E 'pp|tg|model' "$OUT/bench_$ty.log" >>"$S"
    TG_CUDA_GRAPHS=1 step "bgr_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 0 -n 128 -r 5 -fa on
    grep -E 'tg' "$OUT/bgr_$ty.log" | sed 's/^/with CUDA graphs: /' >>"$S"
    TG_GRAPH_REUSE=0 step "bnr_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 0 -n 128 -r 5 -fa on,off
    grep -E '^tg' "$OUT/bnr_$ty.log" | sed 's/^/every graph built (TG_GRAPH_REUSE=0): /' >>"$S"
    [ "$ty" = q4_0 ] || continue
    step "tdef_$ty" 60 "$BIN/tgdb" generate -m "/tmp/100m-$ty.gguf" -p "$P" -n 8 --temp 0 -ngl 99 -fa off --trace /tmp/d.tgt
    TG_CUDA_DEFER=0 step "tsync_$ty" 60 "$BIN/tgdb" generate -m "/tmp/100m-$ty.gguf" -p "$P" -n 8 --temp 0 -ngl 99 -fa off --trace /tmp/s.tgt
    step "tdiff_$ty" 60 "$BIN/tgdb" diff /tmp/d.tgt /tmp/s.tgt
    grep -E 'compared|result' "$OUT/tdiff_$ty.log" | sed 's/^/deferred vs node-by-node trace: /' >>"$S"
    TG_GRAPH_REUSE=0 step "tnr_$ty" 60 "$BIN/tgdb" generate -m "/tmp/100m-$ty.gguf" -p "$P" -n 8 --temp 0 -ngl 99 -fa off --trace /tmp/s.tgt
    step "tdnr_$ty" 60 "$BIN/tgdb" diff /tmp/s.tgt /tmp/d.tgt
    grep -E 'compared|result' "$OUT/tdnr_$ty.log" | sed 's/^/every graph built vs moved graphs, traced: /' >>"$S"
    rm -f /tmp/d.tgt /tmp/s.tgt
    step "btrace_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 512 -n 128 -r 3 -fa off --trace /tmp/b.tgt
    grep -E 'pp|tg|trace written' "$OUT/btrace_$ty.log" | sed 's/^/traced (deferred): /' >>"$S"
    TG_CUDA_DEFER=0 step "bsync_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 512 -n 128 -r 3 -fa off --trace /tmp/b.tgt
    grep -E 'pp|tg' "$OUT/bsync_$ty.log" | sed 's/^/traced (node by node): /' >>"$S"
    step "bplain_$ty" 180 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -ngl 99 -p 512 -n 128 -r 3 -fa off
    grep -E 'pp|tg' "$OUT/bplain_$ty.log" | sed 's/^/untraced, same settings: /' >>"$S"
    rm -f /tmp/b.tgt
done
step profile 60 "$BIN/tgdb" generate -m /tmp/100m-q4_0.gguf -p "$P" -n 32 --temp 0 -ngl 99 -fa on --graph
tail -25 "$OUT/profile.log" >>"$S"
step bench_d1024 180 "$BIN/tgdb" bench -m /tmp/100m-q8_0.gguf -ngl 99 -p 512 -n 128 -d 1024 -r 2 -fa on,off
grep -E 'pp|tg' "$OUT/bench_d1024.log" >>"$S"
# The host CPU's packed weights (tg_cpu_pack; used where it has AVX-512 VNNI):
# the matrix tests (their bits against the weights read directly) and the
# ~100M models on 8 threads with packed copies and without.
step cpu_pack 120 "$BIN/test_mul_mat"
grep -E '^(FAIL|ok   pack: packed)|passed' "$OUT/cpu_pack.log" >>"$S"
for ty in ${TG_GPU_TYPES:-f16 q8_0 q4_0 q4_k_m q6_k}; do
    case $ty in q8_0|q4_0|q4_k_m|q6_k) ;; *) continue ;; esac
    for r in off on; do
        step "cpu_${ty}_$r" 120 "$BIN/tgdb" bench -m "/tmp/100m-$ty.gguf" -p 256 -n 64 -t 8 -r 3 -fa on --repack "$r"
        grep -E '^(model|pp|tg)' "$OUT/cpu_${ty}_$r.log" | sed "s/^/CPU, --repack $r: /" >>"$S"
    done
done
