// llama_layers.h - the transformer layers of a llama-shaped test graph (no KV
// cache: self-attention over the T tokens of the batch), shared by the
// scheduler test and the observer benchmark.
#ifndef TG_TEST_LLAMA_LAYERS_H
#define TG_TEST_LLAMA_LAYERS_H

#include "tg/core.h"

#include <math.h>

// x: [n_embd, T] input; pos: [T] positions; mask: [T, T]. Per layer l,
// w[l] = { wq, wk, wv, wo, w_gate, w_up, w_down } and norm[l] = { attn_norm,
// ffn_norm }. Returns the last layer's output (named l_out-<l> per layer).
static inline struct tg_tensor * tg_test_llama_layers(struct tg_context * c, struct tg_tensor * x, struct tg_tensor * pos,
                                                      struct tg_tensor * mask, struct tg_tensor * (*w)[7],
                                                      struct tg_tensor * (*norm)[2], int n_layer, int n_embd,
                                                      int n_head, int head_dim, int T) {
    const float scale = 1.0f / sqrtf((float) head_dim);
    for (int l = 0; l < n_layer; l++) {
        struct tg_tensor * cur = tg_mul(c, tg_rms_norm(c, x, 1e-5f), norm[l][0]);
        struct tg_tensor * q = tg_rope(c, tg_reshape_3d(c, tg_mul_mat(c, w[l][0], cur), head_dim, n_head, T), pos, head_dim,
                                       TG_ROPE_NORMAL, 10000.0f, 1.0f);
        struct tg_tensor * k = tg_rope(c, tg_reshape_3d(c, tg_mul_mat(c, w[l][1], cur), head_dim, n_head, T), pos, head_dim,
                                       TG_ROPE_NORMAL, 10000.0f, 1.0f);
        struct tg_tensor * v = tg_reshape_3d(c, tg_mul_mat(c, w[l][2], cur), head_dim, n_head, T);
        struct tg_tensor * kq = tg_mul_mat(c, tg_permute(c, k, 0, 2, 1, 3), tg_permute(c, q, 0, 2, 1, 3));
        kq = tg_soft_max_ext(c, kq, mask, scale, 0.0f);
        struct tg_tensor * kqv = tg_mul_mat(c, tg_cont(c, tg_permute(c, v, 1, 2, 0, 3)), kq);
        cur = tg_mul_mat(c, w[l][3], tg_cont_4d(c, tg_permute(c, kqv, 0, 2, 1, 3), n_embd, T, 1, 1));
        struct tg_tensor * f = tg_add(c, cur, x);
        cur = tg_mul(c, tg_rms_norm(c, f, 1e-5f), norm[l][1]);
        cur = tg_swiglu_split(c, tg_mul_mat(c, w[l][4], cur), tg_mul_mat(c, w[l][5], cur));
        x = tg_format_name(tg_add(c, tg_mul_mat(c, w[l][6], cur), f), "l_out-%d", l);
    }
    return x;
}

#endif
