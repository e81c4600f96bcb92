// decode.c - llama contexts: KV cache, micro-batches, graph per micro-batch,
// logits of the requested tokens.
#include "core/grow.h"
#include "llama-impl.h"
#include "tg/observe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double tg_llama_time_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6;
}

struct tg_llama_context {
    struct tg_llama_model * model;
    struct tg_llama_context_params params;
    struct tg_llama_kv kv;
    struct tg_llama_exec * exec;
    struct tg_context * gctx;          // metadata of the last micro-batch's graph
    struct tg_llama_ubatch_graph ug;   // that graph
    size_t gctx_size;
    void * gctx_arena;                 // [gctx_size], reused by every graph: the same graph built
                                       // again has the same tensor addresses (stable uids in traces)
    float * logits;                    // [n_vocab, n_out] kept logits of the last batch
    int32_t * out_row;                 // [n_tokens of the last batch] row in logits or -1
    int32_t n_last;                    // tokens of the last batch
    size_t logits_cap, out_cap;        // capacities (floats, ints)
    bool profile;
    struct tg_llama_op_time prof[TG_OP_COUNT];
    struct tg_llama_stats stats;
    float * mask_buf;                  // [n_kv, n_ubatch] scratch for the mask
    int32_t * ibuf;                    // [n_ubatch] scratch for token / position / output ids
    struct tg_tensor ** pos_views;     // [4 n_layer] the graph's position-dependent views (ug.pos_views)
    size_t * pos_steps;                // [4 n_layer]
    bool ug_ok;                        // ug was allocated and computed: it may be computed again
    bool ug_fa;                        // ug's attention path
    bool no_reuse;                     // TG_GRAPH_REUSE=0: every micro-batch builds its graph
};

struct tg_llama_context_params tg_llama_context_default_params(void) {
    struct tg_llama_context_params p = {
        .n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = tg_cpu_default_threads(),
        .type_k = TG_TYPE_F16, .type_v = TG_TYPE_F16,
        .logits_all = false, .flash_attn = TG_FLASH_ATTN_AUTO, .devices = NULL, .eval_cb = NULL, .eval_cb_user = NULL,
    };
    return p;
}

enum tg_status tg_llama_params_resolve(const struct tg_llama_model * m, struct tg_llama_context_params * p) {
    if (p->n_ctx == 0) p->n_ctx = m->hparams.n_ctx_train;
    if (p->n_batch == 0) p->n_batch = p->n_ctx;
    if (p->n_ubatch == 0) p->n_ubatch = p->n_batch;
    if (p->n_ctx < 1 || p->n_ctx > (1 << 20))
        return tg_error(TG_ERR_INVALID_ARG, "llama context: n_ctx %d out of range (1..%d)", p->n_ctx, 1 << 20);
    if (p->n_batch > p->n_ctx) p->n_batch = p->n_ctx;
    if (p->n_ubatch > p->n_batch) p->n_ubatch = p->n_batch;
    if (p->n_batch < 1 || p->n_ubatch < 1)
        return tg_error(TG_ERR_INVALID_ARG, "llama context: n_batch %d / n_ubatch %d must be >= 1", p->n_batch, p->n_ubatch);
    if (p->n_threads < 1 || p->n_threads > 512)
        return tg_error(TG_ERR_INVALID_ARG, "llama context: n_threads %d out of range (1..512)", p->n_threads);
    return TG_OK;
}

static bool fa_for(const struct tg_llama_context * c, int32_t T);

// Plans compute memory for the largest micro-batch (n_ubatch tokens over
// every cell, every token an output) and for one generated token.
static enum tg_status reserve(struct tg_llama_context * c) {
    const int32_t shapes[2][3] = {  // tokens, cells, outputs
        { c->params.n_ubatch, c->params.n_ctx, c->params.n_ubatch },
        { 1, c->params.n_ctx, 1 },
    };
    for (int i = 0; i < 2; i++) {
        struct tg_context_params cp = { .mem_size = c->gctx_size, .mem_buffer = c->gctx_arena, .no_alloc = true };
        struct tg_context * gctx = tg_context_new(cp);
        if (!gctx) return tg_last_status();
        struct tg_llama_ubatch_graph ug = { 0 };   // no position views kept
        enum tg_status st = tg_llama_build_graph(gctx, c->model, &c->kv, shapes[i][0], c->params.n_ctx - shapes[i][0],
                                                 shapes[i][1], shapes[i][2], fa_for(c, shapes[i][0]), &ug);
        if (!st) st = tg_llama_exec_reserve(c->exec, ug.graph);
        tg_llama_exec_reset(c->exec);
        tg_context_free(gctx);
        if (st) return st;
    }
    return TG_OK;
}

