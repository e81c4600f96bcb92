// test_gguf.c - GGUF reader and writer: the reference models, a writer round
// trip, every malformed file of tests/data/gguf-bad (NULL + a message naming
// the field), cut-short data sections and the open errors.
#include "check.h"
#include "tg/gguf.h"
#include "tests/tools/bad-gguf-cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool has(const char * msg, const char * needle) { return msg && strstr(msg, needle) != NULL; }

// ---- the reference models -----------------------------------------------------

struct model_case { const char * file; int emb_type; int matrix_type; };

static void check_tensors_inside(const struct tg_gguf * g, const char * file) {
    bool ok = true;
    size_t file_size = tg_gguf_file_size(g);
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
        const uint8_t * d = tg_gguf_tensor_data(g, i);
        size_t at = tg_gguf_data_offset(g) + t->offset;
        ok &= CHECKQ(d != NULL && at + t->size <= file_size, "%s: tensor '%s' data inside the file", file, t->name);
        ok &= CHECKQ(t->offset % tg_gguf_alignment(g) == 0, "%s: tensor '%s' offset aligned", file, t->name);
        ok &= CHECKQ(t->size == tg_gguf_tensor_nbytes(t->type, t->n_dims, t->ne), "%s: tensor '%s' size", file, t->name);
        ok &= CHECKQ(tg_gguf_find_tensor(g, t->name) == i, "%s: find_tensor('%s')", file, t->name);
    }
    CHECK(ok, "%s: all %lld tensors have aligned data inside the file, sizes match, names found",
          file, (long long) tg_gguf_n_tensors(g));
}

static void test_model(const struct model_case * mc) {
    char * path = tg_test_data(mc->file);
    struct tg_gguf * g = tg_gguf_open(path);
    free(path);
    if (!CHECK(g != NULL, "%s opens (%s)", mc->file, g ? "" : tg_last_error())) return;
    CHECK(tg_gguf_version(g) == 3 && tg_gguf_alignment(g) == 32, "%s: v3, alignment 32", mc->file);
    CHECK(tg_gguf_data_complete(g) && tg_gguf_data_error(g) == NULL && tg_gguf_data(g) != NULL,
          "%s: data section complete", mc->file);
    CHECK(tg_gguf_data_offset(g) % 32 == 0 && tg_gguf_data_offset(g) < tg_gguf_file_size(g),
          "%s: data offset %zu aligned, inside the file", mc->file, tg_gguf_data_offset(g));
    const char * arch = tg_gguf_get_str(g, "general.architecture");
    CHECK(arch && strcmp(arch, "llama") == 0, "%s: general.architecture == llama", mc->file);
    uint32_t emb = 0, nl = 0;
    CHECK(tg_gguf_get_u32(g, "llama.embedding_length", &emb) && emb == 64, "%s: llama.embedding_length == 64", mc->file);
    CHECK(tg_gguf_get_u32(g, "llama.block_count", &nl) && nl == 2, "%s: llama.block_count == 2", mc->file);
    float eps = 0;
    CHECK(tg_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps) && fabsf(eps - 1e-5f) < 1e-9f,
          "%s: rms epsilon 1e-5", mc->file);
    int64_t tk = tg_gguf_find_key(g, "tokenizer.ggml.tokens");
    CHECK(tk >= 0 && tg_gguf_kv_type(g, tk) == TG_GGUF_ARRAY && tg_gguf_arr_type(g, tk) == TG_GGUF_STRING &&
          tg_gguf_arr_n(g, tk) == 32000, "%s: tokenizer.ggml.tokens is 32000 strings", mc->file);
    size_t len = 0;
    const char * s1 = tg_gguf_arr_str(g, tk, 1, &len);
    CHECK(s1 && strcmp(s1, "<s>") == 0 && len == 3, "%s: token 1 is <s>", mc->file);
    int64_t ti = tg_gguf_find_tensor(g, "token_embd.weight");
    const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, ti);
    CHECK(t && t->n_dims == 2 && t->ne[0] == 64 && t->ne[1] == 32000 && t->ne[2] == 1 && (int) t->type == mc->emb_type,
          "%s: token_embd.weight [64,32000] %s", mc->file, tg_gguf_tensor_type_name(mc->emb_type));
    t = tg_gguf_tensor(g, tg_gguf_find_tensor(g, "blk.1.ffn_down.weight"));
    CHECK(t && t->ne[0] == 160 && t->ne[1] == 64 && (int) t->type == mc->matrix_type,
          "%s: blk.1.ffn_down.weight [160,64] %s", mc->file, tg_gguf_tensor_type_name(mc->matrix_type));
    t = tg_gguf_tensor(g, tg_gguf_find_tensor(g, "blk.0.attn_norm.weight"));
    CHECK(t && t->n_dims == 1 && t->ne[0] == 64 && t->type == TG_TYPE_F32, "%s: blk.0.attn_norm.weight [64] f32", mc->file);
    CHECK(tg_gguf_n_tensors(g) == 21 || tg_gguf_n_tensors(g) == 20, "%s: %lld tensors", mc->file, (long long) tg_gguf_n_tensors(g));
    check_tensors_inside(g, mc->file);
    tg_gguf_close(g);
}

