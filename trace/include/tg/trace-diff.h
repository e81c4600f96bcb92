// tg/trace-diff.h - comparing two runs node by node: `tgdb diff A B`, the
// shell's `diff`, the TUI's diff view.
//
// Each side is a list of graphs of nodes with what is known about their
// values: a content hash, a numeric summary, full contents (traces), or only
// the sum and sum of squares (a per-node TSV dump from another engine's eval
// callback: name, op, ne0,ne1,ne2,ne3, sum, sum of squares). Graphs are paired
// in order; nodes are aligned by (name, op, shape), tolerant of inserted or
// missing nodes; each pair is classified and the first divergent node in A's
// execution order is reported with the nodes that depend on it.
#ifndef TG_TRACE_DIFF_H
#define TG_TRACE_DIFF_H

#include "tg/status.h"
#include "tg/trace-read.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_diff_side;  // opaque: one run's nodes

// A side over an open trace (not owned: keep it open while the side lives).
struct tg_diff_side * tg_diff_side_trace(struct tg_trace * tr);
// A side from a per-node TSV dump (name, op, shape "a,b,c,d", sum, sumsq per
// line; '#' comments). NULL + last error naming the file and line on failure.
struct tg_diff_side * tg_diff_side_tsv(const char * path);
void tg_diff_side_free(struct tg_diff_side * s);
// True when the side came from a TSV dump.
bool tg_diff_side_is_tsv(const struct tg_diff_side * s);

enum tg_diff_kind {
    TG_DIFF_SAME = 0,   // identical content hash
    TG_DIFF_NEAR,       // values within tolerance
    TG_DIFF_DIFF,       // values beyond tolerance
    TG_DIFF_ONLY_A,     // node only in A
    TG_DIFF_ONLY_B,     // node only in B
    TG_DIFF_UNKNOWN,    // aligned, but nothing to compare (not evaluated / no data)
    TG_DIFF_KIND_COUNT
};
const char * tg_diff_kind_name(int kind);  // "same", "near", "DIFF", "only-A", "only-B", "?"

struct tg_diff_options {
    double rtol;         // relative tolerance (default 1e-3)
    double atol;         // absolute tolerance (default 1e-5)
};
struct tg_diff_options tg_diff_default_options(void);

struct tg_diff_pair {
    int      graph;             // graph pair index (A's gi)
    int      node_a, node_b;    // node index in A / B (-1: absent)
    int      kind;              // enum tg_diff_kind
    bool     from_contents;     // errors computed from full contents (else summaries/sums)
    double   max_abs, mean_abs; // element errors (contents only)
    double   max_rel;           // max |a-b| / (|b| + atol) over elements (contents only)
    double   rel;               // the figure compared with rtol: contents: max_rel; summaries:
                                // max relative delta of mean/rms/min/max; TSV: max of the
                                // relative deltas of sum (against sqrt(n*sumsq)) and sumsq
    char     name[TG_TRACE_NAME];
    char     op[24];
    int64_t  ne[4];
};

struct tg_diff_result {
    int                   n_pairs;
    struct tg_diff_pair * pairs;
    int                   counts[TG_DIFF_KIND_COUNT];
    int                   first;        // pair index of the first divergence (-1: none)
    int                   n_dependents; // nodes of A depending on the first divergent node
    int *                 dependents;   // their A node indices (first's graph)
    int                   n_graphs_a, n_graphs_b, n_graphs;  // graphs paired = min
    bool                  differs;      // exit status 1: a DIFF, or nodes only on one side (trace vs trace)
};

// Compares A with B. Returns TG_OK (res filled; free with tg_diff_result_free)
// or TG_ERR_NOMEM / TG_ERR_INVALID_ARG (last error set).
enum tg_status tg_diff_run(struct tg_diff_side * a, struct tg_diff_side * b,
                           const struct tg_diff_options * opt, struct tg_diff_result * res);
void tg_diff_result_free(struct tg_diff_result * res);

#ifdef __cplusplus
}
#endif
#endif
