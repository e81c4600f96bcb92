// vocab-spm.c - the SentencePiece-style tokenizer of "llama" vocabularies:
// BPE driven by token scores, with byte fallback (see tg/vocab.h for the
// steps). Merges come from a binary max-heap of candidate pairs, so a text of
// n characters costs O(n log n) hash lookups and heap operations.
#include "llama/vocab-impl.h"

#include <stdlib.h>
#include <string.h>

#define SPM_SPACE "\xE2\x96\x81"   // U+2581 LOWER ONE EIGHTH BLOCK, "▁"

// A symbol: a run of the escaped text, linked to its live neighbours.
struct spm_sym {
    int32_t  prev, next;   // -1 at the ends
    uint32_t off, n;       // bytes [off, off+n) of the escaped text; n = 0 once merged away
};

// A candidate merge of two adjacent symbols whose concatenation is a token.
struct spm_pair {
    int32_t  left, right;
    float    score;
    uint32_t size;         // left.n + right.n when the pair was made
};

struct spm_session {
    const struct tg_vocab * v;
    const char *      text;    // escaped text
    struct spm_sym *  sym;
    struct spm_pair * heap;
    size_t            n_heap, cap_heap;
};

// Length of the well-formed UTF-8 character at s[0..n), or 1 for a byte
// that does not start one (it becomes a symbol of its own).
static uint32_t spm_char_len(const unsigned char * s, size_t n) {
    unsigned char c = s[0];
    uint32_t l;
    if (c < 0x80) return 1;
    else if (c >= 0xC2 && c <= 0xDF) l = 2;
    else if (c >= 0xE0 && c <= 0xEF) l = 3;
    else if (c >= 0xF0 && c <= 0xF4) l = 4;
    else return 1;
    if (l > n) return 1;
    for (uint32_t i = 1; i < l; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
    }
    return l;
}

// a goes before b in the heap: higher score, then leftmost.
static bool spm_pair_before(const struct spm_pair * a, const struct spm_pair * b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

TG_VOCAB_HEAP(spm_heap, struct spm_pair, spm_pair_before)

// Queues the pair (left, right) if their concatenation is a token.
static void spm_try_pair(struct spm_session * s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const struct spm_sym * l = &s->sym[left];
    uint32_t size = l->n + s->sym[right].n;
    int32_t id = tg_vocab_find(s->v, s->text + l->off, size);
    if (id < 0) return;
    spm_heap_push(s->heap, &s->n_heap, s->cap_heap,
                  (struct spm_pair) {.left = left, .right = right, .score = s->v->scores[id], .size = size});
}

// Emits the ids of one final symbol: its token, or one byte token per byte.
static enum tg_status spm_emit(const struct tg_vocab * v, const char * s, uint32_t n, struct tg_tok_out * out) {
    int32_t id = tg_vocab_find(v, s, n);
    if (id >= 0) {
        tg_tok_out_push(out, id);
        return TG_OK;
    }
    for (uint32_t i = 0; i < n; i++) {
        id = v->byte_token[(unsigned char) s[i]];
        if (id < 0) id = v->unk;
        if (id < 0) {
            return tg_error(TG_ERR_UNSUPPORTED, "tokenize: byte 0x%02X has no token and the vocab has no unknown token",
                            (unsigned char) s[i]);
        }
        tg_tok_out_push(out, id);
    }
    return TG_OK;
}

// Escapes text: optional leading "▁", every ' ' -> "▁". Returns a malloc'd
// buffer (caller frees) and its length in *n, or NULL when out of memory.
static char * spm_escape(const char * text, size_t len, bool prefix, size_t * n) {
    char * e = malloc(3 * len + 3 + 1);
    if (!e) return NULL;
    size_t k = 0;
    if (prefix) { memcpy(e, SPM_SPACE, 3); k = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(e + k, SPM_SPACE, 3); k += 3; }
        else e[k++] = text[i];
    }
    *n = k;
    return e;
}