static void test_vocab(void) {
    char * path = tg_test_data("llama-spm-vocab.gguf");
    struct tg_gguf * g = tg_gguf_open(path);
    free(path);
    if (!CHECK(g != NULL, "llama-spm-vocab.gguf opens")) return;
    CHECK(tg_gguf_n_tensors(g) == 0 && tg_gguf_data_complete(g), "vocab: no tensors, data complete");
    int64_t tk = tg_gguf_find_key(g, "tokenizer.ggml.tokens");
    int64_t sc = tg_gguf_find_key(g, "tokenizer.ggml.scores");
    int64_t tt = tg_gguf_find_key(g, "tokenizer.ggml.token_type");
    CHECK(tg_gguf_arr_n(g, tk) == 32000 && tg_gguf_arr_n(g, sc) == 32000 && tg_gguf_arr_n(g, tt) == 32000,
          "vocab: tokens, scores, token_type have 32000 items");
    CHECK(tg_gguf_arr_type(g, sc) == TG_GGUF_FLOAT32 && tg_gguf_arr_data(g, sc) != NULL, "vocab: scores are float32");
    CHECK(tg_gguf_arr_data(g, tk) == NULL, "vocab: arr_data is NULL for a string array");
    size_t len;
    const char * u = tg_gguf_arr_str(g, tk, 0, &len);
    CHECK(u && strcmp(u, "<unk>") == 0, "vocab: token 0 is <unk>");
    CHECK(tg_gguf_arr_str(g, tk, 32000, NULL) == NULL && has(tg_last_error(), "out of range"),
          "vocab: item 32000 out of range: %s", tg_last_error());
    uint32_t bos = 0;
    bool add_bos = false;
    CHECK(tg_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos) && bos == 1, "vocab: bos == 1");
    CHECK(tg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos) && add_bos, "vocab: add_bos_token");
    char buf[256];
    tg_gguf_value_str(g, tk, 3, buf, sizeof(buf));
    CHECK(strcmp(buf, "[\"<unk>\", \"<s>\", \"</s>\", ... (32000 items)]") == 0, "value_str elides: %s", buf);
    // getter conversions and errors
    float f = 0;
    int32_t i32 = 0;
    CHECK(tg_gguf_get_f32(g, "tokenizer.ggml.bos_token_id", &f) && f == 1.0f, "get_f32 converts a uint32");
    CHECK(tg_gguf_get_i32(g, "llama.context_length", &i32) && i32 == 512, "get_i32 converts a uint32");
    CHECK(!tg_gguf_get_u32(g, "llama.rope.freq_base", &bos) && has(tg_last_error(), "float32"),
          "get_u32 on a float32 fails: %s", tg_last_error());
    CHECK(!tg_gguf_get_u32(g, "no.such.key", &bos) && has(tg_last_error(), "not found"), "missing key: %s", tg_last_error());
    CHECK(tg_gguf_get_str(g, "llama.block_count") == NULL && has(tg_last_error(), "expected string"),
          "get_str on a uint32: %s", tg_last_error());
    CHECK(tg_gguf_key(g, 99) == NULL && tg_gguf_tensor(g, 0) == NULL && tg_gguf_tensor_data(g, -1) == NULL,
          "out-of-range kv/tensor indexes give NULL");
    tg_gguf_close(g);
}

