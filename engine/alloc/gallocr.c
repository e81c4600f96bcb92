// gallocr.c - the graph allocator: plans every intermediate of a graph into
// one buffer per buffer type (best-fit free list, in-place reuse), keeps the
// plan per node index, and exposes every decision as allocation data.
#include "core/grow.h"
#include "core/ptrmap.h"
#include "sched/backend-impl.h"
#include "tg/alloc.h"

#include <stdlib.h>
#include <string.h>

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// ---- free-block list ----------------------------------------------------------
// Free ranges below a frontier `end`; allocation past every block moves the
// frontier. A freed range ending at the frontier moves it back.

struct block { size_t off, size; };

struct freelist {
    struct block * b;
    int    n;
    size_t cap;
    size_t end;
    size_t high;   // largest `end` seen
};

static void fl_reset(struct freelist * fl) { fl->n = 0; fl->end = 0; fl->high = 0; }

static size_t fl_alloc(struct freelist * fl, size_t size) {
    int best = -1;
    for (int i = 0; i < fl->n; i++)
        if (fl->b[i].size >= size && (best < 0 || fl->b[i].size < fl->b[best].size)) best = i;
    size_t off;
    if (best >= 0) {
        off = fl->b[best].off;
        fl->b[best].off += size;
        fl->b[best].size -= size;
        if (fl->b[best].size == 0) {
            memmove(&fl->b[best], &fl->b[best + 1], (size_t) (fl->n - best - 1) * sizeof(struct block));
            fl->n--;
        }
    } else if (fl->n > 0 && fl->b[fl->n - 1].off + fl->b[fl->n - 1].size == fl->end) {
        off = fl->b[fl->n - 1].off;   // last block touches the frontier: grow it
        fl->n--;
        fl->end = off + size;
    } else {
        off = fl->end;
        fl->end += size;
    }
    if (fl->end > fl->high) fl->high = fl->end;
    return off;
}

static bool fl_free(struct freelist * fl, size_t off, size_t size) {
    if (off + size == fl->end) {
        fl->end = off;
        // merge with a block that now touches the frontier
        while (fl->n > 0 && fl->b[fl->n - 1].off + fl->b[fl->n - 1].size == fl->end) {
            fl->end = fl->b[fl->n - 1].off;
            fl->n--;
        }
        return true;
    }
    int i = 0;
    while (i < fl->n && fl->b[i].off < off) i++;
    bool merge_prev = i > 0 && fl->b[i - 1].off + fl->b[i - 1].size == off;
    bool merge_next = i < fl->n && off + size == fl->b[i].off;
    if (merge_prev && merge_next) {
        fl->b[i - 1].size += size + fl->b[i].size;
        memmove(&fl->b[i], &fl->b[i + 1], (size_t) (fl->n - i - 1) * sizeof(struct block));
        fl->n--;
    } else if (merge_prev) {
        fl->b[i - 1].size += size;
    } else if (merge_next) {
        fl->b[i].off = off;
        fl->b[i].size += size;
    } else {
        if (!TG_GROW(fl->b, fl->cap, (size_t) fl->n + 1)) return false;
        memmove(&fl->b[i + 1], &fl->b[i], (size_t) (fl->n - i) * sizeof(struct block));
        fl->b[i].off = off;
        fl->b[i].size = size;
        fl->n++;
    }
    return true;
}

// ---- the allocator ---------------------------------------------------------------

struct tg_gallocr {
    int                      n_bufts;
    struct tg_buffer_type ** bufts;       // [n_bufts]
    int *                    buft_buf;    // [n_bufts] -> distinct buffer index
    int                      n_bufs;
    struct tg_alloc_buffer_info * binfo;  // [n_bufs]
    struct freelist *        fl;          // [n_bufs]
    struct tg_gallocr_options opts;

    struct tg_buffer **      retired;     // replaced buffers (memory freed, struct kept)
    int                      n_retired;
    size_t                   cap_retired;

