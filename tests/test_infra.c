// test_infra.c - the shared private infrastructure of the libraries: the
// pointer map (core/ptrmap.h) and the growth helper (core/grow.h).
#include "check.h"
#include "core/grow.h"
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

static void test_grow(void) {
    int * a = NULL;
    size_t cap = 0;
    CHECK(TG_GROW(a, cap, 0) && a == NULL && cap == 0, "grow: need 0 allocates nothing");
    CHECK(TG_GROW(a, cap, 1) && a && cap == 16, "grow: the first growth makes room for 16 (cap %zu)", cap);
    bool ok = true;
    for (int i = 0; i < 1000 && ok; i++) {
        ok = TG_GROW(a, cap, (size_t) i + 1);
        if (ok) a[i] = i * 7;
    }
    int bad = 0;
    for (int i = 0; ok && i < 1000; i++) bad += a[i] != i * 7;
    CHECK(ok && bad == 0 && cap >= 1000 && cap < 2048, "grow: 1000 appends keep every element (cap %zu, doubling)", cap);
    size_t before = cap;
    int * keep = a;
    CHECK(TG_GROW(a, cap, 10) && a == keep && cap == before, "grow: a need within the capacity changes nothing");
    CHECK(TG_GROW(a, cap, 5000) && cap == 5000 && a[999] == 999 * 7, "grow: a need above twice the capacity gets exactly the need");
    // overflow: the byte size of need elements does not fit in size_t
    keep = a; before = cap;
    CHECK(!TG_GROW(a, cap, SIZE_MAX / 2) && a == keep && cap == before, "grow: an overflowing need fails, array and cap unchanged");
    CHECK(!tg_resize(&a, SIZE_MAX / sizeof(int) + 1, sizeof(int)) && a == keep, "resize: overflow fails, array unchanged");
    CHECK(TG_RESIZE(a, 3) && a[2] == 14, "resize: shrinking to 3 keeps the first elements");
    CHECK(!TG_RESIZE(a, 0) && a[0] == 0, "resize: 0 elements is refused (array kept)");
    free(a);
    // element types of any size, through the macro
    struct big { double v[5]; } * b = NULL;
    size_t bc = 0;
    CHECK(TG_GROW(b, bc, 3) && bc == 16, "grow: struct elements (cap %zu)", bc);
    if (b) { b[15].v[4] = 1.5; CHECK(b[15].v[4] == 1.5, "grow: the last struct element is writable"); }
    free(b);
}

int main(void) {
    test_ptrmap();
    test_grow();
    return tg_check_finish("test_infra");
}
