// graph.c - the llama graph of one micro-batch, with llama.cpp's node names
// so per-node dumps line up (inp_embd, norm-N, attn_norm-N, Qcur-N, Kcur-N,
// Vcur-N, kq-N, kq_soft_max-N, kqv-N, kqv_out-N, attn_out-N, ffn_inp-N,
// ffn_norm-N, ffn_gate-N, ffn_up-N, ffn_swiglu-N, ffn_out-N, l_out-N, norm,
// result_norm, result_output).
//
// Shapes (T tokens, O outputs, C = n_kv cache cells looked at, E = n_embd,
// Hd = head_dim, H = n_head, Hk = n_head_kv, F = n_ff, V = n_vocab):
//   inp_embd [E,T] -> per layer: attention over [Hd,T,H] queries and the
//   cache's [Hd,C,Hk] keys / [C,Hd,Hk] transposed values -> [E,T];
//   SwiGLU FFN [E,T] -> [F,T] -> [E,T]; the last layer keeps O rows;
//   result_output [V,O].
#include "llama-impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// Graph builder state: the context, the model, and the inputs.
struct builder {
    struct tg_context * ctx;
    const struct tg_llama_model * m;
    const struct tg_llama_kv * kv;
    struct tg_graph * gf;
    struct tg_llama_ubatch_graph * out;
    int32_t n_tokens, pos0, n_kv, n_outputs;
    bool flash_attn;
};

#define CHK(x) do { if (!(x)) return NULL; } while (0)

static struct tg_tensor * named(struct tg_tensor * t, const char * base, int il) {
    if (!t) return NULL;
    if (il >= 0) tg_format_name(t, "%s-%d", base, il);
    else tg_set_name(t, base);
    return t;
}

static bool expand(struct builder * b, struct tg_tensor * t) {
    return t && tg_graph_build_forward(b->gf, t) == TG_OK;
}

// norm-il (RMS_NORM) then <name>-il (MUL by the weight). [E,n] -> [E,n]
static struct tg_tensor * build_norm(struct builder * b, struct tg_tensor * x, struct tg_tensor * w,
                                     const char * name, int il) {
    struct tg_tensor * cur = named(tg_rms_norm(b->ctx, x, b->m->hparams.rms_eps), "norm", il);
    CHK(cur);
    return named(tg_mul(b->ctx, cur, w), name, il);
}

// One of the Q/K/V projections: NAME-il = x @ w (+ bias) [heads*Hd,T],
// reshaped to [Hd,heads,T]; with a per-head norm weight, norm-il (RMS norm
// over Hd) and NAME_normed-il; Q and K (norm != NULL or name != Vcur) then
// roped as NAME-il, with the model's frequency factors when it has them.
static struct tg_tensor * build_proj(struct builder * b, struct tg_tensor * x, struct tg_tensor * w,
                                     struct tg_tensor * bias, int heads, struct tg_tensor * norm,
                                     const char * name, int il) {
    const struct tg_llama_hparams * h = &b->m->hparams;
    struct tg_context * ctx = b->ctx;
    const int T = b->n_tokens;
    struct tg_tensor * t = named(tg_mul_mat(ctx, w, x), name, il);                     // [heads*Hd,T]
    CHK(t);
    if (bias) CHK(t = named(tg_add(ctx, t, bias), name, il));
    t = tg_reshape_3d(ctx, t, h->head_dim, heads, T);                                  // [Hd,heads,T]
    CHK(t); tg_format_name(t, "%s-%d (reshaped)", name, il);
    if (strcmp(name, "Vcur") == 0) return named(t, name, il);
    if (norm) {
        CHK(t = named(tg_rms_norm(ctx, t, h->rms_eps), "norm", il));
        char normed[32];
        snprintf(normed, sizeof normed, "%s_normed", name);
        CHK(t = named(tg_mul(ctx, t, norm), normed, il));
    }
    return named(tg_rope_ext(ctx, t, b->out->inp_pos, b->m->rope_freqs, h->n_rot, h->rope_mode, h->rope_freq_base,
                             h->rope_freq_scale), name, il);
}

