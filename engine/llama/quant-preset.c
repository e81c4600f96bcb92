// quant-preset.c - per-tensor type mixtures of the quantization presets
// (q4_k_m, q6_k, iq4_xs ...), in the spirit of the established quantizer's:
// a base type for the matrices, a higher one for the output projection and,
// for the _M presets, for attn_v / ffn_down of some layers (the first, the
// last and every third in between), lower bits elsewhere for q2_k/q3_k_m.
// Used by make-model and `tgdb quantize`.
#include "core/grow.h"
#include "llama-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct preset {
    const char * name;
    enum tg_type base;      // most matrices
    enum tg_type output;    // output.weight (and token_embd when tied)
    enum tg_type more;      // attn_v / ffn_down of the layers that get more bits
    enum tg_type wv_wd;     // attn_v / ffn_down of the other layers
    enum tg_type wo;        // attn_output
    bool more_all;          // every layer's attn_v / ffn_down get `more`
};

static const struct preset presets[] = {
    {.name = "q2_k",   .base = TG_TYPE_Q2_K,   .output = TG_TYPE_Q6_K, .more = TG_TYPE_Q3_K, .wv_wd = TG_TYPE_Q3_K,
     .wo = TG_TYPE_Q3_K},
    {.name = "q3_k_m", .base = TG_TYPE_Q3_K,   .output = TG_TYPE_Q6_K, .more = TG_TYPE_Q5_K, .wv_wd = TG_TYPE_Q4_K,
     .wo = TG_TYPE_Q4_K},
    {.name = "q4_k_s", .base = TG_TYPE_Q4_K,   .output = TG_TYPE_Q6_K, .more = TG_TYPE_Q4_K, .wv_wd = TG_TYPE_Q4_K,
     .wo = TG_TYPE_Q4_K},
    {.name = "q4_k_m", .base = TG_TYPE_Q4_K,   .output = TG_TYPE_Q6_K, .more = TG_TYPE_Q6_K, .wv_wd = TG_TYPE_Q4_K,
     .wo = TG_TYPE_Q4_K},
    {.name = "q5_k_m", .base = TG_TYPE_Q5_K,   .output = TG_TYPE_Q6_K, .more = TG_TYPE_Q6_K, .wv_wd = TG_TYPE_Q5_K,
     .wo = TG_TYPE_Q5_K},
    {.name = "q6_k",   .base = TG_TYPE_Q6_K,   .output = TG_TYPE_Q6_K, .more = TG_TYPE_Q6_K, .wv_wd = TG_TYPE_Q6_K,
     .wo = TG_TYPE_Q6_K},
    {.name = "iq4_nl", .base = TG_TYPE_IQ4_NL, .output = TG_TYPE_Q6_K, .more = TG_TYPE_IQ4_NL, .wv_wd = TG_TYPE_IQ4_NL,
     .wo = TG_TYPE_IQ4_NL},
    {.name = "iq4_xs", .base = TG_TYPE_IQ4_XS, .output = TG_TYPE_Q6_K, .more = TG_TYPE_IQ4_XS, .wv_wd = TG_TYPE_IQ4_XS,
     .wo = TG_TYPE_IQ4_XS},
    {.name = "q8_0",   .base = TG_TYPE_Q8_0,   .output = TG_TYPE_Q8_0, .more = TG_TYPE_Q8_0, .wv_wd = TG_TYPE_Q8_0,
     .wo = TG_TYPE_Q8_0},
    {.name = "q4_0",   .base = TG_TYPE_Q4_0,   .output = TG_TYPE_Q4_0, .more = TG_TYPE_Q4_0, .wv_wd = TG_TYPE_Q4_0,
     .wo = TG_TYPE_Q4_0},
    {.name = "q4_1",   .base = TG_TYPE_Q4_1,   .output = TG_TYPE_Q4_1, .more = TG_TYPE_Q4_1, .wv_wd = TG_TYPE_Q4_1,
     .wo = TG_TYPE_Q4_1},
    {.name = "q5_0",   .base = TG_TYPE_Q5_0,   .output = TG_TYPE_Q5_0, .more = TG_TYPE_Q5_0, .wv_wd = TG_TYPE_Q5_0,
     .wo = TG_TYPE_Q5_0},
    {.name = "q5_1",   .base = TG_TYPE_Q5_1,   .output = TG_TYPE_Q5_1, .more = TG_TYPE_Q5_1, .wv_wd = TG_TYPE_Q5_1,
     .wo = TG_TYPE_Q5_1},
    {.name = "f16",    .base = TG_TYPE_F16,    .output = TG_TYPE_F16,  .more = TG_TYPE_F16,  .wv_wd = TG_TYPE_F16,
     .wo = TG_TYPE_F16},
    {.name = "f32",    .base = TG_TYPE_F32,    .output = TG_TYPE_F32,  .more = TG_TYPE_F32,  .wv_wd = TG_TYPE_F32,
     .wo = TG_TYPE_F32},
};

