#!/bin/bash
# test_samples_sched.sh - runs samples/sched-splits and samples/graph-reuse
# and checks what they print (placement causes, split counts, stale read).
. "$(dirname "$0")/support/check.sh"
B=$B/samples
has() { grep -qF -- "$2" <<<"$1"; }

out=$("$B/sched-splits" 2>&1); rc=$?
check "sched-splits exits 0" test $rc -eq 0
if has "$out" "no BLAS backend"; then
    echo "note: built without BLAS: checking the CPU-only placement"
    check "sched-splits (CPU only): 1 split for both usages" has "$out" "usage any -> 1 split(s), usage weights -> 1 split(s)"
else
    check "usage any: 2 splits, usage weights: 1 split" has "$out" "usage any -> 2 split(s), usage weights -> 1 split(s)"
    check "usage any: matmul on BLAS, cause src" has "$out" "node  0 h   MUL_MAT  BLAS  src"
    check "usage any: add on CPU because BLAS lacks ADD" has "$out" "ADD not supported by BLAS"
    out64=$("$B/sched-splits" 64 2>&1)
    check "64 columns: BLAS asks for the matmul (offload)" has "$out64" "BLAS  offload"
    check "64 columns: 2 splits for both usages" has "$out64" "usage any -> 2 split(s), usage weights -> 2 split(s)"
fi
check "usage weights: matmul pinned by its weight" has "$out" "node  0 h   MUL_MAT  CPU   weight_buffer weight W is in buffer CPU (usage weights)"
check "results agree" has "$out" "results agree"
"$B/sched-splits" 0 >/dev/null 2>&1
check "sched-splits rejects a bad column count" test $? -eq 1

out=$("$B/graph-reuse" 2>&1); rc=$?
check "graph-reuse exits 0" test $rc -eq 0
check "graph-reuse: mid was handed on in place inside graph 1" has "$out" "mid (graph 1, inplace, live steps 1..2), act (graph 1, inplace"
check "graph-reuse: after graph 2 the bytes belong to graph 2's tensors" has "$out" "belong to: y3 (graph 2, planned"
check "graph-reuse: the read is stale" has "$out" "256 of 256 values wrong -> STALE"
out=$("$B/graph-reuse" --correct 2>&1); rc=$?
check "graph-reuse --correct exits 0" test $rc -eq 0
check "graph-reuse --correct: mid kept to the end of graph 1" has "$out" "mid (graph 1, inplace, live steps 1..3)"
check "graph-reuse --correct: the copy is valid" has "$out" "0 of 256 values wrong -> valid"
"$B/graph-reuse" --bogus >/dev/null 2>&1
check "graph-reuse rejects an unknown flag" test $? -eq 1
# With a CUDA device: the same two scenarios on CUDA0 (its compute buffer is
# device memory). Without one this part says why it is skipped.
if "$B/../inspect/tgdb" devices 2>/dev/null | grep -q '^CUDA0 '; then
    out=$("$B/sched-splits" --device CUDA0 64 2>&1)
    check "sched-splits --device CUDA0 64: usage any 1 split, usage weights 2 splits" has "$out" "usage any -> 1 split(s), usage weights -> 2 split(s); results agree"
    out=$("$B/graph-reuse" --device CUDA0 2>&1)
    check "graph-reuse --device CUDA0: the intermediates are in CUDA0 memory" has "$out" "of buffer CUDA0 (usage compute)"
    check "graph-reuse --device CUDA0: the read is stale" has "$out" "256 of 256 values wrong -> STALE"
    out=$("$B/graph-reuse" --device CUDA0 --correct 2>&1)
    check "graph-reuse --device CUDA0 --correct: the copy is valid" has "$out" "0 of 256 values wrong -> valid"
else
    echo "skipped: the CUDA0 scenarios ($("$B/../inspect/tgdb" devices 2>/dev/null | grep '^(CUDA' || echo 'no tgdb'))"
fi
out=$("$B/graph-reuse" --device NO_SUCH_DEVICE 2>&1); rc=$?
check "graph-reuse --device NO_SUCH_DEVICE fails naming the device" test $rc -eq 1 -a -n "$(grep -F "no backend device named 'NO_SUCH_DEVICE'" <<<"$out")"
finish
