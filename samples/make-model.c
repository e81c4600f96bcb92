// make-model.c - writes a small llama GGUF model with random weights (seeded)
// and the Llama 2 SentencePiece vocabulary of tests/data/llama-spm-vocab.gguf,
// so the demo and the benchmarks need no download.
//
//   make-model [--preset tiny|100m] [--n-embd N] [--n-layer N] [--n-head N]
//              [--n-head-kv N] [--n-ff N] [--n-ctx N] [--type f32|f16|q8_0|q4_0]
//              [--seed S] [--vocab FILE] [--n-vocab N] -o FILE
//
// Weights: matrices ~ N(0, 0.02^2) (an Irwin-Hall approximation of a normal
// from a splitmix64 stream), norm weights 1 + N(0, 0.1^2): activations stay
// in a sane range whatever the size. Norms are always F32; with --type
// q8_0/q4_0 every matrix (token_embd and output too) is quantized.
// --n-vocab N keeps the vocabulary's first N tokens (a SentencePiece one:
// its tokens, scores and token types cut alike; the special ids must stay
// below N): smaller embedding and output matrices, quick to quantize.
#include "tg/gguf.h"
#include "tg/llama.h"
#include "tg/types.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TG_DEFAULT_VOCAB
#define TG_DEFAULT_VOCAB "tests/data/llama-spm-vocab.gguf"
#endif

struct opts {
    int n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    enum tg_type type;      // the preset's base type (checks, general.file_type)
    const char * qpreset;   // quantization preset: f32, f16, q8_0, q4_0, q4_k_m ... (tg_llama_quant_preset_type)
    unsigned long long seed;
    const char * vocab;
    int          n_vocab;   // --n-vocab: the vocabulary's first n_vocab tokens (0: all)
    const char * out;
};

static int usage(void) {
    fprintf(stderr, "usage: make-model [--preset tiny|100m] [--n-embd N] [--n-layer N] [--n-head N] [--n-head-kv N]\n"
                    "                  [--n-ff N] [--n-ctx N] [--type TYPE] [--seed S] [--vocab FILE] [--n-vocab N] -o FILE\n"
                    "  TYPE: f32 f16 q8_0 q4_0 q4_1 q5_0 q5_1 q6_k q5_k_m q4_k_m q4_k_s q3_k_m q2_k iq4_nl iq4_xs (per-tensor mixtures\n"
                    "        like the established quantizer's presets: output and some attn_v/ffn_down at more bits)\n"
                    "  --n-vocab N: keep the first N tokens of a SentencePiece vocabulary (default: all)\n");
    return 1;
}

