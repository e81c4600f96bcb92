// model.c - loading a llama-family GGUF model: the architecture's table entry
// (arch.c), hyper-parameters from the ARCH.* keys, weights validated
// (presence, shape, type) and used in place.
#include "llama-impl.h"

#include "tg/backend.h"
#include "tg/vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tg_llama_model_params tg_llama_model_default_params(void) {
    struct tg_llama_model_params p = { .check_tensors = false, .repack = TG_LLAMA_REPACK_AUTO, .n_gpu_layers = 0,
                                       .gpu_device = NULL };
    return p;
}

// Reads an optional u32 key `arch.suffix`; keeps *out when absent.
static enum tg_status get_u32_opt(const struct tg_gguf * g, const char * arch, const char * suffix,
                                  int32_t * out, bool required) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (tg_gguf_find_key(g, key) < 0) {
        if (required) return tg_error(TG_ERR_FORMAT, "missing key '%s'", key);
        return TG_OK;
    }
    uint32_t v = 0;
    if (!tg_gguf_get_u32(g, key, &v))
        return tg_error(TG_ERR_FORMAT, "key '%s': %s", key, tg_last_error());
    if (v > (1u << 30)) return tg_error(TG_ERR_FORMAT, "key '%s' = %u is out of range", key, v);
    *out = (int32_t) v;
    return TG_OK;
}

static enum tg_status get_f32_opt(const struct tg_gguf * g, const char * arch, const char * suffix,
                                  float * out, bool required) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (tg_gguf_find_key(g, key) < 0) {
        if (required) return tg_error(TG_ERR_FORMAT, "missing key '%s'", key);
        return TG_OK;
    }
    float v = 0;
    if (!tg_gguf_get_f32(g, key, &v))
        return tg_error(TG_ERR_FORMAT, "key '%s': %s", key, tg_last_error());
    if (!isfinite(v)) return tg_error(TG_ERR_FORMAT, "key '%s' is not finite", key);
    *out = v;
    return TG_OK;
}

static int32_t get_token_id(const struct tg_gguf * g, const char * key) {
    uint32_t v;
    if (tg_gguf_find_key(g, key) < 0 || !tg_gguf_get_u32(g, key, &v)) { tg_clear_error(); return -1; }
    return v > INT32_MAX ? -1 : (int32_t) v;
}

