// test_tokenizer_bpe.c - byte-level BPE ("gpt2") vocabularies against the
// round-2 reference tokenizations (tests/data/r2/tokenizer-*.jsonl): the Qwen
// vocabulary with pre-tokenizer "qwen2" and the same tokens with "gpt-2",
// special tokens parsed and not; round trips; invalid UTF-8; long runs;
// unknown pre-tokenizers; load time.
#include "check.h"
#include "tg/gguf.h"
#include "tg/vocab.h"

#include "inspect/json.h"   // the JSON Lines reader of `tgdb tokenize`

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IDS 8192

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct tg_vocab * load_vocab(const char * rel) {
    char * path = tg_test_ref(rel);
    if (!path) return NULL;
    double t0 = now_ms();
    struct tg_gguf * g = tg_gguf_open(path);
    struct tg_vocab * v = g ? tg_vocab_load(g) : NULL;
    double t1 = now_ms();
    CHECK(v != NULL, "load the vocabulary of %s (%s)", path, v ? "ok" : tg_last_error());
    if (v) printf("     %s: %d tokens, model %s, pre %s, loaded in %.1f ms\n", rel, tg_vocab_n_tokens(v),
                  tg_vocab_model_name(v), tg_vocab_pre(v), t1 - t0);
    tg_gguf_close(g);
    free(path);
    return v;
}

static void print_ids(const char * label, const int32_t * ids, int32_t n) {
    printf("       %s [", label);
    for (int32_t i = 0; i < n && i < 40; i++) printf(i ? ", %d" : "%d", (int) ids[i]);
    printf(n > 40 ? ", ...]\n" : "]\n");
}

static bool roundtrip(const struct tg_vocab * v, const int32_t * ids, int32_t n, const char * s, size_t len,
                      bool special) {
    char * buf = malloc(len + 64);
    int32_t k = tg_vocab_detokenize(v, ids, n, buf, len + 64, special);
    bool ok = k >= 0 && (size_t) k == len && memcmp(buf, s, len) == 0;
    free(buf);
    return ok;
}

// Every case of one reference file: ids exactly, and the round trip.
static void test_jsonl(const struct tg_vocab * v, const char * file, bool special, int expect_cases) {
    FILE * f = tg_test_open_data(file);
    if (!f) return;
    char * line = NULL;
    size_t cap = 0;
    ssize_t n;
    int cases = 0, ok_ids = 0, ok_rt = 0;
    static int32_t ids[MAX_IDS], want[MAX_IDS];
    while ((n = getline(&line, &cap, f)) > 0) {
        struct tg_json_object obj;
        char err[128];
        if (!CHECK(tg_json_parse_object(line, (size_t) n, &obj, err, sizeof(err)), "%s: parse line %d %s", file,
                   cases + 1, err)) {
            continue;
        }
        const struct tg_json_field * t = tg_json_get(&obj, "text");
        const struct tg_json_field * e = tg_json_get(&obj, "ids");
        if (CHECK(t && t->kind == TG_JSON_STRING && e && e->kind == TG_JSON_INT_ARRAY && e->n_ints < MAX_IDS,
                  "%s: line %d has text and ids", file, cases + 1)) {
            cases++;
            for (size_t i = 0; i < e->n_ints; i++) want[i] = (int32_t) e->ints[i];
            int32_t k = tg_vocab_tokenize(v, t->str, t->str_len, ids, MAX_IDS, false, special);
            bool same = k == (int32_t) e->n_ints && (k == 0 || memcmp(ids, want, (size_t) k * sizeof(int32_t)) == 0);
            if (!same) {
                printf("FAIL case %d of %s: ", cases, file);
                for (size_t i = 0; i < t->str_len && i < 80; i++) {
                    unsigned char c = (unsigned char) t->str[i];
                    if (c < 0x20 || c == 0x7f) printf("\\x%02x", c); else putchar(c);
                }
                putchar('\n');
                print_ids("want", want, (int32_t) e->n_ints);
                print_ids("got ", ids, k);
            }
            ok_ids += CHECKQ(same, "%s: ids of case %d", file, cases);
            ok_rt += CHECKQ(k >= 0 && roundtrip(v, ids, k, t->str, t->str_len, special),
                            "%s: detokenize(tokenize(case %d)) == text", file, cases);
        }
        tg_json_object_free(&obj);
    }
    free(line);
    fclose(f);
    CHECK(cases == expect_cases && ok_ids == cases, "%s: %d/%d cases tokenized exactly (special %s)", file, ok_ids,
          cases, special ? "parsed" : "not parsed");
    CHECK(ok_rt == cases, "%s: %d/%d cases round-trip", file, ok_rt, cases);
}