const char * tg_llama_quant_presets(void) {
    return "f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, q6_k, q5_k_m, q4_k_m, q4_k_s, q3_k_m, q2_k, iq4_nl, iq4_xs";
}

bool tg_llama_quant_preset_known(const char * preset) {
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
        if (preset && strcmp(presets[i].name, preset) == 0) return true;
    }
    return false;
}

// The layers that get more bits: the first and last eighth, every third between.
static bool more_bits(int il, int n_layer) {
    return il < (n_layer + 7) / 8 || il >= n_layer - n_layer / 8 || (il - n_layer / 8) % 3 == 2;
}

// A type whose block fits rows of ne0 elements: the K-quants and IQ4_XS fall
// back to a 32-element type of about the same size.
static enum tg_type fit(enum tg_type t, int64_t ne0) {
    if (ne0 % tg_blck_size(t) == 0) return t;
    switch (t) {
    case TG_TYPE_Q2_K: case TG_TYPE_Q3_K: case TG_TYPE_IQ4_XS: return TG_TYPE_IQ4_NL;
    case TG_TYPE_Q4_K: return TG_TYPE_Q5_0;
    case TG_TYPE_Q5_K: return TG_TYPE_Q5_1;
    default: return TG_TYPE_Q8_0;
    }
}

enum tg_type tg_llama_quant_preset_type(const char * preset, const char * name, int n_layer, int64_t ne0, int64_t ne1) {
    const struct preset * p = NULL;
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
        if (preset && strcmp(presets[i].name, preset) == 0) p = &presets[i];
    }
    if (!p) {
        tg_error(TG_ERR_INVALID_ARG, "unknown quantization preset '%s' (known: %s)", preset ? preset : "(null)",
                 tg_llama_quant_presets());
        return TG_TYPE_COUNT;
    }
    if (ne1 <= 1) return TG_TYPE_F32;   // norms, biases, factors stay F32
    if (ne0 % 32 != 0 && p->base != TG_TYPE_F32 && p->base != TG_TYPE_F16) return TG_TYPE_F32;
    enum tg_type t = p->base;
    int il = -1;
    if (!strcmp(name, "output.weight")) t = p->output;
    else if (sscanf(name, "blk.%d.", &il) == 1) {
        bool more = p->more_all || more_bits(il, n_layer) || (n_layer <= 4 && il == 0);
        if (strstr(name, ".attn_v.") || strstr(name, ".ffn_down.")) t = more ? p->more : p->wv_wd;
        else if (strstr(name, ".attn_output.")) t = p->wo;
    }
    return fit(t, ne0);
}

// general.file_type numbers of the presets (GGUF ftype).
uint32_t tg_llama_quant_preset_ftype(const char * preset) {
    static const struct { const char * preset; uint32_t ftype; } ftypes[] = {
        {"f32", 0}, {"f16", 1}, {"q4_0", 2}, {"q4_1", 3}, {"q8_0", 7}, {"q5_0", 8}, {"q5_1", 9}, {"q2_k", 10},
        {"q3_k_m", 12}, {"q4_k_s", 14},
        {"q4_k_m", 15}, {"q5_k_m", 17}, {"q6_k", 18}, {"iq4_nl", 25}, {"iq4_xs", 30},
    };
    for (size_t i = 0; i < sizeof(ftypes) / sizeof(ftypes[0]); i++) {
        if (preset && !strcmp(ftypes[i].preset, preset)) return ftypes[i].ftype;
    }
    return 0;
}

