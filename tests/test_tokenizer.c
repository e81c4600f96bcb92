// test_tokenizer.c - the llama (SPM) vocabulary and tokenizer against the
// reference outputs in tests/data (tokenizer-llama-spm.jsonl, logits.tsv),
// round trips, BOS handling, special tokens, pieces, in-memory vocabularies
// and loading errors.
#include "check.h"
#include "tg/gguf.h"
#include "tg/vocab.h"

#include "inspect/json.h"   // the JSON Lines reader of `tgdb tokenize`, tested here too

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IDS 4096

// Tokenizes into a static buffer; returns the count (or the raw result on error).
static int32_t tok(const struct tg_vocab * v, const char * s, size_t n, int32_t * ids, bool add_special,
                   bool parse_special) {
    return tg_vocab_tokenize(v, s, n, ids, MAX_IDS, add_special, parse_special);
}

static bool ids_eq(const int32_t * a, int32_t na, const int32_t * b, int32_t nb) {
    return na == nb && (na <= 0 || memcmp(a, b, (size_t) na * sizeof(int32_t)) == 0);
}

static void print_ids(const char * label, const int32_t * ids, int32_t n) {
    printf("       %s [", label);
    for (int32_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", (int) ids[i]);
    printf("]\n");
}

// Prints text on one line with newlines/tabs visible.
static void print_text(const char * s, size_t n) {
    printf("case \"");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') printf("\\n");
        else if (s[i] == '\t') printf("\\t");
        else putchar(s[i]);
    }
    printf("\"\n");
}

static bool detok_eq(const struct tg_vocab * v, const int32_t * ids, int32_t n, const char * s, size_t len) {
    char * buf = malloc(len + 64);
    int32_t k = tg_vocab_detokenize(v, ids, n, buf, len + 64, false);
    bool ok = k >= 0 && (size_t) k == len && memcmp(buf, s, len) == 0;
    free(buf);
    return ok;
}

static void test_load(const struct tg_vocab * v) {
    size_t len = 0;
    CHECK(tg_vocab_n_tokens(v) == 32000, "n_tokens = %d (32000)", tg_vocab_n_tokens(v));
    CHECK(strcmp(tg_vocab_model_name(v), "llama") == 0 && tg_vocab_model(v) == TG_VOCAB_SPM, "model llama = SPM");
    CHECK(tg_vocab_bos(v) == 1 && tg_vocab_eos(v) == 2 && tg_vocab_unk(v) == 0 && tg_vocab_pad(v) == -1,
          "special ids bos 1 eos 2 unk 0 pad -1");
    CHECK(tg_vocab_add_bos(v) && !tg_vocab_add_eos(v) && tg_vocab_add_space_prefix(v),
          "add_bos, no add_eos, add_space_prefix");
    CHECK(tg_vocab_type(v, 0) == TG_TOKEN_UNKNOWN && tg_vocab_type(v, 1) == TG_TOKEN_CONTROL &&
          tg_vocab_type(v, 3) == TG_TOKEN_BYTE && tg_vocab_type(v, 15043) == TG_TOKEN_NORMAL,
          "token types: 0 unknown, 1 control, 3 byte, 15043 normal");
    const char * t = tg_vocab_token_text(v, 15043, &len);
    CHECK(t && len == 8 && memcmp(t, "\xE2\x96\x81Hello", 8) == 0, "text of 15043 is \"▁Hello\"");
    CHECK(strcmp(tg_vocab_token_text(v, 16, NULL), "<0x0D>") == 0, "text of 16 is <0x0D>");
    CHECK(tg_vocab_token_text(v, 32000, &len) == NULL && len == 0, "text of 32000 is NULL");
    CHECK(tg_vocab_score(v, 15043) < 0.0f && tg_vocab_score(v, 1) == 0.0f, "scores: 15043 negative, <s> 0");
    CHECK(tg_vocab_find(v, "\xE2\x96\x81Hello", 8) == 15043 && tg_vocab_find(v, "no-such-token!", 14) == -1,
          "find \"▁Hello\" = 15043, unknown text = -1");
}

