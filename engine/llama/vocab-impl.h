// vocab-impl.h - private contract between vocab.c and the tokenizer models
// (vocab-spm.c, later vocab-bpe.c).
#ifndef TG_VOCAB_IMPL_H
#define TG_VOCAB_IMPL_H

#include "tg/vocab.h"

// Output sink of a tokenizer: stores ids while there is room, counts all.
struct tg_tok_out {
    int32_t * ids;
    int32_t   n_max;
    int64_t   n;      // ids produced so far (may exceed n_max)
};

static inline void tg_tok_out_push(struct tg_tok_out * o, int32_t id) {
    if (o->n < o->n_max) o->ids[o->n] = id;
    o->n++;
}

// A tokenizer model: one per tokenizer.ggml.model value.
struct tg_vocab_ops {
    const char *        name;    // "llama"
    enum tg_vocab_model model;
    // Builds the model's own data (v->model_data) once the tokens, table and
    // specials exist; `bad` is the status for bad content. NULL: nothing to
    // build. On failure returns the status (+ last error); fini is still called.
    enum tg_status (*init)(struct tg_vocab * v, const struct tg_vocab_params * p, enum tg_status bad);
    // Frees v->model_data (NULL: nothing to free).
    void (*fini)(struct tg_vocab * v);
    // Tokenizes one fragment of raw text (no special tokens in it) and
    // appends the ids to out. prefix_space: the fragment is the first one or
    // follows a special token (SPM then prepends a space when
    // add_space_prefix). Returns TG_OK or an error status (+ last error).
    enum tg_status (*tokenize)(const struct tg_vocab * v, const char * text, size_t len,
                               bool prefix_space, struct tg_tok_out * out);
    // Bytes of one token (see tg_vocab_token_to_piece); id is in range.
    int32_t (*token_to_piece)(const struct tg_vocab * v, int32_t id, char * buf, size_t cap,
                              bool special);
};

extern const struct tg_vocab_ops tg_vocab_spm_ops;
extern const struct tg_vocab_ops tg_vocab_bpe_ops;

// Name of a BPE vocab's pre-tokenizer (vocab-bpe.c); NULL for other models.
const char * tg_vocab_bpe_pre_(const struct tg_vocab * v);

struct tg_vocab {
    const struct tg_vocab_ops * ops;
    int32_t    n_tokens;
    char *     blob;       // all token texts, each NUL-terminated
    size_t *   off;        // [n_tokens] offset of token i's text in blob
    uint32_t * len;        // [n_tokens] length of token i's text
    float *    scores;     // [n_tokens]
    uint8_t *  types;      // [n_tokens] enum tg_token_type
    // text -> id hash table (open addressing, linear probing); -1 = empty
    int32_t *  table;
    size_t     table_mask;
    int32_t    byte_token[256];  // id of "<0xXX>" (or of the 1-byte text), -1 if none
    int32_t *  specials;   // ids matched by the special-token partition, longest text first
    int32_t    n_specials;
    int32_t    bos, eos, unk, pad;
    bool       add_bos, add_eos, add_space_prefix;
    void *     model_data;   // the tokenizer model's own data (BPE: merges, split pattern)
};

// Returns the text of token id (NUL-terminated); id must be in range.
static inline const char * tg_vocab_text_(const struct tg_vocab * v, int32_t id) {
    return v->blob + v->off[id];
}

// Copies n bytes to buf if they fit in cap: returns n, or -n if not.
static inline int32_t tg_vocab_copy_piece_(char * buf, size_t cap, const char * s, size_t n) {
    if (n > cap) return -(int32_t) n;
    for (size_t i = 0; i < n; i++) buf[i] = s[i];
    return (int32_t) n;
}

// The piece of a token that is neither text nor a byte, the same for every
// tokenizer: user-defined tokens as they are, control and unknown tokens only
// when special pieces are asked for, unused ones never. As copy_piece_.
static inline int32_t tg_vocab_other_piece_(enum tg_token_type type, const char * t, size_t n, char * buf, size_t cap,
                                            bool special) {
    switch (type) {
        case TG_TOKEN_USER_DEFINED: return tg_vocab_copy_piece_(buf, cap, t, n);
        case TG_TOKEN_CONTROL:
        case TG_TOKEN_UNKNOWN:      return special ? tg_vocab_copy_piece_(buf, cap, t, n) : 0;
        default:                    return 0;
    }
}

// The merge queue of both tokenizers: a binary heap of T in a[0..*n) (room
// for cap) where BEFORE(&x, &y) is true when x must come out first. Defines
// NAME_push(a, n, cap, x) (asserts there is room) and NAME_pop(a, n) (the
// first element; *n > 0).
#define TG_VOCAB_HEAP(NAME, T, BEFORE)                                          \
    static void NAME##_push(T * a, size_t * n, size_t cap, T x) {              \
        TG_ASSERT(*n < cap);                                                    \
        size_t i = (*n)++;                                                      \
        while (i > 0) {                                                         \
            size_t parent = (i - 1) / 2;                                        \
            if (!BEFORE(&x, &a[parent])) break;                                 \
            a[i] = a[parent];                                                   \
            i = parent;                                                         \
        }                                                                       \
        a[i] = x;                                                               \
    }                                                                           \
    static T NAME##_pop(T * a, size_t * n) {                                    \
        T top = a[0], last = a[--(*n)];                                         \
        size_t i = 0;                                                           \
        for (;;) {                                                              \
            size_t c = 2 * i + 1;                                               \
            if (c >= *n) break;                                                 \
            if (c + 1 < *n && BEFORE(&a[c + 1], &a[c])) c++;                    \
            if (!BEFORE(&a[c], &last)) break;                                   \
            a[i] = a[c];                                                        \
            i = c;                                                              \
        }                                                                       \
        if (*n > 0) a[i] = last;                                                \
        return top;                                                             \
    }

#endif // TG_VOCAB_IMPL_H
