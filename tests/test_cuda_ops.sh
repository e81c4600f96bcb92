#!/bin/bash
# test_cuda_ops.sh - the op suite (tests/test_ops.c: every op against its
# float64 reference) on the CUDA backend. Without a CUDA device, or in a build
# without CUDA, test_ops prints "skipped: ..." and this passes.
set -euo pipefail
exec "$TG_BUILD_DIR/tests/test_ops" --backend CUDA0