static int fail(const char * fmt, const char * a, const char * b) {
    fprintf(stderr, "make-model: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 1;
}

// ---- random numbers ----

static unsigned long long rng_state;

static unsigned long long next_u64(void) {
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Approximately N(0,1): sum of 4 uniforms, centred and scaled (variance 4/12).
static float next_normal(void) {
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += (double) (next_u64() >> 11) * 0x1.0p-53;
    return (float) ((s - 2.0) * 1.7320508075688772);
}

// ---- options ----

static bool parse_int(const char * s, int * out) {
    char * end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v > 1000000) return false;
    *out = (int) v;
    return true;
}

static int parse_args(int argc, char ** argv, struct opts * o) {
    *o = (struct opts) { .n_embd = 64, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .n_ff = 160, .n_ctx = 512,
                         .type = TG_TYPE_F32, .qpreset = "f32", .seed = 42, .vocab = TG_DEFAULT_VOCAB, .out = NULL };
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        const char * v = i + 1 < argc ? argv[i + 1] : NULL;
        int * target = !strcmp(a, "--n-embd") ? &o->n_embd : !strcmp(a, "--n-layer") ? &o->n_layer
                     : !strcmp(a, "--n-head") ? &o->n_head : !strcmp(a, "--n-head-kv") ? &o->n_head_kv
                     : !strcmp(a, "--n-ff") ? &o->n_ff : !strcmp(a, "--n-ctx") ? &o->n_ctx
                     : !strcmp(a, "--n-vocab") ? &o->n_vocab : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 2; }
        if (!v) return fail("option %s needs a value%s", a, "");
        i++;
        if (target) {
            if (!parse_int(v, target)) return fail("bad value '%s' for %s", v, a);
        } else if (!strcmp(a, "--preset")) {
            if (!strcmp(v, "tiny")) { o->n_embd = 64; o->n_layer = 2; o->n_head = 4; o->n_head_kv = 2; o->n_ff = 160; }
            else if (!strcmp(v, "100m")) { o->n_embd = 768; o->n_layer = 12; o->n_head = 12; o->n_head_kv = 4; o->n_ff = 2048; o->n_ctx = 2048; }
            else return fail("unknown preset '%s'%s (tiny, 100m)", v, "");
        } else if (!strcmp(a, "--type")) {
            if (!tg_llama_quant_preset_known(v)) return fail("unknown type '%s' (%s)", v, tg_llama_quant_presets());
            o->qpreset = v;
            o->type = tg_llama_quant_preset_type(v, "blk.0.attn_q.weight", 1, 256, 256);
        } else if (!strcmp(a, "--seed")) {
            char * end;
            o->seed = strtoull(v, &end, 0);
            if (*end || end == v) return fail("bad seed '%s'%s", v, "");
        } else if (!strcmp(a, "--vocab")) o->vocab = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->out = v;
        else return fail("unknown option '%s'%s", a, "");
    }
    if (!o->out) return fail("no output file (-o FILE)%s%s", "", "");
    if (o->n_embd % o->n_head || o->n_head % o->n_head_kv || (o->n_embd / o->n_head) % 2)
        return fail("n_embd must be a multiple of n_head, n_head of n_head_kv, and the head dim even%s%s", "", "");
    if (o->type != TG_TYPE_F32 && o->type != TG_TYPE_F16) {
        int kv = o->n_embd / o->n_head * o->n_head_kv;
        if (o->n_embd % 32 || o->n_ff % 32 || kv % 32)
            return fail("quantized types need n_embd, n_ff and the K/V width to be multiples of 32%s%s", "", "");
    }
    return 0;
}

// ---- vocabulary keys ----

// Copies every tokenizer.* key of the vocabulary file into the writer, the
// arrays of one entry per token (n_full of them) cut to the first n_keep.
static enum tg_status copy_tokenizer(struct tg_gguf_writer * w, const struct tg_gguf * v, int64_t n_full, int64_t n_keep) {
    for (int64_t i = 0; i < tg_gguf_n_kv(v); i++) {
        const char * key = tg_gguf_key(v, i);
        if (strncmp(key, "tokenizer.", 10) != 0) continue;
        enum tg_gguf_type t = tg_gguf_kv_type(v, i);
        enum tg_status st = TG_OK;
        if (t == TG_GGUF_STRING) {
            st = tg_gguf_set_str(w, key, tg_gguf_get_str(v, key));
        } else if (t == TG_GGUF_ARRAY && tg_gguf_arr_type(v, i) == TG_GGUF_STRING) {
            int64_t n = tg_gguf_arr_n(v, i);
            if (n == n_full) n = n_keep;
            const char ** strs = malloc(sizeof(char *) * (size_t) (n > 0 ? n : 1));
            if (!strs) return tg_error(TG_ERR_NOMEM, "out of memory copying %s", key);
            for (int64_t j = 0; j < n; j++) { size_t len; strs[j] = tg_gguf_arr_str(v, i, j, &len); }
            st = tg_gguf_set_arr_str(w, key, strs, n);
            free(strs);
        } else if (t == TG_GGUF_ARRAY) {
            const int64_t n = tg_gguf_arr_n(v, i);
            st = tg_gguf_set_arr(w, key, tg_gguf_arr_type(v, i), tg_gguf_arr_data(v, i), n == n_full ? n_keep : n);
        } else if (t == TG_GGUF_BOOL) {
            bool b; if (!tg_gguf_get_bool(v, key, &b)) return tg_last_status();
            st = tg_gguf_set_bool(w, key, b);
        } else if (t == TG_GGUF_INT32 || t == TG_GGUF_INT8 || t == TG_GGUF_INT16) {
            int32_t x; if (!tg_gguf_get_i32(v, key, &x)) return tg_last_status();
            st = tg_gguf_set_i32(w, key, x);
        } else if (t == TG_GGUF_FLOAT32 || t == TG_GGUF_FLOAT64) {
            float x; if (!tg_gguf_get_f32(v, key, &x)) return tg_last_status();
            st = tg_gguf_set_f32(w, key, x);
        } else {
            uint32_t x; if (!tg_gguf_get_u32(v, key, &x)) return tg_last_status();
            st = tg_gguf_set_u32(w, key, x);
        }
        if (st) return st;
    }
    return TG_OK;
}

