// ptrmap.c - the pointer map (see ptrmap.h).
#include "core/ptrmap.h"

#include <stdlib.h>
#include <string.h>

// Slots for n keys at most half full (at least 16), or 0 on overflow.
static size_t slots_for(size_t n) {
    size_t cap = 16;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 4 / sizeof(uint64_t)) return 0;
        cap *= 2;
    }
    return cap;
}

// Inserts into a table known to have a free slot for key.
static void place(struct tg_ptrmap * m, uint64_t key, uint64_t val) {
    size_t h = tg_ptrmap_hash(key, m->cap);
    while (m->keys[h] && m->keys[h] != key) h = (h + 1) & (m->cap - 1);
    if (!m->keys[h]) { m->keys[h] = key; m->n++; }
    m->vals[h] = val;
}

// Moves m's keys into a new table of cap slots.
static enum tg_status rehash(struct tg_ptrmap * m, size_t cap) {
    struct tg_ptrmap nm = { .cap = cap };
    if (cap) {
        nm.keys = calloc(cap, sizeof(*nm.keys));
        nm.vals = malloc(cap * sizeof(*nm.vals));
    }
    if (!cap || !nm.keys || !nm.vals) {
        free(nm.keys); free(nm.vals);
        return tg_error(TG_ERR_NOMEM, "pointer map: out of memory for %zu entries", m->n + 1);
    }
    for (size_t i = 0; i < m->cap; i++) if (m->keys[i]) place(&nm, m->keys[i], m->vals[i]);
    free(m->keys); free(m->vals);
    *m = nm;
    return TG_OK;
}

enum tg_status tg_ptrmap_reset(struct tg_ptrmap * m, size_t n_expected) {
    m->n = 0;
    if (m->cap) memset(m->keys, 0, m->cap * sizeof(*m->keys));
    if (n_expected == 0 || n_expected <= m->cap / 2) return TG_OK;
    enum tg_status st = rehash(m, slots_for(n_expected));
    if (st != TG_OK) tg_ptrmap_free(m);
    return st;
}

enum tg_status tg_ptrmap_put(struct tg_ptrmap * m, uint64_t key, uint64_t val) {
    if (!key) return tg_error(TG_ERR_INVALID_ARG, "pointer map: key 0 (NULL) cannot be stored");
    if ((m->n + 1) > m->cap / 2) {
        enum tg_status st = rehash(m, slots_for(m->n + 1));
        if (st != TG_OK) return st;
    }
    place(m, key, val);
    return TG_OK;
}

void tg_ptrmap_free(struct tg_ptrmap * m) {
    free(m->keys); free(m->vals);
    memset(m, 0, sizeof(*m));
}
