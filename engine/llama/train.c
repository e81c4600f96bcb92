// train.c - training a llama model: F32 copies of every weight as parameters
// (with their AdamW moments) in a persistent buffer of usage weights; one
// graph per step with the forward pass of a batch of sequences and its
// next-token cross-entropy, the backward pass (tg_graph_build_backward), the
// gradient norm and one AdamW step per parameter, computed by the scheduler
// (tg_llama_exec) so that the graph allocator plans its memory and observers
// (the trace recorder) see every node. The same graph serves every step
// (tokens, labels, the loss seed and the optimizer's hyper-parameters are
// inputs set before each step), so a step is deterministic for a thread count.
#include "llama-impl.h"
#include "tg/backend.h"
#include "tg/observe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAIN_MAX_PARAMS 1024

struct tg_llama_trainer {
    struct tg_llama_model *     m;
    struct tg_llama_train_params p;
    struct tg_llama_exec *      exec;    // backends and scheduler
    struct tg_context *         ctx_p;   // parameters, moments, hyper-parameters (persistent)
    struct tg_buffer *          buf_p;
    struct tg_context *         ctx_g;   // the step graph's tensors (the allocator places them)
    struct tg_tensor *          params[TRAIN_MAX_PARAMS];
    struct tg_tensor *          src_w[TRAIN_MAX_PARAMS];   // the model weight each parameter copies
    struct tg_tensor *          mom1[TRAIN_MAX_PARAMS], * mom2[TRAIN_MAX_PARAMS];
    int                         n_params;
    struct tg_tensor *          tokens, * labels, * pos, * mask, * hp, * loss, * gnorm;
    struct tg_graph *           g;
    int                         n_fwd;   // nodes of the forward pass (g's first nodes)
    int                         step;
    float *                     host;    // scratch: labels / mask of one step
};

struct tg_llama_train_params tg_llama_train_default_params(void) {
    return (struct tg_llama_train_params) { .n_ctx = 64, .n_batch = 1, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f,
                                            .eps = 1e-8f, .weight_decay = 0.0f, .schedule = TG_LR_CONSTANT,
                                            .n_threads = tg_cpu_default_threads() };
}

float tg_llama_train_lr(const struct tg_llama_train_params * p, int32_t step) {
    if (!p) return 0.0f;
    if (p->n_warmup > 0 && step <= p->n_warmup) return p->lr * (float) step / (float) p->n_warmup;
    if (p->schedule != TG_LR_COSINE || p->n_steps <= p->n_warmup) return p->lr;
    const double span = (double) (p->n_steps - p->n_warmup);
    const double x = fmin(1.0, (double) (step - p->n_warmup) / span);
    return (float) (p->lr_min + 0.5 * (p->lr - p->lr_min) * (1.0 + cos(M_PI * x)));
}

// An F32 parameter (no data yet) copying weight w (NULL stays NULL).
static struct tg_tensor * param_of(struct tg_llama_trainer * t, struct tg_tensor * w) {
    if (!w) return NULL;
    for (int i = 0; i < t->n_params; i++) if (t->src_w[i] == w) return t->params[i];   // tied weights: one parameter
    if (t->n_params == TRAIN_MAX_PARAMS) { tg_error(TG_ERR_NOMEM, "train: more than %d weights", TRAIN_MAX_PARAMS); return NULL; }
    const struct tg_type_traits * tt = tg_type_traits(w->type);
    if (!w->data || !tt || !tt->to_float) { tg_error(TG_ERR_TYPE, "train: weight '%s' (%s) cannot be read as f32", w->name, tg_type_name(w->type)); return NULL; }
    struct tg_tensor * p = tg_new_tensor(t->ctx_p, TG_TYPE_F32, 4, w->ne);
    if (!p) return NULL;
    tg_set_name(p, w->name);
    tg_set_param(p);
    t->src_w[t->n_params] = w;
    t->params[t->n_params++] = p;
    return p;
}