    // plan / allocation data (leafs first, then nodes)
    bool                     have_plan;
    int                      plan_nl, plan_nn;
    int                      n_info;
    size_t                   cap_info;
    struct tg_alloc_tensor_info * info;
    int *                    inplace_idx; // [cap_info] info index of the parent, -1
    int *                    buf_of;      // [cap_info] buft index of each tensor
    int *                    src_sig;     // [cap_info * TG_MAX_SRC] info index of sources (-1 none, -2 external)
    int *                    children;    // planning scratch
    int *                    views;
    unsigned char *          state;       // bit 0 freed, bit 1 taken over by a child

    struct tg_ptrmap         index;       // tensor -> info index

    uint64_t                 graph_seq;
    int                      n_plans;
    int                      n_inplace;
};

enum { ST_FREED = 1, ST_TAKEN = 2 };

struct tg_gallocr * tg_gallocr_new_n(struct tg_buffer_type ** bufts, int n_bufts) {
    if (!bufts || n_bufts < 1) { tg_error(TG_ERR_INVALID_ARG, "tg_gallocr_new_n: need at least one buffer type"); return NULL; }
    struct tg_gallocr * ga = calloc(1, sizeof(*ga));
    if (!ga) goto oom;
    ga->n_bufts = n_bufts;
    ga->bufts = calloc((size_t) n_bufts, sizeof(*ga->bufts));
    ga->buft_buf = calloc((size_t) n_bufts, sizeof(int));
    ga->binfo = calloc((size_t) n_bufts, sizeof(*ga->binfo));
    ga->fl = calloc((size_t) n_bufts, sizeof(*ga->fl));
    if (!ga->bufts || !ga->buft_buf || !ga->binfo || !ga->fl) goto oom;
    for (int i = 0; i < n_bufts; i++) {
        if (!bufts[i]) { tg_gallocr_free(ga); tg_error(TG_ERR_INVALID_ARG, "tg_gallocr_new_n: buffer type %d is NULL", i); return NULL; }
        ga->bufts[i] = bufts[i];
        int j = 0;
        while (j < ga->n_bufs && ga->binfo[j].buft != bufts[i]) j++;
        if (j == ga->n_bufs) ga->binfo[ga->n_bufs++].buft = bufts[i];
        ga->buft_buf[i] = j;
    }
    return ga;
oom:
    tg_gallocr_free(ga);
    tg_error(TG_ERR_NOMEM, "tg_gallocr_new: out of memory");
    return NULL;
}

struct tg_gallocr * tg_gallocr_new(struct tg_buffer_type * buft) { return tg_gallocr_new_n(&buft, 1); }

void tg_gallocr_free(struct tg_gallocr * ga) {
    if (!ga) return;
    for (int i = 0; i < ga->n_bufs; i++) {
        tg_buffer_free(ga->binfo[i].buffer);
        free(ga->fl[i].b);
    }
    for (int i = 0; i < ga->n_retired; i++) free(ga->retired[i]);
    free(ga->retired);
    free(ga->bufts); free(ga->buft_buf); free(ga->binfo); free(ga->fl);
    free(ga->info); free(ga->inplace_idx); free(ga->buf_of); free(ga->src_sig);
    free(ga->children); free(ga->views); free(ga->state);
    tg_ptrmap_free(&ga->index);
    free(ga);
}

void tg_gallocr_set_options(struct tg_gallocr * ga, struct tg_gallocr_options opts) {
    if (!ga) return;
    ga->opts = opts;
    ga->have_plan = false;
}

// ---- tensor -> info index -----------------------------------------------------

static int info_of(const struct tg_gallocr * ga, const struct tg_tensor * t) {
    return (int) tg_ptrmap_find(&ga->index, t, -1);
}