// ---- writer round trip --------------------------------------------------------------

static void test_round_trip(void) {
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    CHECK(w != NULL, "writer created");
    tg_gguf_set_str(w, "general.architecture", "test");
    tg_gguf_set_u32(w, "a.u32", 7);
    tg_gguf_set_u32(w, "a.u32", 8);   // replaced
    tg_gguf_set_i32(w, "a.i32", -123456);
    tg_gguf_set_u64(w, "a.u64", 1ull << 50);
    tg_gguf_set_f32(w, "a.f32", 0.125f);
    tg_gguf_set_bool(w, "a.bool", true);
    const char * strs[] = {"", "hello", "w\xc3\xb6rld", "tab\there"};
    tg_gguf_set_arr_str(w, "a.strs", strs, 4);
    int16_t i16[5] = {-1, 2, -3, 4, -32768};
    tg_gguf_set_arr(w, "a.i16", TG_GGUF_INT16, i16, 5);
    CHECK(tg_gguf_set_alignment(w, 64) == TG_OK, "set_alignment(64)");
    CHECK(tg_gguf_set_alignment(w, 48) != TG_OK && has(tg_last_error(), "power of two"), "alignment 48 refused: %s", tg_last_error());
    CHECK(tg_gguf_set_str(w, "general.alignment", "x") != TG_OK, "general.alignment as a string refused");
    float a[3 * 5];
    for (int i = 0; i < 15; i++) a[i] = (float) i - 7.5f;
    uint8_t q8[2 * 34];
    for (int i = 0; i < 68; i++) q8[i] = (uint8_t) (i * 37);
    uint8_t q6k[210];
    for (int i = 0; i < 210; i++) q6k[i] = (uint8_t) (255 - i);
    CHECK(tg_gguf_add_tensor(w, "t.f32", TG_TYPE_F32, 2, (const int64_t[]) {3, 5}, a) == TG_OK, "add f32 [3,5]");
    CHECK(tg_gguf_add_tensor(w, "t.q8", TG_TYPE_Q8_0, 2, (const int64_t[]) {32, 2}, q8) == TG_OK, "add q8_0 [32,2]");
    CHECK(tg_gguf_add_tensor(w, "t.q6k", (enum tg_type) 14, 1, (const int64_t[]) {256}, q6k) == TG_OK, "add q6_K [256] (unsupported by the engine)");
    CHECK(tg_gguf_add_tensor(w, "t.f32", TG_TYPE_F32, 1, (const int64_t[]) {4}, a) != TG_OK && has(tg_last_error(), "duplicate"),
          "duplicate tensor refused: %s", tg_last_error());
    CHECK(tg_gguf_add_tensor(w, "t.bad", TG_TYPE_Q4_0, 1, (const int64_t[]) {33}, a) != TG_OK, "q4_0 [33] refused");
    CHECK(tg_gguf_add_tensor(w, "t.bad", (enum tg_type) 4, 1, (const int64_t[]) {32}, a) != TG_OK, "removed type 4 refused");
    char path[256];
    snprintf(path, sizeof(path), "%s/test_gguf_roundtrip_%d.gguf", TG_BUILD_DIR, (int) getpid());
    CHECK(tg_gguf_write(w, path) == TG_OK, "write %s", path);
    CHECK(tg_gguf_write(w, "/nonexistent-dir/x.gguf") == TG_ERR_IO && has(tg_last_error(), "/nonexistent-dir/x.gguf"),
          "write to a bad path: %s", tg_last_error());
    void * mem; size_t mem_n;
    CHECK(tg_gguf_write_memory(w, &mem, &mem_n) == TG_OK, "write_memory");
    tg_gguf_writer_free(w);

    struct tg_gguf * g = tg_gguf_open(path);
    if (!CHECK(g != NULL, "round trip opens (%s)", g ? "" : tg_last_error())) { free(mem); return; }
    size_t fn; void * fb = tg_test_read_file(path, &fn);
    CHECK(fb && fn == mem_n && memcmp(fb, mem, fn) == 0, "file and memory outputs are identical (%zu bytes)", fn);
    CHECK(fn % 64 == 0, "file size %zu is padded to the alignment", fn);
    free(fb);
    CHECK(tg_gguf_version(g) == 3 && tg_gguf_alignment(g) == 64 && tg_gguf_data_offset(g) % 64 == 0, "v3, alignment 64");
    CHECK(tg_gguf_n_kv(g) == 9, "9 key/values (one replaced, alignment added): %lld", (long long) tg_gguf_n_kv(g));
    uint32_t u32 = 0; int32_t i32 = 0; uint64_t u64 = 0; float f = 0; bool b = false;
    CHECK(tg_gguf_get_u32(g, "a.u32", &u32) && u32 == 8, "a.u32 == 8 (replaced value)");
    CHECK(tg_gguf_get_i32(g, "a.i32", &i32) && i32 == -123456, "a.i32");
    CHECK(!tg_gguf_get_u32(g, "a.i32", &u32) && has(tg_last_error(), "does not fit"), "negative to u32 refused: %s", tg_last_error());
    CHECK(tg_gguf_get_u64(g, "a.u64", &u64) && u64 == 1ull << 50, "a.u64");
    CHECK(!tg_gguf_get_i32(g, "a.u64", &i32), "2^50 does not fit int32");
    CHECK(tg_gguf_get_f32(g, "a.f32", &f) && f == 0.125f, "a.f32");
    CHECK(tg_gguf_get_bool(g, "a.bool", &b) && b, "a.bool");
    int64_t k = tg_gguf_find_key(g, "a.strs");
    bool same = tg_gguf_arr_n(g, k) == 4;
    for (int j = 0; same && j < 4; j++) {
        size_t len;
        const char * s = tg_gguf_arr_str(g, k, j, &len);
        same = s && len == strlen(strs[j]) && strcmp(s, strs[j]) == 0;
    }
    CHECK(same, "array of 4 strings (one empty, one UTF-8) round-trips");
    k = tg_gguf_find_key(g, "a.i16");
    CHECK(tg_gguf_arr_type(g, k) == TG_GGUF_INT16 && tg_gguf_arr_n(g, k) == 5 &&
          memcmp(tg_gguf_arr_data(g, k), i16, sizeof(i16)) == 0, "int16 array round-trips");
    char buf[128];
    CHECK(strcmp(tg_gguf_value_str(g, k, 2, buf, sizeof(buf)), "[-1, 2, ... (5 items)]") == 0, "value_str: %s", buf);
    const void * want[3] = {a, q8, q6k};
    const char * names[3] = {"t.f32", "t.q8", "t.q6k"};
    size_t sizes[3] = {sizeof(a), sizeof(q8), sizeof(q6k)};
    for (int i = 0; i < 3; i++) {
        int64_t ti = tg_gguf_find_tensor(g, names[i]);
        const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, ti);
        const void * d = tg_gguf_tensor_data(g, ti);
        CHECK(t && t->size == sizes[i] && d && memcmp(d, want[i], sizes[i]) == 0 && t->offset % 64 == 0,
              "tensor %s: %zu bytes round-trip, offset %llu aligned", names[i], sizes[i], t ? (unsigned long long) t->offset : 0ull);
    }
    const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, tg_gguf_find_tensor(g, "t.q6k"));
    CHECK(t && (int) t->type == 14 && strcmp(tg_gguf_tensor_type_name(t->type), "q6_K") == 0,
          "unsupported-but-valid q6_K opens with its type recorded");

    tg_gguf_close(g);
    free(mem);
    unlink(path);
}

