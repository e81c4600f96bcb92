// train.c - training a llama model: F32 copies of every weight as parameters,
// the forward graph of one sequence with next-token cross-entropy, its
// backward graph (tg_graph_build_backward) and one AdamW step per parameter,
// all in one allocating context, computed on the CPU. The same graphs serve
// every step (tokens, labels and the optimizer's hyper-parameters are input
// tensors set before each step), so a step is deterministic for a thread
// count.
#include "llama-impl.h"
#include "tg/cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAIN_MAX_PARAMS 1024

struct tg_llama_trainer {
    struct tg_llama_model *     m;
    struct tg_llama_train_params p;
    struct tg_context *         ctx;     // parameters, moments, graphs and every intermediate
    struct tg_cpu_pool *        pool;
    struct tg_tensor *          params[TRAIN_MAX_PARAMS];
    struct tg_tensor *          src_w[TRAIN_MAX_PARAMS];   // the model weight each parameter copies
    struct tg_tensor *          mom1[TRAIN_MAX_PARAMS], * mom2[TRAIN_MAX_PARAMS];
    int                         n_params;
    struct tg_tensor *          tokens, * labels, * pos, * mask, * hp, * loss;
    struct tg_graph *           gf, * gb, * gopt;
    int                         step;
};

struct tg_llama_train_params tg_llama_train_default_params(void) {
    return (struct tg_llama_train_params) { .n_ctx = 64, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                                            .weight_decay = 0.0f, .n_threads = 2 };
}

