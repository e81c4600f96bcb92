// tg/trace-diff.h - comparing two runs node by node: `tgdb diff A B`, the
// shell's `diff`, the TUI's diff view.
//
// Each side is a list of graphs of nodes with what is known about their
// values: a content hash, a numeric summary, full contents (traces), or only
// the sum and sum of squares (a per-node TSV dump from another engine's eval
// callback: name, op, ne0,ne1,ne2,ne3, sum, sum of squares). Graphs are paired
// in order; nodes are aligned by (name, op, shape), tolerant of inserted or
// missing nodes (against a TSV dump also: nodes run in another order, a node
// of the same name and op whose shape differs in one dimension - another
// engine's KV padding - compared by its sums, and the names and ops llama.cpp
// gives differently: embd for inp_embd, SWIGLU for GLU); each pair is classified and the first divergent node in A's
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

// What a pair's verdict rests on.
#define TG_DIFF_EVIDENCE_LIST(X) \
    X(TG_DIFF_EV_NONE,     "-")        /* nothing comparable on both sides */ \
    X(TG_DIFF_EV_HASH,     "hash")     /* equal content hashes: identical bytes */ \
    X(TG_DIFF_EV_CONTENTS, "contents") /* full contents of both sides */ \
    X(TG_DIFF_EV_SUMMARY,  "summary")  /* numeric summaries (mean, rms, min, max, NaN/Inf counts) */ \
    X(TG_DIFF_EV_SUMS,     "sums")     /* sum and sum of squares (a TSV dump side) */ \
    X(TG_DIFF_EV_SKETCH,   "sketch")   /* value sketches (format 1.2): estimated rel_l2 */ \
    X(TG_DIFF_EV_PADDED,   "padded")   /* a TSV dump's node larger in one dimension, a multiple of 32 \
                                          (padding: llama.cpp steps the KV length by 256 cells, \
                                          tgdb by 32): sums, the extra cells taken as zeros */
enum tg_diff_evidence {
#define TG_DIFF_EV_ENUM(e, name) e,
    TG_DIFF_EVIDENCE_LIST(TG_DIFF_EV_ENUM)
#undef TG_DIFF_EV_ENUM
    TG_DIFF_EV_COUNT
};
// "-", "hash", "contents", "summary", "sums", "sketch", "padded".
const char * tg_diff_evidence_name(int evidence);

struct tg_diff_pair {
    int      graph;             // graph pair index (A's gi)
    uint32_t graph_id;          // A's graph id (what `tgdb trace info` prints as "graph N"; 0 for a TSV A)
    int      node_a, node_b;    // node index in A / B (-1: absent)
    int      kind;              // enum tg_diff_kind
    int      evidence;          // enum tg_diff_evidence: what the kind rests on
    bool     from_contents;     // evidence == TG_DIFF_EV_CONTENTS
    bool     hash_differs;      // both hashed (alike) and the hashes differ
    bool     view_skipped;      // no evidence: a view-like node (VIEW, RESHAPE, PERMUTE, TRANSPOSE,
                                // NONE) recorded without data on both sides (--trace-hash computed)
    double   rel_l2;            // ||a-b|| / ||b|| (contents, or estimated from sketches; 0 for equal
                                // hashes; NAN: unknown)
    double   rel_l2_err;        // sketch estimate: its expected error (one standard deviation, same
                                // units as rel_l2); 0 when rel_l2 is exact; NAN: unknown
    bool     introduced;        // the difference (rel_l2, measured or estimated from sketches; else
                                // the sums' or summaries' rel) grows here faster than that of any
                                // input node (divergence introduced here, not inherited)
    double   max_abs, mean_abs; // element errors (contents; 0 for equal hashes; NAN: unknown)
    double   max_rel;           // max |a-b| / (|b| + atol) over elements (contents; else NAN)
    double   rel;               // the figure compared with rtol: contents: max_rel; summaries:
                                // max relative delta of mean/rms/min/max; sums: max of the
                                // relative deltas of sum (against sqrt(n*sumsq)) and sumsq;
                                // sketch: the estimated rel_l2; 0 for equal hashes; NAN without
                                // evidence
    char     name[TG_TRACE_NAME];
    char     op[24];
    int64_t  ne[4];             // A's shape (B's where only in B)
    bool     padded;            // B (a TSV dump) has this node with another size in one dimension
    int64_t  ne_b[4];           // B's shape when padded
};

struct tg_diff_result {
    int                   n_pairs;
    struct tg_diff_pair * pairs;
    int                   counts[TG_DIFF_KIND_COUNT];
    int                   evidence[TG_DIFF_EV_COUNT];  // aligned pairs by evidence
    int                   n_aligned;    // pairs present on both sides
    int                   n_compared;   // aligned pairs with evidence (n_aligned - evidence[NONE])
    int                   n_hash_differs; // aligned pairs without evidence whose hashes differ
    int                   n_views_skipped; // aligned view-like pairs without data (not making it inconclusive
                                           // when other nodes were compared: their bytes are the viewed nodes')
    int                   n_introduced; // pairs flagged `introduced`
    int                   first;        // pair index of the first divergence (-1: none)
    int                   n_dependents; // nodes of A depending on the first divergent node
    int *                 dependents;   // their A node indices (first's graph)
    int                   n_graphs_a, n_graphs_b, n_graphs;  // graphs paired = min
    bool                  differs;      // exit status 1: a DIFF, or nodes only on one side (trace vs trace)
    bool                  inconclusive; // nothing differs, but no pair, or some aligned pair that is not a
                                        // skipped view, had evidence
    // what each side recorded at all (any node): why a comparison could not be made
    bool                  a_hashes, a_summaries, a_contents, b_hashes, b_summaries, b_contents;
    // the runs' inputs (trace vs trace): DECODE markers compared by token ids and positions
    int                   n_decodes_a, n_decodes_b;
    int                   token_mismatch;  // first DECODE marker (0-based) whose tokens differ, -1 if none
    int32_t               token_a, token_b, token_pos;  // first differing token id of A and B there (-1: missing), its position
};

// Compares A with B. Exit-status convention for tools: differs -> 1,
// inconclusive -> 3, else 0 (equivalent on evidence). Returns TG_OK (res filled; free with tg_diff_result_free)
// or TG_ERR_NOMEM / TG_ERR_INVALID_ARG (last error set).
enum tg_status tg_diff_run(struct tg_diff_side * a, struct tg_diff_side * b,
                           const struct tg_diff_options * opt, struct tg_diff_result * res);
void tg_diff_result_free(struct tg_diff_result * res);

// Estimated ||A-B|| / ||B|| of one node from its SKETCH records in two runs
// (same scheme and shape) and B's summary (||B|| = rms * sqrt(finite count)).
// *err (may be NULL): the estimate's expected error, one standard deviation
// (about 9% of the estimate with 64 buckets). Returns NAN when the sketches
// are not comparable; 0 when they are equal.
double tg_diff_sketch_rel_l2(const struct tg_trace_sketch * a, const struct tg_trace_sketch * b,
                             const struct tg_trace_summary * sum_b, double * err);

#ifdef __cplusplus
}
#endif
#endif
