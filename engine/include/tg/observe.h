// tg/observe.h - observers: structured events from the scheduler, the graph
// allocator and the host tensor API.
//
// An observer is a struct of optional callbacks plus a user pointer. Attach it
// to one scheduler (tg_sched_add_observer) or globally
// (tg_observe_attach_global: events of every scheduler and all host access).
// Several observers may be attached; each gets every event it has a callback
// for, in attachment order (global observers after the scheduler's own).
//
// Cost: with no observer attached, emitting an event is one predictable
// branch. Node events (on_node_begin/on_node_end) are produced only while an
// attached observer has one of those callbacks; otherwise the backends
// compute whole splits without per-node synchronisation.
//
// Pointers inside events are valid only during the callback. Callbacks run on
// the thread that called the engine; they must not call back into the same
// scheduler (reading tensors with tg_backend_tensor_get is allowed; those
// reads are themselves reported).
//
// Automatic attachment: the first tg_sched_new() of a process calls
//     void tg_observe_env_hook(void);
// if some linked library defines it (it is declared weak here). The trace
// library defines it to attach a recorder when the environment variable
// TGDB_TRACE is set. With static libraries the object defining the hook must
// be linked in (referenced, or linked with --whole-archive).
#ifndef TG_OBSERVE_H
#define TG_OBSERVE_H

#include "tg/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

void tg_observe_env_hook(void) __attribute__((weak));

// Monotonic clock in nanoseconds (the clock all events use).
uint64_t tg_observe_now_ns(void);

enum tg_obs_sched_what { TG_OBS_SCHED_NEW = 0, TG_OBS_SCHED_FREE };

struct tg_obs_sched_event {            // on_sched
    enum tg_obs_sched_what what;
    struct tg_sched *      sched;
    uint64_t               sched_id;
    int                    n_backends;
    struct tg_backend * const * backends;   // priority order, last = fallback
};

struct tg_obs_split_event {            // on_graph_split (after placement and splitting)
    struct tg_sched *  sched;
    uint64_t           sched_id;
    uint64_t           graph_seq;      // 1 for the first graph of this scheduler, ...
    struct tg_graph *  graph;          // the user's graph
    int                n_backends;
    struct tg_backend * const * backends;
    const struct tg_sched_placement * nodes;   // [graph->n_nodes]
    const struct tg_sched_placement * leafs;   // [graph->n_leafs]
    int                n_splits;
    const struct tg_sched_split * splits;      // [n_splits]
    int                n_copies;
    // Set by tg_sched_graph_moved with a list: this graph is the one of the
    // scheduler's last events (graph_seq - 1) again, placed, split and
    // allocated alike, except that these tensors' data and view_offs (a
    // VIEW's offset parameter with them, and so their allocation offsets)
    // changed. NULL: anything may have changed.
    struct tg_tensor * const * moved;
    int                n_moved;
};

struct tg_obs_alloc_event {            // on_graph_alloc (after intermediates are placed)
    struct tg_sched *  sched;          // NULL for a bare gallocr (not reported today)
    uint64_t           sched_id;
    uint64_t           graph_seq;
    struct tg_graph *  graph;          // the user's graph
    bool               replanned;      // a new plan was made for this graph
    int                n_buffers;
    const struct tg_alloc_buffer_info * buffers;  // [n_buffers]
    const int *        buffer_backend; // [n_buffers]: first backend using that buffer
    int                n_tensors;
    const struct tg_alloc_tensor_info * tensors;  // [n_tensors]; steps index alloc_graph's nodes
    struct tg_graph *  alloc_graph;    // the scheduler's graph copy (copies + split nodes)
    // Set by tg_sched_graph_moved with a list: this graph is the one of the
    // scheduler's last events (graph_seq - 1) again, placed, split and
    // allocated alike, except that these tensors' data and view_offs (a
    // VIEW's offset parameter with them, and so their allocation offsets)
    // changed. NULL: anything may have changed.
    struct tg_tensor * const * moved;
    int                n_moved;
};

struct tg_obs_compute_event {          // on_compute_begin / on_compute_end
    struct tg_sched *  sched;
    uint64_t           sched_id;
    uint64_t           graph_seq;
    struct tg_graph *  graph;
    uint64_t           t_ns;           // tg_observe_now_ns()
    enum tg_status     status;         // on_compute_end only
};

