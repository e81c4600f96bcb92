#!/usr/bin/env bash
# tests/run.sh - installs missing build dependencies (as root), builds tgdb,
# runs the whole CTest suite, then the suite again under ASan+UBSan, the
# threaded tests under ThreadSanitizer, each fuzz harness for a bounded time
# and, from that clang build, the SIMD determinism tests.
#   TG_FUZZ_SECONDS=N   seconds per fuzz harness (default 20, one harness per core at a time; 0 skips fuzzing)
#   TG_SKIP_ASAN=1      skip the ASan+UBSan run (local iteration only)
#   TG_SKIP_TSAN=1      skip the ThreadSanitizer run (local iteration only)
set -euo pipefail
TG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export TG_ROOT
cd "$TG_ROOT"
. tests/deps.sh
tg_install_deps
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (release)"
tg_build build
echo "== tests (release)"
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${TG_SKIP_ASAN:-0}" != 1 ]; then
    echo "== build (ASan+UBSan)"
    # Debug (assertions on) at -O1, as the ASan manual suggests: the suite ran 459 s at -O0, 215 s here
    tg_build build-asan -DTG_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1"
    echo "== tests (ASan+UBSan)"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        LSAN_OPTIONS=suppressions=$TG_ROOT/tests/lsan.supp:print_suppressions=0 \
        ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi

if [ "${TG_SKIP_TSAN:-0}" != 1 ]; then
    # the tests that run the thread pool, the hashing thread and interrupts
    tsan_tests="test_cpu_errors test_determinism test_sched test_trace_hash_thread test_trace_viewdigest test_trace_llama test_live_interrupt test_llama test_mul_mat"
    echo "== build (ThreadSanitizer: ${tsan_tests// /, })"
    TG_BUILD_TARGETS=$tsan_tests tg_build build-tsan -DTG_TSAN=ON -DTG_BLAS=OFF
    echo "== tests (ThreadSanitizer)"
    TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R "^(${tsan_tests// /|})\$"
fi

fuzz_secs=${TG_FUZZ_SECONDS:-20}
if [ "$fuzz_secs" != 0 ] && ls tests/fuzz/fuzz_*.c >/dev/null 2>&1; then
    if command -v clang >/dev/null && echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' \
            | clang -x c -fsanitize=fuzzer -o /tmp/tg-fuzz-probe - >/dev/null 2>&1; then
        echo "== fuzzing (${fuzz_secs}s per harness)"
        # the harnesses and the three SIMD tests run below, not the whole tree
        fuzz_targets=$(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c; done | tr '\n' ' ')
        CC=clang TG_BUILD_TARGETS="${fuzz_targets}test_mul_mat test_ops test_quant" \
            tg_build build-fuzz -DTG_FUZZ=ON -DTG_SANITIZE=ON -DTG_BLAS=OFF
        # one harness per core at a time (each is single-threaded), reported in order
        fuzz_one() {   # HARNESS LOG: fuzz from a copy of its seed corpus
            local short work rc=0
            short=$(basename "$1"); short=${short#fuzz_}
            work=$(mktemp -d)
            cp -r "tests/fuzz/corpus_$short/." "$work/" 2>/dev/null || true
            "$1" -max_total_time="$fuzz_secs" -artifact_prefix="tests/fuzz/$short-crash-" "$work" > "$2" 2>&1 &
            local h=$!
            trap 'kill $h 2>/dev/null' TERM   # stopped with the batch: the harness too
            wait $h || rc=$?
            rm -rf "$work"
            return $rc
        }
        harnesses=(build-fuzz/tests/fuzz_*)
        fuzz_logs=$(mktemp -d)
        for ((i = 0; i < ${#harnesses[@]}; i += jobs)); do
            pids=()
            for ((k = i; k < i + jobs && k < ${#harnesses[@]}; k++)); do
                fuzz_one "${harnesses[k]}" "$fuzz_logs/$k.log" & pids+=($!)
            done
            for ((k = i; k < i + jobs && k < ${#harnesses[@]}; k++)); do
                rc=0
                wait "${pids[k - i]}" || rc=$?
                echo "-- $(basename "${harnesses[k]}")"
                if [ $rc != 0 ]; then
                    kill "${pids[@]}" 2>/dev/null || true   # the batch's other harnesses
                    tail -n 40 "$fuzz_logs/$k.log"
                    echo "== $(basename "${harnesses[k]}") failed (exit $rc): the input is under tests/fuzz/*-crash-*"
                    exit 1
                fi
                tail -n 3 "$fuzz_logs/$k.log"
            done
        done
        rm -rf "$fuzz_logs"
        # The same kernels from another compiler: every SIMD level must still give
        # the scalar path's bits (clang contracts a * b + c where GCC was told not to)
        echo "== clang build: SIMD levels, quantizers and ops (ASan+UBSan)"
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            LSAN_OPTIONS=suppressions=$TG_ROOT/tests/lsan.supp:print_suppressions=0 \
            ctest --test-dir build-fuzz --output-on-failure -j "$jobs" \
                -R '^(test_mul_mat|test_ops|test_quant)$'
    else
        echo "== fuzzing skipped: clang with libFuzzer not available"
    fi
fi
echo "== all tests passed"