struct tg_llama_context * tg_llama_context_new(struct tg_llama_model * model, const struct tg_llama_context_params * params) {
    if (!model) { tg_error(TG_ERR_INVALID_ARG, "tg_llama_context_new: model is NULL"); return NULL; }
    struct tg_llama_context * c = calloc(1, sizeof *c);
    if (!c) { tg_error(TG_ERR_NOMEM, "out of memory (llama context)"); return NULL; }
    c->model = model;
    c->params = params ? *params : tg_llama_context_default_params();
    if (tg_llama_params_resolve(model, &c->params) != TG_OK) { free(c); return NULL; }
    const struct tg_llama_context_params * p = &c->params;
    if (tg_llama_kv_init(&c->kv, model, p->n_ctx, p->type_k, p->type_v) != TG_OK) { free(c); return NULL; }
    c->exec = tg_llama_exec_new(model, p->n_threads, p->devices, 0);
    int gsize = tg_llama_graph_size(model);
    c->gctx_size = (size_t) gsize * 2 * tg_tensor_overhead() + tg_graph_overhead(gsize) + 4096;
    c->mask_buf = malloc(sizeof(float) * (size_t) p->n_ubatch * (size_t) p->n_ctx);
    c->ibuf = malloc(sizeof(int32_t) * (size_t) p->n_ubatch);
    c->gctx_arena = malloc(c->gctx_size);
    c->pos_views = malloc(sizeof(*c->pos_views) * 4 * (size_t) (model->hparams.n_layer + 1));
    c->pos_steps = malloc(sizeof(*c->pos_steps) * 4 * (size_t) (model->hparams.n_layer + 1));
    if (!c->exec || !c->mask_buf || !c->ibuf || !c->gctx_arena || !c->pos_views || !c->pos_steps) {
        if (c->exec) tg_error(TG_ERR_NOMEM, "out of memory (llama context buffers)");
        tg_llama_context_free(c);
        return NULL;
    }
    c->stats.kv_bytes = c->kv.bytes;
    const char * gr = getenv("TG_GRAPH_REUSE");
    c->no_reuse = gr && !strcmp(gr, "0");
    if (reserve(c) != TG_OK) { tg_llama_context_free(c); return NULL; }
    return c;
}

void tg_llama_context_free(struct tg_llama_context * c) {
    if (!c) return;
    if (c->exec) tg_llama_exec_reset(c->exec);
    tg_context_free(c->gctx);
    free(c->gctx_arena);
    tg_llama_exec_free(c->exec);
    tg_llama_kv_free(&c->kv);
    free(c->logits);
    free(c->out_row);
    free(c->mask_buf);
    free(c->ibuf);
    free(c->pos_views);
    free(c->pos_steps);
    free(c);
}

const struct tg_llama_context_params * tg_llama_context_params(const struct tg_llama_context * c) { return &c->params; }
const struct tg_llama_model * tg_llama_context_model(const struct tg_llama_context * c) { return c->model; }
int32_t tg_llama_n_ctx(const struct tg_llama_context * c) { return c->params.n_ctx; }
void tg_llama_kv_clear(struct tg_llama_context * c) { tg_llama_kv_zero(&c->kv); }
int32_t tg_llama_kv_used(const struct tg_llama_context * c) { return c->kv.used; }
struct tg_sched * tg_llama_context_sched(const struct tg_llama_context * c) { return tg_llama_exec_sched(c->exec); }
struct tg_graph * tg_llama_last_graph(const struct tg_llama_context * c) { return c->ug.graph; }
void tg_llama_set_profile(struct tg_llama_context * c, bool on) { c->profile = on; }
const struct tg_llama_op_time * tg_llama_profile(const struct tg_llama_context * c) { return c->prof; }
void tg_llama_profile_reset(struct tg_llama_context * c) { memset(c->prof, 0, sizeof c->prof); }