static enum tg_status ensure_capacity(struct tg_gallocr * ga, int n) {
    if ((size_t) n > ga->cap_info) {   // parallel arrays of one capacity
        size_t cap = (size_t) n + (size_t) n / 2 + 16;
        if (!TG_RESIZE(ga->info, cap) || !TG_RESIZE(ga->inplace_idx, cap) || !TG_RESIZE(ga->buf_of, cap) ||
            !TG_RESIZE(ga->src_sig, cap * TG_MAX_SRC) || !TG_RESIZE(ga->children, cap) || !TG_RESIZE(ga->views, cap) ||
            !TG_RESIZE(ga->state, cap))
            return tg_error(TG_ERR_NOMEM, "graph allocator: out of memory for %d tensors", n);
        ga->cap_info = cap;
    }
    return tg_ptrmap_reset(&ga->index, (size_t) n);
}

static bool is_our_buffer(const struct tg_gallocr * ga, const struct tg_buffer * b) {
    if (!b) return false;
    for (int i = 0; i < ga->n_bufs; i++) if (ga->binfo[i].buffer == b) return true;
    for (int i = 0; i < ga->n_retired; i++) if (ga->retired[i] == b) return true;
    return false;
}

// True when t needs memory from us: no memory, or memory from an earlier
// placement by this allocator (re-placed every time).
static bool needs_alloc(const struct tg_gallocr * ga, const struct tg_tensor * t) {
    if (t->view_src) return false;
    return t->data == NULL || is_our_buffer(ga, t->buffer);
}

// Fills the hash and the per-tensor records of g (not the placement).
static enum tg_status index_graph(struct tg_gallocr * ga, struct tg_graph * g,
                                  const int * node_ids, const int * leaf_ids) {
    int n = g->n_leafs + g->n_nodes;
    enum tg_status st = ensure_capacity(ga, n);
    if (st != TG_OK) return st;
    ga->n_info = n;
    for (int i = 0; i < n; i++) {
        bool leaf = i < g->n_leafs;
        int gi = leaf ? i : i - g->n_leafs;
        struct tg_tensor * t = leaf ? g->leafs[gi] : g->nodes[gi];
        int bid = leaf ? (leaf_ids ? leaf_ids[gi] : 0) : (node_ids ? node_ids[gi] : 0);
        if (bid < 0 || bid >= ga->n_bufts) bid = 0;
        memset(&ga->info[i], 0, sizeof(ga->info[i]));
        ga->info[i].tensor = t;
        ga->info[i].is_leaf = leaf;
        ga->info[i].index = gi;
        ga->info[i].buffer_id = -1;
        ga->info[i].first_step = -1;
        ga->info[i].last_step = -1;
        ga->buf_of[i] = bid;
        ga->inplace_idx[i] = -1;
        if ((st = tg_ptrmap_put(&ga->index, tg_ptrmap_key(t), i)) != TG_OK) return st;
    }
    for (int i = 0; i < n; i++) {
        struct tg_tensor * t = ga->info[i].tensor;
        for (int s = 0; s < TG_MAX_SRC; s++) {
            int v = -1;
            if (t->src[s]) { v = info_of(ga, t->src[s]); if (v < 0) v = -2; }
            ga->src_sig[(size_t) i * TG_MAX_SRC + s] = v;
        }
    }
    return TG_OK;
}

// ---- planning ---------------------------------------------------------------------

struct planner {
    struct tg_gallocr * ga;
    struct tg_graph *   g;
    int                 n_nodes;
};

static bool keep_flagged(const struct tg_tensor * t) {
    return (t->flags & (TG_FLAG_INPUT | TG_FLAG_OUTPUT)) != 0;
}

static void place_view(struct tg_gallocr * ga, int i, int step) {
    struct tg_alloc_tensor_info * in = &ga->info[i];
    struct tg_tensor * t = in->tensor;
    int vi = info_of(ga, t->view_src);
    in->kind = TG_ALLOC_VIEW;
    in->first_step = step;
    if (vi >= 0) {
        in->buffer_id = ga->info[vi].buffer_id;
        in->buffer = ga->info[vi].buffer;
        in->offset = ga->info[vi].offset + t->view_offs;
    } else {
        in->buffer = tg_tensor_buffer(t->view_src);
        char * base = in->buffer ? tg_buffer_get_base(in->buffer) : NULL;
        in->offset = base && t->view_src->data ? (size_t) ((char *) t->view_src->data - base) + t->view_offs : t->view_offs;
    }
    in->size = tg_nbytes(t);
}