static struct tg_tensor * gqa_repeat(struct tg_context * ctx, struct tg_tensor * x, int64_t ne0, int64_t ne1, int hkv, int group) {
    if (group == 1) return x;   // [ne0, ne1, hkv] -> [ne0, ne1, group * hkv], head h from kv head h / group
    struct tg_tensor * r4 = tg_reshape_4d(ctx, tg_cont(ctx, x), ne0, ne1, 1, hkv);
    struct tg_tensor * like = tg_new_tensor_4d(ctx, TG_TYPE_F32, ne0, ne1, group, hkv);
    return tg_reshape_3d(ctx, tg_cont(ctx, tg_repeat(ctx, r4, like)), ne0, ne1, (int64_t) group * hkv);
}

// The forward pass of N = n_ctx * n_batch tokens to the loss (parameters
// created on the way).
static struct tg_tensor * build_forward(struct tg_llama_trainer * t) {
    const struct tg_llama_model * m = t->m;
    const struct tg_llama_hparams * h = &m->hparams;
    struct tg_context * ctx = t->ctx_g;
    const int N = t->p.n_ctx * t->p.n_batch, Hd = h->head_dim, H = h->n_head, Hk = h->n_head_kv, V = h->n_vocab;
    t->tokens = tg_new_tensor_1d(ctx, TG_TYPE_I32, N);
    t->labels = tg_new_tensor_2d(ctx, TG_TYPE_F32, V, N);
    t->pos = tg_new_tensor_1d(ctx, TG_TYPE_I32, N);
    t->mask = tg_new_tensor_2d(ctx, TG_TYPE_F32, N, N);
    if (!t->tokens || !t->labels || !t->pos || !t->mask) return NULL;
    tg_set_name(t->tokens, "inp_tokens");
    tg_set_name(t->labels, "inp_labels");
    tg_set_name(t->pos, "inp_pos");
    tg_set_name(t->mask, "kq_mask");
    tg_set_input(t->tokens); tg_set_input(t->labels); tg_set_input(t->pos); tg_set_input(t->mask);
    struct tg_tensor * x = tg_get_rows(ctx, param_of(t, m->tok_embd), t->tokens);   // [E, N]
    if (x) tg_set_name(x, "inp_embd");
    for (int il = 0; il < h->n_layer && x; il++) {
        const struct tg_llama_layer * L = &m->layers[il];
        struct tg_tensor * cur = tg_rms_norm(ctx, x, h->rms_eps);
        if (cur) tg_format_name(cur, "norm-%d", il);
        cur = tg_mul(ctx, cur, param_of(t, L->attn_norm));
        if (cur) tg_format_name(cur, "attn_norm-%d", il);
        struct tg_tensor * qkv[3];
        struct tg_tensor * const w[3] = { L->wq, L->wk, L->wv }, * const bias[3] = { L->bq, L->bk, L->bv };
        static const char * const nm[3] = { "Qcur-%d", "Kcur-%d", "Vcur-%d" };
        for (int j = 0; j < 3; j++) {
            struct tg_tensor * y = tg_mul_mat(ctx, param_of(t, w[j]), cur);
            if (bias[j]) y = tg_add(ctx, y, param_of(t, bias[j]));
            if (y) tg_format_name(y, nm[j], il);
            y = tg_reshape_3d(ctx, y, Hd, j == 0 ? H : Hk, N);                       // [Hd, heads, N]
            struct tg_tensor * norm = j == 0 ? L->q_norm : j == 1 ? L->k_norm : NULL;
            if (norm) y = tg_mul(ctx, tg_rms_norm(ctx, y, h->rms_eps), param_of(t, norm));
            if (j < 2) y = tg_rope_ext(ctx, y, t->pos, m->rope_freqs, h->n_rot, h->rope_mode, h->rope_freq_base, h->rope_freq_scale);
            qkv[j] = y;
        }
        if (!qkv[0] || !qkv[1] || !qkv[2]) return NULL;
        struct tg_tensor * qp = tg_permute(ctx, qkv[0], 0, 2, 1, 3);                        // [Hd, N, H]
        struct tg_tensor * kp = gqa_repeat(ctx, tg_permute(ctx, qkv[1], 0, 2, 1, 3), Hd, N, Hk, H / Hk);
        struct tg_tensor * kq = tg_mul_mat(ctx, tg_cont(ctx, kp), tg_cont(ctx, qp));      // [N(k), N(q), H]
        if (kq) tg_format_name(kq, "kq-%d", il);
        struct tg_tensor * sm = tg_soft_max_ext(ctx, kq, t->mask, 1.0f / sqrtf((float) Hd), 0.0f);
        if (sm) tg_format_name(sm, "kq_soft_max-%d", il);
        struct tg_tensor * vt = gqa_repeat(ctx, tg_permute(ctx, qkv[2], 1, 2, 0, 3), N, Hd, Hk, H / Hk);   // [N, Hd, H]
        struct tg_tensor * kqv = tg_mul_mat(ctx, tg_cont(ctx, vt), sm);                   // [Hd, N, H]
        if (kqv) tg_format_name(kqv, "kqv-%d", il);
        struct tg_tensor * merged = tg_reshape_2d(ctx, tg_cont(ctx, tg_permute(ctx, kqv, 0, 2, 1, 3)), (int64_t) Hd * H, N);
        struct tg_tensor * ao = tg_mul_mat(ctx, param_of(t, L->wo), merged);
        if (ao) tg_format_name(ao, "attn_out-%d", il);
        x = tg_add(ctx, x, ao);
        if (x) tg_format_name(x, "ffn_inp-%d", il);
        cur = tg_rms_norm(ctx, x, h->rms_eps);
        if (cur) tg_format_name(cur, "norm-%d", il);
        cur = tg_mul(ctx, cur, param_of(t, L->ffn_norm));
        if (cur) tg_format_name(cur, "ffn_norm-%d", il);
        struct tg_tensor * gate = tg_mul_mat(ctx, param_of(t, L->ffn_gate), cur);
        struct tg_tensor * up = tg_mul_mat(ctx, param_of(t, L->ffn_up), cur);
        if (gate) tg_format_name(gate, "ffn_gate-%d", il);
        if (up) tg_format_name(up, "ffn_up-%d", il);
        struct tg_tensor * act = tg_swiglu_split(ctx, gate, up);
        if (act) tg_format_name(act, "ffn_swiglu-%d", il);
        struct tg_tensor * down = tg_mul_mat(ctx, param_of(t, L->ffn_down), act);
        if (down) tg_format_name(down, "ffn_out-%d", il);
        x = tg_add(ctx, x, down);
        if (x) tg_format_name(x, "l_out-%d", il);
    }
    if (!x) return NULL;
    struct tg_tensor * cur = tg_rms_norm(ctx, x, h->rms_eps);
    if (cur) tg_set_name(cur, "norm");
    cur = tg_mul(ctx, cur, param_of(t, m->output_norm));
    if (cur) tg_set_name(cur, "result_norm");
    struct tg_tensor * logits = tg_mul_mat(ctx, param_of(t, m->output), cur);              // [V, N]
    if (logits) tg_set_name(logits, "result_output");
    struct tg_tensor * loss = tg_cross_entropy_loss(ctx, logits, t->labels);
    if (loss) { tg_set_name(loss, "loss"); tg_set_output(loss); }
    return loss;
}

