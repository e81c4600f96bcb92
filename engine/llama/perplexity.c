// perplexity.c - perplexity the llama.cpp way: chunks of n_ctx tokens, the
// first token of each replaced by BOS, the second half of each chunk scored.
#include "llama-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// -log softmax(logits)[tok], accumulated in double.
static double token_nll(const float * logits, int32_t n_vocab, int32_t tok) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) if (logits[i] > max) max = logits[i];
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double) logits[i] - max);
    return log(sum) - ((double) logits[tok] - max);
}

// Decodes one chunk (first token replaced by bos) in batches of n_batch,
// keeping the logits of positions first..n_ctx-2; adds their NLLs.
static enum tg_status score_chunk(struct tg_llama_context * ctx, const int32_t * chunk, int32_t n_ctx, int32_t bos,
                                  int32_t * tmp, int8_t * want, double * nll, double * nll2) {
    const int32_t n_batch = tg_llama_context_params(ctx)->n_batch;
    const int32_t n_vocab = tg_llama_context_model(ctx)->hparams.n_vocab;
    const int32_t first = n_ctx / 2;
    memcpy(tmp, chunk, sizeof(int32_t) * (size_t) n_ctx);
    tmp[0] = bos;
    tg_llama_kv_clear(ctx);
    for (int32_t b0 = 0; b0 < n_ctx; b0 += n_batch) {
        int32_t n = n_ctx - b0 < n_batch ? n_ctx - b0 : n_batch;
        for (int32_t i = 0; i < n; i++) want[i] = (int8_t) (b0 + i >= first && b0 + i <= n_ctx - 2);
        struct tg_llama_batch batch = { tmp + b0, n, b0, want };
        enum tg_status st = tg_llama_decode_batch(ctx, &batch);
        if (st) return st;
        for (int32_t i = 0; i < n; i++) {
            if (!want[i]) continue;
            const float * lg = tg_llama_get_logits(ctx, i);
            if (!lg) return tg_last_status();
            double v = token_nll(lg, n_vocab, chunk[b0 + i + 1]);
            *nll += v;
            *nll2 += v * v;
        }
    }
    return TG_OK;
}

enum tg_status tg_llama_perplexity(struct tg_llama_context * ctx, const int32_t * tokens, int32_t n_tokens,
                                   tg_llama_ppl_progress progress, void * user,
                                   struct tg_llama_ppl_result * out) {
    if (!ctx || !tokens || !out) return tg_error(TG_ERR_INVALID_ARG, "perplexity: NULL argument");
    memset(out, 0, sizeof *out);
    const struct tg_llama_model * m = tg_llama_context_model(ctx);
    const int32_t n_ctx = tg_llama_n_ctx(ctx);
    const int32_t bos = tg_llama_model_bos(m);
    if (n_ctx < 4) return tg_error(TG_ERR_INVALID_ARG, "perplexity: n_ctx %d is too small (at least 4)", n_ctx);
    if (bos < 0) return tg_error(TG_ERR_INVALID_ARG, "perplexity: the model has no BOS token");
    if (n_tokens < n_ctx)
        return tg_error(TG_ERR_INVALID_ARG, "perplexity: the text has %d tokens, fewer than n_ctx %d (need at least one chunk)",
                        n_tokens, n_ctx);
    const int32_t n_chunks = n_tokens / n_ctx;
    int32_t * tmp = malloc(sizeof(int32_t) * (size_t) n_ctx);
    int8_t * want = malloc((size_t) n_ctx);
    if (!tmp || !want) {
        free(tmp); free(want);
        return tg_error(TG_ERR_NOMEM, "out of memory (perplexity)");
    }
    double nll = 0.0, nll2 = 0.0, t0 = tg_llama_time_ms();
    int32_t per_chunk = n_ctx - 1 - n_ctx / 2, count = 0;
    enum tg_status st = TG_OK;
    for (int32_t k = 0; k < n_chunks && st == TG_OK; k++) {
        st = score_chunk(ctx, tokens + (size_t) k * (size_t) n_ctx, n_ctx, bos, tmp, want, &nll, &nll2);
        if (st) break;
        count += per_chunk;
        if (progress) progress(k, n_chunks, exp(nll / count), (tg_llama_time_ms() - t0) / 1e3, user);
    }
    free(tmp);
    free(want);
    if (st) return st;
    double mean = nll / count, mean2 = nll2 / count;
    out->nll = mean;
    out->ppl = exp(mean);
    out->nll_stderr = count > 1 ? sqrt(fmax(mean2 - mean * mean, 0.0) / (count - 1)) : 0.0;
    out->n_chunks = n_chunks;
    out->n_scored = count;
    out->n_tokens = n_tokens;
    return TG_OK;
}