struct tg_llama_stats tg_llama_stats(const struct tg_llama_context * c) {
    struct tg_llama_stats s = c->stats;
    s.compute_bytes = tg_llama_exec_bytes(c->exec);
    tg_llama_exec_splits(c->exec, &s.n_splits, &s.n_copies);
    return s;
}

// Validates a batch and sizes the logits storage: out_row[i] = row of token
// i's logits or -1. Returns the number of kept rows, or -1 (error set).
static int32_t plan_outputs(struct tg_llama_context * c, const struct tg_llama_batch * b) {
    const int32_t n = b->n_tokens, n_vocab = c->model->hparams.n_vocab;
    if (!b->tokens || n < 1)
        return tg_error(TG_ERR_INVALID_ARG, "llama decode: empty batch"), -1;
    if (n > c->params.n_batch)
        return tg_error(TG_ERR_INVALID_ARG, "llama decode: %d tokens exceed n_batch %d", n, c->params.n_batch), -1;
    if (b->pos0 < 0 || b->pos0 > c->kv.used)
        return tg_error(TG_ERR_INVALID_ARG, "llama decode: position %d is not in 0..%d (the cache holds %d positions)",
                        b->pos0, c->kv.used, c->kv.used), -1;
    if ((int64_t) b->pos0 + n > c->params.n_ctx)
        return tg_error(TG_ERR_INVALID_ARG, "llama decode: positions %d..%d exceed n_ctx %d", b->pos0,
                        b->pos0 + n - 1, c->params.n_ctx), -1;
    for (int32_t i = 0; i < n; i++)
        if (b->tokens[i] < 0 || b->tokens[i] >= n_vocab)
            return tg_error(TG_ERR_INVALID_ARG, "llama decode: token %d (at %d) is not in 0..%d", b->tokens[i], i, n_vocab - 1), -1;
    if (!TG_GROW(c->out_row, c->out_cap, (size_t) n)) return tg_error(TG_ERR_NOMEM, "out of memory (logits index)"), -1;
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++) {
        bool want = b->logits ? b->logits[i] != 0 : (c->params.logits_all || i == n - 1);
        c->out_row[i] = want ? n_out++ : -1;
    }
    size_t need = (size_t) n_out * (size_t) n_vocab;
    if (!TG_GROW(c->logits, c->logits_cap, need)) return tg_error(TG_ERR_NOMEM, "out of memory (%d rows of logits)", n_out), -1;
    c->n_last = n;
    return n_out;
}

// Fills the inputs of the micro-batch tokens[u0, u0+T) (positions pos0+u0..).
static enum tg_status set_inputs(struct tg_llama_context * c, const struct tg_llama_batch * b, int32_t u0) {
    struct tg_llama_ubatch_graph * g = &c->ug;
    const int32_t T = g->n_tokens, C = g->n_kv, p0 = b->pos0 + u0;
    enum tg_status st = tg_llama_exec_set(c->exec, g->inp_tokens, b->tokens + u0, sizeof(int32_t) * (size_t) T);
    if (st) return st;
    for (int32_t t = 0; t < T; t++) c->ibuf[t] = p0 + t;
    if ((st = tg_llama_exec_set(c->exec, g->inp_pos, c->ibuf, sizeof(int32_t) * (size_t) T))) return st;
    for (int32_t t = 0; t < T; t++)       // causal: token at position p sees cells 0..p
        for (int32_t j = 0; j < C; j++)
            c->mask_buf[(size_t) t * (size_t) C + (size_t) j] = j <= p0 + t ? 0.0f : -INFINITY;
    if ((st = tg_llama_exec_set(c->exec, g->kq_mask, c->mask_buf, sizeof(float) * (size_t) T * (size_t) C))) return st;
    if (g->out_ids) {
        int32_t k = 0;
        for (int32_t t = 0; t < T; t++) if (c->out_row[u0 + t] >= 0) c->ibuf[k++] = t;
        if (k == 0) c->ibuf[k++] = T - 1;  // no output wanted: compute the last row anyway
        TG_ASSERT(k == g->n_outputs);
        if ((st = tg_llama_exec_set(c->exec, g->out_ids, c->ibuf, sizeof(int32_t) * (size_t) k))) return st;
    }
    return TG_OK;
}

