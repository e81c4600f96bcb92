// reader-impl.h - private to libtgtrace: the open trace handle.
#ifndef TG_TRACE_READER_IMPL_H
#define TG_TRACE_READER_IMPL_H

#include "tg/trace-read.h"
#include "trace-impl.h"

#define TRACE_N_KINDS 19   // record types 1..18 are listed per kind (deltas in their full kind's list)

struct trace_rec {           // one complete record
    uint64_t off;            // file offset of the frame
    uint32_t len;            // payload bytes
    uint32_t type;
};

struct trace_list {          // ordinals of the records of one kind, in file order
    uint32_t * v;
    int        n;
    size_t     cap;
};

struct trace_gmeta {         // one valid GRAPH record
    uint32_t ord;
    uint32_t graph_id;
    uint32_t sched_id;
    int32_t  n_nodes, n_leafs;
    uint32_t entry_size;
    int32_t  place_ord, splits_ord, alloc_ord;  // latest records for the graph, -1 if none
    int32_t  grads_ord;                         // its GRADS record, -1 if none
    // deltas (GRAPH_DELTA, PLACEMENT_DELTA, ALLOC_DELTA): where the entries the
    // delta does not change come from, -1 for a full record
    uint32_t base_id;                           // GRAPH_DELTA's base graph id (0: full GRAPH)
    int32_t  base_gi;                           // GRAPH_DELTA: the full graph it stands on
    int32_t  place_base_ord, alloc_base_ord;    // *_DELTA: the base's full record (ordinal)
    uint32_t n_changed;                         // GRAPH_DELTA: changed tensors
};

struct trace_key {           // sortable lookup key (lazy indexes)
    uint64_t a;
    uint64_t b;
    int32_t  i;
};

struct tg_trace {
    const uint8_t * base;
    size_t          size;
    size_t          map_size;           // bytes of the private copy (>= size)
    bool            mapped;             // base is our private copy (reader.c: read_private)
    char *          path;
    struct tg_trace_status st;

    struct tg_trace_damage * damage;    // skipped stretches (st.n_damaged of them)
    size_t                   cap_damage;

    struct trace_rec * recs;            // every complete record, by ordinal
    uint32_t           n_recs;
    size_t             cap_recs;
    struct trace_list  kind[TRACE_N_KINDS];

    const char **  op_names;            // from the first RUN record
    int            n_op_names;
    const char **  type_names;
    int            n_type_names;
    const char **  cause_names;
    int            n_cause_names;
    char           name_buf[32];

    struct trace_gmeta * graphs;
    int                  n_graphs;
    int32_t *            graph_by_id;   // gi sorted by (graph_id, gi)

    struct trace_key * eval_keys;       // lazy: (graph_id<<32|node, seq)
    struct trace_key * contents_keys;   // lazy
    struct trace_key * sketch_keys;     // lazy
    struct trace_key * result_keys;     // at open, when there are RESULT records (merged into EVALs)
    struct trace_key * uid_keys;        // lazy: (uid, gi<<32|ti)
    int                n_uid_keys;
};

// Builds result_keys (false: no memory).
bool tg_trace_build_result_keys(struct tg_trace * tr);

// Payload of record ordinal `ord` (no bounds check: ord < n_recs).
static inline const uint8_t * trace_payload(const struct tg_trace * tr, uint32_t ord) {
    return tr->base + tr->recs[ord].off + TRACE_FRAME_HEAD;
}
// Ordinal of the i-th record of kind `type` (1..12), or UINT32_MAX.
static inline uint32_t trace_kind_ord(const struct tg_trace * tr, uint32_t type, int i) {
    if (type >= TRACE_N_KINDS || i < 0 || i >= tr->kind[type].n) return UINT32_MAX;
    return tr->kind[type].v[i];
}

#endif