// Every case of the reference file, ids and round trip.
static void test_reference_jsonl(const struct tg_vocab * v) {
    FILE * f = tg_test_open_data("tokenizer-llama-spm.jsonl");
    if (!f) return;
    char * line = NULL;
    size_t cap = 0;
    ssize_t n;
    int cases = 0, ok_ids = 0, ok_rt = 0;
    static int32_t ids[MAX_IDS];
    while ((n = getline(&line, &cap, f)) > 0) {
        struct tg_json_object obj;
        char err[128];
        if (!CHECK(tg_json_parse_object(line, (size_t) n, &obj, err, sizeof(err)), "parse line %d %s", cases + 1, err)) {
            continue;
        }
        const struct tg_json_field * t = tg_json_get(&obj, "text");
        const struct tg_json_field * e = tg_json_get(&obj, "ids");
        if (CHECK(t && t->kind == TG_JSON_STRING && e && e->kind == TG_JSON_INT_ARRAY, "line %d has text and ids",
                  cases + 1)) {
            cases++;
            int32_t want[MAX_IDS];
            for (size_t i = 0; i < e->n_ints && i < MAX_IDS; i++) want[i] = (int32_t) e->ints[i];
            int32_t k = tok(v, t->str, t->str_len, ids, false, false);
            print_text(t->str, t->str_len);
            bool same = ids_eq(ids, k, want, (int32_t) e->n_ints);
            if (!same) print_ids("want", want, (int32_t) e->n_ints);
            print_ids(same ? "ids " : "got ", ids, k);
            ok_ids += CHECK(same, "ids of case %d match the reference", cases);
            ok_rt += CHECK(k >= 0 && detok_eq(v, ids, k, t->str, t->str_len), "detokenize(tokenize(case %d)) == text",
                           cases);
        }
        tg_json_object_free(&obj);
    }
    free(line);
    fclose(f);
    CHECK(cases == 42 && ok_ids == cases, "all %d/%d reference cases tokenized exactly", ok_ids, cases);
    CHECK(ok_rt == cases, "all %d/%d reference cases round-trip", ok_rt, cases);
}

// Prompts of logits.tsv (column 4 = ids with BOS), add_special = true.
static void test_logits_prompts(const struct tg_vocab * v) {
    FILE * f = tg_test_open_data("logits.tsv");
    if (!f) return;
    char * line = NULL;
    size_t cap = 0;
    int rows = 0, ok = 0;
    static int32_t ids[MAX_IDS], want[MAX_IDS];
    while (getline(&line, &cap, f) > 0) {
        char * cols[5] = {0};
        char * save = NULL;
        char * p = line;
        for (int c = 0; c < 5 && (cols[c] = strtok_r(p, "\t\n", &save)); c++) p = NULL;
        if (!cols[3]) continue;
        // column 3: a literal \n stands for a newline
        char text[2048];
        size_t tl = 0;
        for (const char * s = cols[2]; *s && tl + 1 < sizeof(text); s++) {
            if (s[0] == '\\' && s[1] == 'n') { text[tl++] = '\n'; s++; }
            else text[tl++] = *s;
        }
        int32_t nw = 0;
        for (char * q = cols[3]; nw < MAX_IDS;) {
            char * end;
            long x = strtol(q, &end, 10);
            if (end == q) break;
            want[nw++] = (int32_t) x;
            q = end;
        }
        rows++;
        int32_t k = tok(v, text, tl, ids, true, false);
        ok += CHECK(ids_eq(ids, k, want, nw), "%s %s: %d ids with BOS match logits.tsv", cols[0], cols[1], nw);
    }
    free(line);
    fclose(f);
    CHECK(rows == 12 && ok == rows, "all %d/%d logits.tsv prompts match", ok, rows);
}