// Tries to give node i the range of its src[0] (or of the tensor src[0] views).
static bool try_inplace(struct tg_gallocr * ga, int i, size_t size, int step) {
    struct tg_tensor * t = ga->info[i].tensor;
    if (ga->opts.no_inplace || ga->opts.no_reuse || ga->info[i].is_leaf || !t->src[0]) return false;
    if (!tg_op_can_inplace(t)) return false;
    int p = info_of(ga, t->src[0]);
    if (p < 0 || ga->info[p].is_leaf || keep_flagged(ga->info[p].tensor)) return false;
    if (ga->children[p] != 1 || ga->views[p] != 0) return false;
    int owner = p;
    if (ga->info[p].kind == TG_ALLOC_VIEW) {
        // parent is a view: take its source's range if the view is its only user and starts at 0
        owner = info_of(ga, ga->info[p].tensor->view_src);
        if (owner < 0 || ga->info[p].tensor->view_offs != 0) return false;
        if (ga->children[owner] != 0 || ga->views[owner] != 1 || ga->info[owner].is_leaf) return false;
        if (keep_flagged(ga->info[owner].tensor)) return false;
    }
    struct tg_alloc_tensor_info * o = &ga->info[owner];
    if (o->kind != TG_ALLOC_PLANNED && o->kind != TG_ALLOC_INPLACE) return false;
    if (ga->state[owner] & (ST_FREED | ST_TAKEN)) return false;
    if (ga->buft_buf[ga->buf_of[owner]] != ga->buft_buf[ga->buf_of[i]] || o->size < size) return false;
    struct tg_alloc_tensor_info * in = &ga->info[i];
    in->kind = TG_ALLOC_INPLACE;
    in->buffer_id = o->buffer_id;
    in->offset = o->offset;
    in->size = o->size;
    in->first_step = step;
    in->inplace_of = ga->info[p].tensor;   // the direct parent (a view or the owner)
    ga->inplace_idx[i] = p;
    ga->state[owner] |= ST_TAKEN;
    o->last_step = step;
    if (owner != p) ga->info[p].last_step = step;
    ga->n_inplace++;
    return true;
}

static void ensure_placed(struct tg_gallocr * ga, int i, int step) {
    struct tg_alloc_tensor_info * in = &ga->info[i];
    if (in->kind != TG_ALLOC_NONE) return;
    struct tg_tensor * t = in->tensor;
    if (t->view_src) { place_view(ga, i, step); return; }
    if (!needs_alloc(ga, t)) {
        in->kind = TG_ALLOC_PREALLOCATED;
        in->buffer = t->buffer;
        char * base = t->buffer ? tg_buffer_get_base(t->buffer) : NULL;
        in->offset = base ? (size_t) ((char *) t->data - base) : 0;
        in->size = tg_nbytes(t);
        in->first_step = step;
        return;
    }
    int b = ga->buft_buf[ga->buf_of[i]];
    struct tg_buffer_type * buft = ga->bufts[ga->buf_of[i]];
    size_t size = align_up(tg_buft_get_alloc_size(buft, t), tg_buft_get_alignment(buft));
    if (size == 0) size = tg_buft_get_alignment(buft);
    if (try_inplace(ga, i, size, step)) return;
    in->kind = TG_ALLOC_PLANNED;
    in->buffer_id = b;
    in->offset = fl_alloc(&ga->fl[b], size);
    in->size = size;
    in->first_step = step;
}

