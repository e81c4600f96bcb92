// llama-backend.c - where the llama runtime meets the compute engine:
// weights' placement, memory for a graph, inputs, compute, results.
//
// This is the fallback used while the engine has no scheduler (TG_LLAMA_SCHED
// 0; llama-sched.c is the real one): it computes on the CPU directly (tg_cpu_graph_compute) with a
// simple bump allocator over one host buffer that grows to the largest graph
// seen (no reuse between a graph's tensors).
#include "llama-impl.h"

#if !TG_LLAMA_SCHED

#include <stdlib.h>
#include <string.h>

enum tg_status tg_llama_model_place_weights(struct tg_llama_model * m) {
    (void) m;  // weights are used in place: their data already points into the mapping
    return TG_OK;
}

void tg_llama_model_release_weights(struct tg_llama_model * m) { (void) m; }

enum tg_status tg_llama_kv_alloc(struct tg_llama_kv * kv) {
    size_t need = 0;
    for (struct tg_tensor * t = tg_context_first_tensor(kv->ctx); t; t = tg_context_next_tensor(kv->ctx, t))
        need += (tg_nbytes(t) + TG_MEM_ALIGN - 1) / TG_MEM_ALIGN * TG_MEM_ALIGN;
    char * mem = NULL;
    if (posix_memalign((void **) &mem, TG_MEM_ALIGN, need ? need : TG_MEM_ALIGN) != 0 || !mem)
        return tg_error(TG_ERR_NOMEM, "KV cache: cannot allocate %zu bytes", need);
    size_t off = 0;
    for (struct tg_tensor * t = tg_context_first_tensor(kv->ctx); t; t = tg_context_next_tensor(kv->ctx, t)) {
        t->data = mem + off;
        off += (tg_nbytes(t) + TG_MEM_ALIGN - 1) / TG_MEM_ALIGN * TG_MEM_ALIGN;
    }
    memset(mem, 0, need);
    kv->mem = mem;
    return TG_OK;
}

void tg_llama_kv_release(struct tg_llama_kv * kv) {
    free(kv->mem);
    kv->mem = NULL;
}

void tg_llama_kv_clear_memory(struct tg_llama_kv * kv) {
    if (!kv->ctx) return;
    for (struct tg_tensor * t = tg_context_first_tensor(kv->ctx); t; t = tg_context_next_tensor(kv->ctx, t))
        if (t->data) memset(t->data, 0, tg_nbytes(t));
}

struct tg_llama_exec {
    struct tg_cpu_pool * pool;
    char * buf;
    size_t cap;
};

struct tg_llama_exec * tg_llama_exec_new(const struct tg_llama_model * m, int n_threads, const char * devices) {
    (void) m;
    if (devices && devices[0] && strcmp(devices, "CPU") != 0) {
        tg_error(TG_ERR_UNSUPPORTED, "llama: devices '%s' need the scheduler (this build computes on the CPU only)", devices);
        return NULL;
    }
    struct tg_llama_exec * e = calloc(1, sizeof *e);
    if (!e) { tg_error(TG_ERR_NOMEM, "out of memory (llama exec)"); return NULL; }
    e->pool = tg_cpu_pool_new(n_threads);
    if (!e->pool) { free(e); return NULL; }
    return e;
}

void tg_llama_exec_free(struct tg_llama_exec * e) {
    if (!e) return;
    tg_cpu_pool_free(e->pool);
    free(e->buf);
    free(e);
}

size_t tg_llama_exec_bytes(const struct tg_llama_exec * e) { return e ? e->cap : 0; }

void tg_llama_exec_splits(const struct tg_llama_exec * e, int32_t * n_splits, int32_t * n_copies) {
    (void) e;
    *n_splits = 1;
    *n_copies = 0;
}

struct tg_sched * tg_llama_exec_sched(const struct tg_llama_exec * e) {
    (void) e;
    return NULL;
}

enum tg_status tg_llama_exec_reserve(struct tg_llama_exec * e, struct tg_graph * g) { (void) e; (void) g; return TG_OK; }
void tg_llama_exec_reset(struct tg_llama_exec * e) { (void) e; }

static size_t pad_up(size_t n) { return (n + TG_MEM_ALIGN - 1) / TG_MEM_ALIGN * TG_MEM_ALIGN; }

static bool needs_memory(const struct tg_tensor * t) { return !t->view_src && !t->data; }