// Copies the micro-batch's logits rows to their places in c->logits.
static enum tg_status read_logits(struct tg_llama_context * c, int32_t u0) {
    struct tg_llama_ubatch_graph * g = &c->ug;
    const size_t row = sizeof(float) * (size_t) c->model->hparams.n_vocab;
    int32_t k = 0;
    for (int32_t t = 0; t < g->n_tokens; t++) {
        int32_t r = c->out_row[u0 + t];
        if (r < 0) continue;
        enum tg_status st = tg_llama_exec_get(c->exec, g->logits, (char *) c->logits + (size_t) r * row, (size_t) k * row, row);
        if (st) return st;
        k++;
    }
    return TG_OK;
}

// -fa auto with every layer on a GPU: batches of more than this many tokens
// (prompts) take the unfused nodes, whose products are cuBLAS's; the fused
// CUDA kernel is the faster one for generation only (100m Q8_0 on an H200,
// pp512 51.1k tok/s fused against 68.9k unfused, at depth 1024 24.2k
// against 48.0k; tg128 716 against 494).
#define TG_LLAMA_FA_GPU_MAX_T 8

// Whether a graph of T tokens uses the fused attention node.
static bool fa_for(const struct tg_llama_context * c, int32_t T) {
    switch (c->params.flash_attn) {
    case TG_FLASH_ATTN_ON:  return true;
    case TG_FLASH_ATTN_OFF: return false;
    default:
        if (c->params.eval_cb || tg_observe_n_global() != 0 || tg_llama_exec_observed(c->exec)) return false;
        return !(T > TG_LLAMA_FA_GPU_MAX_T && c->model->n_gpu_layers >= c->model->hparams.n_layer);
    }
}

bool tg_llama_context_flash_attn(const struct tg_llama_context * c) {
    return c && fa_for(c, 1);
}

// Moves the last graph's position views from ug.pos0 to pos0 (the K/V
// stores write the cells of the new positions; nothing else in the graph
// depends on them: positions and the mask are inputs). A VIEW's parameter
// (its offset into its source, tg_view_*) follows, so the moved graph is
// the graph building it at pos0 gives.
static void move_graph(struct tg_llama_context * c, int32_t pos0) {
    const ptrdiff_t d = (ptrdiff_t) pos0 - (ptrdiff_t) c->ug.pos0;
    for (int i = 0; i < c->ug.n_pos_views; i++) {
        struct tg_tensor * t = c->ug.pos_views[i];
        const ptrdiff_t by = d * (ptrdiff_t) c->ug.pos_steps[i];
        t->data = (char *) t->data + by;
        t->view_offs = (size_t) ((ptrdiff_t) t->view_offs + by);
    }
    for (int i = 0; i < c->ug.n_pos_views; i++) {
        struct tg_tensor * t = c->ug.pos_views[i];
        const struct tg_tensor * a = t->src[0];
        if (t->op != TG_OP_VIEW || !a) continue;
        const size_t offset = t->view_offs - (a->view_src ? a->view_offs : 0);
        memcpy(t->op_params, &offset, sizeof(offset));
    }
    c->ug.pos0 = pos0;
}