static void release(struct tg_gallocr * ga, int i, int step) {
    struct tg_alloc_tensor_info * in = &ga->info[i];
    if (ga->state[i] & ST_FREED) return;
    if (in->kind != TG_ALLOC_PLANNED && in->kind != TG_ALLOC_INPLACE) return;
    if (keep_flagged(in->tensor)) return;
    ga->state[i] |= ST_FREED;
    if (ga->state[i] & ST_TAKEN) return;   // a child owns the range now
    in->last_step = step;
    in->released = true;
    if (!ga->opts.no_reuse) fl_free(&ga->fl[in->buffer_id], in->offset, in->size);
}

// Called after node `step` consumed source s.
static void consumed(struct tg_gallocr * ga, int s, int step) {
    if (--ga->children[s] > 0 || ga->views[s] > 0) return;
    struct tg_alloc_tensor_info * in = &ga->info[s];
    if (in->last_step < step) in->last_step = step;
    if (in->kind == TG_ALLOC_VIEW) {
        int v = info_of(ga, in->tensor->view_src);
        if (v >= 0 && --ga->views[v] == 0 && ga->children[v] == 0) {
            if (ga->info[v].last_step < step) ga->info[v].last_step = step;
            release(ga, v, step);
        }
    } else {
        release(ga, s, step);
    }
}

static enum tg_status plan_graph(struct tg_gallocr * ga, struct tg_graph * g) {
    int nl = g->n_leafs, nn = g->n_nodes, n = nl + nn;
    for (int b = 0; b < ga->n_bufs; b++) fl_reset(&ga->fl[b]);
    memset(ga->children, 0, (size_t) n * sizeof(int));
    memset(ga->views, 0, (size_t) n * sizeof(int));
    memset(ga->state, 0, (size_t) n);
    ga->n_inplace = 0;
    for (int i = nl; i < n; i++) {
        struct tg_tensor * t = ga->info[i].tensor;
        for (int s = 0; s < TG_MAX_SRC; s++) {
            int v = ga->src_sig[(size_t) i * TG_MAX_SRC + s];
            if (v >= 0) ga->children[v]++;
        }
        int vs = info_of(ga, t->view_src);
        if (vs >= 0) ga->views[vs]++;
    }
    // inputs first, so that nothing computed earlier overwrites them
    for (int i = 0; i < n; i++)
        if (ga->info[i].tensor->flags & TG_FLAG_INPUT) ensure_placed(ga, i, 0);
    for (int i = nl; i < n; i++) {
        int step = i - nl;
        for (int s = 0; s < TG_MAX_SRC; s++) {
            int v = ga->src_sig[(size_t) i * TG_MAX_SRC + s];
            if (v >= 0) ensure_placed(ga, v, step);
        }
        ensure_placed(ga, i, step);
        for (int s = 0; s < TG_MAX_SRC; s++) {
            int v = ga->src_sig[(size_t) i * TG_MAX_SRC + s];
            if (v >= 0) consumed(ga, v, step);
        }
    }
    for (int i = 0; i < n; i++) {
        struct tg_alloc_tensor_info * in = &ga->info[i];
        if (in->kind == TG_ALLOC_NONE) ensure_placed(ga, i, 0);   // leafs no node reads
        if (in->last_step < 0 || (!(ga->state[i] & ST_FREED) && in->kind != TG_ALLOC_VIEW
                                  && !(ga->state[i] & ST_TAKEN)))
            in->last_step = nn > 0 ? nn - 1 : 0;
    }
    for (int b = 0; b < ga->n_bufs; b++) ga->binfo[b].high_water = ga->fl[b].high;
    ga->plan_nl = nl;
    ga->plan_nn = nn;
    ga->have_plan = true;
    ga->n_plans++;
    return TG_OK;
}

