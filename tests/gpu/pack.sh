#!/bin/bash
# pack.sh - gathers what tests/gpu/device-checks.sh runs into one folder, for
# a GPU machine that has the CUDA driver and cuBLAS but not this project's
# other libraries: the programs (debug info stripped) and the shared
# libraries they use beyond glibc, libstdc++ and CUDA's.
# Usage: tests/gpu/pack.sh BUILD_DIR DEST   (BUILD_DIR configured with TG_CUDA=ON)
set -euo pipefail
B=$1; D=$2
mkdir -p "$D/lib"
for p in inspect/tgdb tests/test_ops tests/test_cuda tests/test_mul_mat samples/make-model samples/sched-splits samples/graph-reuse; do
    [ -x "$B/$p" ] || { echo "pack: $B/$p missing (build it first)" >&2; exit 1; }
    strip --strip-all -o "$D/$(basename "$p")" "$B/$p"
    ldd "$B/$p" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
        case $(basename "$lib") in
            libc.so*|libm.so*|libpthread*|libdl.so*|librt.so*|libgcc_s*|libstdc++*|libcublas*|libcudart*|ld-linux*) ;;
            *) cp -L -n "$lib" "$D/lib/" ;;
        esac
    done
done
du -sh "$D"
