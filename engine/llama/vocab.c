// vocab.c - vocabulary loading (GGUF tokenizer.ggml.* keys), the text -> id
// table, the special-token partition and the model-independent parts of
// tokenize / token_to_piece / detokenize. The tokenizer models themselves are
// in vocab-<model>.c behind struct tg_vocab_ops.
#include "core/grow.h"
#include "llama/vocab-impl.h"

#include "tg/gguf.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// models

struct vocab_model_entry {
    const char *                name;
    const struct tg_vocab_ops * ops;   // NULL: known but not implemented
};

static const struct vocab_model_entry vocab_models[] = {
    {"llama", &tg_vocab_spm_ops},
    {"gpt2",  &tg_vocab_bpe_ops},
};

static const char * const token_type_names[TG_TOKEN_TYPE_COUNT] = {
    "undefined", "normal", "unknown", "control", "user_defined", "unused", "byte",
};

const char * tg_token_type_name(enum tg_token_type t) {
    return (unsigned) t < TG_TOKEN_TYPE_COUNT ? token_type_names[t] : "?";
}

// ---------------------------------------------------------------------------
// text -> id table

static uint64_t vocab_hash(const char * s, size_t n) {
    uint64_t h = 1469598103934665603ull;   // FNV-1a
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char) s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

int32_t tg_vocab_find(const struct tg_vocab * v, const char * text, size_t len) {
    if (!v || (!text && len)) return -1;
    size_t i = (size_t) vocab_hash(text, len) & v->table_mask;
    for (;; i = (i + 1) & v->table_mask) {
        int32_t id = v->table[i];
        if (id < 0) return -1;
        if (v->len[id] == len && memcmp(tg_vocab_text_(v, id), text, len) == 0) return id;
    }
}