static void test_bos_and_sizes(const struct tg_vocab * v) {
    int32_t ids[16];
    int32_t k = tg_vocab_tokenize(v, "Hello world", 11, ids, 16, true, false);
    const int32_t hw[3] = {1, 15043, 3186};
    CHECK(ids_eq(ids, k, hw, 3), "\"Hello world\" with add_special = [1, 15043, 3186]");
    k = tg_vocab_tokenize(v, "", 0, ids, 16, true, false);
    CHECK(k == 1 && ids[0] == 1, "\"\" with add_special = [1]");
    k = tg_vocab_tokenize(v, "", 0, ids, 16, false, false);
    CHECK(k == 0, "\"\" without add_special = []");
    k = tg_vocab_tokenize(v, "Hello world", 11, NULL, 0, true, false);
    CHECK(k == -3, "n_max 0 asks for the count: %d (-3)", k);
    ids[1] = -7;
    k = tg_vocab_tokenize(v, "Hello world", 11, ids, 1, true, false);
    CHECK(k == -3 && ids[0] == 1 && ids[1] == -7, "n_max 1: returns -3, writes only ids[0]");
    k = tg_vocab_tokenize(v, "x", 1, ids, -1, false, false);
    CHECK(k == TG_VOCAB_ERROR && tg_last_status() == TG_ERR_INVALID_ARG, "negative n_max is an error");
    char buf[64];
    k = tg_vocab_detokenize(v, hw, 3, buf, sizeof(buf), false);
    CHECK(k == 11 && memcmp(buf, "Hello world", 11) == 0, "detokenize [BOS, Hello, world] = \"Hello world\"");
    k = tg_vocab_detokenize(v, hw, 3, buf, sizeof(buf), true);
    CHECK(k == 14 && memcmp(buf, "<s>Hello world", 14) == 0, "detokenize with special = \"<s>Hello world\"");
    k = tg_vocab_detokenize(v, hw, 3, buf, 5, false);
    CHECK(k == -11, "detokenize into 5 bytes asks for 11: %d", k);
}

static void test_pieces(const struct tg_vocab * v) {
    char buf[32];
    int32_t k = tg_vocab_token_to_piece(v, 15043, buf, sizeof(buf), false);
    CHECK(k == 6 && memcmp(buf, " Hello", 6) == 0, "piece of 15043 = \" Hello\"");
    k = tg_vocab_token_to_piece(v, 13, buf, sizeof(buf), false);
    CHECK(k == 1 && buf[0] == '\n', "piece of byte token <0x0A> = \"\\n\"");
    k = tg_vocab_token_to_piece(v, 246, buf, sizeof(buf), false);
    CHECK(k == 1 && (unsigned char) buf[0] == 0xF3, "piece of byte token <0xF3> = 0xF3");
    k = tg_vocab_token_to_piece(v, 1, buf, sizeof(buf), false);
    CHECK(k == 0, "piece of control <s> = \"\"");
    k = tg_vocab_token_to_piece(v, 1, buf, sizeof(buf), true);
    CHECK(k == 3 && memcmp(buf, "<s>", 3) == 0, "piece of <s> with special = \"<s>\"");
    k = tg_vocab_token_to_piece(v, 0, buf, sizeof(buf), false);
    CHECK(k == 0, "piece of unknown <unk> = \"\"");
    k = tg_vocab_token_to_piece(v, 15043, buf, 3, false);
    CHECK(k == -6, "piece into 3 bytes asks for 6: %d", k);
    k = tg_vocab_token_to_piece(v, 32000, buf, sizeof(buf), false);
    CHECK(k == TG_VOCAB_ERROR, "piece of id 32000 is an error: %s", tg_last_error());
}