// Parameters, moments and hyper-parameters in one host buffer of usage
// weights: the parameters start as the model's weights in F32, the moments
// at zero.
static enum tg_status place_params(struct tg_llama_trainer * t) {
    t->buf_p = tg_backend_alloc_ctx_tensors_from_buft(t->ctx_p, tg_cpu_buffer_type());
    if (!t->buf_p) return tg_last_status() ? tg_last_status() : tg_error(TG_ERR_NOMEM, "train: cannot allocate the parameters");
    tg_buffer_clear(t->buf_p, 0);
    tg_buffer_set_usage(t->buf_p, TG_BUFFER_USAGE_WEIGHTS);
    int64_t max_n = 1;   // each parameter converted whole, then one host write
    for (int i = 0; i < t->n_params; i++) if (tg_nelements(t->src_w[i]) > max_n) max_n = tg_nelements(t->src_w[i]);
    float * row = malloc((size_t) max_n * sizeof(float));
    if (!row) return tg_error(TG_ERR_NOMEM, "train: out of memory");
    enum tg_status st = TG_OK;
    for (int i = 0; i < t->n_params && !st; i++) {
        const struct tg_tensor * w = t->src_w[i];
        const struct tg_type_traits * tt = tg_type_traits(w->type);
        const int64_t rows = tg_nelements(w) / w->ne[0];
        for (int64_t r = 0; r < rows; r++)
            tt->to_float((const char *) w->data + (size_t) r * w->nb[1], row + r * w->ne[0], w->ne[0]);
        st = tg_backend_tensor_set(t->params[i], row, 0, (size_t) tg_nelements(w) * sizeof(float));
    }
    free(row);
    return st;
}