// Grows (reallocates) buffers smaller than the plan's high-water marks.
static enum tg_status realloc_buffers(struct tg_gallocr * ga) {
    for (int b = 0; b < ga->n_bufs; b++) {
        struct tg_alloc_buffer_info * bi = &ga->binfo[b];
        if (bi->buffer && bi->buffer->size >= bi->high_water) continue;
        if (bi->buffer) {
            // keep the struct so tensors placed in it are still recognised as ours
            if (!TG_GROW(ga->retired, ga->cap_retired, (size_t) ga->n_retired + 1))
                return tg_error(TG_ERR_NOMEM, "graph allocator: out of memory");
            if (bi->buffer->iface.free_buffer) bi->buffer->iface.free_buffer(bi->buffer);
            bi->buffer->size = 0;
            bi->buffer->context = NULL;
            ga->retired[ga->n_retired++] = bi->buffer;
            bi->buffer = NULL;
        }
        bi->buffer = tg_buft_alloc_buffer(bi->buft, bi->high_water);
        if (!bi->buffer) { bi->size = 0; return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NOMEM; }
        tg_buffer_set_usage(bi->buffer, TG_BUFFER_USAGE_COMPUTE);
        bi->size = bi->buffer->size;
    }
    return TG_OK;
}

static enum tg_status check_ids(struct tg_gallocr * ga, struct tg_graph * g, const int * node_ids, const int * leaf_ids) {
    if (!ga || !g) return tg_error(TG_ERR_INVALID_ARG, "graph allocator: NULL allocator or graph");
    for (int i = 0; node_ids && i < g->n_nodes; i++)
        if (node_ids[i] < 0 || node_ids[i] >= ga->n_bufts)
            return tg_error(TG_ERR_INVALID_ARG, "graph allocator: node %d has buffer id %d (%d buffer types)", i, node_ids[i], ga->n_bufts);
    for (int i = 0; leaf_ids && i < g->n_leafs; i++)
        if (leaf_ids[i] < 0 || leaf_ids[i] >= ga->n_bufts)
            return tg_error(TG_ERR_INVALID_ARG, "graph allocator: leaf %d has buffer id %d (%d buffer types)", i, leaf_ids[i], ga->n_bufts);
    return TG_OK;
}

enum tg_status tg_gallocr_reserve_n(struct tg_gallocr * ga, struct tg_graph * g,
                                    const int * node_ids, const int * leaf_ids) {
    enum tg_status st = check_ids(ga, g, node_ids, leaf_ids);
    if (st == TG_OK) st = index_graph(ga, g, node_ids, leaf_ids);
    if (st == TG_OK) st = plan_graph(ga, g);
    if (st == TG_OK) st = realloc_buffers(ga);
    if (st != TG_OK) ga->have_plan = false;
    return st;
}

enum tg_status tg_gallocr_reserve(struct tg_gallocr * ga, struct tg_graph * g) {
    return tg_gallocr_reserve_n(ga, g, NULL, NULL);
}

// ---- placing a graph with the plan -----------------------------------------------

// True when g can use the current plan: same counts, same edges, same
// buffers, same kinds, and every size within the planned one.
static bool plan_fits(struct tg_gallocr * ga, struct tg_graph * g, const int * node_ids, const int * leaf_ids) {
    if (!ga->have_plan || g->n_leafs != ga->plan_nl || g->n_nodes != ga->plan_nn) return false;
    int n = g->n_leafs + g->n_nodes;
    // hash the new graph's tensors (the plan arrays are by index and survive)
    if (tg_ptrmap_reset(&ga->index, (size_t) n) != TG_OK) return false;
    for (int i = 0; i < n; i++) {
        bool leaf = i < g->n_leafs;
        if (tg_ptrmap_put(&ga->index, tg_ptrmap_key(leaf ? g->leafs[i] : g->nodes[i - g->n_leafs]), i) != TG_OK) return false;
    }
    for (int i = 0; i < n; i++) {
        bool leaf = i < g->n_leafs;
        int gi = leaf ? i : i - g->n_leafs;
        struct tg_tensor * t = leaf ? g->leafs[gi] : g->nodes[gi];
        int bid = leaf ? (leaf_ids ? leaf_ids[gi] : 0) : (node_ids ? node_ids[gi] : 0);
        if (bid != ga->buf_of[i]) return false;
        for (int s = 0; s < TG_MAX_SRC; s++) {
            int v = -1;
            if (t->src[s]) { v = info_of(ga, t->src[s]); if (v < 0) v = -2; }
            if (v != ga->src_sig[(size_t) i * TG_MAX_SRC + s]) return false;
        }
        enum tg_alloc_kind k = ga->info[i].kind;
        bool planned = k == TG_ALLOC_PLANNED || k == TG_ALLOC_INPLACE;
        if ((t->view_src != NULL) != (k == TG_ALLOC_VIEW)) return false;
        if (planned != needs_alloc(ga, t)) return false;
        if (planned) {
            struct tg_buffer_type * buft = ga->bufts[bid];
            if (tg_buft_get_alloc_size(buft, t) > ga->info[i].size) return false;
            if (k == TG_ALLOC_INPLACE && !tg_op_can_inplace(t)) return false;
        }
    }
    return true;
}