// parse_special: "<s>", "</s>", "<unk>" in the text, llama.cpp's space prefix
// after a special token.
static void test_parse_special(const struct tg_vocab * v) {
    static int32_t ids[MAX_IDS], want[MAX_IDS];
    const char * s = "<s> not special </s>";
    int32_t k = tok(v, s, strlen(s), ids, false, true);
    int32_t nw = 0;
    want[nw++] = 1;
    nw += tok(v, " not special ", 13, want + nw, false, false);
    want[nw++] = 2;
    CHECK(ids_eq(ids, k, want, nw), "\"<s> not special </s>\" parse_special = [1] tok(\" not special \") [2]");
    s = "Hello<s>world</s>";
    k = tok(v, s, strlen(s), ids, false, true);
    nw = tok(v, "Hello", 5, want, false, false);
    want[nw++] = 1;
    nw += tok(v, "world", 5, want + nw, false, false);
    want[nw++] = 2;
    print_ids("Hello<s>world</s> ->", ids, k);
    CHECK(ids_eq(ids, k, want, nw), "\"Hello<s>world</s>\" = tok(Hello) 1 tok(world) 2 (space prefix after <s>)");
    CHECK(k > 3 && ids[k - 2] == 3186, "the fragment after <s> starts with \"▁world\" (3186)");
    s = "<unk><s>";
    k = tok(v, s, strlen(s), ids, true, true);
    const int32_t u[3] = {1, 0, 1};
    CHECK(ids_eq(ids, k, u, 3), "\"<unk><s>\" with BOS, parse_special = [1, 0, 1]");
    k = tok(v, s, strlen(s), ids, false, false);
    CHECK(k > 2 && ids[0] != 0, "\"<unk><s>\" without parse_special is plain text (%d ids)", k);
    char buf[64];
    s = "A<s>B";
    k = tok(v, s, strlen(s), ids, false, true);
    int32_t d = tg_vocab_detokenize(v, ids, k, buf, sizeof(buf), true);
    CHECK(d == 5 && memcmp(buf, "A<s>B", 5) == 0, "detokenize(special) of tokenize(parse_special, \"A<s>B\") round-trips");
    d = tg_vocab_detokenize(v, ids, k, buf, sizeof(buf), false);
    CHECK(d == 2 && memcmp(buf, "AB", 2) == 0, "detokenize without special drops <s>: \"AB\"");
}

// A small in-memory vocabulary: tie-breaking, byte fallback to unk, a
// user-defined token, invalid UTF-8, unsupported models.
static void test_memory_vocab(void) {
    const char * texts[] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "ba", "\xE2\x96\x81", "\xE2\x96\x81\x61",
                            "<tool>", "\xC3\xA9"};
    const float scores[] = {0, 0, 0, -1, -1, -5, -5, -2, -3, 0, -4};
    const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 4, 1};
    struct tg_vocab_params p;
    tg_vocab_params_default(&p);
    p.n_tokens = 11; p.texts = texts; p.scores = scores; p.types = types;
    struct tg_vocab * v = tg_vocab_create(&p);
    CHECK(v != NULL, "create an 11-token vocab: %s", v ? "ok" : tg_last_error());
    if (!v) return;
    int32_t ids[32];
    // "▁aba": ▁a (-3) beats ab/ba (-5): ▁a + b + a, then "ba" (-5) merges
    int32_t k = tg_vocab_tokenize(v, "aba", 3, ids, 32, false, false);
    const int32_t e1[2] = {8, 6};
    CHECK(ids_eq(ids, k, e1, 2), "\"aba\" = [▁a, ba] (highest score first)");
    // no prefix: "bab" -> ba and ab tie at -5: leftmost (b+a) wins -> ba, b
    p.add_space_prefix = false;
    struct tg_vocab * w = tg_vocab_create(&p);
    k = tg_vocab_tokenize(w, "bab", 3, ids, 32, false, false);
    const int32_t e2[2] = {6, 4};
    CHECK(ids_eq(ids, k, e2, 2), "\"bab\" without space prefix = [ba, b] (ties: leftmost)");
    // no byte tokens: unknown characters map to unk, one per byte
    k = tg_vocab_tokenize(w, "a\xC3\xA9z", 4, ids, 32, false, false);
    const int32_t e3[3] = {3, 10, 0};
    CHECK(ids_eq(ids, k, e3, 3), "\"aéz\" = [a, é, unk] (byte fallback to unk)");
    // invalid UTF-8: a lone lead byte is a symbol of its own
    k = tg_vocab_tokenize(w, "\xC3" "ab", 3, ids, 32, false, false);
    const int32_t e4[2] = {0, 5};
    CHECK(ids_eq(ids, k, e4, 2), "\"\\xC3ab\" = [unk, ab] (invalid byte alone)");
    // user-defined tokens are split out even without parse_special
    k = tg_vocab_tokenize(w, "a<tool>b", 8, ids, 32, false, false);
    const int32_t e5[3] = {3, 9, 4};
    CHECK(ids_eq(ids, k, e5, 3), "\"a<tool>b\" = [a, <tool>, b] (user-defined always)");
    char buf[16];
    k = tg_vocab_token_to_piece(w, 9, buf, sizeof(buf), false);
    CHECK(k == 6 && memcmp(buf, "<tool>", 6) == 0, "piece of user-defined <tool> = its text");
    tg_vocab_free(w);
    tg_vocab_free(v);
    p.unk = -1;
    p.add_space_prefix = true;
    v = tg_vocab_create(&p);
    k = v ? tg_vocab_tokenize(v, "z", 1, ids, 32, false, false) : 0;
    CHECK(k == TG_VOCAB_ERROR, "no byte token and no unk: error (%s)", tg_last_error());
    tg_vocab_free(v);
    p.unk = 0;
    p.model = "gpt2";
    v = tg_vocab_create(&p);
    CHECK(v && tg_vocab_model(v) == TG_VOCAB_BPE && strcmp(tg_vocab_pre(v), "default") == 0,
          "model gpt2 is byte-level BPE with the default pre-tokenizer");
    tg_vocab_free(v);
    p.model = "bert-ish";
    CHECK(tg_vocab_create(&p) == NULL && tg_last_status() == TG_ERR_UNSUPPORTED, "model bert-ish: %s",
          tg_last_error());
    p.model = "llama";
    p.bos = 11;
    CHECK(tg_vocab_create(&p) == NULL && tg_last_status() == TG_ERR_INVALID_ARG, "bos 11 of 11: %s", tg_last_error());
}