// set_kv_from: copy the vocabulary into a new file.
static void test_kv_copy(void) {
    char * vpath = tg_test_data("llama-spm-vocab.gguf");
    struct tg_gguf * v = tg_gguf_open(vpath);
    free(vpath);
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    CHECK(v && tg_gguf_set_kv_from(w, v) == TG_OK, "set_kv_from(vocab)");
    tg_gguf_set_str(w, "general.name", "copy");
    void * p2; size_t n2;
    CHECK(tg_gguf_write_memory(w, &p2, &n2) == TG_OK, "write the copy");
    struct tg_gguf * g2 = tg_gguf_open_memory(p2, n2);
    CHECK(g2 && tg_gguf_n_kv(g2) == tg_gguf_n_kv(v), "copy has the same %lld keys", (long long) tg_gguf_n_kv(v));
    int64_t k1 = tg_gguf_find_key(v, "tokenizer.ggml.tokens"), k2 = tg_gguf_find_key(g2, "tokenizer.ggml.tokens");
    bool same = g2 && tg_gguf_arr_n(g2, k2) == 32000;
    for (int64_t j = 0; same && j < 32000; j++) {
        size_t l1, l2;
        const char * s1 = tg_gguf_arr_str(v, k1, j, &l1), * s2 = tg_gguf_arr_str(g2, k2, j, &l2);
        same = l1 == l2 && memcmp(s1, s2, l1) == 0;
    }
    CHECK(same, "copy: 32000 tokens identical");
    const char * nm = g2 ? tg_gguf_get_str(g2, "general.name") : NULL;
    CHECK(nm && strcmp(nm, "copy") == 0, "copy: general.name replaced in place");
    tg_gguf_close(g2);
    free(p2);
    tg_gguf_writer_free(w);
    tg_gguf_close(v);
}