static enum tg_status apply_plan(struct tg_gallocr * ga, struct tg_graph * g) {
    int n = g->n_leafs + g->n_nodes;
    for (int i = 0; i < n; i++) {
        struct tg_alloc_tensor_info * in = &ga->info[i];
        bool leaf = i < g->n_leafs;
        struct tg_tensor * t = leaf ? g->leafs[i] : g->nodes[i - g->n_leafs];
        in->tensor = t;
        in->inplace_of = ga->inplace_idx[i] >= 0 ? ga->info[ga->inplace_idx[i]].tensor : NULL;
        if (in->kind == TG_ALLOC_PLANNED || in->kind == TG_ALLOC_INPLACE) {
            struct tg_buffer * buf = ga->binfo[in->buffer_id].buffer;
            in->buffer = buf;
            enum tg_status st = tg_buffer_alloc_tensor(buf, t, (char *) tg_buffer_get_base(buf) + in->offset);
            if (st != TG_OK) return st;
        }
    }
    // views after their sources (a view's source precedes it in the graph)
    for (int i = 0; i < n; i++) {
        struct tg_alloc_tensor_info * in = &ga->info[i];
        struct tg_tensor * t = in->tensor;
        if (in->kind == TG_ALLOC_PREALLOCATED) {
            in->buffer = t->buffer;
            char * base = t->buffer ? tg_buffer_get_base(t->buffer) : NULL;
            in->offset = base ? (size_t) ((char *) t->data - base) : 0;
            continue;
        }
        if (in->kind != TG_ALLOC_VIEW) continue;
        int vi = info_of(ga, t->view_src);
        if (t->data == NULL || (vi >= 0 && ga->info[vi].kind != TG_ALLOC_PREALLOCATED)) {
            enum tg_status st = tg_buffer_init_view(t);
            if (st != TG_OK) return st;
        }
        in->buffer = tg_tensor_buffer(t);
        char * base = in->buffer ? tg_buffer_get_base(in->buffer) : NULL;
        in->offset = base && t->data ? (size_t) ((char *) t->data - base) : t->view_offs;
    }
    ga->graph_seq++;
    return TG_OK;
}

void tg_gallocr_refresh_offsets(struct tg_gallocr * ga) {
    for (int i = 0; ga && i < ga->n_info; i++) {
        struct tg_alloc_tensor_info * in = &ga->info[i];
        struct tg_tensor * t = in->tensor;
        if (in->kind == TG_ALLOC_VIEW) {   // of a tensor the allocator placed: that did not move
            const int vi = info_of(ga, t->view_src);
            if (vi >= 0 && ga->info[vi].kind != TG_ALLOC_PREALLOCATED) continue;
        } else if (in->kind != TG_ALLOC_PREALLOCATED) {
            continue;
        }
        char * base = in->buffer ? tg_buffer_get_base(in->buffer) : NULL;
        in->offset = base && t->data ? (size_t) ((char *) t->data - base) : (in->kind == TG_ALLOC_VIEW ? t->view_offs : 0);
    }
}

