// recorder-impl.h - private to libtgtrace: recorder state shared by
// recorder.c (observer callbacks, attach/detach) and recorder-graph.c
// (GRAPH/PLACEMENT/SPLITS/ALLOC records from scheduler events).
#ifndef TG_TRACE_RECORDER_IMPL_H
#define TG_TRACE_RECORDER_IMPL_H

#include "core/grow.h"     // the engine's private helpers (engine/core)
#include "core/ptrmap.h"
#include "tg/observe.h"
#include "tg/trace.h"

#include <pthread.h>

#define REC_MAX_SCHEDS 32

struct rec_sched {                 // what the recorder knows of one scheduler
    uint64_t            sched_id;
    struct tg_sched *   sched;
    bool                written;   // SCHED record written
    uint32_t            graph_id;  // current graph (UINT32_MAX: none yet)
    uint64_t            graph_seq;
    struct tg_graph *   graph;
    int                 n_nodes, n_leafs;
    int                 n_tensors; // nodes + leafs + extra (copies, outside sources)
    struct tg_tensor ** tensors;   // [n_tensors] in trace index order
    size_t              cap_tensors;
    struct tg_ptrmap    index;     // tensor pointer -> trace index
    uint32_t            compute_seq;
    uint64_t            t_node_begin;
    int                 next_node;  // first node of the current computation not yet recorded
    // The last full GRAPH / PLACEMENT / ALLOC records written for this
    // scheduler: later graphs that differ from them in few tensors are
    // written as deltas against them (base id 0: none yet).
    uint32_t            gbase_id, pbase_id, abase_id;
    struct tg_trace_tensor * gbase;   // [gbase_n]
    int                 gbase_n, gbase_nodes;
    struct tg_trace_placement * pbase;   // [pbase_n], texts in pbase_text
    char *              pbase_text;
    int                 pbase_n;
    struct tg_trace_alloc * abase;    // [abase_n]
    struct tg_trace_buffer abase_bufs[64];
    int                 abase_n, abase_nb;
    int32_t *           changed;      // scratch: changed indices
    size_t              cap_changed;
};
// Frees a scheduler state's buffers.
void tg_trace_rec_sched_free(struct rec_sched * s);

struct tg_trace_recorder {
    struct tg_trace_writer * w;
    struct tg_trace_options  opt;
    char *                   contents;   // owned copy of opt.contents
    char *                   note;
    struct tg_sched *        sched;      // NULL: global
    struct tg_observer       obs;
    struct tg_observer       host_obs;   // per-scheduler recorders: host access (global events)
    pthread_mutex_t          mu;
    uint32_t                 next_graph_id;
    uint32_t                 n_computes;      // computations begun
    uint32_t                 n_computes_done;
    struct rec_sched         scheds[REC_MAX_SCHEDS];
    int                      n_scheds;
    struct tg_ptrmap         uid_graph;  // tensor uid -> graph_id << 32 | index (latest graph)
    uint8_t *                scratch;    // device reads, gathered contents
    size_t                   scratch_cap;
    struct tg_trace_tensor * tt;         // GRAPH record under construction
    size_t                   tt_cap;
    struct tg_trace_recorder_stats stats;   // under mu
};

// Per-scheduler state for ev->sched (writes its SCHED record the first time).
struct rec_sched * tg_trace_rec_sched_state(struct tg_trace_recorder * r, struct tg_sched * sched, uint64_t sched_id);
// Records a newly placed graph (GRAPH, PLACEMENT, SPLITS) and makes it current.
void tg_trace_rec_graph_split(struct tg_trace_recorder * r, const struct tg_obs_split_event * ev);
// Records the allocation of the current graph (ALLOC).
void tg_trace_rec_graph_alloc(struct tg_trace_recorder * r, const struct tg_obs_alloc_event * ev);
// uid of the tensor owning t's memory (end of the view_src chain).
uint64_t tg_trace_rec_root_uid(const struct tg_tensor * t);
// Scratch of at least n bytes (NULL on OOM).
uint8_t * tg_trace_rec_scratch(struct tg_trace_recorder * r, size_t n);

#endif
