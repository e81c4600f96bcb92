// sched.c - scheduler life cycle, allocation, reset and accessors.
#include "sched/sched-impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// ---- life cycle ----------------------------------------------------------------------

static atomic_uint_fast64_t next_sched_id = 1;

struct tg_sched * tg_sched_new(struct tg_backend ** backends, int n_backends, int graph_size) {
    tg_obs_call_env_hook_once();
    if (!backends || n_backends < 1 || n_backends > TG_SCHED_MAX_BACKENDS) {
        tg_error(TG_ERR_INVALID_ARG, "tg_sched_new: need 1..%d backends, got %d", TG_SCHED_MAX_BACKENDS, n_backends);
        return NULL;
    }
    for (int i = 0; i < n_backends; i++)
        if (!backends[i]) { tg_error(TG_ERR_INVALID_ARG, "tg_sched_new: backend %d is NULL", i); return NULL; }
    struct tg_sched * s = calloc(1, sizeof(*s));
    if (!s) { tg_error(TG_ERR_NOMEM, "tg_sched_new: out of memory"); return NULL; }
    s->n_backends = n_backends;
    for (int i = 0; i < n_backends; i++) {
        s->backends[i] = backends[i];
        s->bufts[i] = tg_backend_get_default_buffer_type(backends[i]);
    }
    s->graph_size = graph_size > 0 ? graph_size : TG_DEFAULT_GRAPH_SIZE;
    s->galloc = tg_gallocr_new_n(s->bufts, n_backends);
    if (!s->galloc) { free(s); return NULL; }
    s->id = atomic_fetch_add(&next_sched_id, 1);
    tg_sched_emit_sched(s, TG_OBS_SCHED_NEW);
    return s;
}

void tg_sched_free(struct tg_sched * s) {
    if (!s) return;
    tg_sched_emit_sched(s, TG_OBS_SCHED_FREE);
    tg_sched_restore_srcs(s);
    tg_context_free(s->copy_ctx);
    tg_gallocr_free(s->galloc);
    tg_ptrmap_free(&s->pins);
    tg_ptrmap_free(&s->where);
    free(s->node_pl); free(s->leaf_pl); free(s->node_split);
    free(s->node_note); free(s->leaf_note);
    free(s->splits); free(s->io); free(s->repl);
    free(s->gcopy.nodes); free(s->gcopy.leafs);
    free(s->gc_node_ids); free(s->gc_leaf_ids); free(s->gc_user_index);
    free(s->poison_start); free(s->poison_idx); free(s->step_of_node);
    free(s);
}

uint64_t tg_sched_id(const struct tg_sched * s) { return s ? s->id : 0; }

void tg_sched_restore_srcs(struct tg_sched * s) {
    for (int i = s->n_repl - 1; i >= 0; i--) s->repl[i].node->src[s->repl[i].j] = s->repl[i].orig;
    s->n_repl = 0;
}

enum tg_status tg_sched_reserve(struct tg_sched * s, struct tg_graph * g) {
    if (!s || !g) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_reserve: NULL scheduler or graph");
    enum tg_status st = tg_sched_split_graph(s, g);
    if (st == TG_OK)
        st = tg_gallocr_reserve_n(s->galloc, &s->gcopy, s->gc_node_ids, s->gc_leaf_ids);
    tg_sched_reset(s);
    s->graph = NULL;   // the worst-case graph is not "the last graph": callers often free it next
    return st;
}

enum tg_status tg_sched_alloc_graph(struct tg_sched * s, struct tg_graph * g) {
    if (!s || !g) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_alloc_graph: NULL scheduler or graph");
    tg_sched_restore_srcs(s);
    s->allocated = false;
    enum tg_status st = tg_sched_split_graph(s, g);
    if (st != TG_OK) return st;
    int plans = tg_gallocr_n_plans(s->galloc);
    st = tg_gallocr_alloc_graph_n(s->galloc, &s->gcopy, s->gc_node_ids, s->gc_leaf_ids);
    if (st != TG_OK) return st;
    s->replanned = tg_gallocr_n_plans(s->galloc) != plans;
    s->allocated = true;
    s->graph_seq++;
    if (__builtin_expect(s->n_obs != 0 || tg_obs_n_global != 0, 0)) {
        tg_sched_emit_split(s);
        tg_sched_emit_alloc(s);
    }
    return TG_OK;
}

enum tg_status tg_sched_graph_moved(struct tg_sched * s, struct tg_graph * g, struct tg_tensor * const * moved,
                                    int n_moved) {
    if (!s || !g) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_graph_moved: NULL scheduler or graph");
    if (n_moved < 0 || (n_moved > 0 && !moved))
        return tg_error(TG_ERR_INVALID_ARG, "tg_sched_graph_moved: %d moved tensors%s", n_moved, moved ? "" : " but no list");
    if (!s->allocated || s->graph != g) return tg_sched_alloc_graph(s, g);
    s->replanned = false;
    s->graph_seq++;
    if (__builtin_expect(s->n_obs != 0 || tg_obs_n_global != 0, 0)) {
        tg_gallocr_refresh_offsets(s->galloc);   // the moved views' offsets, as observers read them
        s->moved = moved;
        s->n_moved = moved ? n_moved : 0;
        tg_sched_emit_split(s);
        tg_sched_emit_alloc(s);
        s->moved = NULL;
        s->n_moved = 0;
    }
    return TG_OK;
}