// Fills h from the keys; validates the relations the graph relies on.
static enum tg_status read_hparams(const struct tg_gguf * g, struct tg_llama_hparams * h,
                                   const struct tg_llama_arch ** arch_out) {
    const char * arch = tg_gguf_get_str(g, "general.architecture");
    if (!arch) return tg_error(TG_ERR_FORMAT, "missing key 'general.architecture'");
    const struct tg_llama_arch * a = tg_llama_arch_find(arch);
    if (!a)
        return tg_error(TG_ERR_UNSUPPORTED, "architecture '%.64s' is not supported (supported: %s)", arch,
                        tg_llama_arch_list());
    *arch_out = a;
    memset(h, 0, sizeof *h);
    snprintf(h->arch, sizeof h->arch, "%s", a->name);
    h->rope_mode = a->rope_mode;
    h->rope_freq_base = 10000.0f;
    h->rope_freq_scale = 1.0f;
    h->rms_eps = 1e-5f;
    enum tg_status st;
    if ((st = get_u32_opt(g, arch, "context_length", &h->n_ctx_train, true))) return st;
    if ((st = get_u32_opt(g, arch, "embedding_length", &h->n_embd, true))) return st;
    if ((st = get_u32_opt(g, arch, "block_count", &h->n_layer, true))) return st;
    if ((st = get_u32_opt(g, arch, "feed_forward_length", &h->n_ff, true))) return st;
    if ((st = get_u32_opt(g, arch, "attention.head_count", &h->n_head, true))) return st;
    h->n_head_kv = h->n_head;
    if ((st = get_u32_opt(g, arch, "attention.head_count_kv", &h->n_head_kv, false))) return st;
    if ((st = get_f32_opt(g, arch, "attention.layer_norm_rms_epsilon", &h->rms_eps, true))) return st;
    if ((st = get_f32_opt(g, arch, "rope.freq_base", &h->rope_freq_base, false))) return st;
    float factor = 0.0f;
    if ((st = get_f32_opt(g, arch, "rope.scaling.factor", &factor, false))) return st;
    if (factor > 0.0f) h->rope_freq_scale = 1.0f / factor;

    if (h->n_embd < 1 || h->n_layer < 1 || h->n_ff < 1 || h->n_head < 1 || h->n_head_kv < 1 || h->n_ctx_train < 1)
        return tg_error(TG_ERR_FORMAT, "hyper-parameters out of range (n_embd %d, n_layer %d, n_ff %d, n_head %d, n_head_kv %d, n_ctx %d)",
                        h->n_embd, h->n_layer, h->n_ff, h->n_head, h->n_head_kv, h->n_ctx_train);
    // The loader multiplies the layer count (weights per layer): keep it far
    // from int overflow; a file claiming more layers than this is damaged.
    if (h->n_layer > TG_LLAMA_MAX_LAYERS)
        return tg_error(TG_ERR_FORMAT, "%s.block_count %d is more than %d layers", arch, h->n_layer, TG_LLAMA_MAX_LAYERS);
    if (h->n_head % h->n_head_kv != 0)
        return tg_error(TG_ERR_FORMAT, "%s.attention.head_count %d is not a multiple of head_count_kv %d", arch, h->n_head, h->n_head_kv);
    h->head_dim = 0;
    if ((st = get_u32_opt(g, arch, "attention.key_length", &h->head_dim, false))) return st;
    if (h->head_dim == 0) {   // no key_length: the heads split the embedding
        if (h->n_embd % h->n_head != 0)
            return tg_error(TG_ERR_FORMAT, "%s.embedding_length %d is not a multiple of head_count %d", arch, h->n_embd, h->n_head);
        h->head_dim = h->n_embd / h->n_head;
    }
    int32_t v_len = h->head_dim;
    if ((st = get_u32_opt(g, arch, "attention.value_length", &v_len, false))) return st;
    if (v_len != h->head_dim)
        return tg_error(TG_ERR_UNSUPPORTED, "%s.attention.value_length %d differs from key_length %d (not supported)",
                        arch, v_len, h->head_dim);
    h->n_rot = h->head_dim;
    if ((st = get_u32_opt(g, arch, "rope.dimension_count", &h->n_rot, false))) return st;
    if (h->head_dim < 2 || h->n_rot < 2 || h->n_rot > h->head_dim || h->n_rot % 2 != 0)
        return tg_error(TG_ERR_FORMAT, "head dimension %d / rope dimension %d out of range", h->head_dim, h->n_rot);
    if (!(h->rms_eps > 0.0f) || !(h->rope_freq_base > 0.0f))
        return tg_error(TG_ERR_FORMAT, "rms epsilon %g / rope freq base %g must be positive", h->rms_eps, h->rope_freq_base);

    int64_t kt = tg_gguf_find_key(g, "tokenizer.ggml.tokens");
    h->n_vocab = kt >= 0 ? (int32_t) tg_gguf_arr_n(g, kt) : 0;  // 0: taken from token_embd
    return TG_OK;
}

// Float types and every quantized type with a dot product (its activation
// type is not F32): Q4_0..Q8_0, Q4_1, Q5_0, Q5_1, K-quants, IQ4_NL, IQ4_XS.
static bool type_ok_for_matrix(enum tg_type t) {
    if (t == TG_TYPE_F32 || t == TG_TYPE_F16 || t == TG_TYPE_BF16) return true;
    const struct tg_type_traits * tr = tg_type_traits(t);
    return tr && tr->is_quantized && tg_type_vec_dot_type(t) != TG_TYPE_F32;
}

