// tg/vocab.h - a model's vocabulary and its tokenizer.
//
// A struct tg_vocab holds the token texts, scores and types of a GGUF file's
// tokenizer.ggml.* keys, the special token ids and flags, and the tokenizer
// chosen by tokenizer.ggml.model:
//   "llama"  SentencePiece-style BPE over scores (SPM), llama.cpp-compatible
//   "gpt2"   byte-level BPE over merge ranks (GPT-2, Llama 3, Qwen), with the
//            pre-tokenizer named by tokenizer.ggml.pre (see vocab-bpe.c)
// Token ids are int32_t; -1 means "no such token" (e.g. no padding token).
//
// Tokenizing (SPM) follows what llama.cpp does:
//   1. special-token partition: texts of user-defined tokens (always) and of
//      control/unknown tokens (only with parse_special) found in the input are
//      emitted as their ids, longest texts first; the text between them is a
//      separate fragment;
//   2. each text fragment gets a ' ' prepended when add_space_prefix and it is
//      the first fragment or follows a special token (as llama.cpp does: so
//      "Hello<s>world" -> "▁Hello" <s> "▁world"), then every ' ' becomes "▁";
//   3. the fragment is split into UTF-8 characters (a byte that does not start
//      a well-formed character is a symbol of its own) and adjacent symbols are
//      merged repeatedly, always the pair whose concatenation is the token with
//      the highest score (ties: leftmost);
//   4. each final symbol is its token, or else one byte token "<0xXX>" per
//      byte (the unknown token when the vocabulary has no such byte token).
// add_special adds BOS first when add_bos (and EOS last when add_eos).
#ifndef TG_VOCAB_H
#define TG_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tg/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tg_gguf;
struct tg_vocab;  // opaque

// Token types, the values of tokenizer.ggml.token_type (append-only).
enum tg_token_type {
    TG_TOKEN_UNDEFINED    = 0,
    TG_TOKEN_NORMAL       = 1,
    TG_TOKEN_UNKNOWN      = 2,
    TG_TOKEN_CONTROL      = 3,
    TG_TOKEN_USER_DEFINED = 4,
    TG_TOKEN_UNUSED       = 5,
    TG_TOKEN_BYTE         = 6,
    TG_TOKEN_TYPE_COUNT
};

// Tokenizer models (tokenizer.ggml.model).
enum tg_vocab_model {
    TG_VOCAB_SPM,   // "llama"
    TG_VOCAB_BPE,   // "gpt2" (byte-level BPE)
    TG_VOCAB_MODEL_COUNT
};

// Loads the vocabulary of an open GGUF file: tokenizer.ggml.model and
// tokenizer.ggml.tokens are required; scores (float32), token_type (int32),
// bos/eos/unknown/padding_token_id, add_bos_token, add_eos_token and
// add_space_prefix are optional (llama defaults: bos 1, eos 2, unk 0, pad -1,
// add_bos true, add_eos false, add_space_prefix true; for "gpt2" no default
// special ids, add_bos false, add_space_prefix false, and also
// tokenizer.ggml.merges and tokenizer.ggml.pre). Everything is copied: the
// vocab does not reference the gguf after this returns.
// Returns a vocab the caller frees with tg_vocab_free, or NULL + last error
// (TG_ERR_FORMAT naming the key for missing/malformed keys and out-of-range
// ids, TG_ERR_UNSUPPORTED naming an unknown tokenizer model or pre-tokenizer,
// TG_ERR_NOMEM).
struct tg_vocab * tg_vocab_load(const struct tg_gguf * g);

// In-memory construction (tests, tools, fuzzing). texts[i] is token i's text
// (texts_len[i] bytes, or strlen when texts_len is NULL); scores and types
// may be NULL (0.0f and TG_TOKEN_NORMAL). Special ids < 0 mean none.
struct tg_vocab_params {
    const char *          model;        // "llama"
    int32_t               n_tokens;
    const char * const *  texts;
    const size_t *        texts_len;    // may be NULL
    const float *         scores;       // may be NULL
    const int32_t *       types;        // enum tg_token_type values, may be NULL
    int32_t bos, eos, unk, pad;
    bool    add_bos, add_eos, add_space_prefix;
    // "gpt2" only: the pre-tokenizer (NULL: "default", the GPT-2 split) and
    // the merges "LEFT RIGHT" in rank order (merges_len may be NULL).
    const char *          pre;
    int32_t               n_merges;
    const char * const *  merges;
    const size_t *        merges_len;
};
// Fills p with the llama defaults (model "llama", bos 1, eos 2, unk 0, pad -1,
// add_bos true, add_eos false, add_space_prefix true) and no tokens.
void tg_vocab_params_default(struct tg_vocab_params * p);
// Builds a vocab from p (everything copied). NULL + last error on bad params.
struct tg_vocab * tg_vocab_create(const struct tg_vocab_params * p);