// ---- malformed files -----------------------------------------------------------------

static void test_bad_files(void) {
    char * tsv_path = tg_test_data("gguf-bad/EXPECTED.tsv");
    FILE * tsv = fopen(tsv_path, "r");
    free(tsv_path);
    if (!CHECK(tsv != NULL, "gguf-bad/EXPECTED.tsv exists")) return;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), tsv)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = '\0';
        char * file = strtok(line, "\t"), * expect = strtok(NULL, "\t"), * needle = strtok(NULL, "\t");
        if (!file || !expect || !needle) continue;
        n++;
        char rel[300];
        snprintf(rel, sizeof(rel), "gguf-bad/%s", file);
        char * path = tg_test_data(rel);
        tg_clear_error();
        struct tg_gguf * g = tg_gguf_open(path);
        if (strcmp(expect, "error") == 0) {
            CHECK(g == NULL && has(tg_last_error(), needle), "%s -> NULL, \"%s\"", file, tg_last_error());
        } else {
            CHECK(g && !tg_gguf_data_complete(g) && has(tg_gguf_data_error(g), needle),
                  "%s opens with the data cut short: \"%s\"", file, g ? tg_gguf_data_error(g) : tg_last_error());
        }
        tg_gguf_close(g);
        // the committed file matches its builder (the same bytes fail the same way from memory)
        size_t fn = 0;
        void * fb = tg_test_read_file(path, &fn);
        bool found = false;
        for (int i = 0; i < N_BAD_CASES; i++) {
            if (strcmp(bad_cases[i].file, file) != 0) continue;
            struct gb b = {0};
            bad_cases[i].build(&b);
            found = b.n == fn && (fn == 0 || memcmp(b.p, fb, fn) == 0);
            struct tg_gguf * gm = tg_gguf_open_memory(b.p ? b.p : (void *) "", b.n);
            CHECKQ(strcmp(expect, "error") == 0 ? gm == NULL : gm != NULL, "%s from memory: %s", file, tg_last_error());
            tg_gguf_close(gm);
            free(b.p);
        }
        CHECKQ(found, "%s is current (regenerate with tests/tools/make-bad-gguf.c)", file);
        free(fb);
        free(path);
    }
    fclose(tsv);
    CHECK(n == N_BAD_CASES, "EXPECTED.tsv lists all %d cases (%d)", N_BAD_CASES, n);
}

