// vocab-bpe.c - the byte-level BPE tokenizer of "gpt2" vocabularies (GPT-2,
// Llama 3, Qwen 2/3 and their relatives).
//
// Tokenizing a fragment of raw text (special tokens were split off before):
//   1. pre-tokenization: the fragment is cut into pieces by the split pattern
//      that tokenizer.ggml.pre selects (a PCRE2 regular expression with
//      Unicode properties, matched over the whole fragment so look-aheads see
//      the following text); bytes no alternative matches (invalid UTF-8) form
//      pieces of their own;
//   2. each piece's bytes become symbols, one per byte, each the token of the
//      byte's printable stand-in character (the GPT-2 byte-to-unicode map:
//      '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves, the
//      other 68 bytes for U+0100.. in byte order);
//   3. adjacent symbols are merged repeatedly, always the pair with the lowest
//      merge rank (its index in tokenizer.ggml.merges; ties: leftmost), from a
//      binary heap of candidate pairs, so a piece of n bytes costs O(n log n);
//      pre-tokenizers with "ignore merges" (llama-bpe) first emit a piece that
//      is a token as a whole;
//   4. each final symbol is its token.
// Detokenizing maps every character of a normal token back to its byte.
#include "core/grow.h"
#include "llama/vocab-impl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// pre-tokenizers

// Split patterns, written from the published tokenizer definitions.
#define PAT_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define PAT_LLAMA3 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" \
                   "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define PAT_QWEN2 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" \
                  "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

struct bpe_pre {
    const char * name;          // tokenizer.ggml.pre value
    const char * pattern;
    bool         ignore_merges; // a piece that is a token as a whole is emitted directly
};

static const struct bpe_pre bpe_pres[] = {
    {.name = "default",   .pattern = PAT_GPT2},
    {.name = "gpt2",      .pattern = PAT_GPT2},
    {.name = "gpt-2",     .pattern = PAT_GPT2},
    {.name = "llama-bpe", .pattern = PAT_LLAMA3, .ignore_merges = true},
    {.name = "llama3",    .pattern = PAT_LLAMA3, .ignore_merges = true},
    {.name = "llama-v3",  .pattern = PAT_LLAMA3, .ignore_merges = true},
    {.name = "qwen2",     .pattern = PAT_QWEN2},
};

// ---------------------------------------------------------------------------
// model data

// One merge: (left token, right token) -> rank and the merged token.
struct bpe_merge {
    int32_t left, right;   // left < 0: empty slot
    int32_t rank, result;
};

struct tg_vocab_bpe {
    const struct bpe_pre * pre;
    pcre2_code *       re;
    struct bpe_merge * merges;     // open addressing, linear probing
    size_t             merge_mask;
    int32_t            n_merges;   // merges kept (both sides and the result are tokens)
    int32_t            byte_tok[256];   // token of each byte's stand-in character, -1 if none
    int16_t            cp_byte[512];    // stand-in code point -> byte, -1 if none
};

// Code point that stands for byte b in token texts.
static uint32_t bpe_byte_cp(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    unsigned k = 0;   // rank of b among the bytes that are not their own stand-in
    for (unsigned c = 0; c < b; c++) {
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE))) k++;
    }
    return 256 + k;
}

static size_t utf8_put(uint32_t cp, char * out) {
    if (cp < 0x80) { out[0] = (char) cp; return 1; }
    out[0] = (char) (0xC0 | (cp >> 6));
    out[1] = (char) (0x80 | (cp & 0x3F));
    return 2;   // every stand-in is below U+0800
}

static uint64_t merge_hash(int32_t l, int32_t r) {
    uint64_t h = ((uint64_t) (uint32_t) l << 32) | (uint32_t) r;
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    return h;
}

static const struct bpe_merge * merge_find(const struct tg_vocab_bpe * b, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return NULL;
    for (size_t i = (size_t) merge_hash(l, r) & b->merge_mask;; i = (i + 1) & b->merge_mask) {
        const struct bpe_merge * m = &b->merges[i];
        if (m->left < 0) return NULL;
        if (m->left == l && m->right == r) return m;
    }
}