// ---- tensors ----

struct blobs { void ** p; int n, cap; };

static void * keep(struct blobs * b, void * p) {
    if (!p) return NULL;
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        void ** np = realloc(b->p, sizeof(void *) * (size_t) cap);
        if (!np) { free(p); return NULL; }
        b->p = np; b->cap = cap;
    }
    return b->p[b->n++] = p;
}

// Adds a random tensor [ne0, ne1] (ne1 = 0: vector of 1 + 0.1 N(0,1), F32);
// matrices ~ 0.02 N(0,1) converted to `type`.
static enum tg_status add_random(struct tg_gguf_writer * w, struct blobs * bl, const char * name,
                                 int64_t ne0, int64_t ne1, const struct opts * o) {
    bool vec = ne1 == 0;
    enum tg_type type = tg_llama_quant_preset_type(o->qpreset, name, o->n_layer, ne0, vec ? 1 : ne1);
    int64_t rows = vec ? 1 : ne1, n = ne0 * rows;
    if (vec) type = TG_TYPE_F32;
    float * f = malloc(sizeof(float) * (size_t) n);
    if (!f) return tg_error(TG_ERR_NOMEM, "out of memory for %s", name);
    for (int64_t i = 0; i < n; i++) f[i] = vec ? 1.0f + 0.1f * next_normal() : 0.02f * next_normal();
    void * data = f;
    if (type != TG_TYPE_F32) {
        data = malloc(tg_row_size(type, ne0) * (size_t) rows);
        if (!data) { free(f); return tg_error(TG_ERR_NOMEM, "out of memory for %s", name); }
        const struct tg_type_traits * tr = tg_type_traits(type);
        for (int64_t r = 0; r < rows; r++)
            tr->from_float(f + r * ne0, (char *) data + (size_t) r * tg_row_size(type, ne0), ne0);
        free(f);
    }
    if (!keep(bl, data)) return tg_error(TG_ERR_NOMEM, "out of memory for %s", name);
    int64_t ne[2] = { ne0, rows };
    return tg_gguf_add_tensor(w, name, type, vec ? 1 : 2, ne, data);
}

static enum tg_status add_tensors(struct tg_gguf_writer * w, struct blobs * bl, const struct opts * o, int64_t n_vocab) {
    int64_t hd = o->n_embd / o->n_head, kv = hd * o->n_head_kv;
    enum tg_status st;
    if ((st = add_random(w, bl, "token_embd.weight", o->n_embd, n_vocab, o))) return st;
    char name[96];
    for (int il = 0; il < o->n_layer; il++) {
#define ADD(suffix, ne0, ne1) \
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, suffix); \
        if ((st = add_random(w, bl, name, (ne0), (ne1), o))) return st;
        ADD("attn_norm", o->n_embd, 0);
        ADD("attn_q", o->n_embd, o->n_embd);
        ADD("attn_k", o->n_embd, kv);
        ADD("attn_v", o->n_embd, kv);
        ADD("attn_output", o->n_embd, o->n_embd);
        ADD("ffn_norm", o->n_embd, 0);
        ADD("ffn_gate", o->n_embd, o->n_ff);
        ADD("ffn_up", o->n_embd, o->n_ff);
        ADD("ffn_down", o->n_ff, o->n_embd);
#undef ADD
    }
    if ((st = add_random(w, bl, "output_norm.weight", o->n_embd, 0, o))) return st;
    return add_random(w, bl, "output.weight", o->n_embd, n_vocab, o);
}