// Merges the highest-scoring pairs until none is left.
static void spm_merge(struct spm_session * s) {
    while (s->n_heap > 0) {
        struct spm_pair p = spm_heap_pop(s->heap, &s->n_heap);
        struct spm_sym * l = &s->sym[p.left];
        struct spm_sym * r = &s->sym[p.right];
        // stale: one side was merged into something else since
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s->sym[r->next].prev = p.left;
        spm_try_pair(s, l->prev, p.left);
        spm_try_pair(s, p.left, l->next);
    }
}

static enum tg_status spm_tokenize(const struct tg_vocab * v, const char * text, size_t len,
                                   bool prefix_space, struct tg_tok_out * out) {
    if (len > (UINT32_MAX - 3) / 3 || len > INT32_MAX / 3) {
        return tg_error(TG_ERR_UNSUPPORTED, "tokenize: text fragment of %zu bytes is too long", len);
    }
    size_t n_esc = 0;
    char * esc = spm_escape(text, len, prefix_space && v->add_space_prefix, &n_esc);
    if (!esc) return tg_error(TG_ERR_NOMEM, "tokenize: out of memory for %zu bytes", len);
    if (n_esc == 0) { free(esc); return TG_OK; }
    struct spm_session s = {.v = v, .text = esc};
    s.sym = malloc(n_esc * sizeof(*s.sym));
    s.cap_heap = 3 * n_esc;   // n-1 initial pairs, at most 2 more per merge
    s.heap = malloc(s.cap_heap * sizeof(*s.heap));
    enum tg_status st = TG_OK;
    if (!s.sym || !s.heap) {
        st = tg_error(TG_ERR_NOMEM, "tokenize: out of memory for %zu bytes", n_esc);
        goto done;
    }
    int32_t n_sym = 0;
    for (size_t off = 0; off < n_esc;) {
        uint32_t l = spm_char_len((const unsigned char *) esc + off, n_esc - off);
        s.sym[n_sym] = (struct spm_sym) {n_sym - 1, -1, (uint32_t) off, l};
        if (n_sym > 0) s.sym[n_sym - 1].next = n_sym;
        n_sym++;
        off += l;
    }
    for (int32_t i = 1; i < n_sym; i++) spm_try_pair(&s, i - 1, i);
    spm_merge(&s);
    for (int32_t i = 0; i >= 0 && st == TG_OK; i = s.sym[i].next) {
        st = spm_emit(v, esc + s.sym[i].off, s.sym[i].n, out);
    }
done:
    free(s.heap);
    free(s.sym);
    free(esc);
    return st;
}

// Parses "<0xAB>" into 0xAB; -1 if text is not of that form.
static int spm_byte_value(const char * t, size_t n) {
    if (n != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = t[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

// Normal token text with every "▁" turned into ' '.
static int32_t spm_unescape_piece(const char * t, size_t n, char * buf, size_t cap) {
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && memcmp(t + i, SPM_SPACE, 3) == 0) i += 2;
        need++;
    }
    if (need > cap) return -(int32_t) need;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && memcmp(t + i, SPM_SPACE, 3) == 0) { buf[k++] = ' '; i += 2; }
        else buf[k++] = t[i];
    }
    return (int32_t) k;
}

static int32_t spm_token_to_piece(const struct tg_vocab * v, int32_t id, char * buf, size_t cap, bool special) {
    const char * t = tg_vocab_text_(v, id);
    size_t n = v->len[id];
    switch ((enum tg_token_type) v->types[id]) {
        case TG_TOKEN_NORMAL:
        case TG_TOKEN_UNDEFINED:
            return spm_unescape_piece(t, n, buf, cap);
        case TG_TOKEN_BYTE: {
            int b = spm_byte_value(t, n);
            if (b < 0) return tg_vocab_copy_piece_(buf, cap, t, n);
            char c = (char) b;
            return tg_vocab_copy_piece_(buf, cap, &c, 1);
        }
        default:
            return tg_vocab_other_piece_((enum tg_token_type) v->types[id], t, n, buf, cap, special);
    }
}

const struct tg_vocab_ops tg_vocab_spm_ops = {
    .name = "llama",
    .model = TG_VOCAB_SPM,
    .tokenize = spm_tokenize,
    .token_to_piece = spm_token_to_piece,
};
