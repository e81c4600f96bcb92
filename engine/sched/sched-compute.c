// sched-compute.c - computing the splits (input copies, eval callback
// protocol, node events) and emitting scheduler events to observers.
#include "sched/sched-impl.h"

#include <stdlib.h>
#include <string.h>

// Calls cb of every observer (the scheduler's, then the global ones) that has it.
#define EMIT(s, cb, ev) do { \
        for (int i_ = 0; i_ < (s)->n_obs; i_++) \
            if ((s)->obs[i_].cb) (s)->obs[i_].cb((ev), (s)->obs[i_].user); \
        for (int i_ = 0; i_ < tg_obs_n_global; i_++) \
            if (tg_obs_global[i_].cb) tg_obs_global[i_].cb((ev), tg_obs_global[i_].user); \
    } while (0)

static bool observed(const struct tg_sched * s) { return s->n_obs != 0 || tg_obs_n_global != 0; }

static bool wants_node_events(const struct tg_sched * s) {
    for (int i = 0; i < s->n_obs; i++)
        if (s->obs[i].on_node_begin || s->obs[i].on_node_end) return true;
    for (int i = 0; i < tg_obs_n_global; i++)
        if (tg_obs_global[i].on_node_begin || tg_obs_global[i].on_node_end) return true;
    return false;
}

void tg_sched_emit_sched(struct tg_sched * s, enum tg_obs_sched_what what) {
    if (!observed(s)) return;
    struct tg_obs_sched_event ev = {
        .what = what, .sched = s, .sched_id = s->id, .n_backends = s->n_backends, .backends = s->backends,
    };
    EMIT(s, on_sched, &ev);
}

void tg_sched_emit_split(struct tg_sched * s) {
    for (int i = 0; s->graph && i < s->graph->n_nodes; i++) tg_sched_fill_detail(s, &s->node_pl[i]);   // observers read them
    for (int l = 0; s->graph && l < s->graph->n_leafs; l++) tg_sched_fill_detail(s, &s->leaf_pl[l]);
    struct tg_obs_split_event ev = {
        .sched = s, .sched_id = s->id, .graph_seq = s->graph_seq, .graph = s->graph,
        .n_backends = s->n_backends, .backends = s->backends,
        .nodes = s->node_pl, .leafs = s->leaf_pl,
        .n_splits = s->n_splits, .splits = s->splits, .n_copies = s->n_copies,
        .moved = s->moved, .n_moved = s->n_moved,
    };
    EMIT(s, on_graph_split, &ev);
}

void tg_sched_emit_alloc(struct tg_sched * s) {
    int nb = tg_gallocr_n_buffers(s->galloc);
    struct tg_alloc_buffer_info bufs[TG_SCHED_MAX_BACKENDS];
    int buf_backend[TG_SCHED_MAX_BACKENDS];
    for (int i = 0; i < nb && i < TG_SCHED_MAX_BACKENDS; i++) {
        bufs[i] = *tg_gallocr_buffer_info(s->galloc, i);
        buf_backend[i] = -1;
        for (int b = s->n_backends - 1; b >= 0; b--)
            if (tg_gallocr_buffer_of_buft(s->galloc, b) == i) buf_backend[i] = b;
    }
    struct tg_obs_alloc_event ev = {
        .sched = s, .sched_id = s->id, .graph_seq = s->graph_seq, .graph = s->graph,
        .replanned = s->replanned, .n_buffers = nb, .buffers = bufs, .buffer_backend = buf_backend,
        .n_tensors = tg_gallocr_n_tensors(s->galloc),
        .tensors = tg_gallocr_tensor_info(s->galloc, 0),
        .alloc_graph = &s->gcopy,
        .moved = s->moved, .n_moved = s->n_moved,
    };
    EMIT(s, on_graph_alloc, &ev);
}

// ---- node events ---------------------------------------------------------------------------

struct node_ctx {
    struct tg_sched * s;
    int  split;
    int  offset;   // user index of the sub-graph's node 0
    bool events;   // emit node events
    bool in_hooks; // called from the backend's graph_compute_hooks (its parallel() is usable)
    uint64_t t_ns; // set by a backend that defers the hooks: the node's time (0: now)
};

// Every observer with node events accepts them late on backend be
// (tg_observer.node_events_deferrable, node_events_deferrable_on).
static bool obs_defers(const struct tg_observer * o, const struct tg_backend * be) {
    if (!o->on_node_begin && !o->on_node_end) return true;
    return o->node_events_deferrable && (!o->node_events_deferrable_on || o->node_events_deferrable_on(be, o->user));
}
static bool events_deferrable(const struct tg_sched * s, const struct tg_backend * be) {
    for (int i = 0; i < s->n_obs; i++)
        if (!obs_defers(&s->obs[i], be)) return false;
    for (int i = 0; i < tg_obs_n_global; i++)
        if (!obs_defers(&tg_obs_global[i], be)) return false;
    return true;
}