enum tg_status tg_llama_quantize_file(const char * in, const char * out, const char * preset,
                                      tg_llama_quant_progress_fn progress, void * user) {
    if (!in || !out || !tg_llama_quant_preset_known(preset)) {
        if (preset && !tg_llama_quant_preset_known(preset)) tg_llama_quant_preset_type(preset, "", 1, 32, 32);
        else tg_error(TG_ERR_INVALID_ARG, "quantize: NULL input or output path");
        return tg_last_status();
    }
    struct tg_gguf * g = tg_gguf_open(in);
    if (!g) return strstr(tg_last_error(), in) ? tg_last_status() : tg_error(tg_last_status(), "%s: %s", in, tg_last_error());
    const char * arch = tg_gguf_get_str(g, "general.architecture");
    char key[96];
    snprintf(key, sizeof key, "%s.block_count", arch ? arch : "llama");
    uint32_t n_layer = 1;
    if (!tg_gguf_get_u32(g, key, &n_layer)) { tg_clear_error(); n_layer = 1; }
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    enum tg_status st = w ? tg_gguf_set_kv_from(w, g) : tg_error(TG_ERR_NOMEM, "quantize: out of memory");
    if (st == TG_OK) st = tg_gguf_set_u32(w, "general.file_type", tg_llama_quant_preset_ftype(preset));
    const int64_t n = tg_gguf_n_tensors(g);
    void ** bufs = calloc((size_t) (n > 0 ? n : 1), sizeof(void *));
    float * row = NULL;
    size_t row_cap = 0;
    if (!bufs && st == TG_OK) st = tg_error(TG_ERR_NOMEM, "quantize: out of memory");
    for (int64_t i = 0; st == TG_OK && i < n; i++) {
        const struct tg_gguf_tensor_info * ti = tg_gguf_tensor(g, i);
        const void * data = tg_gguf_tensor_data(g, i);
        const struct tg_type_traits * src = tg_type_traits(ti->type);
        const int64_t rows = ti->ne[1] * ti->ne[2] * ti->ne[3];
        enum tg_type t = ti->n_dims >= 2 ? tg_llama_quant_preset_type(preset, ti->name, (int) n_layer, ti->ne[0], rows)
                                         : ti->type;
        if (!data) { st = tg_error(TG_ERR_FORMAT, "quantize: %s: data of '%s' lies past the end", in, ti->name); break; }
        if (t == ti->type || !src || !src->to_float || ti->n_dims < 2 ||
            (ti->type != TG_TYPE_F32 && ti->type != TG_TYPE_F16 && ti->type != TG_TYPE_BF16)) {
            st = tg_gguf_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, data);   // copied as it is
        } else {
            const struct tg_type_traits * dst = tg_type_traits(t);
            const size_t rb = tg_row_size(t, ti->ne[0]);
            bufs[i] = malloc(rb * (size_t) rows);
            if (!bufs[i] || !TG_GROW(row, row_cap, (size_t) ti->ne[0])) { st = tg_error(TG_ERR_NOMEM, "quantize: out of memory for '%s'", ti->name); break; }
            const size_t sb = tg_row_size(ti->type, ti->ne[0]);
            for (int64_t r = 0; r < rows; r++) {
                src->to_float((const char *) data + (size_t) r * sb, row, ti->ne[0]);
                dst->from_float(row, (char *) bufs[i] + (size_t) r * rb, ti->ne[0]);
            }
            st = tg_gguf_add_tensor(w, ti->name, t, ti->n_dims, ti->ne, bufs[i]);
        }
        if (progress) progress((int) i + 1, (int) n, ti->name, t, user);
    }
    if (st == TG_OK) st = tg_gguf_write(w, out);
    for (int64_t i = 0; bufs && i < n; i++) free(bufs[i]);
    free(bufs);
    free(row);
    tg_gguf_writer_free(w);
    tg_gguf_close(g);
    return st;
}