// Inserts every token; a text seen twice maps to its last id.
static void vocab_build_table(struct tg_vocab * v) {
    for (size_t i = 0; i <= v->table_mask; i++) v->table[i] = -1;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const char * s = tg_vocab_text_(v, id);
        size_t i = (size_t) vocab_hash(s, v->len[id]) & v->table_mask;
        for (;; i = (i + 1) & v->table_mask) {
            int32_t other = v->table[i];
            if (other < 0 || (v->len[other] == v->len[id] &&
                              memcmp(tg_vocab_text_(v, other), s, v->len[id]) == 0)) {
                v->table[i] = id;
                break;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// construction

void tg_vocab_params_default(struct tg_vocab_params * p) {
    memset(p, 0, sizeof(*p));
    p->model = "llama";
    p->bos = 1; p->eos = 2; p->unk = 0; p->pad = -1;
    p->add_bos = true; p->add_eos = false; p->add_space_prefix = true;
}

void tg_vocab_free(struct tg_vocab * v) {
    if (!v) return;
    if (v->ops && v->ops->fini) v->ops->fini(v);
    free(v->blob); free(v->off); free(v->len); free(v->scores); free(v->types);
    free(v->table); free(v->specials);
    free(v);
}

static int vocab_cmp_special(const void * a, const void * b, void * ctx) {
    const struct tg_vocab * v = ctx;
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    if (v->len[x] != v->len[y]) return v->len[x] > v->len[y] ? -1 : 1;
    return (x > y) - (x < y);
}

// Byte tokens "<0xXX>", else a normal 1-byte token, per byte value.
static void vocab_build_bytes(struct tg_vocab * v) {
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char name[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
        int32_t id = tg_vocab_find(v, name, 6);
        if (id < 0) {
            char c = (char) b;
            id = tg_vocab_find(v, &c, 1);
        }
        v->byte_token[b] = id;
    }
}

static enum tg_status vocab_build_specials(struct tg_vocab * v) {
    int32_t n = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        uint8_t t = v->types[id];
        if ((t == TG_TOKEN_CONTROL || t == TG_TOKEN_UNKNOWN || t == TG_TOKEN_USER_DEFINED) && v->len[id] > 0) n++;
    }
    v->n_specials = n;
    if (n == 0) return TG_OK;
    v->specials = malloc((size_t) n * sizeof(int32_t));
    if (!v->specials) return tg_error(TG_ERR_NOMEM, "vocab: out of memory for %d special tokens", n);
    n = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        uint8_t t = v->types[id];
        if ((t == TG_TOKEN_CONTROL || t == TG_TOKEN_UNKNOWN || t == TG_TOKEN_USER_DEFINED) && v->len[id] > 0) {
            v->specials[n++] = id;
        }
    }
    qsort_r(v->specials, (size_t) n, sizeof(int32_t), vocab_cmp_special, v);
    return TG_OK;
}

static const struct tg_vocab_ops * vocab_find_model(const char * name) {
    for (size_t i = 0; i < sizeof(vocab_models) / sizeof(vocab_models[0]); i++) {
        if (strcmp(vocab_models[i].name, name) == 0) {
            if (!vocab_models[i].ops) {
                tg_error(TG_ERR_UNSUPPORTED, "vocab: tokenizer model '%s' is not implemented yet", name);
            }
            return vocab_models[i].ops;
        }
    }
    tg_error(TG_ERR_UNSUPPORTED, "vocab: unknown tokenizer model '%s' (known: llama, gpt2)", name);
    return NULL;
}

// Checks p; `bad` is the status for bad content (INVALID_ARG from the API,
// FORMAT when the values came from a file).
static bool vocab_check_params(const struct tg_vocab_params * p, enum tg_status bad) {
    if (!p || !p->model) return tg_error(TG_ERR_INVALID_ARG, "vocab: NULL params or model"), false;
    if (p->n_tokens <= 0 || !p->texts) {
        return tg_error(bad, "vocab: no tokens (n_tokens = %d)", p ? p->n_tokens : 0), false;
    }
    const int32_t ids[4] = {p->bos, p->eos, p->unk, p->pad};
    const char * names[4] = {"bos", "eos", "unk", "pad"};
    for (int i = 0; i < 4; i++) {
        if (ids[i] >= p->n_tokens) {
            return tg_error(bad, "vocab: %s token id %d out of range (n_tokens = %d)", names[i], ids[i],
                            p->n_tokens), false;
        }
    }
    for (int32_t i = 0; i < p->n_tokens; i++) {
        if (!p->texts[i]) return tg_error(bad, "vocab: token %d has no text", i), false;
        if (p->types && (p->types[i] < 0 || p->types[i] >= TG_TOKEN_TYPE_COUNT)) {
            return tg_error(bad, "vocab: token %d has an invalid type %d", i, p->types[i]), false;
        }
    }
    return true;
}

static struct tg_vocab * vocab_create(const struct tg_vocab_params * p, enum tg_status bad) {
    if (!vocab_check_params(p, bad)) return NULL;
    const struct tg_vocab_ops * ops = vocab_find_model(p->model);
    if (!ops) return NULL;
    struct tg_vocab * v = calloc(1, sizeof(*v));
    if (!v) { tg_error(TG_ERR_NOMEM, "vocab: out of memory"); return NULL; }
    size_t n = (size_t) p->n_tokens, total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = p->texts_len ? p->texts_len[i] : strlen(p->texts[i]);
        if (l > UINT32_MAX / 2) { tg_error(bad, "vocab: token %zu text too long", i); goto fail; }
        total += l + 1;
    }
    size_t tsize = 1;
    while (tsize < 2 * n) tsize <<= 1;
    v->ops = ops;
    v->n_tokens = p->n_tokens;
    v->blob = malloc(total);
    v->off = malloc(n * sizeof(size_t));
    v->len = malloc(n * sizeof(uint32_t));
    v->scores = malloc(n * sizeof(float));
    v->types = malloc(n);
    v->table = malloc(tsize * sizeof(int32_t));
    v->table_mask = tsize - 1;
    if (!v->blob || !v->off || !v->len || !v->scores || !v->types || !v->table) {
        tg_error(TG_ERR_NOMEM, "vocab: out of memory for %zu tokens", n);
        goto fail;
    }
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = p->texts_len ? p->texts_len[i] : strlen(p->texts[i]);
        memcpy(v->blob + pos, p->texts[i], l);
        v->blob[pos + l] = 0;
        v->off[i] = pos;
        v->len[i] = (uint32_t) l;
        pos += l + 1;
        v->scores[i] = p->scores ? p->scores[i] : 0.0f;
        v->types[i] = (uint8_t) (p->types ? p->types[i] : TG_TOKEN_NORMAL);
    }
    v->bos = p->bos < 0 ? -1 : p->bos;
    v->eos = p->eos < 0 ? -1 : p->eos;
    v->unk = p->unk < 0 ? -1 : p->unk;
    v->pad = p->pad < 0 ? -1 : p->pad;
    v->add_bos = p->add_bos;
    v->add_eos = p->add_eos;
    v->add_space_prefix = p->add_space_prefix;
    vocab_build_table(v);
    vocab_build_bytes(v);
    if (vocab_build_specials(v) != TG_OK) goto fail;
    if (ops->init && ops->init(v, p, bad) != TG_OK) goto fail;
    return v;
