// viewdigest.h - the element-set digest of binary16 views of memory outside
// compute buffers (a KV cache): trace/FORMAT.md "Element-set digest" (1.5),
// EVAL flag TG_TRACE_EVAL_SETDIGEST, SKETCH scheme 2.
//
// Every term of the digest (hash, summary, sketch) is a sum over the view's
// elements of a function of the element's coordinates and bits, in exact
// integer arithmetic: the same value whatever the order the elements are
// added in. The memo keeps, per view, the sums over the elements last seen;
// before a node writes into them it takes the elements it overwrites out
// (their old bytes are still there) and marks them, and the next digest of
// the view adds those elements back (their new bytes) and the elements the
// view gained or lost (the context grew): the work is the bytes written,
// not the view's size. A write the memo cannot follow element by element (a
// host write, a buffer clear, a node whose output is not a box of the view's
// coordinates) makes the view's next digest start from scratch.
#ifndef TG_TRACE_VIEWDIGEST_H
#define TG_TRACE_VIEWDIGEST_H

#include "tg/trace.h"

#include <stdbool.h>
#include <stdint.h>

struct vd_memo;

struct vd_memo * tg_trace_vd_new(void);
void tg_trace_vd_free(struct vd_memo * m);

// The digest of the view (F16, host memory `data` in the buffer with id
// buf_id), from the memo where it has the view, else from scratch (and
// memoized). False if the view is not one the digest covers (type, layout).
bool tg_trace_vd_digest(struct vd_memo * m, uint64_t buf_id, const void * data, int type, const int64_t ne[4],
                        const size_t nb[4], uint64_t * hash, struct tg_trace_summary * s, double * sketch);

// Whether a view of this type and layout gets the digest (binary16, strides
// that do not overlap).
bool tg_trace_vd_covers(int type, const int64_t ne[4], const size_t nb[4]);

// Whether the memo keeps a view of these extents (smaller ones are
// recomputed: their bytes may be digested from a copy).
bool tg_trace_vd_memoized(const int64_t ne[4]);

// The memo's functions are thread-safe (one lock).

// A node is about to write the elements of the strided tensor at data
// (type, ne, nb): memoized views it overlaps take those elements out, or
// start again from scratch next time.
// writer: NULL when the write follows now; else the node that will write
// (taken out ahead of it, on another thread, while the engine computes the
// nodes before it): tg_trace_vd_written(m, writer) when it runs, and until
// then a digest of the view starts from scratch.
void tg_trace_vd_before_write(struct vd_memo * m, const void * data, int type, const int64_t ne[4], const size_t nb[4],
                              const void * writer);
void tg_trace_vd_written(struct vd_memo * m, const void * writer);
// Whether the strided tensor's bytes may overlap a memoized view (no lock).
bool tg_trace_vd_overlaps(struct vd_memo * m, const void * data, int type, const int64_t ne[4], const size_t nb[4]);

// Bytes [lo, hi) changed (or will) in a way the memo cannot follow: views
// overlapping them start from scratch next time.
void tg_trace_vd_invalidate(struct vd_memo * m, uintptr_t lo, uintptr_t hi);

// Counters (tests, benchmarks): digests from the memo, from scratch, and
// elements taken out before writes.
// Tests: the scalar path only (true), or the engine's SIMD level (false).
// Every path gives the same digest (integer sums).
void tg_trace_vd_force_scalar(bool on);

struct vd_stats { uint64_t n_memo, n_scratch, n_taken_out, n_invalidated; };
void tg_trace_vd_stats(struct vd_memo * m, struct vd_stats * out);

#endif
