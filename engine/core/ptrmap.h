// ptrmap.h - the one pointer map of the tgdb libraries (private: not
// installed; libtg defines it, libtgtrace uses it through this header).
// Open addressing with linear probing from a non-zero 64-bit key (a pointer
// through tg_ptrmap_key, or an id) to a 64-bit value (signed
// values round-trip through the unsigned store). Lookups never allocate;
// puts grow the table at half load. Iteration order is not defined, so
// nothing may depend on it.
#ifndef TG_CORE_PTRMAP_H
#define TG_CORE_PTRMAP_H

#include "tg/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tg_ptrmap {
    uint64_t * keys;   // [cap], 0 = empty slot
    uint64_t * vals;   // [cap]
    size_t     cap;    // 0 or a power of two
    size_t     n;      // keys present
};

// The key of a pointer.
static inline uint64_t tg_ptrmap_key(const void * p) { return (uint64_t) (uintptr_t) p; }

// First probe slot of key in a table of cap (a power of two) slots: the
// 64-bit finaliser of MurmurHash3, so pointers that differ in their low or
// high bits only still spread.
static inline size_t tg_ptrmap_hash(uint64_t key, size_t cap) {
    key ^= key >> 33; key *= 0xff51afd7ed558ccdull; key ^= key >> 33;
    return (size_t) key & (cap - 1);
}

// Empties m and makes room for n_expected keys without growing (memory is
// kept for reuse). TG_OK, or TG_ERR_NOMEM with the last error set (m is then
// empty and unallocated).
enum tg_status tg_ptrmap_reset(struct tg_ptrmap * m, size_t n_expected);

// Sets key -> val (replacing a present key's value), growing m as needed.
// TG_OK; TG_ERR_INVALID_ARG for key 0; TG_ERR_NOMEM (m unchanged). Both set
// the last error.
enum tg_status tg_ptrmap_put(struct tg_ptrmap * m, uint64_t key, uint64_t val);

// True and *val (when val is not NULL) if key is present; false otherwise
// (key 0 is never present).
static inline bool tg_ptrmap_get(const struct tg_ptrmap * m, uint64_t key, uint64_t * val) {
    if (!m->cap || !key) return false;
    for (size_t h = tg_ptrmap_hash(key, m->cap);; h = (h + 1) & (m->cap - 1)) {
        if (m->keys[h] == key) { if (val) *val = m->vals[h]; return true; }
        if (!m->keys[h]) return false;
    }
}

// The value of pointer p as a signed number (values put as negative numbers
// come back as they went in), or `absent` when p is NULL or not in m.
static inline int64_t tg_ptrmap_find(const struct tg_ptrmap * m, const void * p, int64_t absent) {
    uint64_t v;
    return tg_ptrmap_get(m, tg_ptrmap_key(p), &v) ? (int64_t) v : absent;
}

// Frees m's memory; m is then an empty map (reusable).
void tg_ptrmap_free(struct tg_ptrmap * m);

#endif