static enum tg_status build(struct tg_llama_trainer * t) {
    struct tg_context * ctx = t->ctx_g;
    t->hp = tg_new_tensor_1d(t->ctx_p, TG_TYPE_F32, 7);
    if (!t->hp) return tg_last_status();
    tg_set_name(t->hp, "opt_hparams");
    t->loss = build_forward(t);
    if (!t->loss) return tg_last_status();
    t->g = tg_graph_new(ctx, tg_llama_train_graph_size(t->m));
    if (!t->g) return tg_last_status();
    enum tg_status st = tg_graph_build_forward(t->g, t->loss);
    if (st) return st;
    t->n_fwd = t->g->n_nodes;
    const struct tg_backward_options bo = { .debug_grad_of_grad = t->p.debug_grad_of_grad };
    st = tg_graph_build_backward(ctx, t->g, t->g, t->loss, &bo);
    // the gradient norm over every parameter, then the optimizer steps
    struct tg_tensor * sq = NULL;
    for (int i = 0; i < t->n_params && !st; i++) {
        struct tg_tensor * g = t->params[i]->grad;
        if (!g) continue;   // a weight the loss does not depend on
        struct tg_tensor * s = tg_sum(ctx, tg_sqr(ctx, g));
        sq = sq ? tg_add(ctx, sq, s) : s;
        if (!sq) st = tg_last_status();
    }
    if (!st && !sq) st = tg_error(TG_ERR_INVALID_ARG, "train: no parameter has a gradient");
    if (!st) {
        t->gnorm = tg_sqrt(ctx, sq);
        if (!t->gnorm) return tg_last_status();
        tg_set_name(t->gnorm, "grad_norm");
        tg_set_output(t->gnorm);
        st = tg_graph_build_forward(t->g, t->gnorm);
    }
    for (int i = 0; i < t->n_params && !st; i++) {
        struct tg_tensor * p = t->params[i];
        if (!p->grad) continue;
        t->mom1[i] = tg_new_tensor(t->ctx_p, TG_TYPE_F32, 4, p->ne);
        t->mom2[i] = tg_new_tensor(t->ctx_p, TG_TYPE_F32, 4, p->ne);
        if (!t->mom1[i] || !t->mom2[i]) return tg_last_status();
        tg_format_name(t->mom1[i], "adam_m %s", p->name);
        tg_format_name(t->mom2[i], "adam_v %s", p->name);
        struct tg_tensor * s = tg_opt_step_adamw(ctx, p, p->grad, t->mom1[i], t->mom2[i], t->hp);
        if (s) tg_format_name(s, "adamw %s", p->name);
        st = s ? tg_graph_build_forward(t->g, s) : tg_last_status();
    }
    return st ? st : place_params(t);
}

int tg_llama_train_graph_size(const struct tg_llama_model * m) {
    return 4096 + 1024 * m->hparams.n_layer;
}