// Keeps the first (lowest) rank of a pair listed twice.
static void merge_insert(struct tg_vocab_bpe * b, int32_t l, int32_t r, int32_t rank, int32_t result) {
    for (size_t i = (size_t) merge_hash(l, r) & b->merge_mask;; i = (i + 1) & b->merge_mask) {
        struct bpe_merge * m = &b->merges[i];
        if (m->left < 0) {
            *m = (struct bpe_merge) {.left = l, .right = r, .rank = rank, .result = result};
            b->n_merges++;
            return;
        }
        if (m->left == l && m->right == r) return;
    }
}

static void bpe_fini(struct tg_vocab * v) {
    struct tg_vocab_bpe * b = v->model_data;
    if (!b) return;
    pcre2_code_free(b->re);
    free(b->merges);
    free(b);
    v->model_data = NULL;
}

static enum tg_status bpe_compile(struct tg_vocab_bpe * b) {
    int err = 0;
    PCRE2_SIZE at = 0;
    b->re = pcre2_compile((PCRE2_SPTR) b->pre->pattern, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at, NULL);
    if (!b->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof(msg));
        return tg_error(TG_ERR_INTERNAL, "vocab: split pattern of pre-tokenizer '%s' does not compile at %zu: %s",
                        b->pre->name, (size_t) at, (const char *) msg);
    }
    pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE);   // optional: the interpreter is used without it
    return TG_OK;
}

static enum tg_status bpe_build_merges(struct tg_vocab * v, struct tg_vocab_bpe * b,
                                       const struct tg_vocab_params * p, enum tg_status bad) {
    size_t n = p->n_merges > 0 ? (size_t) p->n_merges : 0, size = 16;
    while (size < 2 * n) size <<= 1;
    b->merges = malloc(size * sizeof(*b->merges));
    if (!b->merges) return tg_error(TG_ERR_NOMEM, "vocab: out of memory for %zu merges", n);
    b->merge_mask = size - 1;
    for (size_t i = 0; i < size; i++) b->merges[i].left = -1;
    char small[256];
    for (size_t i = 0; i < n; i++) {
        const char * s = p->merges[i];
        if (!s) return tg_error(bad, "vocab: merge %zu has no text", i);
        size_t len = p->merges_len ? p->merges_len[i] : strlen(s);
        const char * sp = memchr(s, ' ', len);
        if (!sp || sp == s || sp == s + len - 1) {
            return tg_error(bad, "vocab: merge %zu is not two tokens separated by one space", i);
        }
        size_t ll = (size_t) (sp - s), rl = len - ll - 1;
        int32_t l = tg_vocab_find(v, s, ll), r = tg_vocab_find(v, sp + 1, rl);
        if (l < 0 || r < 0) continue;   // a merge of texts that are no tokens can never apply
        char * cat = len - 1 <= sizeof(small) ? small : malloc(len - 1);
        if (!cat) return tg_error(TG_ERR_NOMEM, "vocab: out of memory");
        memcpy(cat, s, ll);
        memcpy(cat + ll, sp + 1, rl);
        int32_t res = tg_vocab_find(v, cat, ll + rl);
        if (cat != small) free(cat);
        if (res >= 0) merge_insert(b, l, r, (int32_t) i, res);
    }
    return TG_OK;
}

static enum tg_status bpe_init(struct tg_vocab * v, const struct tg_vocab_params * p, enum tg_status bad) {
    const char * pre = p->pre ? p->pre : "default";
    const struct bpe_pre * found = NULL;
    for (size_t i = 0; i < sizeof(bpe_pres) / sizeof(bpe_pres[0]); i++) {
        if (strcmp(bpe_pres[i].name, pre) == 0) found = &bpe_pres[i];
    }
    if (!found) {
        return tg_error(TG_ERR_UNSUPPORTED, "vocab: unknown BPE pre-tokenizer '%s' (tokenizer.ggml.pre; known: "
                        "default, gpt2, gpt-2, llama-bpe, llama3, llama-v3, qwen2)", pre);
    }
    if (p->n_merges < 0 || (p->n_merges > 0 && !p->merges)) {
        return tg_error(bad, "vocab: bad merges (n_merges = %d)", p->n_merges);
    }
    struct tg_vocab_bpe * b = calloc(1, sizeof(*b));
    if (!b) return tg_error(TG_ERR_NOMEM, "vocab: out of memory");
    v->model_data = b;
    b->pre = found;
    for (int i = 0; i < 512; i++) b->cp_byte[i] = -1;
    for (unsigned c = 0; c < 256; c++) {
        char u[2];
        uint32_t cp = bpe_byte_cp(c);
        b->cp_byte[cp] = (int16_t) c;
        b->byte_tok[c] = tg_vocab_find(v, u, utf8_put(cp, u));
    }
    enum tg_status st = bpe_compile(b);
    if (st == TG_OK) st = bpe_build_merges(v, b, p, bad);
    return st;   // on failure the caller frees v, and bpe_fini with it
}