enum tg_status tg_sched_graph_compute(struct tg_sched * s, struct tg_graph * g) {
    if (!s || !g) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_graph_compute: NULL scheduler or graph");
    if (!s->allocated || s->graph != g) {
        enum tg_status st = tg_sched_alloc_graph(s, g);
        if (st != TG_OK) return st;
    }
    return tg_sched_compute_splits(s);
}

void tg_sched_reset(struct tg_sched * s) {
    if (!s) return;
    tg_sched_restore_srcs(s);
    tg_ptrmap_reset(&s->pins, 0);
    s->allocated = false;
}

void tg_sched_synchronize(struct tg_sched * s) {
    for (int i = 0; s && i < s->n_backends; i++) tg_backend_synchronize(s->backends[i]);
}

// ---- user pins and accessors ------------------------------------------------------------

int tg_sched_backend_index(const struct tg_sched * s, const struct tg_backend * b) {
    for (int i = 0; s && i < s->n_backends; i++) if (s->backends[i] == b) return i;
    return -1;
}

enum tg_status tg_sched_set_tensor_backend(struct tg_sched * s, struct tg_tensor * t, struct tg_backend * b) {
    if (!s || !t) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_set_tensor_backend: NULL scheduler or tensor");
    int i = tg_sched_backend_index(s, b);
    if (i < 0) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_set_tensor_backend: backend %s is not in this scheduler", tg_backend_name(b));
    return tg_ptrmap_put(&s->pins, tg_ptrmap_key(t), i);
}

const struct tg_sched_placement * tg_sched_get_placement(const struct tg_sched * s, const struct tg_tensor * t) {
    if (!s || !s->graph) return NULL;
    int w = (int) tg_ptrmap_find(&s->where, t, -1);
    if (w >= 0) return w < s->graph->n_nodes ? tg_sched_fill_detail(s, &s->node_pl[w]) : NULL;
    if (w <= -2 && -w - 2 < s->graph->n_leafs) return tg_sched_fill_detail(s, &s->leaf_pl[-w - 2]);
    return NULL;
}

struct tg_backend * tg_sched_get_tensor_backend(struct tg_sched * s, const struct tg_tensor * t) {
    if (!s || !t) return NULL;
    const struct tg_sched_placement * p = tg_sched_get_placement(s, t);
    if (p && p->backend >= 0) return s->backends[p->backend];
    int pin = (int) tg_ptrmap_find(&s->pins, t, -1);
    return pin >= 0 ? s->backends[pin] : NULL;
}

int tg_sched_n_backends(const struct tg_sched * s) { return s ? s->n_backends : 0; }

struct tg_backend * tg_sched_get_backend(const struct tg_sched * s, int i) {
    return s && i >= 0 && i < s->n_backends ? s->backends[i] : NULL;
}

size_t tg_sched_get_buffer_size(const struct tg_sched * s, int i) {
    return s ? tg_gallocr_get_buffer_size(s->galloc, i) : 0;
}

int tg_sched_get_n_splits(const struct tg_sched * s) { return s && s->graph ? s->n_splits : 0; }
int tg_sched_get_n_copies(const struct tg_sched * s) { return s && s->graph ? s->n_copies : 0; }

const struct tg_sched_split * tg_sched_get_split(const struct tg_sched * s, int i) {
    return s && s->graph && i >= 0 && i < s->n_splits ? &s->splits[i] : NULL;
}

int tg_sched_n_node_placements(const struct tg_sched * s) { return s && s->graph ? s->graph->n_nodes : 0; }
int tg_sched_n_leaf_placements(const struct tg_sched * s) { return s && s->graph ? s->graph->n_leafs : 0; }

const struct tg_sched_placement * tg_sched_node_placement(const struct tg_sched * s, int i) {
    return i >= 0 && i < tg_sched_n_node_placements(s) ? tg_sched_fill_detail(s, &s->node_pl[i]) : NULL;
}

const struct tg_sched_placement * tg_sched_leaf_placement(const struct tg_sched * s, int i) {
    return i >= 0 && i < tg_sched_n_leaf_placements(s) ? tg_sched_fill_detail(s, &s->leaf_pl[i]) : NULL;
}

int tg_sched_node_split(const struct tg_sched * s, int i) {
    return i >= 0 && i < tg_sched_n_node_placements(s) ? s->node_split[i] : -1;
}

struct tg_gallocr * tg_sched_get_gallocr(const struct tg_sched * s) { return s ? s->galloc : NULL; }
struct tg_graph * tg_sched_get_graph(const struct tg_sched * s) { return s ? s->graph : NULL; }
uint64_t tg_sched_graph_seq(const struct tg_sched * s) { return s ? s->graph_seq : 0; }

void tg_sched_set_poison(struct tg_sched * s, bool on) { if (s) s->poison = on; }
bool tg_sched_get_poison(const struct tg_sched * s) { return s && s->poison; }

void tg_sched_set_eval_callback(struct tg_sched * s, tg_sched_eval_cb cb, void * user) {
    if (!s) return;
    s->eval_cb = cb;
    s->eval_user = user;
}

static const char * const cause_names[] = {
#define TG_CAUSE_DEF(e, name) [TG_CAUSE_##e] = name,
#include "tg/causes.def"
#undef TG_CAUSE_DEF
};
_Static_assert(sizeof(cause_names) / sizeof(cause_names[0]) == TG_CAUSE_COUNT, "one name per cause");

const char * tg_cause_name(enum tg_cause c) {
    return (unsigned) c < TG_CAUSE_COUNT ? cause_names[c] : "?";
}