static void node_parallel(const struct tg_obs_node_event * ev, int n, void (*fn)(int i, void * arg), void * arg) {
    struct tg_backend * be = ev->parallel_ctx;
    if (be && be->iface.parallel) { be->iface.parallel(be, n, fn, arg); return; }
    for (int i = 0; i < n; i++) fn(i, arg);
}

static void emit_node(struct node_ctx * c, struct tg_tensor * node, int index, bool begin) {
    struct tg_sched * s = c->s;
    int b = s->splits[c->split].backend;
    struct tg_obs_node_event ev = {
        .sched = s, .sched_id = s->id, .graph_seq = s->graph_seq, .node = node, .index = c->offset + index,
        .split = c->split, .backend = b, .t_ns = c->t_ns ? c->t_ns : tg_observe_now_ns(), .deferred = c->t_ns != 0,
        .parallel = node_parallel, .parallel_ctx = c->in_hooks ? s->backends[b] : NULL,
    };
    if (begin) EMIT(s, on_node_begin, &ev);
    else       EMIT(s, on_node_end, &ev);
}

// Groups the ranges released at each allocator step (poison mode).
static enum tg_status prepare_poison(struct tg_sched * s) {
    int n_steps = s->gcopy.n_nodes, n_user = s->graph->n_nodes, n_info = tg_gallocr_n_tensors(s->galloc);
    if (!TG_GROW(s->poison_start, s->cap_poison_steps, (size_t) n_steps + 2) ||
        !TG_GROW(s->poison_idx, s->cap_poison_idx, (size_t) n_info + 1) || !TG_GROW(s->step_of_node, s->cap_step_of, (size_t) n_user + 1))
        return tg_error(TG_ERR_NOMEM, "scheduler: out of memory (poison)");
    for (int k = 0; k < n_steps; k++) if (s->gc_user_index[k] >= 0) s->step_of_node[s->gc_user_index[k]] = k;
    memset(s->poison_start, 0, (size_t) (n_steps + 2) * sizeof(int));
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n_info; i++) {
            const struct tg_alloc_tensor_info * in = tg_gallocr_tensor_info(s->galloc, i);
            bool own = in->kind == TG_ALLOC_PLANNED || in->kind == TG_ALLOC_INPLACE;
            if (!own || !in->released || !tg_buffer_is_host(in->buffer) || in->last_step < 0 || in->last_step >= n_steps) continue;
            if (pass == 0) s->poison_start[in->last_step + 2]++;
            else s->poison_idx[s->poison_start[in->last_step + 1]++] = i;
        }
        if (pass == 0) for (int k = 0; k < n_steps; k++) s->poison_start[k + 2] += s->poison_start[k + 1];
    }
    return TG_OK;
}

static void poison_after(struct tg_sched * s, int user_index) {
    int step = s->step_of_node[user_index];
    for (int q = step > 0 ? s->poison_start[step] : 0; q < s->poison_start[step + 1]; q++) {
        const struct tg_alloc_tensor_info * in = tg_gallocr_tensor_info(s->galloc, s->poison_idx[q]);
        memset((char *) tg_buffer_get_base(in->buffer) + in->offset, 0xFF, in->size);
    }
}

static bool hook_before(struct tg_tensor * node, int index, void * user) {
    struct node_ctx * c = user;
    if (c->events) emit_node(c, node, index, true);
    return true;
}

static void hook_after(struct tg_tensor * node, int index, void * user) {
    struct node_ctx * c = user;
    if (c->s->poison) poison_after(c->s, c->offset + index);
    if (c->events) emit_node(c, node, index, false);
}

// Computes user nodes [i0, i1) of split k on its backend.
static enum tg_status run_nodes(struct tg_sched * s, int k, int i0, int i1, bool node_events) {
    struct tg_backend * be = s->backends[s->splits[k].backend];
    if (i1 <= i0) return TG_OK;
    struct tg_graph view = tg_graph_view(s->graph, i0, i1);
    if (!node_events && !s->poison) return tg_backend_graph_compute(be, &view);
    struct node_ctx c = { s, k, i0, node_events, be->iface.graph_compute_hooks != NULL, 0 };
    if (be->iface.graph_compute_hooks) {
        struct tg_node_hooks h = { hook_before, hook_after, &c, !s->poison && events_deferrable(s, be), &c.t_ns };
        return be->iface.graph_compute_hooks(be, &view, &h);
    }
    for (int i = i0; i < i1; i++) {   // node by node
        struct tg_graph one = tg_graph_view(s->graph, i, i + 1);
        hook_before(s->graph->nodes[i], i - i0, &c);
        enum tg_status st = tg_backend_graph_compute(be, &one);
        tg_backend_synchronize(be);
        if (st != TG_OK) return st;
        hook_after(s->graph->nodes[i], i - i0, &c);
    }
    return TG_OK;
}