struct tg_llama_trainer * tg_llama_trainer_new(struct tg_llama_model * m, const struct tg_llama_train_params * p) {
    if (!m || !p) { tg_error(TG_ERR_INVALID_ARG, "train: NULL model or parameters"); return NULL; }
    if (p->n_ctx < 2 || p->n_ctx > 4096 || p->n_batch < 1 || p->n_batch > 256 || (int64_t) p->n_ctx * p->n_batch > 8192 ||
        p->n_threads < 1 || !(p->lr > 0) || !(p->lr_min >= 0) || p->n_warmup < 0 || p->n_steps < 0) {
        tg_error(TG_ERR_INVALID_ARG, "train: n_ctx %d (2..4096), n_batch %d (1..256, n_ctx * n_batch <= 8192), "
                 "threads %d, lr %g, lr_min %g, warmup %d, steps %d", p->n_ctx, p->n_batch, p->n_threads,
                 (double) p->lr, (double) p->lr_min, p->n_warmup, p->n_steps);
        return NULL;
    }
    struct tg_llama_trainer * t = calloc(1, sizeof(*t));
    if (!t) { tg_error(TG_ERR_NOMEM, "train: out of memory"); return NULL; }
    t->m = m;
    t->p = *p;
    const int gsize = tg_llama_train_graph_size(m);
    const int64_t N = (int64_t) p->n_ctx * p->n_batch;
    const int64_t V = m->hparams.n_vocab;
    t->ctx_p = tg_context_new((struct tg_context_params) {
        .mem_size = tg_tensor_overhead() * (3 * TRAIN_MAX_PARAMS + 8), .no_alloc = true });
    t->ctx_g = tg_context_new((struct tg_context_params) {
        .mem_size = tg_tensor_overhead() * (size_t) gsize * 2 + tg_graph_overhead(gsize), .no_alloc = true });
    t->host = malloc((size_t) (V > N ? V : N) * (size_t) N * sizeof(float));
    if (!t->ctx_p || !t->ctx_g || !t->host) { tg_llama_trainer_free(t); tg_error(TG_ERR_NOMEM, "train: out of memory"); return NULL; }
    t->exec = tg_llama_exec_new(m, p->n_threads, p->devices, gsize);
    if (!t->exec || build(t) != TG_OK) { tg_llama_trainer_free(t); return NULL; }
    return t;
}

void tg_llama_trainer_free(struct tg_llama_trainer * t) {
    if (!t) return;
    tg_llama_exec_free(t->exec);
    tg_buffer_free(t->buf_p);
    tg_context_free(t->ctx_g);
    tg_context_free(t->ctx_p);
    free(t->host);
    free(t);
}

// Sets the step's inputs: tokens, positions, one-hot labels, the
// block-diagonal causal mask and the loss seed.
static enum tg_status set_inputs(struct tg_llama_trainer * t, const int32_t * tokens) {
    const int T = t->p.n_ctx, B = t->p.n_batch, N = T * B, V = t->m->hparams.n_vocab;
    int32_t * ids = (int32_t *) t->host;
    for (int b = 0; b < B; b++) memcpy(ids + b * T, tokens + (size_t) b * (T + 1), (size_t) T * sizeof(int32_t));
    enum tg_status st = tg_backend_tensor_set(t->tokens, ids, 0, (size_t) N * sizeof(int32_t));
    for (int i = 0; i < N; i++) ids[i] = i % T;
    if (!st) st = tg_backend_tensor_set(t->pos, ids, 0, (size_t) N * sizeof(int32_t));
    memset(t->host, 0, (size_t) V * (size_t) N * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) t->host[(size_t) (b * T + i) * (size_t) V + (size_t) tokens[(size_t) b * (T + 1) + i + 1]] = 1.0f;
    if (!st) st = tg_backend_tensor_set(t->labels, t->host, 0, (size_t) V * (size_t) N * sizeof(float));
    for (int q = 0; q < N; q++)
        for (int k = 0; k < N; k++) t->host[(size_t) q * N + k] = k / T == q / T && k <= q ? 0.0f : -INFINITY;
    if (!st) st = tg_backend_tensor_set(t->mask, t->host, 0, (size_t) N * (size_t) N * sizeof(float));
    const float one = 1.0f;
    if (!st) st = tg_backend_tensor_set(t->loss->grad, &one, 0, sizeof(one));
    return st;
}

