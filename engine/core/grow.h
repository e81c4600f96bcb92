// grow.h - the one growth helper for dynamic arrays of the tgdb libraries
// (private: not installed; libtg defines it, the other libraries and the
// tgdb program reach it through this header).
#ifndef TG_CORE_GROW_H
#define TG_CORE_GROW_H

#include <stdbool.h>
#include <stddef.h>

// Makes *p (an array of elements of elem bytes, allocated with malloc or
// NULL) hold at least need elements: when need > *cap, reallocates it to
// max(need, 2 * *cap, 16) elements and sets *cap. Existing elements are kept;
// new ones are uninitialised. Returns true when *p holds need elements; false
// when the byte size overflows or memory runs out, with *p and *cap
// unchanged (still owned by the caller). Does not set the last error: the
// caller says what it was growing. p is the address of the array pointer
// (any object pointer type).
bool tg_grow(void * p, size_t * cap, size_t need, size_t elem);

// Reallocates *p to exactly n elements of elem bytes (n > 0), for arrays
// that share one capacity or are sized exactly. True on success; false on
// overflow or out of memory with *p unchanged. No last error either.
bool tg_resize(void * p, size_t n, size_t elem);

// tg_grow for an array variable `a` of any element type with a size_t `cap`:
// TG_GROW(a, cap, need) is true when a holds need elements.
#define TG_GROW(a, cap, need) tg_grow(&(a), &(cap), (need), sizeof(*(a)))
// tg_resize for an array variable `a`: true when a holds n elements.
#define TG_RESIZE(a, n) tg_resize(&(a), (n), sizeof(*(a)))

#endif