// ---------------------------------------------------------------------------
// merging one piece

struct bpe_sym {
    int32_t prev, next;   // -1 at the ends
    int32_t id;           // its token; -1: merged away (or a byte without a token)
};

struct bpe_pair {
    int32_t left, right;  // symbol indices
    int32_t rank;
    int32_t lid, rid;     // their tokens when queued (stale when changed since)
    int32_t result;
};

struct bpe_heap {
    struct bpe_pair * a;
    size_t n, cap;
};

static bool pair_before(const struct bpe_pair * a, const struct bpe_pair * b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

TG_VOCAB_HEAP(bpe_heap, struct bpe_pair, pair_before)

static void try_pair(const struct tg_vocab_bpe * b, struct bpe_heap * h, const struct bpe_sym * sym,
                     int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const struct bpe_merge * m = merge_find(b, sym[left].id, sym[right].id);
    if (!m) return;
    bpe_heap_push(h->a, &h->n, h->cap, (struct bpe_pair) {.left = left, .right = right, .rank = m->rank,
                                    .lid = sym[left].id, .rid = sym[right].id, .result = m->result});
}

// Scratch reused across the pieces of one fragment.
struct bpe_scratch {
    struct bpe_sym * sym;
    struct bpe_heap  heap;
    size_t           cap;   // symbols sym and heap have room for
};

static enum tg_status bpe_piece(const struct tg_vocab * v, const unsigned char * s, size_t n,
                                struct bpe_scratch * sc, struct tg_tok_out * out) {
    const struct tg_vocab_bpe * b = v->model_data;
    if (n == 0) return TG_OK;
    if (n > sc->cap) {   // sym and heap share the capacity
        size_t cap = n < 64 ? 64 : n;
        if (cap > SIZE_MAX / 3 || !TG_RESIZE(sc->sym, cap) || !TG_RESIZE(sc->heap.a, 3 * cap))
            return tg_error(TG_ERR_NOMEM, "tokenize: out of memory for a piece of %zu bytes", n);
        sc->cap = cap;
        sc->heap.cap = 3 * cap;   // n-1 initial pairs, at most 2 more per merge
    }
    struct bpe_sym * sym = sc->sym;
    struct bpe_heap * h = &sc->heap;
    h->n = 0;
    for (size_t i = 0; i < n; i++) {
        sym[i] = (struct bpe_sym) {.prev = (int32_t) i - 1, .next = i + 1 < n ? (int32_t) i + 1 : -1,
                                   .id = b->byte_tok[s[i]]};
    }
    for (size_t i = 1; i < n; i++) try_pair(b, h, sym, (int32_t) i - 1, (int32_t) i);
    while (h->n > 0) {
        struct bpe_pair p = bpe_heap_pop(h->a, &h->n);
        struct bpe_sym * l = &sym[p.left];
        struct bpe_sym * r = &sym[p.right];
        if (l->next != p.right || l->id != p.lid || r->id != p.rid) continue;   // stale
        l->id = p.result;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = p.left;
        r->id = -1;
        r->prev = r->next = -2;   // unlinked
        try_pair(b, h, sym, l->prev, p.left);
        try_pair(b, h, sym, p.left, l->next);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        int32_t id = sym[i].id;
        if (id < 0) id = v->unk;
        if (id < 0) {
            return tg_error(TG_ERR_UNSUPPORTED, "tokenize: byte 0x%02X has no token and the vocab has no unknown token",
                            s[i]);
        }
        tg_tok_out_push(out, id);
    }
    return TG_OK;
}

// A piece whose stand-in text is a token as a whole (ignore-merges pre-tokenizers).
static int32_t bpe_whole(const struct tg_vocab * v, const unsigned char * s, size_t n) {
    char small[512];
    if (n == 0 || 2 * n > sizeof(small)) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += utf8_put(bpe_byte_cp(s[i]), small + k);
    return tg_vocab_find(v, small, k);
}

static enum tg_status bpe_emit_piece(const struct tg_vocab * v, const unsigned char * s, size_t n,
                                     struct bpe_scratch * sc, struct tg_tok_out * out) {
    const struct tg_vocab_bpe * b = v->model_data;
    if (b->pre->ignore_merges) {
        int32_t id = bpe_whole(v, s, n);
        if (id >= 0) {
            tg_tok_out_push(out, id);
            return TG_OK;
        }
    }
    return bpe_piece(v, s, n, sc, out);
}

static enum tg_status bpe_tokenize(const struct tg_vocab * v, const char * text, size_t len,
                                   bool prefix_space, struct tg_tok_out * out) {
    (void) prefix_space;   // byte-level BPE adds no space
    const struct tg_vocab_bpe * b = v->model_data;
    if (len == 0) return TG_OK;
    if (len > INT32_MAX / 4) return tg_error(TG_ERR_UNSUPPORTED, "tokenize: text fragment of %zu bytes is too long", len);
    pcre2_match_data * md = pcre2_match_data_create_from_pattern(b->re, NULL);
    if (!md) return tg_error(TG_ERR_NOMEM, "tokenize: out of memory");
    const unsigned char * s = (const unsigned char *) text;
    struct bpe_scratch sc = {0};
    enum tg_status st = TG_OK;
    size_t pos = 0;
    while (pos < len && st == TG_OK) {
        int rc = pcre2_match(b->re, s, len, pos, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) {   // the rest matches nothing: bytes of invalid UTF-8
            st = bpe_emit_piece(v, s + pos, len - pos, &sc, out);
            break;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof(msg));
            st = tg_error(TG_ERR_INTERNAL, "tokenize: pre-tokenizer '%s' failed at byte %zu: %s", b->pre->name, pos,
                          (const char *) msg);
            break;
        }
        const PCRE2_SIZE * ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (end <= start) end = start + 1;   // an empty match (none of the patterns has one): one byte on
        if (start > pos) st = bpe_emit_piece(v, s + pos, start - pos, &sc, out);
        if (st == TG_OK) st = bpe_emit_piece(v, s + start, end - start, &sc, out);
        pos = end;
    }
    free(sc.sym);
    free(sc.heap.a);
    pcre2_match_data_free(md);
    return st;
}

