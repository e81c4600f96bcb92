// trace_evals.h - every EVAL of a trace with its SKETCH, in file order, for the
// tests that compare recorder modes record for record (test_trace_hash_thread.c,
// test_trace_viewdigest.c).
#ifndef TG_TEST_TRACE_EVALS_H
#define TG_TEST_TRACE_EVALS_H

#include "tg/core.h"
#include "tg/trace-read.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

struct trace_ev { struct tg_trace_eval e; bool has_sketch; struct tg_trace_sketch sk; };

// The evals of the trace at path (*n of them, the array freed by the caller);
// NULL, with the reason printed, when it cannot be read.
static inline struct trace_ev * trace_read_evals(const char * path, int * n) {
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) { fprintf(stderr, "%s: %s\n", path, tg_last_error()); return NULL; }
    *n = tg_trace_n_evals(tr);
    struct trace_ev * ev = calloc((size_t) *n + 1, sizeof(*ev));
    bool ok = ev != NULL;
    for (int i = 0; ok && i < *n; i++) {
        struct trace_ev * v = &ev[i];
        ok = tg_trace_get_eval(tr, i, &v->e);
        int k = ok ? tg_trace_find_sketch(tr, v->e.graph_id, v->e.node, v->e.compute_seq) : -1;
        v->has_sketch = k >= 0 && tg_trace_get_sketch(tr, k, &v->sk);
    }
    if (!ok) fprintf(stderr, "%s: %s\n", path, ev ? tg_last_error() : "out of memory");
    tg_trace_close(tr);
    if (!ok) { free(ev); return NULL; }
    return ev;
}

#endif