fail:
    tg_vocab_free(v);
    return NULL;
}

struct tg_vocab * tg_vocab_create(const struct tg_vocab_params * p) {
    return vocab_create(p, TG_ERR_INVALID_ARG);
}

// ---------------------------------------------------------------------------
// loading from GGUF

// Reads an optional token id key into *out (left alone when absent).
static bool load_id(const struct tg_gguf * g, const char * key, int32_t * out) {
    if (tg_gguf_find_key(g, key) < 0) return true;
    uint32_t u;
    int32_t i;
    if (tg_gguf_get_u32(g, key, &u)) {
        *out = u == UINT32_MAX ? -1 : (u > INT32_MAX ? INT32_MAX : (int32_t) u);
        return true;
    }
    if (tg_gguf_get_i32(g, key, &i)) {
        *out = i < 0 ? -1 : i;
        return true;
    }
    tg_error(TG_ERR_FORMAT, "vocab: key %s is not an integer", key);
    return false;
}

static bool load_bool(const struct tg_gguf * g, const char * key, bool * out) {
    if (tg_gguf_find_key(g, key) < 0) return true;
    if (tg_gguf_get_bool(g, key, out)) return true;
    tg_error(TG_ERR_FORMAT, "vocab: key %s is not a bool", key);
    return false;
}

// Finds an optional array key of element type t and n elements: returns its
// index, -1 if absent, -2 (+ last error) if malformed.
static int64_t load_array(const struct tg_gguf * g, const char * key, enum tg_gguf_type t, int64_t n) {
    int64_t k = tg_gguf_find_key(g, key);
    if (k < 0) return -1;
    if (tg_gguf_kv_type(g, k) != TG_GGUF_ARRAY || tg_gguf_arr_type(g, k) != t) {
        tg_error(TG_ERR_FORMAT, "vocab: key %s is not an array of %s", key, tg_gguf_type_name(t));
        return -2;
    }
    if (n >= 0 && tg_gguf_arr_n(g, k) != n) {
        tg_error(TG_ERR_FORMAT, "vocab: key %s has %lld elements, expected %lld (one per token)", key,
                 (long long) tg_gguf_arr_n(g, k), (long long) n);
        return -2;
    }
    return k;
}

struct vocab_load_bufs {
    const char ** texts;
    size_t *      lens;
    float *       scores;
    int32_t *     types;
    const char ** merges;
    size_t *      merges_len;
};

// tokenizer.ggml.merges (optional; only BPE vocabularies use it).
static bool load_merges(const struct tg_gguf * g, struct tg_vocab_params * p, struct vocab_load_bufs * b) {
    int64_t k = load_array(g, "tokenizer.ggml.merges", TG_GGUF_STRING, -1);
    if (k == -2) return false;
    if (k < 0) return true;
    int64_t n = tg_gguf_arr_n(g, k);
    if (n > INT32_MAX) {
        tg_error(TG_ERR_FORMAT, "vocab: tokenizer.ggml.merges has %lld entries", (long long) n);
        return false;
    }
    if (n == 0) return true;
    b->merges = malloc((size_t) n * sizeof(char *));
    b->merges_len = malloc((size_t) n * sizeof(size_t));
    if (!b->merges || !b->merges_len) {
        tg_error(TG_ERR_NOMEM, "vocab: out of memory for %lld merges", (long long) n);
        return false;
    }
    for (int64_t j = 0; j < n; j++) {
        b->merges[j] = tg_gguf_arr_str(g, k, j, &b->merges_len[j]);
        if (!b->merges[j]) {
            tg_error(TG_ERR_FORMAT, "vocab: tokenizer.ggml.merges[%lld] unreadable", (long long) j);
            return false;
        }
    }
    p->n_merges = (int32_t) n;
    p->merges = b->merges;
    p->merges_len = b->merges_len;
    return true;
}

