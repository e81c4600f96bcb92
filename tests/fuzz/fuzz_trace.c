// fuzz_trace.c - libFuzzer harness for the trace reader: any bytes must open
// cleanly (or fail with an error) and every accessor and the checks must run
// without a crash over whatever was recovered. Each input is tried as is and
// with its header and record checksums repaired, so mutations reach the
// payload decoders instead of stopping at a checksum.
#include "tests/trace_sweep.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void put32(uint8_t * p, uint32_t v) { for (int k = 0; k < 4; k++) p[k] = (uint8_t) (v >> (8 * k)); }
static uint32_t get32(const uint8_t * p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t) p[3] << 24); }

static void try_open(const uint8_t * data, size_t size) {
    struct tg_trace * tr = tg_trace_open_mem(data, size);
    if (!tr) return;
    volatile long sink = trace_sweep(tr);
    (void) sink;
    tg_trace_close(tr);
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    try_open(data, size);
    if (size < 32 || size > (1u << 20)) return 0;
    uint8_t * fixed = malloc(size);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    memcpy(fixed, "TGTRACE", 8);
    fixed[8] = 1; fixed[9] = 0;          // major 1
    put32(fixed + 16, 32);               // header size
    put32(fixed + 28, XXH32(fixed, 28, 0));
    size_t off = 32;
    while (off + 16 <= size) {           // sync words and checksums of every frame that fits
        put32(fixed + off, 0xA5434552u);
        uint32_t len = get32(fixed + off + 8);
        if ((uint64_t) len + 16 > size - off) break;
        put32(fixed + off + 12 + len, XXH32(fixed + off + 4, 8 + (size_t) len, 0));
        off += 16 + (size_t) len;
    }
    try_open(fixed, size);
    free(fixed);
    return 0;
}