// Bytes that are not UTF-8, a NUL and a very long run of spaces: every byte
// is covered by some token and the text comes back.
static void test_hostile(const struct tg_vocab * v) {
    static int32_t ids[MAX_IDS];
    const char bad[] = "ok \xff\xfe caf\xc3 \xe2\x82 x\x00y \xf0\x9f\x98\x80!";
    size_t len = sizeof(bad) - 1;
    int32_t k = tg_vocab_tokenize(v, bad, len, ids, MAX_IDS, false, false);
    CHECK(k > 0 && roundtrip(v, ids, k, bad, len, false), "invalid UTF-8, NUL and an emoji round-trip (%d ids)", k);

    size_t big = 1 << 20;
    char * spaces = malloc(big);
    memset(spaces, ' ', big);
    spaces[big - 1] = 'a';
    int32_t * many = malloc(big * sizeof(int32_t));
    double t0 = now_ms();
    k = tg_vocab_tokenize(v, spaces, big, many, (int32_t) big, false, false);
    double t1 = now_ms();
    CHECK(k > 0 && roundtrip(v, many, k, spaces, big, false), "1 MiB of spaces: %d ids in %.0f ms, round-trips", k,
          t1 - t0);
    free(many);
    free(spaces);
}

static void test_params(void) {
    const char * texts[] = {"a", "b", "ab", "c", "abc"};
    const char * merges[] = {"a b", "ab c", "x y", "nospace"};
    struct tg_vocab_params p;
    tg_vocab_params_default(&p);
    p.model = "gpt2";
    p.n_tokens = 5;
    p.texts = texts;
    p.bos = p.eos = p.unk = p.pad = -1;
    p.add_bos = false;
    p.add_space_prefix = false;
    p.pre = "no-such-pre";
    p.n_merges = 3;
    p.merges = merges;
    struct tg_vocab * v = tg_vocab_create(&p);
    CHECK(v == NULL && strstr(tg_last_error(), "'no-such-pre'"), "an unknown pre-tokenizer is an error naming it: %s",
          tg_last_error());
    tg_vocab_free(v);
    p.pre = NULL;
    p.n_merges = 4;
    v = tg_vocab_create(&p);
    CHECK(v == NULL && strstr(tg_last_error(), "merge 3"), "a malformed merge is an error naming it: %s",
          tg_last_error());
    tg_vocab_free(v);
    p.n_merges = 3;   // "x y" names no tokens: ignored
    v = tg_vocab_create(&p);
    int32_t ids[8];
    int32_t k = v ? tg_vocab_tokenize(v, "abcab", 5, ids, 8, false, false) : -1;
    CHECK(v && strcmp(tg_vocab_pre(v), "default") == 0 && k == 2 && ids[0] == 4 && ids[1] == 2,
          "in-memory vocab: \"abcab\" -> [abc, ab] by merge rank (got %d ids)", k);
    tg_vocab_free(v);
}

int main(void) {
    test_params();
    struct tg_vocab * qwen = load_vocab("r2/qwen3-tiny.gguf");
    if (qwen) {
        CHECK(tg_vocab_model(qwen) == TG_VOCAB_BPE && strcmp(tg_vocab_pre(qwen), "qwen2") == 0 &&
              tg_vocab_n_tokens(qwen) == 151936 && !tg_vocab_add_bos(qwen) && !tg_vocab_add_space_prefix(qwen),
              "qwen vocab: BPE, pre qwen2, 151936 tokens, no BOS added, no space prefix");
        test_jsonl(qwen, "r2/tokenizer-qwen2-bpe.jsonl", false, 89);
        test_jsonl(qwen, "r2/tokenizer-qwen2-bpe-special.jsonl", true, 6);
        test_hostile(qwen);
        tg_vocab_free(qwen);
    }
    struct tg_vocab * gpt2 = load_vocab("r2/vocab-gpt2-bpe.gguf");
    if (gpt2) {
        CHECK(strcmp(tg_vocab_pre(gpt2), "gpt-2") == 0, "gpt2 vocab: pre gpt-2");
        test_jsonl(gpt2, "r2/tokenizer-gpt2-bpe.jsonl", false, 89);
        test_jsonl(gpt2, "r2/tokenizer-gpt2-bpe-special.jsonl", true, 6);
        tg_vocab_free(gpt2);
    }
    struct tg_vocab * l3 = load_vocab("r2/llama3-tiny.gguf");
    if (l3) {
        static int32_t ids[64];
        int32_t k = tg_vocab_tokenize(l3, "Hello world 12345", 17, ids, 64, false, false);
        CHECK(strcmp(tg_vocab_pre(l3), "llama-bpe") == 0 && k > 0 && roundtrip(l3, ids, k, "Hello world 12345", 17, false),
              "llama-bpe pre-tokenizer loads and round-trips (%d ids)", k);
        tg_vocab_free(l3);
    }
    return tg_check_finish("test_tokenizer_bpe");
}
