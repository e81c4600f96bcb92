// test_perplexity.c - perplexity of tests/data/apache-2.0.txt with n_ctx 128
// on the four reference models, against llama.cpp's (tests/data/
// perplexity.tsv): within 0.5%, same chunk and token counts. 2 threads.
// Sanitizer builds (-O0) check the f32 and q4_0 models only.
#include "check.h"
#include "tg/llama.h"
#include "tg/vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int chunks_seen;
static void progress(int chunk, int n_chunks, double ppl, double seconds, void * user) {
    (void) ppl; (void) seconds; (void) user; (void) n_chunks;
    chunks_seen = chunk + 1;
}

static void check_model(const char * model, const char * text_name, int n_ctx, double want, int want_chunks, int want_tokens) {
    char * path = tg_test_data(model);
    struct tg_llama_model * m = tg_llama_model_load(path, NULL);
    free(path);
    size_t len = 0;
    char * text = tg_test_read_data(text_name, &len);
    struct tg_vocab * v = m ? tg_vocab_load(tg_llama_model_gguf(m)) : NULL;
    int32_t * ids = NULL;
    struct tg_llama_context * c = NULL;
    if (!CHECK(m && v && text, "%s: model, vocabulary and %s (%s)", model, text_name, tg_last_error())) goto out;
    int32_t n = -tg_vocab_tokenize(v, text, len, NULL, 0, true, false);
    ids = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    n = ids ? tg_vocab_tokenize(v, text, len, ids, n, true, false) : -1;
    CHECK(n == want_tokens, "%s: %d tokens (reference %d)", model, n, want_tokens);
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = cp.n_ubatch = n_ctx;
    cp.n_threads = 2;
    c = tg_llama_context_new(m, &cp);
    struct tg_llama_ppl_result r;
    chunks_seen = 0;
    enum tg_status st = c && n > 0 ? tg_llama_perplexity(c, ids, n, progress, NULL, &r) : TG_ERR_INVALID_ARG;
    if (!CHECK(st == TG_OK, "%s: perplexity computed (%s)", model, tg_last_error())) goto out;
    double e = fabs(r.ppl - want) / want;
    CHECK(e < 5e-3, "%s: perplexity %.6f vs reference %.6f (relative difference %.2e < 5e-3)", model, r.ppl, want, e);
    CHECK(r.n_chunks == want_chunks && chunks_seen == want_chunks, "%s: %d chunks (reference %d), progress for %d",
          model, r.n_chunks, want_chunks, chunks_seen);
    CHECK(r.n_scored == want_chunks * (n_ctx - 1 - n_ctx / 2), "%s: %d predictions scored", model, r.n_scored);
out:
    tg_llama_context_free(c);
    tg_vocab_free(v);
    tg_llama_model_free(m);
    free(ids);
    free(text);
}

int main(void) {
    char * path = tg_test_data("perplexity.tsv");
    FILE * f = fopen(path, "r");
    free(path);
    int rows = 0;
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char model[64], text[64];
        int n_ctx, chunks, tokens;
        double ppl;
        if (sscanf(line, "%63s %63s %d perplexity: %lf chunks %d tokens %d", model, text, &n_ctx, &ppl, &chunks, &tokens) != 6)
            continue;
        rows++;
#ifdef TG_SANITIZE
        // sanitizer builds run at -O0: two models (one float, one quantized) keep the suite fast
        if (strstr(model, "f16") || strstr(model, "q8_0")) { printf("     (%s skipped under sanitizers)\n", model); continue; }
#endif
        check_model(model, text, n_ctx, ppl, chunks, tokens);
    }
    if (f) fclose(f);
    CHECK(rows == 4, "perplexity.tsv has %d rows", rows);
    // too little text is refused
    char * mp = tg_test_data("tiny-f32.gguf");
    struct tg_llama_model * m = tg_llama_model_load(mp, NULL);
    free(mp);
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    struct tg_llama_context * c = m ? tg_llama_context_new(m, &cp) : NULL;
    int32_t few[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    struct tg_llama_ppl_result r;
    CHECK(c && tg_llama_perplexity(c, few, 10, NULL, NULL, &r) == TG_ERR_INVALID_ARG, "10 tokens with n_ctx 64 refused: %s",
          tg_last_error());
    tg_llama_context_free(c);
    tg_llama_model_free(m);
    return tg_check_finish("test_perplexity");
}
