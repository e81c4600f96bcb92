// hash-xxh.c - XXH3-64 compiled for AVX2 (this file only: CMake adds -mavx2
// on x86-64), for hash.c to call where the engine's SIMD level has AVX2.
// The rest of libtgtrace is built for baseline x86-64, where the inlined
// XXH3 takes its SSE2 loop: ~27 GB/s against ~43 GB/s here on a 144 KiB
// view (the same hash: the vector width changes the speed only).
#include "hash-xxh.h"

#if defined(__x86_64__) && defined(__AVX2__)
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

uint64_t tg_trace_xxh3_avx2(const void * p, size_t n) { return XXH3_64bits(p, n); }

void tg_trace_xxh3_update_avx2(void * state, const void * p, size_t n) {
    (void) XXH3_64bits_update((XXH3_state_t *) state, p, n);
}
#endif
