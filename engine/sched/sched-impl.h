// sched-impl.h - the scheduler's private state, shared by sched.c (life
// cycle, accessors), sched-place.c (placement passes, splits, copies),
// sched-compute.c (compute, eval callback, events) and observe.c.
#ifndef TG_SCHED_IMPL_H
#define TG_SCHED_IMPL_H

#include "core/grow.h"
#include "core/ptrmap.h"
#include "sched/backend-impl.h"

struct tg_src_repl { struct tg_tensor * node; int j; struct tg_tensor * orig; };

// The detail text of a placement not yet written: its format (%s and %d
// only) and arguments. fmt NULL: nothing waits (detail is what it says).
#define TG_SCHED_NOTE_ARGS 6
struct tg_sched_note {
    const char * fmt;
    int          n;
    unsigned     ints;                       // bit i: argument i is an int
    union { const char * s; int d; } a[TG_SCHED_NOTE_ARGS];
};

struct tg_sched {
    uint64_t                id;
    int                     n_backends;
    struct tg_backend *     backends[TG_SCHED_MAX_BACKENDS];
    struct tg_buffer_type * bufts[TG_SCHED_MAX_BACKENDS];
    struct tg_gallocr *     galloc;
    int                     graph_size;

    // user pins (tensor -> backend), kept until reset
    struct tg_ptrmap        pins;

    // last graph
    struct tg_graph *       graph;
    bool                    allocated;     // graph placed and allocated
    uint64_t                graph_seq;
    struct tg_ptrmap        where;         // tensor -> node index, or -(leaf index + 2)
    struct tg_sched_placement * node_pl;   // [n_nodes]
    struct tg_sched_placement * leaf_pl;   // [n_leafs]
    size_t                  cap_nodes, cap_leafs;
    // A placement's detail text is written when someone reads it (the
    // accessors, the split event): until then its format and arguments wait
    // here (sched-place.c, tg_sched_fill_detail).
    struct tg_sched_note *  node_note;     // [n_nodes], cap_nodes
    struct tg_sched_note *  leaf_note;     // [n_leafs]
    size_t                  cap_leaf_notes;
    int *                   node_split;    // [n_nodes]

    struct tg_sched_split * splits;
    int                     n_splits;
    size_t                  cap_splits;
    struct tg_tensor **     io;            // inputs then copies of all splits
    int                     n_io;
    size_t                  cap_io;
    int                     n_copies;

    struct tg_context *     copy_ctx;      // copies of split inputs
    struct tg_src_repl *    repl;
    int                     n_repl;
    size_t                  cap_repl;

    // the graph given to the allocator: per split its copies then its nodes
    struct tg_graph         gcopy;
    size_t                  cap_gc_nodes, cap_gc_leafs;
    int *                   gc_node_ids;
    int *                   gc_leaf_ids;
    int *                   gc_user_index; // [gcopy.n_nodes]: user node index, -1 for copies
    bool                    replanned;
    struct tg_tensor * const * moved;   // during tg_sched_graph_moved's events: what the caller moved
    int                     n_moved;

    bool                    poison;
    int *                   poison_start;  // [gcopy steps + 1] offsets into poison_idx
    int *                   poison_idx;    // allocator tensor-info indices, grouped by last_step
    int *                   step_of_node;  // [user n_nodes] allocator step of each user node
    size_t                  cap_poison_steps, cap_poison_idx, cap_step_of;

    tg_sched_eval_cb        eval_cb;
    void *                  eval_user;

    int                     n_obs;
    struct tg_observer      obs[TG_OBSERVE_MAX];
};

// sched-place.c: passes 1-4, splits, copies, the allocator's graph.
enum tg_status tg_sched_split_graph(struct tg_sched * sched, struct tg_graph * g);
// Writes p's detail text if it is still waiting (p: one of sched's node or
// leaf placements); returns p. The accessors and the split event call it.
struct tg_sched_placement * tg_sched_fill_detail(const struct tg_sched * sched, const struct tg_sched_placement * p);
// sched.c: undoes source replacement and forgets the copies.
void tg_sched_restore_srcs(struct tg_sched * sched);
// sched-compute.c
enum tg_status tg_sched_compute_splits(struct tg_sched * sched);
void tg_sched_emit_split(struct tg_sched * sched);
void tg_sched_emit_alloc(struct tg_sched * sched);
void tg_sched_emit_sched(struct tg_sched * sched, enum tg_obs_sched_what what);

#endif
