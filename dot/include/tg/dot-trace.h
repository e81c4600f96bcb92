// tg/dot-trace.h - a trace's graph as DOT: nodes as records (name, op, type,
// shape, buffer@offset, short hash), leafs styled apart, edges labelled with
// the source slot, one cluster per split coloured by backend with the split's
// input copies drawn; selections (one graph, a neighbourhood, one layer,
// repeated layers folded) and highlights (diff result, NaN, stale reads).
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
    const struct tg_diff_result * diff;    // highlight divergent nodes (pairs of this graph)
    const struct tg_trace_report * check;  // highlight stale reads / NaN origin
};
struct tg_dot_trace_options tg_dot_trace_default_options(void);

// Builds the DOT graph. NULL + last error (no such graph, layer or node:
// TG_ERR_INVALID_ARG, the message names the valid range) on failure.
struct tg_dot * tg_dot_from_trace(struct tg_trace * tr, const struct tg_dot_trace_options * o);

#ifdef __cplusplus
}
#endif
#endif
