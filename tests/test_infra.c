// test_infra.c - the shared private infrastructure of the libraries: the
// pointer map (core/ptrmap.h) and the growth helper (core/grow.h).
#include "check.h"
#include "core/ptrmap.h"

#include <stdint.h>
#include <stdlib.h>

static void test_ptrmap(void) {
    struct tg_ptrmap m = { 0 };
    CHECK(!tg_ptrmap_get(&m, 1, NULL), "ptrmap: an empty map has no key");
    CHECK(tg_ptrmap_find(&m, NULL, -7) == -7, "ptrmap: NULL looks up as absent");
    CHECK(tg_ptrmap_put(&m, 0, 1) == TG_ERR_INVALID_ARG, "ptrmap: key 0 is refused");
    // many pointers (8-byte aligned, as tensors are) and negative values
    enum { N = 20000 };
    int64_t * objs = malloc(N * sizeof(*objs));
    bool ok = objs != NULL;
    for (int i = 0; ok && i < N; i++) ok = tg_ptrmap_put(&m, tg_ptrmap_key(&objs[i]), (uint64_t) (int64_t) -(i + 2)) == TG_OK;
    CHECK(ok && m.n == N, "ptrmap: %d pointers put (grows from empty), n = %zu", N, m.n);
    CHECK(m.cap >= 2 * (size_t) N && (m.cap & (m.cap - 1)) == 0, "ptrmap: at most half full, power-of-two slots (%zu)", m.cap);
    int bad = 0;
    for (int i = 0; objs && i < N; i++) bad += tg_ptrmap_find(&m, &objs[i], 0) != -(i + 2);
    CHECK(bad == 0, "ptrmap: every pointer finds its (negative) value back (%d wrong)", bad);
    CHECK(tg_ptrmap_put(&m, tg_ptrmap_key(&objs[5]), 99) == TG_OK && tg_ptrmap_find(&m, &objs[5], 0) == 99 && m.n == N,
          "ptrmap: putting a present key replaces its value");
    uint64_t v = 0;
    CHECK(!tg_ptrmap_get(&m, tg_ptrmap_key(objs) + 1, &v) && v == 0, "ptrmap: an absent key is not found, val untouched");
    // ids as keys (the recorder keys uids), including 64-bit ones
    size_t cap = m.cap;
    CHECK(tg_ptrmap_reset(&m, 100) == TG_OK && m.n == 0 && m.cap == cap, "ptrmap: reset empties and keeps the memory");
    CHECK(!tg_ptrmap_get(&m, tg_ptrmap_key(&objs[1]), NULL), "ptrmap: nothing left after reset");
    bad = 0;
    for (uint64_t k = 1; k <= 1000; k++) bad += tg_ptrmap_put(&m, k << 40 | k, k * 3) != TG_OK;
    for (uint64_t k = 1; k <= 1000; k++) bad += !tg_ptrmap_get(&m, k << 40 | k, &v) || v != k * 3;
    CHECK(bad == 0 && m.n == 1000, "ptrmap: 1000 ids whose low bits repeat");
    tg_ptrmap_free(&m);
    CHECK(m.cap == 0 && m.n == 0 && !tg_ptrmap_get(&m, 1, NULL), "ptrmap: free leaves an empty, reusable map");
    struct tg_ptrmap r = { 0 };
    enum tg_status st = tg_ptrmap_reset(&r, 1000);
    CHECK(st == TG_OK && r.cap >= 2000 && r.n == 0, "ptrmap: reset reserves room (%zu slots for 1000)", r.cap);
    tg_ptrmap_free(&r);
    free(objs);
}

int main(void) {
    test_ptrmap();
    return tg_check_finish("test_infra");
}