// The real tiny-f32 model cut at several points inside its data section.
static void test_cut_short(void) {
    char * path = tg_test_data("tiny-f32.gguf");
    size_t n = 0;
    uint8_t * full = tg_test_read_file(path, &n);
    free(path);
    if (!CHECK(full != NULL, "read tiny-f32.gguf")) return;
    struct tg_gguf * g = tg_gguf_open_memory(full, n);
    size_t data_off = g ? tg_gguf_data_offset(g) : 0;
    tg_gguf_close(g);
    size_t cuts[3] = {data_off + 1000, n - 1, data_off};
    for (int c = 0; c < 3; c++) {
        g = tg_gguf_open_memory(full, cuts[c]);
        if (!CHECK(g != NULL, "tiny-f32 cut at %zu of %zu bytes opens", cuts[c], n)) continue;
        CHECK(!tg_gguf_data_complete(g) && tg_gguf_data(g) == NULL && has(tg_gguf_data_error(g), "cut short"),
              "cut at %zu: data incomplete: %s", cuts[c], tg_gguf_data_error(g));
        const char * arch = tg_gguf_get_str(g, "general.architecture");
        CHECK(arch && strcmp(arch, "llama") == 0 && tg_gguf_n_tensors(g) > 0, "cut at %zu: metadata readable", cuts[c]);
        int64_t last = tg_gguf_n_tensors(g) - 1, ok = 0, missing = 0;
        for (int64_t i = 0; i <= last; i++) {
            const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
            bool fits = data_off + t->offset + t->size <= cuts[c];
            const void * d = tg_gguf_tensor_data(g, i);
            CHECKQ((d != NULL) == fits, "cut at %zu: tensor %s data %s", cuts[c], t->name, fits ? "present" : "NULL");
            if (d) ok++; else missing++;
        }
        tg_gguf_tensor_data(g, last);
        CHECK(missing > 0 && has(tg_last_error(), "cut short"), "cut at %zu: %lld tensors readable, %lld NULL: %s",
              cuts[c], (long long) ok, (long long) missing, tg_last_error());
        tg_gguf_close(g);
    }
    // Every prefix of a small valid file: never crashes, opens only when the metadata is whole.
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    tg_gguf_set_str(w, "general.architecture", "llama");
    const char * toks[] = {"a", "bb", "ccc"};
    tg_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    float data[64] = {0};
    tg_gguf_add_tensor(w, "x", TG_TYPE_F32, 2, (const int64_t[]) {8, 8}, data);
    tg_gguf_add_tensor(w, "y", TG_TYPE_F16, 1, (const int64_t[]) {16}, data);
    void * p; size_t pn;
    tg_gguf_write_memory(w, &p, &pn);
    tg_gguf_writer_free(w);
    g = tg_gguf_open_memory(p, pn);
    size_t doff = tg_gguf_data_offset(g);
    tg_gguf_close(g);
    int bad = 0;
    for (size_t len = 0; len < pn; len++) {
        uint8_t * copy = malloc(len ? len : 1);   // exact-size copy: ASan catches any over-read
        memcpy(copy, p, len);
        g = tg_gguf_open_memory(copy, len);
        if (g && tg_gguf_data_complete(g)) bad++;
        if (!g && len >= doff) bad++;
        tg_gguf_close(g);
        free(copy);
    }
    CHECK(bad == 0, "all %zu prefixes of a %zu-byte file: incomplete ones never report complete data", pn, pn);
    free(p);
    free(full);
}