enum tg_status tg_gallocr_alloc_graph_n(struct tg_gallocr * ga, struct tg_graph * g,
                                        const int * node_ids, const int * leaf_ids) {
    enum tg_status st = check_ids(ga, g, node_ids, leaf_ids);
    if (st != TG_OK) return st;
    st = ensure_capacity(ga, g->n_leafs + g->n_nodes);
    if (st != TG_OK) return st;
    if (!plan_fits(ga, g, node_ids, leaf_ids)) {
        st = tg_gallocr_reserve_n(ga, g, node_ids, leaf_ids);
        if (st != TG_OK) return st;
    }
    st = realloc_buffers(ga);
    if (st != TG_OK) return st;
    return apply_plan(ga, g);
}

enum tg_status tg_gallocr_alloc_graph(struct tg_gallocr * ga, struct tg_graph * g) {
    return tg_gallocr_alloc_graph_n(ga, g, NULL, NULL);
}

// ---- allocation data --------------------------------------------------------------

static const char * const kind_names[TG_ALLOC_KIND_COUNT] = { "none", "prealloc", "planned", "inplace", "view" };

const char * tg_alloc_kind_name(enum tg_alloc_kind k) {
    return (unsigned) k < TG_ALLOC_KIND_COUNT ? kind_names[k] : "?";
}

int tg_gallocr_n_buffers(const struct tg_gallocr * ga) { return ga ? ga->n_bufs : 0; }

const struct tg_alloc_buffer_info * tg_gallocr_buffer_info(const struct tg_gallocr * ga, int i) {
    return ga && i >= 0 && i < ga->n_bufs ? &ga->binfo[i] : NULL;
}

size_t tg_gallocr_get_buffer_size(const struct tg_gallocr * ga, int buffer_id) {
    if (!ga || buffer_id < 0 || buffer_id >= ga->n_bufts) return 0;
    const struct tg_buffer * b = ga->binfo[ga->buft_buf[buffer_id]].buffer;
    return b ? b->size : 0;
}

int tg_gallocr_buffer_of_buft(const struct tg_gallocr * ga, int buft_index) {
    return ga && buft_index >= 0 && buft_index < ga->n_bufts ? ga->buft_buf[buft_index] : -1;
}

int tg_gallocr_n_tensors(const struct tg_gallocr * ga) { return ga && ga->have_plan ? ga->n_info : 0; }

const struct tg_alloc_tensor_info * tg_gallocr_tensor_info(const struct tg_gallocr * ga, int i) {
    return ga && ga->have_plan && i >= 0 && i < ga->n_info ? &ga->info[i] : NULL;
}

const struct tg_alloc_tensor_info * tg_gallocr_find(const struct tg_gallocr * ga, const struct tg_tensor * t) {
    if (!ga || !ga->have_plan) return NULL;
    int i = info_of(ga, t);
    return i >= 0 && i < ga->n_info && ga->info[i].tensor == t ? &ga->info[i] : NULL;
}

int tg_gallocr_find_overlapping(const struct tg_gallocr * ga, const struct tg_buffer * buffer,
                                size_t offset, size_t size, const struct tg_alloc_tensor_info ** out, int max) {
    int count = 0;
    for (int i = 0; ga && ga->have_plan && i < ga->n_info; i++) {
        const struct tg_alloc_tensor_info * in = &ga->info[i];
        if (in->buffer != buffer || in->kind == TG_ALLOC_NONE) continue;
        if (in->offset < offset + size && offset < in->offset + in->size) {
            if (count < max && out) out[count] = in;
            count++;
        }
    }
    return count;
}

bool tg_gallocr_owns_buffer(const struct tg_gallocr * ga, const struct tg_buffer * buf) {
    return ga && is_our_buffer(ga, buf);
}

uint64_t tg_gallocr_graph_seq(const struct tg_gallocr * ga) { return ga ? ga->graph_seq : 0; }
int tg_gallocr_n_plans(const struct tg_gallocr * ga) { return ga ? ga->n_plans : 0; }
int tg_gallocr_n_inplace(const struct tg_gallocr * ga) { return ga ? ga->n_inplace : 0; }
