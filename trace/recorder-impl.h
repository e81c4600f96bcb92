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
#include <xxhash.h>

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
    uint8_t *           vd_pre;     // [vd_pre_cap]: node j's KV-cache writes taken out ahead (this computation)
    int                 vd_pre_cap;
    int32_t *           vd_cand;    // [n_vd_cand]: the nodes that may write memoized KV-cache views (their
    size_t              cap_vd_cand; //   output outside compute buffers), for vd_graph's nodes; a moved
    int                 n_vd_cand;  //   graph (the same nodes) takes them again instead of a pass over all
    const struct tg_graph * vd_graph;
    int                 vd_graph_nodes;
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
    // The tensors as the last graph's records saw them: a decode loop builds
    // the same graph again every token, in the same memory, and a graph whose
    // nodes, leafs, split copies and every listed tensor's sources are the
    // same keeps the tensor list (and index); only tensors whose struct
    // changed are encoded again.
    XXH128_hash_t *     seen_sum;     // [n_tensors]: fingerprints of the listed tensors' structs
    size_t              cap_seen_sum; //   (compact: the structs themselves are cold by the next token)
    uint64_t *          seen_links;   // [n_tensors]: fingerprints of their sources and view source
    size_t              cap_seen_links;
    struct tg_trace_tensor * cur;     // [n_tensors]: their GRAPH entries
    size_t              cap_cur;
    uint8_t *           differs;      // [n_tensors]: cur[i] differs from gbase[i]
    size_t              cap_differs;
    struct tg_tensor ** seen_copies;  // the split copies of the last split event, in event order
    size_t              cap_seen_copies;
    int                 n_seen_copies;
    bool                seen_ok;      // seen_*, cur, differs describe tensors[]
    uint32_t            list_gen;     // uid_graph generation of tensors[] (see the recorder)
    // scratch kept between graphs
    struct tg_trace_placement * pl;   // PLACEMENT entries under construction
    size_t              cap_pl;
    struct tg_trace_alloc * al;       // ALLOC entries under construction
    size_t              cap_al;
    struct tg_ptrmap    ainfo;        // tensor -> index of its allocation info in the event
    struct tg_tensor ** ainfo_keys;   // [ainfo_n]: the event's tensors ainfo was built from
    size_t              cap_ainfo_keys;
    int                 ainfo_n;
    bool                ainfo_ok;
    int *               steps;        // [steps_n]: user node of each allocation step
    struct tg_tensor ** steps_nodes;  // [steps_n]: the allocation graph's nodes they were mapped from
    size_t              cap_steps, cap_steps_nodes;
    int                 steps_n;
    uint32_t            steps_gen;    // list_gen they were mapped with
    bool                steps_ok;
    // A moved graph (the events' moved list: tg_sched_graph_moved) is the
    // last graph again but for the moved tensors: their GRAPH and ALLOC
    // entries are made again, the rest of the records repeat the last ones.
    bool                split_fast;   // the last split event's records are known: cur/differs, pl and pch, n_grads
    bool                alloc_fast;   // al[] holds the last ALLOC's entries, al_bufs/al_backend its buffers
    uint64_t            moved_seq;    // graph_seq of the last split event recorded as a move
    int32_t *           pch;          // the last placement's changes against pbase (n_pch; 0: pbase itself)
    size_t              cap_pch;
    int                 n_pch;
    int32_t *           mv;           // the moved tensors' indices, ascending (n_mv), for the list in mv_of (the engine's
    size_t              cap_mv;       //   array, the same every token; its entries in mv_keys)
    struct tg_tensor * const * mv_of;
    struct tg_tensor ** mv_keys;
    size_t              cap_mv_keys;
    int                 n_mv;
    int                 n_grads;      // GRADS pairs of the last graph
    int32_t *           ach;          // the last ALLOC's changes against abase (n_ach; 0: abase itself; -1: unknown)
    size_t              cap_ach;
    int                 n_ach;
    const struct tg_buffer * al_bufs[64];   // the last ALLOC's buffer list, in index order
    int                 al_backend[64];
    int                 al_nb;
};
// Frees a scheduler state's buffers.
void tg_trace_rec_sched_free(struct rec_sched * s);