static void shape_fmt(char * buf, size_t n, int n_dims, const int64_t * ne) {
    size_t o = (size_t) snprintf(buf, n, "[");
    for (int i = 0; i < n_dims && o < n; i++)
        o += (size_t) snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long) ne[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

// Looks up weight `name`, checks it has shape [ne0, ne1] (ne1 = 0: 1-D),
// an allowed type (F32 only for vectors), data inside the file; creates its
// tensor in m->ctx_w pointing at the mapped data. NULL (+error) on failure
// unless optional and absent (NULL, no error).
static struct tg_tensor * load_weight(struct tg_llama_model * m, const char * path, const char * name,
                                      int64_t ne0, int64_t ne1, bool optional) {
    int64_t i = tg_gguf_find_tensor(m->gguf, name);
    if (i < 0) {
        if (!optional) tg_error(TG_ERR_FORMAT, "%s: tensor '%s' is missing", path, name);
        return NULL;
    }
    const struct tg_gguf_tensor_info * ti = tg_gguf_tensor(m->gguf, i);
    int want_dims = ne1 > 0 ? 2 : 1;
    int64_t want[TG_MAX_DIMS] = { ne0, ne1 > 0 ? ne1 : 1, 1, 1 };
    bool shape_ok = true;
    for (int d = 0; d < TG_MAX_DIMS; d++) shape_ok = shape_ok && ti->ne[d] == want[d];
    if (!shape_ok) {
        char got[96], exp[96];
        shape_fmt(got, sizeof got, ti->n_dims > 0 ? ti->n_dims : 1, ti->ne);
        shape_fmt(exp, sizeof exp, want_dims, want);
        tg_error(TG_ERR_SHAPE, "%s: tensor '%s' has shape %s, expected %s", path, name, got, exp);
        return NULL;
    }
    bool vec = want_dims == 1;
    if (vec ? ti->type != TG_TYPE_F32 : !type_ok_for_matrix(ti->type)) {
        tg_error(TG_ERR_TYPE, "%s: tensor '%s' has type %s (id %d), unsupported here (%s)", path, name,
                 tg_type_name(ti->type), (int) ti->type,
                 vec ? "norm weights, biases and factors must be f32" : "supported: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K..q6_K, iq4_nl, iq4_xs");
        return NULL;
    }
    const void * data = tg_gguf_tensor_data(m->gguf, i);
    if (!data) {
        tg_error(TG_ERR_FORMAT, "%s: data of tensor '%s' lies past the end of the file", path, name);
        return NULL;
    }
    struct tg_tensor * t = tg_new_tensor(m->ctx_w, ti->type, want_dims, want);
    if (!t) return NULL;
    tg_set_name(t, name);
    t->data = (void *) data;
    m->n_tensors++;
    m->size += tg_nbytes(t);
    m->n_params += tg_nelements(t);
    return t;
}

// Every element finite (dequantized row by row). TG_ERR_FORMAT naming the tensor otherwise.
static enum tg_status check_finite(const struct tg_tensor * t) {
    const struct tg_type_traits * tr = tg_type_traits(t->type);
    float * row = malloc(sizeof(float) * (size_t) t->ne[0]);
    if (!row) return tg_error(TG_ERR_NOMEM, "out of memory checking '%s'", t->name);
    enum tg_status st = TG_OK;
    for (int64_t r = 0; r < tg_nrows(t) && st == TG_OK; r++) {
        tr->to_float((const char *) t->data + r * t->nb[1], row, t->ne[0]);
        for (int64_t j = 0; j < t->ne[0]; j++)
            if (!isfinite(row[j])) {
                st = tg_error(TG_ERR_FORMAT, "tensor '%s' has a non-finite value at [%lld,%lld]", t->name,
                              (long long) j, (long long) r);
                break;
            }
    }
    free(row);
    return st;
}

static enum tg_status load_layers(struct tg_llama_model * m, const char * path) {
    const struct tg_llama_hparams * h = &m->hparams;
    int64_t n_q = (int64_t) h->n_head * h->head_dim, n_kv = (int64_t) h->n_head_kv * h->head_dim;
    char name[96];
#define W(field, suffix, ne0, ne1)                                                   \
    do {                                                                             \
        snprintf(name, sizeof name, "blk.%d." suffix, il);                           \
        if (!(L->field = load_weight(m, path, name, (ne0), (ne1), false))) return tg_last_status(); \
    } while (0)
    // a part of the architecture: required, optional (absent is fine) or none
#define P(part, field, suffix, ne0)                                                  \
    do {                                                                             \
        if ((part) == TG_PART_NONE) break;                                           \
        snprintf(name, sizeof name, "blk.%d." suffix, il);                           \
        L->field = load_weight(m, path, name, (ne0), 0, (part) == TG_PART_OPTIONAL); \
        if (!L->field && tg_last_status() != TG_OK) return tg_last_status();         \
    } while (0)
    const struct tg_llama_arch * a = m->arch;
    for (int il = 0; il < h->n_layer; il++) {
        struct tg_llama_layer * L = &m->layers[il];
        W(attn_norm, "attn_norm.weight", h->n_embd, 0);
        W(wq, "attn_q.weight", h->n_embd, n_q);
        W(wk, "attn_k.weight", h->n_embd, n_kv);
        W(wv, "attn_v.weight", h->n_embd, n_kv);
        P(a->qkv_bias, bq, "attn_q.bias", n_q);
        P(a->qkv_bias, bk, "attn_k.bias", n_kv);
        P(a->qkv_bias, bv, "attn_v.bias", n_kv);
        P(a->qk_norm, q_norm, "attn_q_norm.weight", h->head_dim);
        P(a->qk_norm, k_norm, "attn_k_norm.weight", h->head_dim);
        W(wo, "attn_output.weight", n_q, h->n_embd);
        W(ffn_norm, "ffn_norm.weight", h->n_embd, 0);
        W(ffn_gate, "ffn_gate.weight", h->n_embd, h->n_ff);
        W(ffn_up, "ffn_up.weight", h->n_embd, h->n_ff);
        W(ffn_down, "ffn_down.weight", h->n_ff, h->n_embd);
    }
#undef W
#undef P
    return TG_OK;
}

static enum tg_status load_tensors(struct tg_llama_model * m, const char * path) {
    struct tg_llama_hparams * h = &m->hparams;
    if (h->n_vocab == 0) {  // no vocabulary keys: take n_vocab from token_embd
        int64_t i = tg_gguf_find_tensor(m->gguf, "token_embd.weight");
        if (i < 0) return tg_error(TG_ERR_FORMAT, "%s: tensor 'token_embd.weight' is missing", path);
        h->n_vocab = (int32_t) tg_gguf_tensor(m->gguf, i)->ne[1];
    }
    if (h->n_vocab < 1) return tg_error(TG_ERR_FORMAT, "%s: empty vocabulary", path);
    if (!(m->tok_embd = load_weight(m, path, "token_embd.weight", h->n_embd, h->n_vocab, false))) return tg_last_status();
    if (!(m->output_norm = load_weight(m, path, "output_norm.weight", h->n_embd, 0, false))) return tg_last_status();
    m->output = load_weight(m, path, "output.weight", h->n_embd, h->n_vocab, true);
    if (!m->output) {
        if (tg_last_status() != TG_OK && tg_gguf_find_tensor(m->gguf, "output.weight") >= 0) return tg_last_status();
        m->output = m->tok_embd;  // tied embeddings
        h->tied_output = true;
    }
    tg_clear_error();
    if (m->arch->rope_freqs != TG_PART_NONE) {
        m->rope_freqs = load_weight(m, path, "rope_freqs.weight", h->n_rot / 2, 0, true);
        if (!m->rope_freqs && tg_last_status() != TG_OK) return tg_last_status();
    }
    return load_layers(m, path);
}

struct tg_llama_model * tg_llama_model_load(const char * path, const struct tg_llama_model_params * params) {
    struct tg_llama_model_params defaults = tg_llama_model_default_params();
    if (!params) params = &defaults;
    if (!path) { tg_error(TG_ERR_INVALID_ARG, "tg_llama_model_load: path is NULL"); return NULL; }
    struct tg_llama_model * m = calloc(1, sizeof *m);
    if (!m) { tg_error(TG_ERR_NOMEM, "out of memory loading %s", path); return NULL; }
    m->gguf = tg_gguf_open(path);
    if (!m->gguf) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        if (!strstr(msg, path)) tg_error(tg_last_status(), "%s: %s", path, msg);
        free(m);
        return NULL;
    }
    tg_clear_error();
    if (read_hparams(m->gguf, &m->hparams, &m->arch) != TG_OK) {
        tg_error(tg_last_status(), "%s: %s", path, tg_last_error());
        goto fail;
    }
    m->layers = calloc((size_t) m->hparams.n_layer, sizeof *m->layers);
    int n_max = 4 + 14 * m->hparams.n_layer;   // n_layer <= TG_LLAMA_MAX_LAYERS: no overflow
    struct tg_context_params cp = { .mem_size = (size_t) (n_max + 8) * tg_tensor_overhead(), .no_alloc = true };
    m->ctx_w = m->layers ? tg_context_new(cp) : NULL;
    if (!m->ctx_w) { tg_error(TG_ERR_NOMEM, "%s: out of memory for %d weights", path, n_max); goto fail; }
    if (load_tensors(m, path) != TG_OK) goto fail;
    if (params->check_tensors) {
        for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t))
            if (check_finite(t) != TG_OK) goto fail;
    }
    m->bos = get_token_id(m->gguf, "tokenizer.ggml.bos_token_id");
    m->eos = get_token_id(m->gguf, "tokenizer.ggml.eos_token_id");
    if (m->bos >= m->hparams.n_vocab) m->bos = -1;
    if (m->eos >= m->hparams.n_vocab) m->eos = -1;
    if (tg_llama_model_place_weights(m) != TG_OK) goto fail;
    if (params->n_gpu_layers < 0) {
        tg_error(TG_ERR_INVALID_ARG, "%s: n_gpu_layers %d must be >= 0", path, params->n_gpu_layers);
        goto fail;
    }
    if (params->n_gpu_layers > 0 && tg_llama_model_offload(m, params) != TG_OK) {
        tg_error(tg_last_status(), "%s: %s", path, tg_last_error());
        goto fail;
    }
    if (tg_llama_model_pack_weights(m, params) != TG_OK) {
        tg_error(tg_last_status(), "%s: %s", path, tg_last_error());
        goto fail;
    }
    m->vocab = tg_vocab_load(m->gguf);  // optional: decode works on ids without it
    if (!m->vocab) snprintf(m->vocab_error, sizeof m->vocab_error, "%s: %s", path, tg_last_error());
    tg_clear_error();
    return m;