// Fills the per-token arrays of p from the file (array data is copied with
// memcpy: GGUF arrays are not necessarily aligned).
static bool load_tokens(const struct tg_gguf * g, struct tg_vocab_params * p, struct vocab_load_bufs * b) {
    int64_t kt = load_array(g, "tokenizer.ggml.tokens", TG_GGUF_STRING, -1);
    if (kt == -1) tg_error(TG_ERR_FORMAT, "vocab: missing key tokenizer.ggml.tokens");
    if (kt < 0) return false;
    int64_t n = tg_gguf_arr_n(g, kt);
    if (n <= 0 || n > INT32_MAX) {
        tg_error(TG_ERR_FORMAT, "vocab: tokenizer.ggml.tokens has %lld tokens", (long long) n);
        return false;
    }
    int64_t ks = load_array(g, "tokenizer.ggml.scores", TG_GGUF_FLOAT32, n);
    int64_t ky = load_array(g, "tokenizer.ggml.token_type", TG_GGUF_INT32, n);
    if (ks == -2 || ky == -2) return false;
    b->texts = malloc((size_t) n * sizeof(char *));
    b->lens = malloc((size_t) n * sizeof(size_t));
    b->scores = ks >= 0 ? malloc((size_t) n * sizeof(float)) : NULL;
    b->types = ky >= 0 ? malloc((size_t) n * sizeof(int32_t)) : NULL;
    if (!b->texts || !b->lens || (ks >= 0 && !b->scores) || (ky >= 0 && !b->types)) {
        tg_error(TG_ERR_NOMEM, "vocab: out of memory for %lld tokens", (long long) n);
        return false;
    }
    for (int64_t j = 0; j < n; j++) {
        b->texts[j] = tg_gguf_arr_str(g, kt, j, &b->lens[j]);
        if (!b->texts[j]) {
            tg_error(TG_ERR_FORMAT, "vocab: tokenizer.ggml.tokens[%lld] unreadable", (long long) j);
            return false;
        }
    }
    if (ks >= 0) memcpy(b->scores, tg_gguf_arr_data(g, ks), (size_t) n * sizeof(float));
    if (ky >= 0) memcpy(b->types, tg_gguf_arr_data(g, ky), (size_t) n * sizeof(int32_t));
    p->n_tokens = (int32_t) n;
    p->texts = b->texts;
    p->texts_len = b->lens;
    p->scores = b->scores;
    p->types = b->types;
    return true;
}

struct tg_vocab * tg_vocab_load(const struct tg_gguf * g) {
    if (!g) { tg_error(TG_ERR_INVALID_ARG, "vocab: NULL gguf"); return NULL; }
    struct tg_vocab_params p;
    tg_vocab_params_default(&p);
    p.model = tg_gguf_get_str(g, "tokenizer.ggml.model");
    if (!p.model) {
        tg_error(TG_ERR_FORMAT, "vocab: missing or non-string key tokenizer.ggml.model");
        return NULL;
    }
    if (!vocab_find_model(p.model)) return NULL;
    if (strcmp(p.model, "gpt2") == 0) {   // byte-level BPE: no implicit specials, no space prefix
        p.bos = p.eos = p.unk = p.pad = -1;
        p.add_bos = false;
        p.add_space_prefix = false;
        if (tg_gguf_find_key(g, "tokenizer.ggml.pre") >= 0) {
            p.pre = tg_gguf_get_str(g, "tokenizer.ggml.pre");
            if (!p.pre) { tg_error(TG_ERR_FORMAT, "vocab: key tokenizer.ggml.pre is not a string"); return NULL; }
        }
    }
    struct vocab_load_bufs b = {0};
    struct tg_vocab * v = NULL;
    if (load_tokens(g, &p, &b) &&
        load_id(g, "tokenizer.ggml.bos_token_id", &p.bos) &&
        load_id(g, "tokenizer.ggml.eos_token_id", &p.eos) &&
        load_id(g, "tokenizer.ggml.unknown_token_id", &p.unk) &&
        load_id(g, "tokenizer.ggml.padding_token_id", &p.pad) &&
        load_bool(g, "tokenizer.ggml.add_bos_token", &p.add_bos) &&
        load_bool(g, "tokenizer.ggml.add_eos_token", &p.add_eos) &&
        load_bool(g, "tokenizer.ggml.add_space_prefix", &p.add_space_prefix) &&
        load_merges(g, &p, &b)) {
        v = vocab_create(&p, TG_ERR_FORMAT);
    }
    free(b.texts); free(b.lens); free(b.scores); free(b.types);
    free(b.merges); free(b.merges_len);
    return v;
}