// Builds, allocates, fills and computes the graph of tokens [u0, u0+T). The
// graph of a generated token serves the next tokens while the shapes stay
// (the cells looked at grow in steps of TG_LLAMA_KV_PAD): its store views
// are moved instead of the graph built again, its placement and allocation
// kept; observers (a trace among them) still see every token's graph
// placed and allocated (tg_sched_graph_moved), as if built.
static enum tg_status decode_ubatch(struct tg_llama_context * c, const struct tg_llama_batch * b, int32_t u0, int32_t T) {
    int32_t n_out = 0;
    for (int32_t t = 0; t < T; t++) n_out += c->out_row[u0 + t] >= 0;
    if (n_out == 0) n_out = 1;
    const int32_t p0 = b->pos0 + u0, n_kv = tg_llama_kv_n_cells(&c->kv, p0 + T);
    const bool fa = fa_for(c, T);
    double t0 = tg_llama_time_ms();
    enum tg_status st = TG_OK;
    const bool reuse = c->ug_ok && c->ug.graph && c->ug.n_tokens == T && c->ug.n_kv == n_kv && c->ug.n_outputs == n_out &&
                       c->ug_fa == fa && c->ug.n_pos_views > 0 && !c->no_reuse && tg_llama_exec_moves_ok(c->exec);
    const bool watched = c->params.eval_cb || c->profile || tg_llama_exec_observed(c->exec) || tg_observe_n_global() > 0;
    if (reuse) {
        move_graph(c, p0);
    } else {
        c->ug_ok = false;
        tg_llama_exec_reset(c->exec);
        tg_context_free(c->gctx);
        memset(&c->ug, 0, sizeof c->ug);
        struct tg_context_params cp = { .mem_size = c->gctx_size, .mem_buffer = c->gctx_arena, .no_alloc = true };
        c->gctx = tg_context_new(cp);
        if (!c->gctx) return tg_last_status();
        struct tg_llama_ubatch_graph ug = { .pos_views = c->pos_views, .pos_steps = c->pos_steps };
        st = tg_llama_build_graph(c->gctx, c->model, &c->kv, T, p0, n_kv, n_out, fa, &ug);
        if (st) return st;
        c->ug = ug;
        c->ug_fa = fa;
    }
    double t1 = tg_llama_time_ms();
    tg_llama_exec_marker(c->exec, T, p0, u0 / c->params.n_ubatch, b->n_tokens, b->pos0, fa);
    if (!reuse) st = tg_llama_exec_alloc(c->exec, c->ug.graph);
    else if (watched)   // observers see it as a new graph, placed and allocated, told which views moved
        st = tg_llama_exec_moved(c->exec, c->ug.graph, c->ug.pos_views, c->ug.n_pos_views);
    if (st) return st;
    if ((st = set_inputs(c, b, u0))) return st;
    double t2 = tg_llama_time_ms();
    struct tg_llama_exec_hooks hooks = { c->params.eval_cb, c->params.eval_cb_user, c->profile ? c->prof : NULL };
    c->ug_ok = false;
    if ((st = tg_llama_exec_compute(c->exec, c->ug.graph, &hooks))) return st;
    c->ug_ok = true;
    double t3 = tg_llama_time_ms();
    c->kv.used = p0 + T;
    st = read_logits(c, u0);
    c->stats.ms_build += t1 - t0;
    c->stats.ms_alloc += t2 - t1;
    c->stats.ms_compute += t3 - t2;
    c->stats.n_graphs++;
    c->stats.n_reused += reuse;
    return st;
}

enum tg_status tg_llama_decode_batch(struct tg_llama_context * c, const struct tg_llama_batch * b) {
    if (!c || !b) return tg_error(TG_ERR_INVALID_ARG, "tg_llama_decode_batch: NULL argument");
    c->n_last = 0;
    if (plan_outputs(c, b) < 0) return tg_last_status();
    c->kv.used = b->pos0;  // positions after pos0 are overwritten
    for (int32_t u0 = 0; u0 < b->n_tokens; u0 += c->params.n_ubatch) {
        int32_t T = b->n_tokens - u0 < c->params.n_ubatch ? b->n_tokens - u0 : c->params.n_ubatch;
        enum tg_status st = decode_ubatch(c, b, u0, T);
        if (st) {
            c->kv.used = b->pos0;
            c->n_last = 0;
            return st;
        }
    }
    c->stats.n_decode++;
    c->stats.n_tokens += b->n_tokens;
    return TG_OK;
}

enum tg_status tg_llama_decode(struct tg_llama_context * c, const int32_t * tokens, int32_t n_tokens, int32_t pos0) {
    struct tg_llama_batch b = { tokens, n_tokens, pos0, NULL };
    return tg_llama_decode_batch(c, &b);
}

const float * tg_llama_get_logits(const struct tg_llama_context * c, int32_t i) {
    if (!c || c->n_last == 0) { tg_error(TG_ERR_INVALID_ARG, "llama: no logits (no successful decode yet)"); return NULL; }
    if (i < 0) i += c->n_last;
    if (i < 0 || i >= c->n_last) { tg_error(TG_ERR_INVALID_ARG, "llama: token %d is not in the last batch (%d tokens)", i, c->n_last); return NULL; }
    if (c->out_row[i] < 0) { tg_error(TG_ERR_INVALID_ARG, "llama: the logits of token %d were not kept", i); return NULL; }
    return c->logits + (size_t) c->out_row[i] * (size_t) c->model->hparams.n_vocab;
}