enum tg_status tg_llama_train_step(struct tg_llama_trainer * t, const int32_t * tokens, float * loss, float * grad_norm) {
    if (!t || !tokens) return tg_error(TG_ERR_INVALID_ARG, "train: NULL trainer or tokens");
    const int T = t->p.n_ctx, B = t->p.n_batch, V = t->m->hparams.n_vocab;
    for (int i = 0; i < B * (T + 1); i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return tg_error(TG_ERR_INVALID_ARG, "train: token %d (at %d of sequence %d) is not in 0..%d", tokens[i], i % (T + 1), i / (T + 1), V - 1);
    const int step = t->step + 1;
    const struct tg_llama_train_params * p = &t->p;
    const float lr = tg_llama_train_lr(p, step);
    const float hp[7] = { lr, p->beta1, p->beta2, p->eps, p->weight_decay,
                          1.0f / (1.0f - powf(p->beta1, (float) step)), 1.0f / (1.0f - powf(p->beta2, (float) step)) };
    struct tg_sched * sched = tg_llama_exec_sched(t->exec);
    enum tg_status st = tg_backend_tensor_set(t->hp, hp, 0, sizeof(hp));
    if (!st) st = tg_llama_exec_alloc(t->exec, t->g);
    if (!st) st = set_inputs(t, tokens);
    if (st) return st;
    tg_observe_marker(sched, "train", "step=%d lr=%g n_ctx=%d n_batch=%d forward_nodes=%d nodes=%d", step, (double) lr,
                      T, B, t->n_fwd, t->g->n_nodes);
    st = tg_llama_exec_compute(t->exec, t->g, NULL);
    if (st) return st;
    t->step = step;
    float l = NAN, gn = NAN;
    st = tg_backend_tensor_get(t->loss, &l, 0, sizeof(l));
    if (!st) st = tg_backend_tensor_get(t->gnorm, &gn, 0, sizeof(gn));
    if (st) return st;
    tg_observe_marker(sched, "train_result", "step=%d loss=%.9g grad_norm=%.9g", step, (double) l, (double) gn);
    if (loss) *loss = l;
    if (grad_norm) *grad_norm = gn;
    return TG_OK;
}

int tg_llama_trainer_n_params(const struct tg_llama_trainer * t) { return t ? t->n_params : 0; }
const struct tg_graph * tg_llama_trainer_backward_graph(const struct tg_llama_trainer * t) { return t ? t->g : NULL; }

const struct tg_tensor * tg_llama_trainer_param(const struct tg_llama_trainer * t, const char * name) {
    for (int i = 0; t && name && i < t->n_params; i++) if (!strcmp(t->src_w[i]->name, name)) return t->params[i];
    return NULL;
}

enum tg_status tg_llama_trainer_save(const struct tg_llama_trainer * t, const char * path) {
    if (!t || !path) return tg_error(TG_ERR_INVALID_ARG, "train: NULL trainer or path");
    const struct tg_gguf * src = t->m->gguf;
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    if (!w) return tg_error(TG_ERR_NOMEM, "train: out of memory");
    enum tg_status st = tg_gguf_set_kv_from(w, src);
    if (!st) st = tg_gguf_set_u32(w, "general.file_type", 0);   // all F32
    for (int64_t i = 0; i < tg_gguf_n_tensors(src) && !st; i++) {
        const struct tg_gguf_tensor_info * ti = tg_gguf_tensor(src, i);
        const struct tg_tensor * p = tg_llama_trainer_param(t, ti->name);
        if (p) st = tg_gguf_add_tensor(w, ti->name, TG_TYPE_F32, ti->n_dims, ti->ne, p->data);   // a host buffer
        else {
            const void * data = tg_gguf_tensor_data(src, i);
            st = data ? tg_gguf_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, data) : tg_last_status();
        }
    }
    if (!st) st = tg_gguf_write(w, path);
    tg_gguf_writer_free(w);
    return st;
}