// ---------------------------------------------------------------------------
// accessors

enum tg_vocab_model tg_vocab_model(const struct tg_vocab * v) { return v->ops->model; }
const char * tg_vocab_pre(const struct tg_vocab * v) { return v ? tg_vocab_bpe_pre_(v) : NULL; }
const char * tg_vocab_model_name(const struct tg_vocab * v) { return v->ops->name; }
int32_t tg_vocab_n_tokens(const struct tg_vocab * v) { return v ? v->n_tokens : 0; }

const char * tg_vocab_token_text(const struct tg_vocab * v, int32_t id, size_t * len) {
    if (!v || id < 0 || id >= v->n_tokens) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = v->len[id];
    return tg_vocab_text_(v, id);
}

float tg_vocab_score(const struct tg_vocab * v, int32_t id) {
    return v && id >= 0 && id < v->n_tokens ? v->scores[id] : 0.0f;
}

enum tg_token_type tg_vocab_type(const struct tg_vocab * v, int32_t id) {
    return v && id >= 0 && id < v->n_tokens ? (enum tg_token_type) v->types[id] : TG_TOKEN_UNDEFINED;
}

int32_t tg_vocab_bos(const struct tg_vocab * v) { return v->bos; }
int32_t tg_vocab_eos(const struct tg_vocab * v) { return v->eos; }
int32_t tg_vocab_unk(const struct tg_vocab * v) { return v->unk; }
int32_t tg_vocab_pad(const struct tg_vocab * v) { return v->pad; }
bool tg_vocab_add_bos(const struct tg_vocab * v) { return v->add_bos; }
bool tg_vocab_add_eos(const struct tg_vocab * v) { return v->add_eos; }
bool tg_vocab_add_space_prefix(const struct tg_vocab * v) { return v->add_space_prefix; }

// ---------------------------------------------------------------------------
// tokenize

// A piece of the input: raw text (id < 0) or a special token found in it.
struct vocab_frag {
    int32_t id;
    size_t  off, len;
};

struct vocab_frags {
    struct vocab_frag * a;
    size_t n, cap;
};

static bool frags_push(struct vocab_frags * f, int32_t id, size_t off, size_t len) {
    if (!TG_GROW(f->a, f->cap, f->n + 1)) return false;
    f->a[f->n++] = (struct vocab_frag) {id, off, len};
    return true;
}

// Splits every raw fragment of *f at the occurrences (left to right) of
// special token id's text. Returns false when out of memory.
static bool frags_split(const struct tg_vocab * v, const char * text, struct vocab_frags * f, int32_t id) {
    const char * s = tg_vocab_text_(v, id);
    size_t sl = v->len[id];
    struct vocab_frags out = {0};
    for (size_t i = 0; i < f->n; i++) {
        struct vocab_frag fr = f->a[i];
        if (fr.id >= 0 || fr.len < sl) {
            if (!frags_push(&out, fr.id, fr.off, fr.len)) goto oom;
            continue;
        }
        size_t pos = fr.off, end = fr.off + fr.len;
        while (pos < end) {
            const char * hit = memmem(text + pos, end - pos, s, sl);
            if (!hit) break;
            size_t at = (size_t) (hit - text);
            if (at > pos && !frags_push(&out, -1, pos, at - pos)) goto oom;
            if (!frags_push(&out, id, at, sl)) goto oom;
            pos = at + sl;
        }
        if (pos < end && !frags_push(&out, -1, pos, end - pos)) goto oom;
    }
    free(f->a);
    *f = out;
    return true;
oom:
    free(out.a);
    return false;
}

// Partitions text into raw fragments and special tokens (see tg/vocab.h).
static enum tg_status vocab_partition(const struct tg_vocab * v, const char * text, size_t len,
                                      bool parse_special, struct vocab_frags * f) {
    if (len > 0 && !frags_push(f, -1, 0, len)) goto oom;
    for (int32_t k = 0; k < v->n_specials; k++) {
        int32_t id = v->specials[k];
        if (!parse_special && v->types[id] != TG_TOKEN_USER_DEFINED) continue;
        if (!frags_split(v, text, f, id)) goto oom;
    }
    return TG_OK;
oom:
    return tg_error(TG_ERR_NOMEM, "tokenize: out of memory splitting %zu bytes at special tokens", len);
}