static void test_perf(const struct tg_vocab * v) {
    char * path = tg_test_data("apache-2.0.txt");
    FILE * f = fopen(path, "rb");
    free(path);
    if (!CHECK(f != NULL, "open apache-2.0.txt")) return;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text), f);
    fclose(f);
    static int32_t ids[1 << 16];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int32_t k = tg_vocab_tokenize(v, text, n, ids, 1 << 16, true, false);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double) (t1.tv_sec - t0.tv_sec) + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec);
    CHECK(k > 2000 && ids[0] == 1, "apache-2.0.txt (%zu bytes) -> %d tokens with BOS", n, k);
    CHECK(s < 1.0, "tokenizing it took %.4f s (well under 1 s)", s);
    CHECK(k > 0 && detok_eq(v, ids, k, text, n), "apache-2.0.txt round-trips through detokenize");
}

// Loading errors, from small GGUF files written with the GGUF writer.
static void test_load_errors(void) {
    const char * path = "test_tokenizer_tmp.gguf";
    const char * toks[3] = {"<unk>", "<s>", "</s>"};
    for (int c = 0; c < 4; c++) {
        struct tg_gguf_writer * w = tg_gguf_writer_new();
        tg_gguf_set_str(w, "tokenizer.ggml.model", c == 1 ? "gpt2" : "llama");
        if (c != 0) tg_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
        if (c == 1) tg_gguf_set_str(w, "tokenizer.ggml.pre", "no-such-pre");
        if (c == 2) tg_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 7);
        if (c == 3) tg_gguf_set_arr(w, "tokenizer.ggml.scores", TG_GGUF_FLOAT32, (float[2]) {0, 0}, 2);
        enum tg_status st = tg_gguf_write(w, path);
        tg_gguf_writer_free(w);
        struct tg_gguf * g = st == TG_OK ? tg_gguf_open(path) : NULL;
        struct tg_vocab * v = g ? tg_vocab_load(g) : NULL;
        static const char * what[4] = {"missing tokens", "gpt2 model with an unknown pre-tokenizer", "bos id out of range", "2 scores for 3 tokens"};
        static const enum tg_status want[4] = {TG_ERR_FORMAT, TG_ERR_UNSUPPORTED, TG_ERR_FORMAT, TG_ERR_FORMAT};
        CHECK(g && !v && tg_last_status() == want[c], "load with %s fails: %s", what[c], tg_last_error());
        tg_vocab_free(v);
        tg_gguf_close(g);
    }
    remove(path);
}