#define REC_ITEM_FRAMES 400   // a RESULT and a SKETCH frame (checked in recorder-hasher.c)

// One evaluated node on its way into the trace: its EVAL record, where its
// bytes are, and what to compute over them.
struct vd_memo;
struct rec_item {
    struct tg_tensor *   t;
    struct tg_trace_eval e;
    const void *         data;       // host bytes (NULL: none readable)
    size_t               nb[4];      // their strides (t->nb; contiguous for a copy)
    bool                 contents;   // write a CONTENTS record too
    bool                 done;       // hash/summary already computed (device copies)
    bool                 sketched;   // sketch holds the node's SKETCH buckets
    bool                 pending;    // hashing thread: its EVAL says TG_TRACE_EVAL_PENDING, a RESULT follows
    bool                 lazy;       // hashing thread: in no compute buffer (the KV cache: its bytes
                                     // stay put for a while), hashed after the others
    int32_t              same;       // hashing thread: ring slot of an earlier item of the same
                                     // bytes whose results it copies (-1: none)
    int                  claim;      // hashing thread: who has the item (atomic; 0 queued, 1 the
                                     // thread, 2 the recorder copying its bytes aside)
    uint64_t             view_ns;    // time item_hash took for a view node (0 for others)
    float                sketch[TG_TRACE_SKETCH_N];
    uint32_t             sketch_scheme;   // 1, or 2 with the element-set digest
    bool                 vd;         // digested as a KV-cache view (element-set digest, viewdigest.h)
    bool                 takeout;    // hashing thread: not a node's record but node t's coming write,
                                     // taken out of the memoized views ahead (no record)
    struct vd_memo *     vdm;        //   with this memo (NULL: from scratch)
    uint64_t             vd_buf;     //   of the view's buffer (its id)
    uint32_t             n_frames;   // hashing thread: its RESULT (and SKETCH) record, framed
    uint8_t              frames[REC_ITEM_FRAMES];
};
struct tg_trace_recorder;
// Hash, summary and sketch of one item (thread-safe: reads its bytes only).
void tg_trace_rec_item_hash(const struct tg_trace_options * opt, struct rec_item * it);
// Results of `from` (same bytes) into `to`, keeping to's times.
void tg_trace_rec_item_copy(struct rec_item * to, const struct rec_item * from);
// Writes its EVAL (SKETCH, CONTENTS) records.
void tg_trace_rec_item_write(struct tg_trace_recorder * r, struct rec_item * it);
// Frames its RESULT and SKETCH records into it->frames (thread-safe): the
// hash and summary of an EVAL written with TG_TRACE_EVAL_PENDING.
void tg_trace_rec_item_frame_result(struct rec_item * it);