// An F32 parameter copying weight w (NULL stays NULL).
static struct tg_tensor * param_of(struct tg_llama_trainer * t, struct tg_tensor * w) {
    if (!w) return NULL;
    for (int i = 0; i < t->n_params; i++) if (t->src_w[i] == w) return t->params[i];   // tied weights: one parameter
    if (t->n_params == TRAIN_MAX_PARAMS) { tg_error(TG_ERR_NOMEM, "train: more than %d weights", TRAIN_MAX_PARAMS); return NULL; }
    struct tg_tensor * p = tg_new_tensor(t->ctx, TG_TYPE_F32, 4, w->ne);
    if (!p) return NULL;
    const struct tg_type_traits * tt = tg_type_traits(w->type);
    if (!w->data || !tt || !tt->to_float) { tg_error(TG_ERR_TYPE, "train: weight '%s' (%s) cannot be read as f32", w->name, tg_type_name(w->type)); return NULL; }
    const int64_t rows = tg_nelements(w) / w->ne[0];
    for (int64_t r = 0; r < rows; r++)
        tt->to_float((const char *) w->data + (size_t) r * w->nb[1], (float *) p->data + r * w->ne[0], w->ne[0]);
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

static enum tg_status build(struct tg_llama_trainer * t) {
    const struct tg_llama_model * m = t->m;
    const struct tg_llama_hparams * h = &m->hparams;
    struct tg_context * ctx = t->ctx;
    const int T = t->p.n_ctx, E = h->n_embd, Hd = h->head_dim, H = h->n_head, Hk = h->n_head_kv, V = h->n_vocab;
    t->tokens = tg_new_tensor_1d(ctx, TG_TYPE_I32, T);
    t->labels = tg_new_tensor_2d(ctx, TG_TYPE_F32, V, T);
    t->pos = tg_new_tensor_1d(ctx, TG_TYPE_I32, T);
    t->mask = tg_new_tensor_2d(ctx, TG_TYPE_F32, T, T);
    t->hp = tg_new_tensor_1d(ctx, TG_TYPE_F32, 7);
    if (!t->tokens || !t->labels || !t->pos || !t->mask || !t->hp) return tg_last_status();
    for (int i = 0; i < T; i++) ((int32_t *) t->pos->data)[i] = i;
    for (int q = 0; q < T; q++)
        for (int k = 0; k < T; k++) ((float *) t->mask->data)[q * T + k] = k <= q ? 0.0f : -INFINITY;
    struct tg_tensor * x = tg_get_rows(ctx, param_of(t, m->tok_embd), t->tokens);   // [E, T]
    for (int il = 0; il < h->n_layer && x; il++) {
        const struct tg_llama_layer * L = &m->layers[il];
        struct tg_tensor * cur = tg_mul(ctx, tg_rms_norm(ctx, x, h->rms_eps), param_of(t, L->attn_norm));
        struct tg_tensor * qkv[3];
        struct tg_tensor * const w[3] = { L->wq, L->wk, L->wv }, * const bias[3] = { L->bq, L->bk, L->bv };
        for (int j = 0; j < 3; j++) {
            struct tg_tensor * y = tg_mul_mat(ctx, param_of(t, w[j]), cur);
            if (bias[j]) y = tg_add(ctx, y, param_of(t, bias[j]));
            y = tg_reshape_3d(ctx, y, Hd, j == 0 ? H : Hk, T);                       // [Hd, heads, T]
            struct tg_tensor * norm = j == 0 ? L->q_norm : j == 1 ? L->k_norm : NULL;
            if (norm) y = tg_mul(ctx, tg_rms_norm(ctx, y, h->rms_eps), param_of(t, norm));
            if (j < 2) y = tg_rope_ext(ctx, y, t->pos, m->rope_freqs, h->n_rot, h->rope_mode, h->rope_freq_base, h->rope_freq_scale);
            qkv[j] = y;
        }
        if (!qkv[0] || !qkv[1] || !qkv[2]) return tg_last_status();
        struct tg_tensor * qp = tg_permute(ctx, qkv[0], 0, 2, 1, 3);                        // [Hd, T, H]
        struct tg_tensor * kp = gqa_repeat(ctx, tg_permute(ctx, qkv[1], 0, 2, 1, 3), Hd, T, Hk, H / Hk);
        struct tg_tensor * kq = tg_mul_mat(ctx, tg_cont(ctx, kp), tg_cont(ctx, qp));      // [T(k), T(q), H]
        struct tg_tensor * sm = tg_soft_max_ext(ctx, kq, t->mask, 1.0f / sqrtf((float) Hd), 0.0f);
        struct tg_tensor * vt = gqa_repeat(ctx, tg_permute(ctx, qkv[2], 1, 2, 0, 3), T, Hd, Hk, H / Hk);   // [T, Hd, H]
        struct tg_tensor * kqv = tg_mul_mat(ctx, tg_cont(ctx, vt), sm);                   // [Hd, T, H]
        struct tg_tensor * merged = tg_reshape_2d(ctx, tg_cont(ctx, tg_permute(ctx, kqv, 0, 2, 1, 3)), (int64_t) Hd * H, T);
        x = tg_add(ctx, x, tg_mul_mat(ctx, param_of(t, L->wo), merged));
        cur = tg_mul(ctx, tg_rms_norm(ctx, x, h->rms_eps), param_of(t, L->ffn_norm));
        struct tg_tensor * gate = tg_mul_mat(ctx, param_of(t, L->ffn_gate), cur);
        struct tg_tensor * up = tg_mul_mat(ctx, param_of(t, L->ffn_up), cur);
        x = tg_add(ctx, x, tg_mul_mat(ctx, param_of(t, L->ffn_down), tg_swiglu_split(ctx, gate, up)));
    }
    if (!x) return tg_last_status();
    struct tg_tensor * cur = tg_mul(ctx, tg_rms_norm(ctx, x, h->rms_eps), param_of(t, m->output_norm));
    struct tg_tensor * logits = tg_mul_mat(ctx, param_of(t, m->output), cur);              // [V, T]
    t->loss = tg_cross_entropy_loss(ctx, logits, t->labels);
    if (!t->loss) return tg_last_status();
    tg_set_name(t->loss, "loss");
    (void) E;
    t->gf = tg_graph_new(ctx, 4096);
    t->gb = tg_graph_new(ctx, 16384);
    t->gopt = tg_graph_new(ctx, 4 * TRAIN_MAX_PARAMS);
    if (!t->gf || !t->gb || !t->gopt) return tg_last_status();
    enum tg_status st = tg_graph_build_forward(t->gf, t->loss);
    if (!st) st = tg_graph_build_backward(ctx, t->gf, t->gb, t->loss, NULL);
    for (int i = 0; i < t->n_params && !st; i++) {
        struct tg_tensor * p = t->params[i];
        if (!p->grad) continue;   // a weight the loss does not depend on
        t->mom1[i] = tg_new_tensor(ctx, TG_TYPE_F32, 4, p->ne);
        t->mom2[i] = tg_new_tensor(ctx, TG_TYPE_F32, 4, p->ne);
        if (!t->mom1[i] || !t->mom2[i]) return tg_last_status();
        memset(t->mom1[i]->data, 0, tg_nbytes(t->mom1[i]));
        memset(t->mom2[i]->data, 0, tg_nbytes(t->mom2[i]));
        struct tg_tensor * s = tg_opt_step_adamw(ctx, p, p->grad, t->mom1[i], t->mom2[i], t->hp);
        st = s ? tg_graph_build_forward(t->gopt, s) : tg_last_status();
    }
    return st;
}

struct tg_llama_trainer * tg_llama_trainer_new(struct tg_llama_model * m, const struct tg_llama_train_params * p) {
    if (!m || !p) { tg_error(TG_ERR_INVALID_ARG, "train: NULL model or parameters"); return NULL; }
    if (p->n_ctx < 2 || p->n_ctx > 4096 || p->n_threads < 1 || !(p->lr > 0))
        { tg_error(TG_ERR_INVALID_ARG, "train: n_ctx %d (2..4096), threads %d, lr %g", p->n_ctx, p->n_threads, (double) p->lr); return NULL; }
    struct tg_llama_trainer * t = calloc(1, sizeof(*t));
    if (!t) { tg_error(TG_ERR_NOMEM, "train: out of memory"); return NULL; }
    t->m = m;
    t->p = *p;
    // every tensor of the graphs lives here: parameters x 4 (value, grad, moments) + activations
    const struct tg_llama_hparams * h = &m->hparams;
    const size_t per_tok = (size_t) (h->n_vocab * 6 + (h->n_embd * 40 + h->n_ff * 12) * h->n_layer) * sizeof(float) +
                           (size_t) h->n_head * (size_t) p->n_ctx * 8 * sizeof(float) * (size_t) h->n_layer;
    const size_t mem = (size_t) m->n_params * 8 * sizeof(float) + per_tok * (size_t) p->n_ctx + ((size_t) 64 << 20);
    t->ctx = tg_context_new((struct tg_context_params) { .mem_size = mem });
    t->pool = t->ctx ? tg_cpu_pool_new(p->n_threads) : NULL;
    if (!t->pool || build(t) != TG_OK) { tg_llama_trainer_free(t); return NULL; }
    return t;
}

void tg_llama_trainer_free(struct tg_llama_trainer * t) {
    if (!t) return;
    tg_cpu_pool_free(t->pool);
    tg_context_free(t->ctx);
    free(t);
}

enum tg_status tg_llama_train_step(struct tg_llama_trainer * t, const int32_t * tokens, float * loss, float * grad_norm) {
    if (!t || !tokens) return tg_error(TG_ERR_INVALID_ARG, "train: NULL trainer or tokens");
    const int T = t->p.n_ctx, V = t->m->hparams.n_vocab;
    for (int i = 0; i <= T; i++)
        if (tokens[i] < 0 || tokens[i] >= V) return tg_error(TG_ERR_INVALID_ARG, "train: token %d (at %d) is not in 0..%d", tokens[i], i, V - 1);
    memcpy(t->tokens->data, tokens, (size_t) T * sizeof(int32_t));
    memset(t->labels->data, 0, tg_nbytes(t->labels));
    for (int i = 0; i < T; i++) ((float *) t->labels->data)[(size_t) i * V + tokens[i + 1]] = 1.0f;   // the next token
    t->step++;
    const struct tg_llama_train_params * p = &t->p;
    const float hp[7] = { p->lr, p->beta1, p->beta2, p->eps, p->weight_decay,
                          1.0f / (1.0f - powf(p->beta1, (float) t->step)), 1.0f / (1.0f - powf(p->beta2, (float) t->step)) };
    memcpy(t->hp->data, hp, sizeof(hp));
    enum tg_status st = tg_cpu_graph_compute(t->pool, t->gb, NULL);
    if (st) return st;
    if (loss) *loss = *(const float *) t->loss->data;
    if (grad_norm) {   // over every parameter, in parameter order
        double s = 0;
        for (int i = 0; i < t->n_params; i++) {
            const struct tg_tensor * g = t->params[i]->grad;
            if (!g) continue;
            for (int64_t k = 0; k < tg_nelements(g); k++) s += (double) ((const float *) g->data)[k] * ((const float *) g->data)[k];
        }
        *grad_norm = (float) sqrt(s);
    }
    return tg_cpu_graph_compute(t->pool, t->gopt, NULL);
}

int tg_llama_trainer_n_params(const struct tg_llama_trainer * t) { return t ? t->n_params : 0; }
const struct tg_graph * tg_llama_trainer_backward_graph(const struct tg_llama_trainer * t) { return t ? t->gb : NULL; }

enum tg_status tg_llama_trainer_save(const struct tg_llama_trainer * t, const char * path) {
    if (!t || !path) return tg_error(TG_ERR_INVALID_ARG, "train: NULL trainer or path");
    const struct tg_gguf * src = t->m->gguf;
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    if (!w) return tg_error(TG_ERR_NOMEM, "train: out of memory");
    enum tg_status st = tg_gguf_set_kv_from(w, src);
    if (!st) st = tg_gguf_set_u32(w, "general.file_type", 0);   // all F32
    for (int64_t i = 0; i < tg_gguf_n_tensors(src) && !st; i++) {
        const struct tg_gguf_tensor_info * ti = tg_gguf_tensor(src, i);
        const struct tg_tensor * p = NULL;
        for (int k = 0; k < t->n_params && !p; k++) if (!strcmp(t->src_w[k]->name, ti->name)) p = t->params[k];
        if (p) st = tg_gguf_add_tensor(w, ti->name, TG_TYPE_F32, ti->n_dims, ti->ne, p->data);
        else {
            const void * data = tg_gguf_tensor_data(src, i);
            st = data ? tg_gguf_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, data) : tg_last_status();
        }
    }
    if (!st) st = tg_gguf_write(w, path);
    tg_gguf_writer_free(w);
    return st;
}
