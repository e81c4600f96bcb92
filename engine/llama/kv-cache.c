// kv-cache.c - the KV cache: per layer one K tensor [n_embd_kv, n_ctx] and
// one transposed V tensor [n_ctx, n_embd_kv], in host memory, zeroed.
#include "llama-impl.h"

#include <stdlib.h>
#include <string.h>

#define TG_LLAMA_KV_PAD 32

uint64_t tg_llama_kv_bytes(const struct tg_llama_hparams * h, int32_t n_ctx, enum tg_type type_k, enum tg_type type_v) {
    int64_t n_embd_kv = (int64_t) h->n_head_kv * h->head_dim;
    uint64_t row = (uint64_t) tg_row_size(type_k, n_embd_kv) + (uint64_t) tg_row_size(type_v, n_embd_kv);
    return (uint64_t) h->n_layer * row * (uint64_t) (n_ctx > 0 ? n_ctx : 0);
}

enum tg_status tg_llama_context_estimate(const struct tg_llama_model * m, const struct tg_llama_context_params * params,
                                         struct tg_llama_memory_estimate * out) {
    if (!m || !out) return tg_error(TG_ERR_INVALID_ARG, "tg_llama_context_estimate: model or out is NULL");
    struct tg_llama_context_params p = params ? *params : tg_llama_context_default_params();
    enum tg_status st = tg_llama_params_resolve(m, &p);
    if (st != TG_OK) return st;
    const struct tg_llama_hparams * h = &m->hparams;
    uint64_t T = (uint64_t) p.n_ubatch, C = (uint64_t) p.n_ctx;
    // The largest graph: n_ubatch tokens over n_ctx cells, every token an
    // output. The allocator reuses memory, so its peak is the larger of the
    // attention scores (kq, softmaxed in place) and the logits, plus the
    // activations live beside them; the mask is a host buffer of its own.
    uint64_t scores = C * T * (uint64_t) h->n_head;
    uint64_t logits = T * (uint64_t) h->n_vocab;
    uint64_t acts = T * (4 * (uint64_t) h->n_embd + 2 * (uint64_t) h->n_ff);
    uint64_t scratch = T * C + T;                          // the mask and id buffers
    *out = (struct tg_llama_memory_estimate) {
        .n_ctx = p.n_ctx, .n_batch = p.n_batch, .n_ubatch = p.n_ubatch,
        .kv_bytes = tg_llama_kv_bytes(h, p.n_ctx, p.type_k, p.type_v),
        .compute_bytes = 4 * ((scores > logits ? scores : logits) + acts + scratch),
    };
    return TG_OK;
}

enum tg_status tg_llama_kv_init(struct tg_llama_kv * kv, const struct tg_llama_model * m,
                                int32_t n_ctx, enum tg_type type_k, enum tg_type type_v) {
    memset(kv, 0, sizeof *kv);
    if ((type_k != TG_TYPE_F16 && type_k != TG_TYPE_F32) || (type_v != TG_TYPE_F16 && type_v != TG_TYPE_F32))
        return tg_error(TG_ERR_UNSUPPORTED, "KV cache type %s/%s not supported (f16 or f32)",
                        tg_type_name(type_k), tg_type_name(type_v));
    const struct tg_llama_hparams * h = &m->hparams;
    int64_t n_embd_kv = (int64_t) h->n_head_kv * h->head_dim;
    int n_layer = h->n_layer;
    size_t bytes = (size_t) tg_llama_kv_bytes(h, n_ctx, type_k, type_v);
    struct tg_context_params cp = {
        .mem_size = (size_t) (2 * n_layer + 2) * tg_tensor_overhead(),
        .no_alloc = true,
    };
    kv->k = calloc((size_t) n_layer, sizeof *kv->k);
    kv->v = calloc((size_t) n_layer, sizeof *kv->v);
    kv->ctx = kv->k && kv->v ? tg_context_new(cp) : NULL;
    if (!kv->ctx) {
        tg_llama_kv_free(kv);
        return tg_error(TG_ERR_NOMEM, "KV cache: cannot allocate %zu bytes (n_ctx %d)", bytes, n_ctx);
    }
    for (int il = 0; il < n_layer; il++) {
        kv->k[il] = tg_new_tensor_2d(kv->ctx, type_k, n_embd_kv, n_ctx);   // [n_embd_kv, n_ctx]
        kv->v[il] = tg_new_tensor_2d(kv->ctx, type_v, n_ctx, n_embd_kv);   // [n_ctx, n_embd_kv] (V^T)
        if (!kv->k[il] || !kv->v[il]) {
            enum tg_status st = tg_last_status();
            tg_llama_kv_free(kv);
            return st ? st : TG_ERR_NOMEM;
        }
        tg_format_name(kv->k[il], "cache_k_l%d", il);
        tg_format_name(kv->v[il], "cache_v_l%d", il);
    }
    if (tg_llama_kv_alloc(kv, m) != TG_OK) {
        enum tg_status st = tg_last_status();
        tg_llama_kv_free(kv);
        return st;
    }
    kv->n_ctx = n_ctx;
    kv->bytes = bytes;
    tg_llama_kv_zero(kv);
    return TG_OK;
}

void tg_llama_kv_free(struct tg_llama_kv * kv) {
    if (!kv) return;
    tg_llama_kv_release(kv);
    tg_context_free(kv->ctx);
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

void tg_llama_kv_zero(struct tg_llama_kv * kv) {
    tg_llama_kv_clear_memory(kv);
    kv->used = 0;
}

int32_t tg_llama_kv_n_cells(const struct tg_llama_kv * kv, int32_t end) {
    int32_t n = (end + TG_LLAMA_KV_PAD - 1) / TG_LLAMA_KV_PAD * TG_LLAMA_KV_PAD;
    return n < kv->n_ctx ? n : kv->n_ctx;
}
