// fuzz_tokenize.c - the SPM tokenizer on arbitrary bytes, with a small
// in-memory vocabulary (all 256 byte tokens, a few merges, control and
// user-defined tokens). Input: one flag byte (bit 0 add_special, bit 1
// parse_special), then the text. Checks: tokenize succeeds, ids are in range,
// the count query agrees, and detokenize(special) gives the text back (unless
// the text holds "▁" itself, which detokenizes as ' ').
#include "tg/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tg_vocab * fz_vocab(void) {
    static struct tg_vocab * v;
    if (v) return v;
    static char bytes[256][7];
    const char * texts[300];
    int32_t types[300];
    float scores[300];
    int n = 0;
    const char * head[] = {"<unk>", "<s>", "</s>", "<tool>"};
    const int32_t head_t[] = {TG_TOKEN_UNKNOWN, TG_TOKEN_CONTROL, TG_TOKEN_CONTROL, TG_TOKEN_USER_DEFINED};
    for (int i = 0; i < 4; i++) { texts[n] = head[i]; types[n] = head_t[i]; scores[n++] = 0; }
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof(bytes[b]), "<0x%02X>", b);
        texts[n] = bytes[b]; types[n] = TG_TOKEN_BYTE; scores[n++] = 0;
    }
    const char * words[] = {"\xE2\x96\x81", "a", "b", "ab", "ba", "\xE2\x96\x81\x61", "\xE2\x96\x81\xE2\x96\x81",
                            "<", "s", ">", "\xC3\xA9", "aa", "aaa", "\xE2\x96\x81<"};
    for (int i = 0; i < (int) (sizeof(words) / sizeof(words[0])); i++) {
        texts[n] = words[i]; types[n] = TG_TOKEN_NORMAL; scores[n] = -(float) (i % 5); n++;
    }
    struct tg_vocab_params p;
    tg_vocab_params_default(&p);
    p.n_tokens = n; p.texts = texts; p.scores = scores; p.types = types;
    v = tg_vocab_create(&p);
    if (!v) abort();
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    struct tg_vocab * v = fz_vocab();
    bool add_special = data[0] & 1, parse_special = data[0] & 2;
    const char * text = (const char *) data + 1;
    size_t len = size - 1;
    int32_t need = tg_vocab_tokenize(v, text, len, NULL, 0, add_special, parse_special);
    int32_t cap = len + 4;
    int32_t * ids = malloc((size_t) cap * sizeof(int32_t));
    int32_t n = tg_vocab_tokenize(v, text, len, ids, cap, add_special, parse_special);
    if (n < 0 || (n > 0 ? need != -n : need != 0)) abort();
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tg_vocab_n_tokens(v)) abort();
    }
    char * buf = malloc(len + 64);
    int32_t k = tg_vocab_detokenize(v, ids, n, buf, len + 64, true);
    if (k < 0) abort();
    bool has_marker = memmem(text, len, "\xE2\x96\x81", 3) != NULL;
    // with add_special the BOS renders as "<s>" in front
    size_t skip = add_special ? 3 : 0;
    if (!has_marker && ((size_t) k != len + skip || memcmp(buf + skip, text, len) != 0)) abort();
    free(buf);
    free(ids);
    return 0;
}