// The JSON Lines reader/writer of `tgdb tokenize`.
static void test_json(void) {
    struct tg_json_object o;
    char err[128];
    const char * ok = " {\"s\": \"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83e\\udd99\", \"n\": -1.5e2, "
                      "\"a\": [1, -2, 30000], \"e\": [], \"t\": true, \"z\": null} ";
    bool parsed = tg_json_parse_object(ok, strlen(ok), &o, err, sizeof(err));
    CHECK(parsed, "parse an object with every kind of value %s", err);
    if (parsed) {
        const struct tg_json_field * f = tg_json_get(&o, "s");
        const char want[] = "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xF0\x9F\xA6\x99";
        CHECK(f && f->kind == TG_JSON_STRING && f->str_len == sizeof(want) - 1 && memcmp(f->str, want, f->str_len) == 0,
              "string escapes decode (\\u00e9 -> C3 A9, surrogate pair -> F0 9F A6 99)");
        f = tg_json_get(&o, "n");
        CHECK(f && f->kind == TG_JSON_NUMBER && f->num == -150.0, "number -1.5e2");
        f = tg_json_get(&o, "a");
        CHECK(f && f->kind == TG_JSON_INT_ARRAY && f->n_ints == 3 && f->ints[1] == -2 && f->ints[2] == 30000,
              "int array [1, -2, 30000]");
        f = tg_json_get(&o, "e");
        CHECK(f && f->kind == TG_JSON_INT_ARRAY && f->n_ints == 0, "empty array");
        CHECK(tg_json_get(&o, "t")->kind == TG_JSON_BOOL && tg_json_get(&o, "z")->kind == TG_JSON_NULL &&
              !tg_json_get(&o, "missing"), "true, null, missing key");
        tg_json_object_free(&o);
    }
    const char * bad[] = {"", "[]", "{\"a\": 1", "{\"a\": 1} x", "{\"a\": {\"b\": 1}}", "{\"a\": [1.5]}",
                          "{\"a\": \"\\x\"}", "{\"a\": \"\\udc00\"}", "{\"a\": 01}", "{a: 1}", "{\"a\": tru}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bool r = tg_json_parse_object(bad[i], strlen(bad[i]), &o, err, sizeof(err));
        CHECK(!r && o.n == 0 && err[0], "reject '%s': %s", bad[i], err);
    }
    char * mem = NULL;
    size_t mem_n = 0;
    FILE * f = open_memstream(&mem, &mem_n);
    tg_json_write_string(f, "a\"\\\n\x01\x7f\xC3\xA9", 8);
    fputc(' ', f);
    tg_json_write_ints(f, (const int32_t[3]) {1, -2, 3}, 3);
    fclose(f);
    const char * wexp = "\"a\\\"\\\\\\n\\u0001\x7f\xC3\xA9\" [1, -2, 3]";
    CHECK(mem && strcmp(mem, wexp) == 0, "writer escapes like json.dumps(ensure_ascii=False)");
    free(mem);
}

int main(void) {
    char * path = tg_test_data("llama-spm-vocab.gguf");
    struct tg_gguf * g = tg_gguf_open(path);
    CHECK(g != NULL, "open %s: %s", path, g ? "ok" : tg_last_error());
    free(path);
    struct tg_vocab * v = g ? tg_vocab_load(g) : NULL;
    tg_gguf_close(g);   // the vocab keeps copies
    CHECK(v != NULL, "load the vocab: %s", v ? "ok" : tg_last_error());
    if (v) {
        test_load(v);
        test_reference_jsonl(v);
        test_logits_prompts(v);
        test_bos_and_sizes(v);
        test_pieces(v);
        test_parse_special(v);
        test_perf(v);
    }
    test_memory_vocab();
    test_json();
    test_load_errors();
    tg_vocab_free(v);
    return tg_check_finish("test_tokenizer");
}