// Frees a vocab (NULL is fine).
void tg_vocab_free(struct tg_vocab * v);

// Accessors. Out-of-range ids give NULL / 0.0f / TG_TOKEN_UNDEFINED.
enum tg_vocab_model tg_vocab_model(const struct tg_vocab * v);
// Pre-tokenizer of a BPE vocab ("qwen2", "llama-bpe", "gpt-2", "default"...);
// NULL for other models.
const char * tg_vocab_pre(const struct tg_vocab * v);
const char * tg_vocab_model_name(const struct tg_vocab * v);   // "llama"
int32_t      tg_vocab_n_tokens(const struct tg_vocab * v);
// Token text as stored (with "▁", "<0x0A>"...), NUL-terminated, owned by v;
// *len (if non-NULL) receives its length in bytes.
const char * tg_vocab_token_text(const struct tg_vocab * v, int32_t id, size_t * len);
float        tg_vocab_score(const struct tg_vocab * v, int32_t id);
enum tg_token_type tg_vocab_type(const struct tg_vocab * v, int32_t id);
// Static name of a token type ("normal", "byte"...).
const char * tg_token_type_name(enum tg_token_type t);
// Id of the token whose text is exactly text[0..len), or -1.
int32_t tg_vocab_find(const struct tg_vocab * v, const char * text, size_t len);
int32_t tg_vocab_bos(const struct tg_vocab * v);   // -1 if none
int32_t tg_vocab_eos(const struct tg_vocab * v);
int32_t tg_vocab_unk(const struct tg_vocab * v);
int32_t tg_vocab_pad(const struct tg_vocab * v);
bool    tg_vocab_add_bos(const struct tg_vocab * v);
bool    tg_vocab_add_eos(const struct tg_vocab * v);
bool    tg_vocab_add_space_prefix(const struct tg_vocab * v);

// Value returned by tg_vocab_tokenize on an error (never a valid -(needed)).
#define TG_VOCAB_ERROR INT32_MIN

// Tokenizes text[0..len) (UTF-8; any bytes accepted) into out[0..n_max).
// add_special: BOS first when add_bos, EOS last when add_eos.
// parse_special: texts of control/unknown tokens ("<s>", "</s>", "<unk>") in
// the input become their ids (user-defined tokens always do).
// Returns the number of ids written (>= 0); when n_max is too small, returns
// -(number of ids needed) and out holds the first n_max ids: call again with
// a buffer of that size. On error (NULL vocab, negative n_max, out of memory,
// a byte with no token and no unknown token) returns TG_VOCAB_ERROR and sets
// the last error. out may be NULL when n_max is 0 (to ask for the count).
int32_t tg_vocab_tokenize(const struct tg_vocab * v, const char * text, size_t len,
                          int32_t * out, int32_t n_max, bool add_special, bool parse_special);

// Writes the bytes token id stands for into buf[0..cap) (no NUL terminator):
// normal tokens with "▁" turned into ' ', byte tokens "<0xAB>" as that byte,
// user-defined tokens as their text, control and unknown tokens as "" unless
// special (then their text, e.g. "<s>"), unused tokens as "".
// Returns the number of bytes, -(bytes needed) when cap is too small (buf
// untouched), or TG_VOCAB_ERROR (+ last error) for an out-of-range id.
int32_t tg_vocab_token_to_piece(const struct tg_vocab * v, int32_t id, char * buf, size_t cap,
                                bool special);

// Writes the text of a whole sequence into buf[0..cap) (no NUL terminator):
// the pieces of tg_vocab_token_to_piece concatenated, except that when
// add_space_prefix one leading ' ' is removed from the first normal/byte
// piece of the sequence and from the first one after each control, unknown
// or user-defined token: the spaces the tokenizer adds there. So
// detokenize(tokenize(text)) == text, with or without BOS, and with special
// and parse_special also for texts holding "<s>"... llama.cpp removes the
// space from the first token only, so there [BOS, "▁Hello"] gives "<s> Hello"
// with special (here "<s>Hello"); without special both give "Hello".
// Returns the number of bytes, -(bytes needed) when cap is too small, or
// TG_VOCAB_ERROR (+ last error) for an out-of-range id.
int32_t tg_vocab_detokenize(const struct tg_vocab * v, const int32_t * ids, int32_t n,
                            char * buf, size_t cap, bool special);

#ifdef __cplusplus
}
#endif
#endif // TG_VOCAB_H