// Eval-callback protocol over split k: runs of unobserved nodes are computed
// together; each observed node ends a run and is shown after a sync.
static enum tg_status run_split_observed(struct tg_sched * s, int k, bool node_events) {
    struct tg_sched_split * sp = &s->splits[k];
    struct tg_backend * be = s->backends[sp->backend];
    int j0 = sp->i_start;
    while (j0 < sp->i_end) {
        int j1 = j0;
        bool want = false;
        for (; j1 < sp->i_end; j1++) {
            want = s->eval_cb(s->graph->nodes[j1], true, s->eval_user);
            if (want) break;
        }
        int end = want ? j1 + 1 : sp->i_end;
        enum tg_status st = run_nodes(s, k, j0, end, node_events);
        if (st != TG_OK) return st;
        if (want) {
            tg_backend_synchronize(be);
            if (!s->eval_cb(s->graph->nodes[j1], false, s->eval_user))
                return tg_error(TG_ERR_ABORTED, "computation stopped by the eval callback after node %d '%s'",
                                j1, s->graph->nodes[j1]->name);
        }
        j0 = end;
    }
    return TG_OK;
}

// Copies split k's inputs that need it into their copies (raw: no host events).
static enum tg_status copy_inputs(struct tg_sched * s, int k) {
    struct tg_sched_split * sp = &s->splits[k];
    for (int q = 0; q < sp->n_inputs; q++) {
        struct tg_tensor * c = sp->copies[q];
        if (!c) continue;
        struct tg_tensor * src = sp->inputs[q];
        if (!src->data || !c->data)
            return tg_error(TG_ERR_NO_BUFFER, "split %d: input '%s' or its copy has no memory", k, src->name);
        struct tg_buffer * sb = tg_tensor_buffer(src);
        struct tg_buffer * db = tg_tensor_buffer(c);
        size_t n = tg_nbytes(src);
        if ((!sb || tg_buffer_is_host(sb)) && (!db || tg_buffer_is_host(db))) {
            memcpy(c->data, src->data, n);
        } else if (!(db && db->iface.cpy_tensor && db->iface.cpy_tensor(db, src, c))) {
            void * tmp = malloc(n);
            if (!tmp) return tg_error(TG_ERR_NOMEM, "split %d: staging %zu bytes for input '%s'", k, n, src->name);
            if (sb) sb->iface.get_tensor(sb, src, tmp, 0, n); else memcpy(tmp, src->data, n);
            if (db) db->iface.set_tensor(db, c, tmp, 0, n); else memcpy(c->data, tmp, n);
            free(tmp);
        }
    }
    return TG_OK;
}

static enum tg_status compute_all(struct tg_sched * s, bool node_events) {
    for (int k = 0; k < s->n_splits; k++) {
        struct tg_sched_split * sp = &s->splits[k];
        if (sp->n_copies) {
            uint64_t t0 = tg_observe_now_ns();
            tg_sched_synchronize(s);
            enum tg_status st = copy_inputs(s, k);
            if (st != TG_OK) return st;
            sp->copy_ns = tg_observe_now_ns() - t0;
        }
        enum tg_status st = s->eval_cb ? run_split_observed(s, k, node_events)
                                       : run_nodes(s, k, sp->i_start, sp->i_end, node_events);
        if (st != TG_OK) return st;
        if (s->n_splits > 1) tg_backend_synchronize(s->backends[sp->backend]);
    }
    return TG_OK;
}

enum tg_status tg_sched_compute_splits(struct tg_sched * s) {
    if (__builtin_expect(s->poison, 0)) {
        enum tg_status st = prepare_poison(s);
        if (st != TG_OK) return st;
    }
    if (__builtin_expect(!observed(s), 1)) return compute_all(s, false);
    struct tg_obs_compute_event ev = {
        .sched = s, .sched_id = s->id, .graph_seq = s->graph_seq, .graph = s->graph,
        .t_ns = tg_observe_now_ns(), .status = TG_OK,
    };
    EMIT(s, on_compute_begin, &ev);
    enum tg_status st = compute_all(s, wants_node_events(s));
    ev.t_ns = tg_observe_now_ns();
    ev.status = st;
    EMIT(s, on_compute_end, &ev);
    return st;
}