// ---- the hashing thread (recorder-hasher.c) ----------------------------------------
// The recorder puts items into a ring in node order, writing their EVAL
// records at once (a crash loses no node; those still to be hashed carry
// TG_TRACE_EVAL_PENDING); the thread hashes them (the KV-cache views last)
// and appends their RESULT records in ring order, in bursts while the engine
// computes. The recorder's side runs under its mutex.
#define REC_RING   256
#define REC_MARGIN 64             // free slots kept: an item's `same` stays in the ring until it is done
#define REC_ARENA  (1u << 20)     // bytes of copies set aside (an item of more than a quarter is waited for)
struct rec_hasher {
    // the thread's (its counters on their own cache lines: the recorder polls them)
    uint64_t         written __attribute__((aligned(64)));   // items whose RESULT is written (atomic)
    uint64_t         busy_ns __attribute__((aligned(64)));   // hashing and appending time (atomic; a line
    uint64_t         view_ns;     // of it, hashing views (atomic)          apart: `written` changes seldom)
    uint8_t          done[REC_RING] __attribute__((aligned(64)));   // item hashed (atomic)
    uint8_t          released[REC_RING];   // its bytes copied by the thread: the source may change (atomic)
    uint8_t *        own;         // the thread's copies of the items it hashes
    size_t           own_cap;
    // the recorder's
    uint64_t         head __attribute__((aligned(64)));      // items put (atomic)
    uint8_t *        arena;       // a node about to overwrite bytes an unhashed item reads copies
    uint64_t         a_head;      // them here first (logical order); positions count up, it wraps
    uintptr_t        lo[REC_RING], hi[REC_RING];   // bytes each item reads in place
    uint64_t         a_at[REC_RING], a_end[REC_RING];   // its copy in the arena (a_end 0: none)
    struct tg_trace_recorder * r;
    // both
    bool             sleeping __attribute__((aligned(64)));  // the thread waits on `wake`
    bool             waiting;     // the recorder waits on `progress`
    bool             stop;
    bool             hold;        // hash_thread 2: the thread works only while kicked
    bool             kick;        // the recorder waits for it
    bool             active;      // a computation is under way (the thread spins longer)
    pthread_t        thread;
    pthread_mutex_t  mu;
    pthread_cond_t   wake, progress;
    struct rec_item  ring[REC_RING] __attribute__((aligned(64)));
};
// Starts the thread; false (nothing started) if it cannot.
bool tg_trace_rec_hasher_start(struct rec_hasher * h, struct tg_trace_recorder * r);
void tg_trace_rec_hasher_stop(struct rec_hasher * h);
// Free ring slots from the head on, in a row (*max: how many, at most the
// value passed); waits for the thread to write older items where needed.
struct rec_item * tg_trace_rec_hasher_slots(struct tg_trace_recorder * r, int * max);
// Queues the n items prepared in those slots (same_as: index among them of
// an item of the same bytes, or -1).
void tg_trace_rec_hasher_put(struct tg_trace_recorder * r, const int * same_as, int n);
// A computation begins (the thread is woken) or ends.
void tg_trace_rec_hasher_active(struct tg_trace_recorder * r, bool on);
// Waits until every queued item is written.
void tg_trace_rec_hasher_drain(struct tg_trace_recorder * r);
// Before bytes [lo, hi) are written: every unhashed item reading them is
// copied aside (or, where the thread has it or there is no room, waited for).
void tg_trace_rec_hasher_before_write(struct tg_trace_recorder * r, uintptr_t lo, uintptr_t hi);

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
    // tensor uid -> gen << 32 | index in the latest tensor list holding it;
    // gen_graph[gen]: the latest graph with that list (a graph that reuses
    // its scheduler's list updates one entry, not one per tensor)
    struct tg_ptrmap         uid_graph;
    uint32_t *               gen_graph;
    size_t                   gen_cap;
    uint32_t                 n_gens;
    uint32_t                 last_put_gen;   // the generation put last (a list reused after another
                                             // list was put may have lost tensors to it: its own put again)
    struct rec_hasher *      hasher;     // the hashing thread (NULL: none started)
    struct vd_memo *         vd;         // element-set digests of KV-cache views kept up to date
                                         // (NULL: recomputed every time, opt.view_digest 1)
    bool                     async;      // the computations under way hash on it
    int                      n_active;   // computations begun and not ended
    int                      n_cpus;     // tg_cpu_n_available() as last read (at most once a second)
    // The computation's last node, hashed in the callback (its bytes contiguous, untouched since:
    // out_ok until the next computation or host write): a host read of all of it (the logits)
    // takes its hash instead of reading the bytes again.
    const struct tg_tensor * out_t;
    const void *             out_data;
    size_t                   out_size;
    uint64_t                 out_hash;
    bool                     out_ok;
    uint64_t                 n_cpus_ns;
    uint8_t *                scratch;    // device reads, gathered contents
    size_t                   scratch_cap;
    struct tg_trace_recorder_stats stats;   // under mu
};

// The graph id and index a uid_graph value stands for.
static inline void tg_trace_rec_uid_where(const struct tg_trace_recorder * r, uint64_t v, int32_t * graph_id,
                                          int32_t * index) {
    uint32_t gen = (uint32_t) (v >> 32);
    *graph_id = gen < r->n_gens ? (int32_t) r->gen_graph[gen] : -1;
    *index = (int32_t) (uint32_t) v;
}

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