fail:
    tg_llama_model_free(m);
    return NULL;
}

void tg_llama_model_free(struct tg_llama_model * m) {
    if (!m) return;
    tg_llama_model_release_weights(m);
    tg_vocab_free(m->vocab);
    tg_context_free(m->ctx_w);
    tg_gguf_close(m->gguf);
    free(m->layers);
    free(m);
}

const struct tg_llama_hparams * tg_llama_model_hparams(const struct tg_llama_model * m) { return &m->hparams; }
const struct tg_gguf * tg_llama_model_gguf(const struct tg_llama_model * m) { return m->gguf; }
int64_t tg_llama_model_n_tensors(const struct tg_llama_model * m) { return m->n_tensors; }
size_t  tg_llama_model_size(const struct tg_llama_model * m) { return m->size; }
int64_t tg_llama_model_n_params(const struct tg_llama_model * m) { return m->n_params; }
int32_t tg_llama_model_bos(const struct tg_llama_model * m) { return m->bos; }
int32_t tg_llama_model_eos(const struct tg_llama_model * m) { return m->eos; }
enum tg_type tg_llama_model_weight_type(const struct tg_llama_model * m) { return m->layers[0].wq->type; }
struct tg_device * tg_llama_model_gpu_device(const struct tg_llama_model * m) { return m ? m->gpu_dev : NULL; }
int32_t tg_llama_model_n_gpu_layers(const struct tg_llama_model * m) { return m ? m->n_gpu_layers : 0; }
int32_t tg_llama_model_n_packed(const struct tg_llama_model * m, size_t * bytes) {
    if (bytes) *bytes = m ? m->packed_bytes : 0;
    return m ? m->n_packed : 0;
}
size_t tg_llama_model_gpu_bytes(const struct tg_llama_model * m) { return m && m->gpu_buf ? tg_buffer_get_size(m->gpu_buf) : 0; }
// Every weight but the token embedding, which a step only reads rows of
// (GET_ROWS), unless the output projection is tied to it: then the logits
// read all of it.
size_t tg_llama_model_bytes_per_token(const struct tg_llama_model * m) {
    if (!m) return 0;
    return m->hparams.tied_output ? m->size : m->size - tg_nbytes(m->tok_embd);
}

const struct tg_vocab * tg_llama_model_vocab(const struct tg_llama_model * m) {
    if (!m) return NULL;
    if (!m->vocab) tg_error(TG_ERR_UNSUPPORTED, "%s", m->vocab_error[0] ? m->vocab_error : "model has no vocabulary");
    return m->vocab;
}

struct tg_tensor * tg_llama_model_tensor(const struct tg_llama_model * m, const char * name) {
    return m && name ? tg_context_get_tensor(m->ctx_w, name) : NULL;
}
