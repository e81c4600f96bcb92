// tg/dot-trace.h - a trace's graph as DOT: nodes as records (name, op, type,
// shape, buffer@offset, short hash), leafs styled apart, edges labelled with
// the source slot, one cluster per split coloured by backend with the split's
// input copies drawn; selections (one graph, a neighbourhood, one layer,
// repeated layers folded) and highlights (diff result, NaN, stale reads).
// Gradients (tensors linked by a trace's GRADS records) are drawn in their
// own style: a lilac, rounded record with a field "<U+2207 NABLA> gradient".
#ifndef TG_DOT_TRACE_H
#define TG_DOT_TRACE_H

#include "tg/dot.h"
#include "tg/trace-check.h"
#include "tg/trace-diff.h"
#include "tg/trace-read.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_dot_trace_options {
    int          graph;       // graph id, as `tgdb trace info` prints it (-1: the last graph)
    const char * around;      // node name: only its neighbourhood (NULL: whole graph)
    int          depth;       // neighbourhood radius in edges (default 2)
    int          layer;       // only nodes of this layer, with the views, reshapes and permutes
                              // feeding them (-1: all)
    bool         collapse;    // fold layers 1..L-2 into one node each kind
    bool         leafs;       // draw leafs (weights, inputs) (default true)
    bool         grad;        // gradient links (training graphs): with `around`, also the
                              // neighbourhood of NODE's gradient (for a gradient: of its
                              // forward tensor); dashed "grad" edges from every drawn
                              // tensor to its drawn gradient. An error when the graph has
                              // no links (or `around` has no gradient)
    const struct tg_diff_result * diff;    // highlight divergent nodes (pairs of this graph)
    const struct tg_trace_report * check;  // highlight stale reads / NaN origin
};
struct tg_dot_trace_options tg_dot_trace_default_options(void);

// Builds the DOT graph (the caller frees it with tg_dot_free). NULL + last
// error on failure: TG_ERR_INVALID_ARG for no such graph, layer or node (the
// message names the valid range) and for `grad` without gradient links;
// TG_ERR_NOMEM.
struct tg_dot * tg_dot_from_trace(struct tg_trace * tr, const struct tg_dot_trace_options * o);

#ifdef __cplusplus
}
#endif
#endif