static void test_open_errors(void) {
    struct tg_gguf * g = tg_gguf_open("/nonexistent/model.gguf");
    CHECK(!g && tg_last_status() == TG_ERR_IO && has(tg_last_error(), "No such file"), "missing file: %s", tg_last_error());
    g = tg_gguf_open(TG_TEST_DATA);
    CHECK(!g && has(tg_last_error(), "directory"), "directory: %s", tg_last_error());
    char * path = tg_test_data("gguf-bad/empty.gguf");
    g = tg_gguf_open(path);
    free(path);
    CHECK(!g && has(tg_last_error(), "empty"), "empty file: %s", tg_last_error());
    g = tg_gguf_open_memory(NULL, 0);
    CHECK(!g && has(tg_last_error(), "empty"), "empty buffer: %s", tg_last_error());
    char * apache = tg_test_data("apache-2.0.txt");
    g = tg_gguf_open(apache);
    free(apache);
    CHECK(!g && has(tg_last_error(), "bad magic"), "a text file: %s", tg_last_error());
}

static void test_type_table(void) {
    const int64_t ne[2] = {256, 3};
    CHECK(tg_gguf_tensor_nbytes(TG_TYPE_F32, 2, ne) == 256 * 3 * 4, "f32 [256,3] bytes");
    CHECK(tg_gguf_tensor_nbytes(TG_TYPE_F16, 2, ne) == 256 * 3 * 2, "f16 [256,3] bytes");
    CHECK(tg_gguf_tensor_nbytes(TG_TYPE_Q8_0, 2, ne) == 8 * 34 * 3, "q8_0 [256,3] bytes");
    CHECK(tg_gguf_tensor_nbytes(TG_TYPE_Q4_0, 2, ne) == 8 * 18 * 3, "q4_0 [256,3] bytes");
    CHECK(tg_gguf_tensor_nbytes(14, 2, ne) == 210 * 3, "q6_K [256,3] bytes");
    CHECK(tg_gguf_tensor_nbytes(TG_TYPE_Q4_0, 1, (const int64_t[]) {33}) == 0, "q4_0 [33] has no size");
    CHECK(!tg_gguf_tensor_type_known(4) && !tg_gguf_tensor_type_known(-1) && !tg_gguf_tensor_type_known(40) &&
          tg_gguf_tensor_type_known(TG_TYPE_BF16), "type ids: 4, -1, 40 unknown; bf16 known");
    bool same = true;
    for (int t = 0; t < TG_TYPE_COUNT; t++) {
        if (!tg_type_supported(t)) continue;
        int64_t one[1] = {tg_blck_size((enum tg_type) t)};
        same &= CHECKQ(tg_gguf_tensor_type_known(t) && tg_gguf_tensor_nbytes(t, 1, one) == tg_type_size((enum tg_type) t) &&
                       tg_row_size((enum tg_type) t, 4 * one[0]) == tg_gguf_tensor_nbytes(t, 1, (const int64_t[]) {4 * one[0]}) &&
                       strcmp(tg_gguf_tensor_type_name(t), tg_type_name((enum tg_type) t)) == 0,
                       "type %d: GGUF layout table agrees with the engine's traits", t);
    }
    CHECK(same, "GGUF type table agrees with tg_type_size/tg_row_size/tg_type_name for every supported type");
    CHECK(strcmp(tg_gguf_type_name(TG_GGUF_FLOAT32), "float32") == 0 && strcmp(tg_gguf_type_name(TG_GGUF_TYPE_COUNT), "unknown") == 0,
          "value type names");
}

int main(void) {
    static const struct model_case models[] = {
        {"tiny-f32.gguf", TG_TYPE_F32, TG_TYPE_F32},
        {"tiny-f16.gguf", TG_TYPE_F16, TG_TYPE_F16},
        {"tiny-q8_0.gguf", TG_TYPE_Q8_0, TG_TYPE_Q8_0},
        {"tiny-q4_0.gguf", TG_TYPE_Q4_0, TG_TYPE_Q4_0},
    };
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) test_model(&models[i]);
    test_vocab();
    test_type_table();
    test_round_trip();
    test_kv_copy();
    test_bad_files();
    test_cut_short();
    test_open_errors();
    return tg_check_finish("test_gguf");
}
