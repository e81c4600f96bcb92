// tg/trace-check.h - analyses of a trace: buffer-reuse bugs (stale reads),
// unallocated use, the first NaN/Inf and the path feeding it, split and copy
// traffic. `tgdb check FILE` prints these.
//
// Stale read: a host read of tensor T whose bytes, since T was last written
// (its node evaluated, or a host write), were written by a tensor U that does
// not share T's memory owner (not T, not a view of T's memory) - the
// allocator handed T's range to U in the same graph or in a later graph on
// the same scheduler. The finding names T and U, their graphs and nodes, the
// buffer and the overlapping byte range.
#ifndef TG_TRACE_CHECK_H
#define TG_TRACE_CHECK_H

#include "tg/trace-read.h"

#ifdef __cplusplus
extern "C" {
#endif

enum tg_trace_finding_kind {
    TG_TRACE_FIND_STALE_READ = 0,   // host read of bytes owned by another tensor since
    TG_TRACE_FIND_UNALLOCATED,      // set/get/compute on a tensor with no buffer (EVENT)
    TG_TRACE_FIND_NAN,              // first node producing NaN/Inf, with the feeding path
    TG_TRACE_FIND_ENGINE_ERROR,     // an engine error EVENT or a failed computation
    TG_TRACE_FIND_TRUNCATED,        // the trace is incomplete (warning only)
    TG_TRACE_FIND_GRAD_OF_GRAD,     // a gradient that has a gradient of its own (never asked for: no second order)
    TG_TRACE_FIND_NO_GRAD,          // a trainable parameter of a backward graph that receives no gradient
    TG_TRACE_FIND_GRAD_EXPLODE,     // a training step whose gradient norm is non-finite or jumped (train markers)
    TG_TRACE_FIND_KIND_COUNT
};
// "stale-read", "unallocated-use", "nan", "engine-error", "truncated",
// "grad-of-grad", "param-without-grad", "exploding-grad".
const char * tg_trace_finding_kind_name(int kind);

struct tg_trace_finding {
    int      kind;            // enum tg_trace_finding_kind
    bool     problem;         // true: a bug (tgdb check exits 1); false: a warning
    // who (STALE_READ: T = read tensor, U = overwriting tensor; NAN: T = origin node;
    // GRAD_OF_GRAD: T = the first gradient with a gradient, U = that gradient's gradient;
    // NO_GRAD: T = the first such parameter)
    int32_t  graph_t, tensor_t;   // graph_id and tensor index of T (-1 if unknown)
    int32_t  graph_u, tensor_u;   // graph_id and tensor index of U (-1 if none)
    int32_t  graph_last, tensor_last; // STALE_READ: the last node overwriting the bytes before the read (-1: a host write / none)
    int32_t  n_writers;       // STALE_READ: writes to the bytes between T's own write and the read (all listed in text)
    uint64_t buffer_uid;
    uint64_t begin, end;      // overlapping byte range [begin, end) in that buffer
    int32_t  eval;            // eval index of the write / the NaN node (-1 if none)
    int32_t  host;            // host access index (-1 if none)
    uint32_t record;          // record ordinal where the problem shows
    char *   text;            // multi-line explanation (owned by the report)
};

struct tg_trace_report {
    int                       n_findings;
    struct tg_trace_finding * findings;
    int                       n_problems;  // findings with problem == true
    int                       n_host_reads_checked;
};

// Runs every check. Fills *rep (free with tg_trace_report_free). Returns
// TG_OK, or TG_ERR_NOMEM (rep left empty).
enum tg_status tg_trace_check(struct tg_trace * tr, struct tg_trace_report * rep);
void tg_trace_report_free(struct tg_trace_report * rep);

// Split/copy summary of graph gi (from its SPLITS record).
struct tg_trace_split_summary {
    int      n_splits;
    int      n_inputs;
    int      n_copies;        // inputs copied to another buffer type
    uint64_t copy_bytes;      // bytes copied per computation
    int      nodes_per_backend[TG_TRACE_MAX_BACKENDS];
};
bool tg_trace_split_summary(const struct tg_trace * tr, int gi, struct tg_trace_split_summary * out);

// Eval index of the first evaluated node (file order) whose result holds a
// NaN or an Inf, -1 if none.
int  tg_trace_first_nonfinite(const struct tg_trace * tr);

#ifdef __cplusplus
}
#endif
#endif // TG_TRACE_CHECK_H