int32_t tg_vocab_tokenize(const struct tg_vocab * v, const char * text, size_t len,
                          int32_t * out, int32_t n_max, bool add_special, bool parse_special) {
    if (!v || (!text && len) || n_max < 0 || (!out && n_max > 0)) {
        tg_error(TG_ERR_INVALID_ARG, "tokenize: NULL vocab/text/out or negative n_max");
        return TG_VOCAB_ERROR;
    }
    struct tg_tok_out o = {out, n_max, 0};
    struct vocab_frags f = {0};
    enum tg_status st = vocab_partition(v, text, len, parse_special, &f);
    if (add_special && v->add_bos && v->bos >= 0) tg_tok_out_push(&o, v->bos);
    bool prefix = true;   // first fragment, or one after a special token
    for (size_t i = 0; st == TG_OK && i < f.n; i++) {
        if (f.a[i].id >= 0) {
            tg_tok_out_push(&o, f.a[i].id);
            prefix = true;
        } else {
            st = v->ops->tokenize(v, text + f.a[i].off, f.a[i].len, prefix, &o);
            prefix = false;
        }
    }
    free(f.a);
    if (st != TG_OK) return TG_VOCAB_ERROR;
    if (add_special && v->add_eos && v->eos >= 0) tg_tok_out_push(&o, v->eos);
    if (o.n > INT32_MAX) {
        tg_error(TG_ERR_INVALID_ARG, "tokenize: %lld tokens do not fit an int32_t count", (long long) o.n);
        return TG_VOCAB_ERROR;
    }
    return o.n > n_max ? -(int32_t) o.n : (int32_t) o.n;
}

// ---------------------------------------------------------------------------
// pieces

int32_t tg_vocab_token_to_piece(const struct tg_vocab * v, int32_t id, char * buf, size_t cap, bool special) {
    if (!v || id < 0 || id >= v->n_tokens || (!buf && cap)) {
        tg_error(TG_ERR_INVALID_ARG, "token_to_piece: token id %d out of range (n_tokens = %d)", id,
                 v ? v->n_tokens : 0);
        return TG_VOCAB_ERROR;
    }
    return v->ops->token_to_piece(v, id, buf, cap, special);
}

int32_t tg_vocab_detokenize(const struct tg_vocab * v, const int32_t * ids, int32_t n,
                            char * buf, size_t cap, bool special) {
    if (!v || n < 0 || (!ids && n) || (!buf && cap)) {
        tg_error(TG_ERR_INVALID_ARG, "detokenize: NULL vocab/ids/buf or negative count");
        return TG_VOCAB_ERROR;
    }
    char small[256];
    char * piece = small;
    size_t piece_cap = sizeof(small);
    int64_t total = 0;
    bool strip = v->add_space_prefix;
    int32_t ret = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t r = tg_vocab_token_to_piece(v, ids[i], piece, piece_cap, special);
        if (r == TG_VOCAB_ERROR) { ret = TG_VOCAB_ERROR; break; }
        if (r < 0) {   // a piece longer than the scratch buffer
            char * big = malloc((size_t) -r);
            if (!big) { tg_error(TG_ERR_NOMEM, "detokenize: out of memory"); ret = TG_VOCAB_ERROR; break; }
            if (piece != small) free(piece);
            piece = big;
            piece_cap = (size_t) -r;
            r = tg_vocab_token_to_piece(v, ids[i], piece, piece_cap, special);
        }
        const char * p = piece;
        enum tg_token_type t = (enum tg_token_type) v->types[ids[i]];
        if (t == TG_TOKEN_CONTROL || t == TG_TOKEN_UNKNOWN || t == TG_TOKEN_USER_DEFINED) {
            strip = v->add_space_prefix;   // the tokenizer prefixes the text after a special token
        } else if (r > 0 && strip) {
            if (p[0] == ' ') { p++; r--; }
            strip = false;
        }
        if ((size_t) total + (size_t) r <= cap) memcpy(buf + total, p, (size_t) r);
        total += r;
        if (total > INT32_MAX) {
            tg_error(TG_ERR_INVALID_ARG, "detokenize: text longer than INT32_MAX bytes");
            ret = TG_VOCAB_ERROR;
            break;
        }
    }
    if (piece != small) free(piece);
    if (ret == TG_VOCAB_ERROR) return ret;
    return (size_t) total > cap ? -(int32_t) total : (int32_t) total;
}
