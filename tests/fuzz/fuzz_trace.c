// fuzz_trace.c - libFuzzer harness for the trace reader: any bytes must open
// cleanly (or fail with an error) and every accessor and the checks must run
// without a crash over whatever was recovered.
#include "tests/trace_sweep.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    struct tg_trace * tr = tg_trace_open_mem(data, size);
    if (!tr) return 0;
    volatile long sink = trace_sweep(tr);
    (void) sink;
    tg_trace_close(tr);
    return 0;
}