struct tg_obs_node_event {             // on_node_begin / on_node_end
    struct tg_sched *  sched;
    uint64_t           sched_id;
    uint64_t           graph_seq;
    struct tg_tensor * node;
    int                index;          // index in the user's graph
    int                split;
    int                backend;        // index into the scheduler's backends
    uint64_t           t_ns;           // begin or end time
    bool               deferred;       // delivered after the node's run (node_events_deferrable):
                                       // t_ns is then the device's time, earlier than now
    // Runs fn(i, arg) for every i in [0, n) and returns when all have run,
    // on the backend's threads that wait between nodes (the CPU pool) where
    // it has them, else on the caller's. Only during this callback; fn must
    // be thread-safe. Lets an observer spread per-node work (hashing).
    void (*parallel)(const struct tg_obs_node_event * ev, int n, void (*fn)(int i, void * arg), void * arg);
    void *             parallel_ctx;   // for parallel: the backend
};

enum tg_obs_io_what { TG_OBS_IO_SET = 0, TG_OBS_IO_GET, TG_OBS_IO_MEMSET, TG_OBS_IO_COPY };

struct tg_obs_tensor_io {              // on_tensor_set / on_tensor_get (host API)
    enum tg_obs_io_what what;          // SET/MEMSET/COPY (dst) go to on_tensor_set
    const struct tg_tensor * tensor;   // NULL: a MEMSET of the whole buffer (tg_buffer_clear;
                                       // offset 0, size: the buffer's)
    const struct tg_buffer * buffer;   // buffer holding the bytes
    size_t             offset;         // within the tensor's data
    size_t             size;
    const void *       data;           // host data written or read (NULL for memset)
    uint64_t           t_ns;
};

struct tg_obs_marker {                 // on_marker
    struct tg_sched *  sched;          // may be NULL
    uint64_t           sched_id;       // 0 without a scheduler
    const char *       name;           // e.g. "decode"
    const char *       text;           // free-form "key=value ..." (e.g. "n_tokens=32 pos=0")
    uint64_t           t_ns;
};

struct tg_observer {
    void * user;
    void (*on_sched)(const struct tg_obs_sched_event * ev, void * user);
    void (*on_graph_split)(const struct tg_obs_split_event * ev, void * user);
    void (*on_graph_alloc)(const struct tg_obs_alloc_event * ev, void * user);
    void (*on_compute_begin)(const struct tg_obs_compute_event * ev, void * user);
    void (*on_compute_end)(const struct tg_obs_compute_event * ev, void * user);
    void (*on_node_begin)(const struct tg_obs_node_event * ev, void * user);
    void (*on_node_end)(const struct tg_obs_node_event * ev, void * user);
    void (*on_tensor_set)(const struct tg_obs_tensor_io * ev, void * user);
    void (*on_tensor_get)(const struct tg_obs_tensor_io * ev, void * user);
    void (*on_marker)(const struct tg_obs_marker * ev, void * user);
    // A host access (tg_backend_tensor_set/get/memset/copy) refused because
    // the tensor has no memory (TG_ERR_NO_BUFFER): ev->buffer and ev->data
    // are NULL; tg_last_error() holds the engine's explanation. Global only.
    void (*on_access_error)(const struct tg_obs_tensor_io * ev, void * user);
    // true: this observer's node events may come late: after the backend ran
    // the whole run of nodes, in order, each with the node's bytes as they
    // were when it finished (tg_backend_tensor_get of the node or of the views
    // recorded with it reads that snapshot) and t_ns from the device's clock.
    // A GPU backend then runs a split without a host round trip per node.
    // Node events of all attached observers are deferred only when every one
    // that has them says true (a trace recorder does; a profiler needing
    // host times does not).
    bool node_events_deferrable;
    // Optional, with node_events_deferrable: asked before each run of nodes
    // on backend be: false keeps that run's node events on time (an observer
    // that reads nodes' host memory from another thread meanwhile, which a
    // node computed ahead of its place could overwrite). NULL: always true.
    bool (*node_events_deferrable_on)(const struct tg_backend * be, void * user);
};

#define TG_OBSERVE_MAX 8

// Attaches obs (copied) to every scheduler and all host access. Returns
// TG_ERR_NOMEM when TG_OBSERVE_MAX are attached. Not thread-safe against
// concurrent emission: attach before computing.
enum tg_status tg_observe_attach_global(const struct tg_observer * obs);
// Detaches the global observer equal to obs (same callbacks and user). No-op if absent.
void tg_observe_detach_global(const struct tg_observer * obs);
int  tg_observe_n_global(void);

// Emits a marker to the global observers and, when sched is not NULL, to
// that scheduler's observers. text is printf-formatted ("n_tokens=%d pos=%d").
void tg_observe_marker(struct tg_sched * sched, const char * name, const char * fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif // TG_OBSERVE_H