enum tg_status tg_llama_exec_alloc(struct tg_llama_exec * e, struct tg_graph * g) {
    size_t need = 0;
    for (int i = 0; i < g->n_leafs; i++) if (needs_memory(g->leafs[i])) need += pad_up(tg_nbytes(g->leafs[i]));
    for (int i = 0; i < g->n_nodes; i++) if (!g->nodes[i]->view_src) need += pad_up(tg_nbytes(g->nodes[i]));
    if (need > e->cap) {
        char * nb = NULL;
        if (posix_memalign((void **) &nb, TG_MEM_ALIGN, need) != 0 || !nb)
            return tg_error(TG_ERR_NOMEM, "llama: cannot allocate %zu bytes of compute memory", need);
        free(e->buf);
        e->buf = nb;
        e->cap = need;
    }
    size_t off = 0;
    for (int i = 0; i < g->n_leafs; i++) {
        struct tg_tensor * t = g->leafs[i];
        if (!needs_memory(t)) continue;
        t->data = e->buf + off;
        off += pad_up(tg_nbytes(t));
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct tg_tensor * t = g->nodes[i];
        if (t->view_src) {
            if (!t->view_src->data)
                return tg_error(TG_ERR_NO_BUFFER, "llama: '%s' views '%s', which has no memory", t->name, t->view_src->name);
            t->data = (char *) t->view_src->data + t->view_offs;
            continue;
        }
        t->data = e->buf + off;
        off += pad_up(tg_nbytes(t));
    }
    return TG_OK;
}

enum tg_status tg_llama_exec_set(struct tg_llama_exec * e, struct tg_tensor * t, const void * data, size_t size) {
    (void) e;
    if (!t->data) return tg_error(TG_ERR_NO_BUFFER, "llama: input '%s' has no memory", t->name);
    if (size > tg_nbytes(t)) return tg_error(TG_ERR_INVALID_ARG, "llama: %zu bytes for input '%s' of %zu", size, t->name, tg_nbytes(t));
    memcpy(t->data, data, size);
    return TG_OK;
}

enum tg_status tg_llama_exec_get(struct tg_llama_exec * e, const struct tg_tensor * t, void * data, size_t offset, size_t size) {
    (void) e;
    if (!t->data) return tg_error(TG_ERR_NO_BUFFER, "llama: '%s' has no memory", t->name);
    if (offset + size > tg_nbytes(t)) return tg_error(TG_ERR_INVALID_ARG, "llama: read past the end of '%s'", t->name);
    memcpy(data, (const char *) t->data + offset, size);
    return TG_OK;
}

// Per-node hooks: the eval-callback protocol and the per-op profile.
struct hook_state {
    const struct tg_llama_exec_hooks * h;
    bool asked, stop;
    double t0;
};

static bool hook_before(struct tg_tensor * node, int index, void * user) {
    (void) index;
    struct hook_state * s = user;
    if (s->stop) return false;
    s->asked = s->h->eval_cb ? s->h->eval_cb(node, true, s->h->eval_cb_user) : false;
    if (s->h->prof) s->t0 = tg_llama_time_ms();
    return true;
}

static void hook_after(struct tg_tensor * node, int index, void * user) {
    (void) index;
    struct hook_state * s = user;
    if (s->h->prof && node->op >= 0 && node->op < TG_OP_COUNT) {
        s->h->prof[node->op].n_calls++;
        s->h->prof[node->op].ms += tg_llama_time_ms() - s->t0;
    }
    if (s->asked && !s->h->eval_cb(node, false, s->h->eval_cb_user)) s->stop = true;
}

enum tg_status tg_llama_exec_compute(struct tg_llama_exec * e, struct tg_graph * g, const struct tg_llama_exec_hooks * hooks) {
    if (!hooks || (!hooks->eval_cb && !hooks->prof)) return tg_cpu_graph_compute(e->pool, g, NULL);
    struct hook_state s = { .h = hooks };
    struct tg_cpu_hooks ch = { hook_before, hook_after, &s };
    enum tg_status st = tg_cpu_graph_compute(e->pool, g, &ch);
    if (st == TG_OK && s.stop) st = tg_error(TG_ERR_ABORTED, "llama: the eval callback stopped the computation");
    return st;
}

void tg_llama_exec_marker(struct tg_llama_exec * e, int32_t n_tokens, int32_t pos, int32_t ubatch,
                          int32_t batch_tokens, int32_t batch_pos) {
    (void) e; (void) n_tokens; (void) pos; (void) ubatch; (void) batch_tokens; (void) batch_pos;  // no observers here
}

#endif  // !TG_LLAMA_SCHED
