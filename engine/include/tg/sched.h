// tg/sched.h - the backend scheduler: places every node of a graph on one of
// several backends, splits the graph into runs of nodes on the same backend,
// copies split inputs between buffer types, allocates intermediates with the
// graph allocator and computes the splits.
//
// Backends are given in priority order; the last one is the fallback (the
// CPU). Placement runs in passes and records, for every node and leaf, the
// backend and the CAUSE of that decision:
//   pass 1  tensors already in a buffer (PREALLOCATED, VIEW_SRC) and ops that
//           read a weight in a weights-usage buffer (WEIGHT_BUFFER), unless a
//           higher-priority backend asks for the op (OFFLOAD); user choices
//           (USER) are kept;
//   pass 2  assignments expand to neighbouring nodes that the backend
//           supports: first non-fallback backends down and up, then all
//           (EXPAND_DOWN, EXPAND_UP);
//   pass 3  nodes placed by expansion move to a higher-priority backend with
//           the same buffer type that supports the op and its inputs
//           (UPGRADE); unplaced nodes go to the backend supporting the op
//           and most of their inputs (SRC, or UNSUPPORTED when a
//           higher-priority backend had to be skipped);
//   pass 4  the rest: views from their source (VIEW_SRC), leafs from their
//           first consumer (DST), anything left on the fallback (FALLBACK).
// Splits are maximal runs of consecutive nodes on one backend (view ops do
// not break runs). A split's inputs are tensors it reads that come from
// elsewhere; an input whose buffer type the split's backend cannot use is
// copied into the split's buffer type before the split runs.
//
// Life cycle (as ggml_backend_sched): tg_sched_new, tg_sched_reserve(worst
// case), then per graph tg_sched_alloc_graph / tg_sched_graph_compute and
// tg_sched_reset. One scheduler serves many graphs with the same compute
// buffers: the intermediates of a graph are invalid after the next graph is
// allocated (the allocation data says who owns the bytes now).
#ifndef TG_SCHED_H
#define TG_SCHED_H

#include "tg/alloc.h"
#include "tg/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_SCHED_MAX_BACKENDS 8

struct tg_sched;
struct tg_observer;

// Why a node or leaf is on its backend. Append-only.
enum tg_cause {  // the list with meanings: tg/causes.def
#define TG_CAUSE_DEF(e, name) TG_CAUSE_##e,
#include "tg/causes.def"
#undef TG_CAUSE_DEF
    TG_CAUSE_COUNT
};
// "user", "preallocated", "weight_buffer", ... ("?" if out of range).
const char * tg_cause_name(enum tg_cause cause);

#define TG_SCHED_DETAIL_MAX 128

struct tg_sched_placement {
    struct tg_tensor * tensor;
    int                backend;   // index into the scheduler's backends (-1: none)
    enum tg_cause      cause;
    int                pass;      // 1..4 (0 for USER)
    char               detail[TG_SCHED_DETAIL_MAX]; // e.g. "weight token_embd.weight is in buffer CPU (usage weights)"
};

struct tg_sched_split {
    int                 backend;      // index into the scheduler's backends
    int                 i_start;      // nodes [i_start, i_end) of the user graph
    int                 i_end;
    int                 n_inputs;
    struct tg_tensor ** inputs;       // tensors read by the split, produced elsewhere
    struct tg_tensor ** copies;       // per input: its copy in this split's buffer type,
                                      // or NULL when the backend reads it in place
    int                 n_copies;     // inputs with a copy
    size_t              copy_bytes;   // bytes those copies move per compute
    uint64_t            copy_ns;      // time the last compute spent copying them
};

// New scheduler over backends[0..n) (priority order, the last is the
// fallback, usually CPU; 1 <= n <= TG_SCHED_MAX_BACKENDS). graph_size: the
// most nodes a graph may have (TG_DEFAULT_GRAPH_SIZE if <= 0). The backends
// stay owned by the caller. NULL + last error on failure. The first call in a
// process calls tg_observe_env_hook() if a library defines it (tg/observe.h).
struct tg_sched * tg_sched_new(struct tg_backend ** backends, int n_backends, int graph_size);
void     tg_sched_free(struct tg_sched * sched);   // NULL is a no-op
uint64_t tg_sched_id(const struct tg_sched * sched); // process-unique, 1, 2, ...

// Places and plans g as the worst case, allocating the compute buffers.
// Nothing is computed and g's tensors are not placed; g may be freed after
// (the placement accessors then report no graph until the next alloc).
enum tg_status tg_sched_reserve(struct tg_sched * sched, struct tg_graph * g);
// Places g (passes, splits), allocates its intermediates. Replaces sources of
// nodes that read a copied split input by the copy (undone by reset).
enum tg_status tg_sched_alloc_graph(struct tg_sched * sched, struct tg_graph * g);
// g, allocated last, whose caller moved some views over memory the
// allocator does not plan (a KV cache's store views), counts as a new graph
// with the same placement and allocation: observers get its split and
// alloc events again (a new graph_seq), as after tg_sched_alloc_graph, at
// a fraction of its cost. moved[0..n_moved) names every tensor whose data
// and view_offs (a VIEW's offset parameter with them) the caller changed
// (nothing else of g changed): the events
// pass the list on, so observers update those entries alone (NULL: the
// caller does not say; observers compare everything). When g is not the
// graph allocated last (or the scheduler was reset), tg_sched_alloc_graph(sched, g).
enum tg_status tg_sched_graph_moved(struct tg_sched * sched, struct tg_graph * g, struct tg_tensor * const * moved,
                                    int n_moved);