// Notes a tensor whose address moves by `step` bytes per position (see
// tg_llama_ubatch_graph.pos_views).
static void pos_view(struct builder * b, struct tg_tensor * t, size_t step) {
    struct tg_llama_ubatch_graph * o = b->out;
    if (!o->pos_views) return;
    o->pos_views[o->n_pos_views] = t;
    o->pos_steps[o->n_pos_views++] = step;
}

// Q/K/V projections with rope; K and V written into the cache at cells
// pos0..pos0+T-1. Returns the roped queries [Hd,H,T].
static struct tg_tensor * build_qkv(struct builder * b, struct tg_tensor * cur, int il) {
    const struct tg_llama_hparams * h = &b->m->hparams;
    const struct tg_llama_layer * L = &b->m->layers[il];
    struct tg_context * ctx = b->ctx;
    const int T = b->n_tokens;
    const int64_t n_embd_kv = (int64_t) h->n_head_kv * h->head_dim;

    struct tg_tensor * q = build_proj(b, cur, L->wq, L->bq, h->n_head, L->q_norm, "Qcur", il);   // [Hd,H,T]
    CHK(expand(b, q));
    struct tg_tensor * k = build_proj(b, cur, L->wk, L->bk, h->n_head_kv, L->k_norm, "Kcur", il); // [Hd,Hk,T]
    CHK(expand(b, k));
    struct tg_tensor * v = build_proj(b, cur, L->wv, L->bv, h->n_head_kv, NULL, "Vcur", il);     // [Hd,Hk,T]
    CHK(expand(b, v));

    // K rows -> cache cells pos0.. : cache_k [n_embd_kv, n_ctx]
    struct tg_tensor * kc = b->kv->k[il];
    struct tg_tensor * k2 = tg_reshape_2d(ctx, k, n_embd_kv, T);                       // [Hk*Hd,T]
    CHK(k2); tg_format_name(k2, "Kcur-%d (reshaped)", il);
    struct tg_tensor * kdst = tg_view_2d(ctx, kc, n_embd_kv, T, kc->nb[1], (size_t) b->pos0 * kc->nb[1]);
    CHK(kdst); tg_format_name(kdst, "cache_k_l%d (view)", il);
    struct tg_tensor * kst = tg_cpy(ctx, k2, kdst);
    CHK(kst); tg_format_name(kst, "k_store-%d", il);
    CHK(expand(b, kst));
    pos_view(b, kdst, kc->nb[1]);
    pos_view(b, kst, kc->nb[1]);

    // V columns -> transposed cache: cache_v [n_ctx, n_embd_kv], cell c of dim d at d*nb1 + c*esize
    struct tg_tensor * vc = b->kv->v[il];
    struct tg_tensor * v2 = tg_reshape_2d(ctx, v, n_embd_kv, T);                       // [Hk*Hd,T]
    CHK(v2); tg_format_name(v2, "Vcur-%d (reshaped)", il);
    struct tg_tensor * vt = tg_transpose(ctx, v2);                                     // [T,Hk*Hd]
    CHK(vt); tg_format_name(vt, "Vcur-%d (transposed)", il);
    struct tg_tensor * vdst = tg_view_2d(ctx, vc, T, n_embd_kv, vc->nb[1], (size_t) b->pos0 * vc->nb[0]);
    CHK(vdst); tg_format_name(vdst, "cache_v_l%d (view)", il);
    struct tg_tensor * vst = tg_cpy(ctx, vt, vdst);
    CHK(vst); tg_format_name(vst, "v_store-%d", il);
    CHK(expand(b, vst));
    pos_view(b, vdst, vc->nb[0]);
    pos_view(b, vst, vc->nb[0]);
    return q;
}

// Grouped-query attention of the roped queries q [Hd,H,T] over the first
// n_kv cache cells, then the output projection. -> attn_out-il [E,T]
static struct tg_tensor * build_attn(struct builder * b, struct tg_tensor * q, int il) {
    const struct tg_llama_hparams * h = &b->m->hparams;
    const struct tg_llama_layer * L = &b->m->layers[il];
    struct tg_context * ctx = b->ctx;
    const int T = b->n_tokens, C = b->n_kv;
    struct tg_tensor * kc = b->kv->k[il], * vc = b->kv->v[il];