static enum tg_status set_hparams(struct tg_gguf_writer * w, const struct opts * o, int64_t n_vocab) {
    const uint32_t ftype = tg_llama_quant_preset_ftype(o->qpreset);   // general.file_type
    enum tg_status st = TG_OK;
    st = st ? st : tg_gguf_set_str(w, "general.architecture", "llama");
    st = st ? st : tg_gguf_set_str(w, "general.name", "tgdb-random");
    st = st ? st : tg_gguf_set_u32(w, "general.file_type", ftype);
    st = st ? st : tg_gguf_set_u32(w, "llama.context_length", (uint32_t) o->n_ctx);
    st = st ? st : tg_gguf_set_u32(w, "llama.embedding_length", (uint32_t) o->n_embd);
    st = st ? st : tg_gguf_set_u32(w, "llama.block_count", (uint32_t) o->n_layer);
    st = st ? st : tg_gguf_set_u32(w, "llama.feed_forward_length", (uint32_t) o->n_ff);
    st = st ? st : tg_gguf_set_u32(w, "llama.attention.head_count", (uint32_t) o->n_head);
    st = st ? st : tg_gguf_set_u32(w, "llama.attention.head_count_kv", (uint32_t) o->n_head_kv);
    st = st ? st : tg_gguf_set_u32(w, "llama.rope.dimension_count", (uint32_t) (o->n_embd / o->n_head));
    st = st ? st : tg_gguf_set_f32(w, "llama.rope.freq_base", 10000.0f);
    st = st ? st : tg_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    st = st ? st : tg_gguf_set_u32(w, "llama.vocab_size", (uint32_t) n_vocab);
    return st;
}

int main(int argc, char ** argv) {
    struct opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc == 2 ? 0 : 1;
    rng_state = o.seed;
    struct tg_gguf * vocab = tg_gguf_open(o.vocab);
    if (!vocab) return fail("cannot read vocabulary %s: %s", o.vocab, tg_last_error());
    int64_t ki = tg_gguf_find_key(vocab, "tokenizer.ggml.tokens");
    int64_t n_vocab = ki >= 0 ? tg_gguf_arr_n(vocab, ki) : 0;
    if (n_vocab < 1) { tg_gguf_close(vocab); return fail("%s has no tokenizer.ggml.tokens%s", o.vocab, ""); }
    const int64_t n_full = n_vocab;
    if (o.n_vocab && o.n_vocab < n_vocab) {   // a SentencePiece vocabulary's first n_vocab tokens
        const char * model = tg_gguf_find_key(vocab, "tokenizer.ggml.model") >= 0
                           ? tg_gguf_get_str(vocab, "tokenizer.ggml.model") : NULL;
        if (!model || strcmp(model, "llama")) {
            fail("--n-vocab needs a SentencePiece vocabulary (tokenizer.ggml.model 'llama'); %s has '%s'",
                 o.vocab, model ? model : "none");
            tg_gguf_close(vocab);
            return 1;
        }
        static const char * const ids[] = { "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                             "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id" };
        for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
            uint32_t id;
            if (tg_gguf_find_key(vocab, ids[k]) >= 0 && tg_gguf_get_u32(vocab, ids[k], &id) &&
                id != UINT32_MAX && id >= (uint32_t) o.n_vocab) {   // UINT32_MAX: none
                char n[32];
                snprintf(n, sizeof n, "%d", o.n_vocab);
                tg_gguf_close(vocab);
                return fail("%s is past --n-vocab %s", ids[k], n);
            }
        }
        n_vocab = o.n_vocab;
    }
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    struct blobs bl = { 0 };
    enum tg_status st = w ? TG_OK : TG_ERR_NOMEM;
    if (!st) st = set_hparams(w, &o, n_vocab);
    if (!st) st = copy_tokenizer(w, vocab, n_full, n_vocab);
    if (!st) st = add_tensors(w, &bl, &o, n_vocab);
    if (!st) st = tg_gguf_write(w, o.out);
    if (st) rc = fail("%s: %s", o.out, tg_last_error());
    else printf("wrote %s: n_embd %d, %d layers, %d/%d heads, n_ff %d, %s, seed %llu\n", o.out, o.n_embd, o.n_layer,
                o.n_head, o.n_head_kv, o.n_ff, tg_type_name(o.type), o.seed);
    for (int i = 0; i < bl.n; i++) free(bl.p[i]);
    free(bl.p);
    tg_gguf_writer_free(w);
    tg_gguf_close(vocab);
    return rc;
}