// Computes g, allocating it first if it is not the graph last allocated.
// Returns TG_ERR_ABORTED when the eval callback stopped it.
enum tg_status tg_sched_graph_compute(struct tg_sched * sched, struct tg_graph * g);
// Forgets the placement of the last graph (user assignments included) and
// restores replaced sources. Call before building a different graph.
void     tg_sched_reset(struct tg_sched * sched);
void     tg_sched_synchronize(struct tg_sched * sched);

// Pins t (node or leaf) to backend for the next placement (cause USER).
enum tg_status tg_sched_set_tensor_backend(struct tg_sched * sched, struct tg_tensor * t,
                                           struct tg_backend * backend);
// Backend chosen for t in the last placement (or pinned), or NULL.
struct tg_backend * tg_sched_get_tensor_backend(struct tg_sched * sched, const struct tg_tensor * t);

int                 tg_sched_n_backends(const struct tg_sched * sched);
struct tg_backend * tg_sched_get_backend(const struct tg_sched * sched, int i);
int                 tg_sched_backend_index(const struct tg_sched * sched, const struct tg_backend * b); // -1 if absent
// The compute buffer size of backend i's buffer type after reserve/alloc.
size_t              tg_sched_get_buffer_size(const struct tg_sched * sched, int i);

// ---- placement and splits of the last graph --------------------------------
int  tg_sched_get_n_splits(const struct tg_sched * sched);
int  tg_sched_get_n_copies(const struct tg_sched * sched);   // inputs copied, all splits
const struct tg_sched_split * tg_sched_get_split(const struct tg_sched * sched, int i);
// Placement of a node or leaf of the last graph, or NULL.
const struct tg_sched_placement * tg_sched_get_placement(const struct tg_sched * sched, const struct tg_tensor * t);
int  tg_sched_n_node_placements(const struct tg_sched * sched);   // = graph n_nodes
int  tg_sched_n_leaf_placements(const struct tg_sched * sched);   // = graph n_leafs
const struct tg_sched_placement * tg_sched_node_placement(const struct tg_sched * sched, int i);
const struct tg_sched_placement * tg_sched_leaf_placement(const struct tg_sched * sched, int i);
// Index of the split that computes node i of the last graph, -1 if none.
int  tg_sched_node_split(const struct tg_sched * sched, int i);
// The graph allocator (allocation data of the last graph: tg/alloc.h). Its
// graph is the scheduler's copy: split input copies, then each split's nodes.
struct tg_gallocr * tg_sched_get_gallocr(const struct tg_sched * sched);
// The graph last allocated (the user's), NULL if none.
struct tg_graph *   tg_sched_get_graph(const struct tg_sched * sched);
uint64_t            tg_sched_graph_seq(const struct tg_sched * sched); // graphs allocated so far

// ---- eval callback ------------------------------------------------------------
// Called with ask=true for each node before its split runs: return true to
// observe it. Unobserved nodes run together; an observed node is computed,
// synchronised and passed again with ask=false: returning false then stops
// the computation (tg_sched_graph_compute returns TG_ERR_ABORTED).
typedef bool (*tg_sched_eval_cb)(struct tg_tensor * t, bool ask, void * user);
void tg_sched_set_eval_callback(struct tg_sched * sched, tg_sched_eval_cb cb, void * user);

// ---- debug: poisoning freed memory ------------------------------------------------
// With poison on, right after each node the scheduler fills the bytes the
// allocator takes back at that node (tensors whose last use it was:
// tg_alloc_tensor_info.released) with 0xFF (a NaN in every float type), so a
// stale read of an intermediate fails loudly instead of returning plausible
// values. Host buffers only; computes with per-node hooks (slower).
void tg_sched_set_poison(struct tg_sched * sched, bool on);
bool tg_sched_get_poison(const struct tg_sched * sched);

// ---- observers (tg/observe.h) -------------------------------------------------
// Attaches an observer to this scheduler (copied; up to 8). TG_ERR_NOMEM if full.
enum tg_status tg_sched_add_observer(struct tg_sched * sched, const struct tg_observer * obs);
// Detaches the observer added with this user pointer and callbacks. No-op if absent.
void tg_sched_remove_observer(struct tg_sched * sched, const struct tg_observer * obs);
// Observers attached to this scheduler (not counting the global ones); 0 for NULL.
int tg_sched_n_observers(const struct tg_sched * sched);

#ifdef __cplusplus
}
#endif
#endif // TG_SCHED_H