// ---------------------------------------------------------------------------
// pieces

// Normal token text with every stand-in character turned back into its byte
// (characters that are no stand-in are copied as they are).
static int32_t bpe_unmap_piece(const struct tg_vocab_bpe * b, const char * t, size_t n, char * buf, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char) t[i];
        int byte = -1;
        size_t l = 1;
        if (c < 0x80) byte = b->cp_byte[c];
        else if ((c & 0xE0) == 0xC0 && i + 1 < n && ((unsigned char) t[i + 1] & 0xC0) == 0x80) {
            uint32_t cp = ((uint32_t) (c & 0x1F) << 6) | ((unsigned char) t[i + 1] & 0x3F);
            l = 2;
            if (cp < 512) byte = b->cp_byte[cp];
        }
        if (byte >= 0) {
            if (k < cap) buf[k] = (char) byte;
            k++;
        } else {
            for (size_t j = 0; j < l; j++, k++) if (k < cap) buf[k] = t[i + j];
        }
        i += l;
    }
    return k > cap ? -(int32_t) k : (int32_t) k;
}

static int32_t bpe_token_to_piece(const struct tg_vocab * v, int32_t id, char * buf, size_t cap, bool special) {
    const char * t = tg_vocab_text_(v, id);
    size_t n = v->len[id];
    switch ((enum tg_token_type) v->types[id]) {
        case TG_TOKEN_NORMAL:
        case TG_TOKEN_UNDEFINED:
        case TG_TOKEN_BYTE: {
            int32_t need = bpe_unmap_piece(v->model_data, t, n, NULL, 0);
            if ((size_t) -need > cap) return need;
            return bpe_unmap_piece(v->model_data, t, n, buf, cap);
        }
        default:
            return tg_vocab_other_piece_((enum tg_token_type) v->types[id], t, n, buf, cap, special);
    }
}

const char * tg_vocab_bpe_pre_(const struct tg_vocab * v) {
    const struct tg_vocab_bpe * b = v->model_data;
    return b ? b->pre->name : NULL;
}

const struct tg_vocab_ops tg_vocab_bpe_ops = {
    .name = "gpt2",
    .model = TG_VOCAB_BPE,
    .init = bpe_init,
    .fini = bpe_fini,
    .tokenize = bpe_tokenize,
    .token_to_piece = bpe_token_to_piece,
};
