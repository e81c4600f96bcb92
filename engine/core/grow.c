// grow.c - the growth helper for dynamic arrays (see grow.h).
#include "core/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool tg_resize(void * p, size_t n, size_t elem) {
    if (n == 0 || elem == 0 || n > SIZE_MAX / elem) return false;
    // p points to a pointer of some object type: it is moved through memcpy,
    // never through a void * lvalue (object pointers share one representation)
    void * old;
    memcpy(&old, p, sizeof(old));
    void * q = realloc(old, n * elem);
    if (!q) return false;
    memcpy(p, &q, sizeof(q));
    return true;
}

bool tg_grow(void * p, size_t * cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    if (elem == 0 || need > SIZE_MAX / elem) return false;
    const size_t max = SIZE_MAX / elem;
    size_t n = *cap <= max / 2 ? 2 * *cap : max;
    if (n < need) n = need;
    if (n < 16 && 16 <= max) n = 16;
    if (!tg_resize(p, n, elem)) return false;
    *cap = n;
    return true;
}