    struct tg_tensor * qp = tg_permute(ctx, q, 0, 2, 1, 3);                            // [Hd,T,H]
    CHK(qp); tg_format_name(qp, "Qcur-%d (permuted)", il);
    struct tg_tensor * k = tg_view_3d(ctx, kc, h->head_dim, C, h->n_head_kv,           // [Hd,C,Hk]
                                      kc->nb[1], tg_row_size(kc->type, h->head_dim), 0);
    CHK(k); tg_format_name(k, "k-%d", il);
    float scale = 1.0f / sqrtf((float) h->head_dim);
    struct tg_tensor * v = tg_view_3d(ctx, vc, C, h->head_dim, h->n_head_kv,           // [C,Hd,Hk]
                                      vc->nb[1], vc->nb[1] * (size_t) h->head_dim, 0);
    CHK(v); tg_format_name(v, "v-%d", il);
    if (b->flash_attn) {   // fused: softmax(k.q * scale + mask) v in one node -> [Hd,H,T]
        struct tg_tensor * fa = named(tg_flash_attn_ext(ctx, qp, k, v, b->out->kq_mask, scale), "__fattn__", il);
        CHK(fa);
        struct tg_tensor * cur = named(tg_reshape_2d(ctx, fa, (int64_t) h->head_dim * h->n_head, T), "kqv_out", il);
        CHK(cur);
        return named(tg_mul_mat(ctx, L->wo, cur), "attn_out", il);
    }
    struct tg_tensor * kq = named(tg_mul_mat(ctx, k, qp), "kq", il);                   // [C,T,H]
    CHK(kq);
    kq = named(tg_soft_max_ext(ctx, kq, b->out->kq_mask, scale, 0.0f), "kq_soft_max", il);
    CHK(kq);
    struct tg_tensor * kqv = named(tg_mul_mat(ctx, v, kq), "kqv", il);                 // [Hd,T,H]
    CHK(kqv);
    struct tg_tensor * merged = tg_permute(ctx, kqv, 0, 2, 1, 3);                      // [Hd,H,T]
    CHK(merged); tg_format_name(merged, "kqv-%d (permuted)", il);
    struct tg_tensor * cur = named(tg_cont_4d(ctx, merged, (int64_t) h->head_dim * h->n_head, T, 1, 1), "kqv_out", il);
    CHK(cur);                                                                          // [H*Hd,T]
    return named(tg_mul_mat(ctx, L->wo, cur), "attn_out", il);                        // [E,T]
}

// SwiGLU feed-forward: [E,n] -> ffn_out-il [E,n]
static struct tg_tensor * build_ffn(struct builder * b, struct tg_tensor * cur, int il) {
    const struct tg_llama_layer * L = &b->m->layers[il];
    struct tg_tensor * gate = named(tg_mul_mat(b->ctx, L->ffn_gate, cur), "ffn_gate", il);  // [F,n]
    struct tg_tensor * up = named(tg_mul_mat(b->ctx, L->ffn_up, cur), "ffn_up", il);        // [F,n]
    CHK(gate && up);
    struct tg_tensor * act = named(tg_swiglu_split(b->ctx, gate, up), "ffn_swiglu", il);    // [F,n]
    CHK(act);
    return named(tg_mul_mat(b->ctx, L->ffn_down, act), "ffn_out", il);                     // [E,n]
}

static struct tg_tensor * build_layer(struct builder * b, struct tg_tensor * inpL, int il) {
    const struct tg_llama_layer * L = &b->m->layers[il];
    struct tg_tensor * inpSA = inpL;
    struct tg_tensor * cur = build_norm(b, inpL, L->attn_norm, "attn_norm", il);
    CHK(cur);
    struct tg_tensor * q = build_qkv(b, cur, il);
    CHK(q);
    cur = build_attn(b, q, il);
    CHK(cur);
    if (il == b->m->hparams.n_layer - 1 && b->out->out_ids) {  // keep only the output rows
        cur = tg_get_rows(b->ctx, cur, b->out->out_ids);
        CHK(cur); tg_format_name(cur, "attn_out-%d (outputs)", il);
        inpSA = tg_get_rows(b->ctx, inpSA, b->out->out_ids);
        CHK(inpSA); tg_format_name(inpSA, "l_in-%d (outputs)", il);
    }
    struct tg_tensor * ffn_inp = named(tg_add(b->ctx, cur, inpSA), "ffn_inp", il);
    CHK(ffn_inp);
    cur = build_norm(b, ffn_inp, L->ffn_norm, "ffn_norm", il);
    CHK(cur);
    cur = build_ffn(b, cur, il);
    CHK(cur);
    return named(tg_add(b->ctx, cur, ffn_inp), "l_out", il);
}

