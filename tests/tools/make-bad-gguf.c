// make-bad-gguf.c - writes the malformed GGUF test files and the GGUF fuzz
// seed corpus. Not part of the build (tests/test_gguf.c checks that the
// committed files match these builders). Regenerate with:
//   cmake --build build
//   cc -std=gnu11 -I engine/include -I . tests/tools/make-bad-gguf.c build/engine/libtg.a -lm -lpthread -o /tmp/mbg
//   /tmp/mbg tests/data/gguf-bad tests/fuzz/corpus_gguf
#include "tests/tools/bad-gguf-cases.h"
#include "tg/gguf.h"

#include <stdio.h>

static int write_file(const char * dir, const char * name, const void * p, size_t n) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE * f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) { perror(path); return 1; }
    return 0;
}

// Small valid files made with the library's writer (seeds for the fuzzer).
static int write_valid_seeds(const char * dir) {
    int err = 0;
    for (int v = 0; v < 3; v++) {
        struct tg_gguf_writer * w = tg_gguf_writer_new();
        tg_gguf_set_str(w, "general.architecture", "llama");
        tg_gguf_set_u32(w, "llama.embedding_length", 8);
        tg_gguf_set_i32(w, "x.i32", -5);
        tg_gguf_set_u64(w, "x.u64", 1ull << 40);
        tg_gguf_set_f32(w, "llama.rope.freq_base", 10000.0f);
        tg_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", true);
        const char * toks[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81the", "a\"b\\c\n"};
        tg_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 5);
        float scores[5] = {0, -1, -2, -3.5f, 4};
        tg_gguf_set_arr(w, "tokenizer.ggml.scores", TG_GGUF_FLOAT32, scores, 5);
        uint8_t u8s[3] = {1, 2, 3};
        tg_gguf_set_arr(w, "x.u8s", TG_GGUF_UINT8, u8s, 3);
        if (v == 1) tg_gguf_set_alignment(w, 64);
        float data[64];
        for (int i = 0; i < 64; i++) data[i] = (float) i * 0.25f;
        if (v >= 1) {
            tg_gguf_add_tensor(w, "token_embd.weight", TG_TYPE_F32, 2, (const int64_t[]) {8, 4}, data);
            tg_gguf_add_tensor(w, "output_norm.weight", TG_TYPE_F16, 1, (const int64_t[]) {8}, data);
        }
        if (v == 2) {
            tg_gguf_add_tensor(w, "blk.0.attn_q.weight", TG_TYPE_Q8_0, 2, (const int64_t[]) {32, 1}, data);
            tg_gguf_add_tensor(w, "blk.0.ffn_down.weight", (enum tg_type) 14, 1, (const int64_t[]) {256}, NULL);  // q6_K
        }
        void * p; size_t n;
        if (tg_gguf_write_memory(w, &p, &n) != TG_OK) { fprintf(stderr, "%s\n", tg_last_error()); return 1; }
        char name[64];
        snprintf(name, sizeof(name), "valid-%d.gguf", v);
        err |= write_file(dir, name, p, n);
        free(p);
        tg_gguf_writer_free(w);
    }
    return err;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: make-bad-gguf BAD_DIR [CORPUS_DIR]\n"); return 1; }
    int err = 0;
    char path[1024];
    snprintf(path, sizeof(path), "%s/EXPECTED.tsv", argv[1]);
    FILE * tsv = fopen(path, "w");
    if (!tsv) { perror(path); return 1; }
    fprintf(tsv, "# file\texpect\tmessage contains\n");
    for (int i = 0; i < N_BAD_CASES; i++) {
        struct gb b = {0};
        bad_cases[i].build(&b);
        err |= write_file(argv[1], bad_cases[i].file, b.p, b.n);
        if (argc > 2) err |= write_file(argv[2], bad_cases[i].file, b.p, b.n);
        fprintf(tsv, "%s\t%s\t%s\n", bad_cases[i].file, bad_cases[i].expect, bad_cases[i].needle);
        free(b.p);
    }
    if (fclose(tsv) != 0) err = 1;
    if (argc > 2) err |= write_valid_seeds(argv[2]);
    printf("wrote %d malformed files%s\n", N_BAD_CASES, argc > 2 ? " and the fuzz seeds" : "");
    return err;
}
