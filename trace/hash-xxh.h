// hash-xxh.h - private to libtgtrace: XXH3-64 at AVX2 width (hash-xxh.c).
// The streaming functions take hash.c's XXH3_state_t (the same layout in
// every translation unit that inlines xxhash.h).
#ifndef TG_TRACE_HASH_XXH_H
#define TG_TRACE_HASH_XXH_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
uint64_t tg_trace_xxh3_avx2(const void * p, size_t n);
void     tg_trace_xxh3_update_avx2(void * state, const void * p, size_t n);
#endif

#endif
