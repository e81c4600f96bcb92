// test_llama_limits.c - what the llama runtime promises about sizes before
// allocating: a huge llama.block_count refused, tg_llama_context_estimate (KV bytes exact, compute estimate
// close to what a context really reserves, bad parameters refused), the
// repeat penalty of the sampler.
#include "check.h"
#include "tg/gguf.h"
#include "tg/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_estimate(const char * file) {
    char * path = tg_test_data(file);
    struct tg_llama_model * m = tg_llama_model_load(path, NULL);
    free(path);
    if (!CHECK(m != NULL, "%s loads", file)) return;
    const int ctxs[] = { 64, 512 };
    for (int i = 0; i < 2; i++) {
        struct tg_llama_context_params cp = tg_llama_context_default_params();
        cp.n_ctx = ctxs[i];
        cp.n_threads = 2;
        struct tg_llama_memory_estimate est;
        CHECK(tg_llama_context_estimate(m, &cp, &est) == TG_OK, "estimate for n_ctx %d", ctxs[i]);
        struct tg_llama_context * c = tg_llama_context_new(m, &cp);
        if (!CHECK(c != NULL, "context n_ctx %d: %s", ctxs[i], c ? "" : tg_last_error())) continue;
        struct tg_llama_stats s = tg_llama_stats(c);
        CHECK(est.kv_bytes == s.kv_bytes, "%s n_ctx %d: estimated KV bytes %llu == allocated %zu", file, ctxs[i],
              (unsigned long long) est.kv_bytes, s.kv_bytes);
        double r = (double) est.compute_bytes / (double) s.compute_bytes;
        CHECK(r > 0.5 && r < 3.0, "%s n_ctx %d: compute estimate %llu within 0.5x..3x of the reserved %zu (%.2fx)", file,
              ctxs[i], (unsigned long long) est.compute_bytes, s.compute_bytes, r);
        CHECK(est.n_ctx == ctxs[i] && est.n_ubatch == tg_llama_context_params(c)->n_ubatch, "resolved sizes match the context's");
        tg_llama_context_free(c);
    }
    // n_ctx 0 = the model's training context; a huge one is estimated without allocating
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 0;
    struct tg_llama_memory_estimate est;
    CHECK(tg_llama_context_estimate(m, &cp, &est) == TG_OK && est.n_ctx == tg_llama_model_hparams(m)->n_ctx_train,
          "n_ctx 0 resolves to n_ctx_train (%d)", est.n_ctx);
    cp.n_ctx = 1 << 20;
    struct tg_llama_memory_estimate big;
    enum tg_status st = tg_llama_context_estimate(m, &cp, &big);
    CHECK(st == TG_OK && big.kv_bytes == est.kv_bytes / (uint64_t) est.n_ctx * (1u << 20),
          "KV bytes grow linearly with n_ctx (%llu for 1M cells)", (unsigned long long) big.kv_bytes);
    cp.n_ctx = (1 << 20) + 1;
    st = tg_llama_context_estimate(m, &cp, &big);
    CHECK(st == TG_ERR_INVALID_ARG && strstr(tg_last_error(), "n_ctx"),
          "n_ctx past the limit refused: %s", tg_last_error());
    tg_llama_model_free(m);
}

static void check_repeat_penalty(void) {
    float logits[4] = { 1.0f, 3.0f, 2.9f, -1.0f };
    struct tg_llama_sampler_params p = tg_llama_sampler_default_params();
    p.temp = 0.0f;
    struct tg_llama_sampler * s = tg_llama_sampler_new(&p);
    tg_llama_sampler_accept(s, 1);
    CHECK(tg_llama_sample(s, logits, 4) == 1, "repeat penalty 1 (default) is off: greedy picks 1");
    tg_llama_sampler_free(s);
    p.repeat_penalty = 1.5f;
    s = tg_llama_sampler_new(&p);
    CHECK(tg_llama_sample(s, logits, 4) == 1, "nothing accepted yet: greedy picks 1");
    tg_llama_sampler_accept(s, 1);
    tg_llama_sampler_accept(s, 1);
    CHECK(tg_llama_sample(s, logits, 4) == 2, "token 1 seen (twice, penalized once: 3/1.5 = 2 < 2.9): greedy picks 2");
    tg_llama_sampler_free(s);
    p.repeat_last_n = 1;
    s = tg_llama_sampler_new(&p);
    tg_llama_sampler_accept(s, 1);
    tg_llama_sampler_accept(s, 3);
    CHECK(tg_llama_sample(s, logits, 4) == 1, "repeat_last_n 1: only the last token counts");
    tg_llama_sampler_free(s);
    p.repeat_last_n = -1;
    CHECK(tg_llama_sampler_new(&p) == NULL && strstr(tg_last_error(), "repeat"), "repeat_last_n -1 refused: %s", tg_last_error());
    p.repeat_last_n = 64;
    p.repeat_penalty = NAN;
    CHECK(tg_llama_sampler_new(&p) == NULL, "NaN repeat penalty refused");
}

// A model whose llama.block_count claims `n` layers (the tiny model's tensors).
static void check_block_count(uint32_t n) {
    char * path = tg_test_data("tiny-f32.gguf");
    struct tg_gguf * src = tg_gguf_open(path);
    free(path);
    if (!CHECK(src != NULL, "tiny-f32.gguf opens")) return;
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    bool ok = w && tg_gguf_set_kv_from(w, src) == TG_OK && tg_gguf_set_u32(w, "llama.block_count", n) == TG_OK;
    for (int64_t i = 0; ok && i < tg_gguf_n_tensors(src); i++) {
        const struct tg_gguf_tensor_info * ti = tg_gguf_tensor(src, i);
        ok = tg_gguf_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, tg_gguf_tensor_data(src, i)) == TG_OK;
    }
    ok = ok && tg_gguf_write(w, "llama-layers.gguf") == TG_OK;
    tg_gguf_writer_free(w);
    tg_gguf_close(src);
    if (!CHECK(ok, "wrote a model claiming %u layers", n)) return;
    struct tg_llama_model * m = tg_llama_model_load("llama-layers.gguf", NULL);
    CHECK(!m && strstr(tg_last_error(), "block_count"), "block_count %u refused with a clear message: %s", n, tg_last_error());
    tg_llama_model_free(m);
    remove("llama-layers.gguf");
}

int main(void) {
    check_block_count(1u << 30);   // 14 weights per layer would overflow an int
    check_block_count(100000);
    check_estimate("tiny-f32.gguf");
    check_estimate("tiny-q8_0.gguf");
    check_repeat_penalty();
    return tg_check_finish("test_llama_limits");
}