static enum tg_status build_inputs(struct builder * b) {
    struct tg_llama_ubatch_graph * o = b->out;
    o->inp_tokens = tg_new_tensor_1d(b->ctx, TG_TYPE_I32, b->n_tokens);
    o->inp_pos = tg_new_tensor_1d(b->ctx, TG_TYPE_I32, b->n_tokens);
    o->kq_mask = tg_new_tensor_2d(b->ctx, TG_TYPE_F32, b->n_kv, b->n_tokens);
    if (!o->inp_tokens || !o->inp_pos || !o->kq_mask) return tg_last_status();
    tg_set_name(o->inp_tokens, "inp_tokens");
    tg_set_name(o->inp_pos, "inp_pos");
    tg_set_name(o->kq_mask, "kq_mask");
    tg_set_input(o->inp_tokens);
    tg_set_input(o->inp_pos);
    tg_set_input(o->kq_mask);
    o->out_ids = NULL;
    if (b->n_outputs < b->n_tokens) {
        o->out_ids = tg_new_tensor_1d(b->ctx, TG_TYPE_I32, b->n_outputs);
        if (!o->out_ids) return tg_last_status();
        tg_set_name(o->out_ids, "inp_out_ids");
        tg_set_input(o->out_ids);
    }
    return TG_OK;
}

int tg_llama_graph_size(const struct tg_llama_model * m) {
    return 64 * m->hparams.n_layer + 64;
}

enum tg_status tg_llama_build_graph(struct tg_context * ctx, const struct tg_llama_model * m,
                                    const struct tg_llama_kv * kv, int32_t n_tokens, int32_t pos0,
                                    int32_t n_kv, int32_t n_outputs, bool flash_attn,
                                    struct tg_llama_ubatch_graph * out) {
    struct tg_tensor ** pos_views = out->pos_views;
    size_t * pos_steps = out->pos_steps;
    memset(out, 0, sizeof *out);
    out->pos_views = pos_views;
    out->pos_steps = pos_steps;
    struct builder b = { ctx, m, kv, NULL, out, n_tokens, pos0, n_kv, n_outputs, flash_attn };
    out->n_tokens = n_tokens; out->pos0 = pos0; out->n_kv = n_kv; out->n_outputs = n_outputs;
    if (n_tokens < 1 || n_outputs < 1 || n_outputs > n_tokens || pos0 < 0 || pos0 + n_tokens > n_kv || n_kv > kv->n_ctx)
        return tg_error(TG_ERR_INVALID_ARG, "llama graph: bad micro-batch (tokens %d, outputs %d, pos0 %d, cells %d of %d)",
                        n_tokens, n_outputs, pos0, n_kv, kv->n_ctx);
    b.gf = tg_graph_new(ctx, tg_llama_graph_size(m));
    if (!b.gf) return tg_last_status();
    enum tg_status st = build_inputs(&b);
    if (st) return st;

    struct tg_tensor * cur = named(tg_get_rows(ctx, m->tok_embd, out->inp_tokens), "inp_embd", -1);  // [E,T]
    for (int il = 0; cur && il < m->hparams.n_layer; il++)
        cur = build_layer(&b, cur, il);
    if (cur) cur = build_norm(&b, cur, m->output_norm, "result_norm", -1);
    if (cur) cur = named(tg_mul_mat(ctx, m->output, cur), "result_output", -1);      // [V,O]
    if (!cur) return tg_last_status() ? tg_last_status() : TG_ERR_INTERNAL;
    tg_set_output(cur);
    out->logits = cur;
    st = tg_graph_build_forward(b.gf, cur);
    if (st) return st;
    out->graph = b.gf;
    return TG_OK;
}
