// cmd_perplexity.c - `tgdb perplexity`: perplexity of a text file the
// llama.cpp way (chunks of n_ctx tokens, the second half of each scored);
// progress per chunk on stderr, the result on stdout:
//   perplexity: 236210.206731 chunks 21 tokens 2718
#include "cli.h"
#include "tg/llama.h"
#include "tg/trace.h"
#include "tg/vocab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TG_CLI_COMMAND(perplexity,
    "perplexity -m MODEL -f TEXT [-c N_CTX] [-b N_BATCH] [-t THREADS] [--ctk f16|f32] [--device LIST] [--trace FILE] [--trace-dump PATTERN] [--trace-hash all|computed|none] [--poison]",
    "perplexity of a text file (llama.cpp's method; result line 'perplexity: X')")

// Reads a whole file into a NUL-terminated buffer; NULL (message printed) on failure.
static char * read_text(const char * path, size_t * len) {
    FILE * f = fopen(path, "rb");
    if (!f) { tg_cli_err("perplexity: cannot open %s: %s", path, strerror(errno)); return NULL; }
    size_t cap = 1 << 16, n = 0;
    char * buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char * nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf || err) { free(buf); tg_cli_err("perplexity: cannot read %s", path); return NULL; }
    buf[n] = 0;
    *len = n;
    return buf;
}

static void progress(int chunk, int n_chunks, double ppl, double seconds, void * user) {
    (void) user;
    fprintf(stderr, "[%d/%d] %.4f (%.2f s)\n", chunk + 1, n_chunks, ppl, seconds);
}

static int cmd_perplexity(int argc, char ** argv) {
    const char * model_path = NULL, * text_path = NULL, * trace = NULL, * trace_dump = NULL, * trace_hash = NULL, * devices = NULL;
    int n_ctx = 512, n_batch = 0, n_threads = 4;
    bool kv_f32 = false, poison = false;
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        if (!strcmp(a, "--poison")) { poison = true; continue; }
        if (i + 1 >= argc) return tg_cli_err("perplexity: option %s needs a value (see 'tgdb help perplexity')", a);
        const char * v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) text_path = v;
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) ok = tg_cli_parse_int(v, 4, 1 << 20, &n_ctx);
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) ok = tg_cli_parse_int(v, 1, 1 << 20, &n_batch);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = tg_cli_parse_int(v, 1, 512, &n_threads);
        else if (!strcmp(a, "--ctk")) { kv_f32 = !strcmp(v, "f32"); ok = kv_f32 || !strcmp(v, "f16"); }
        else if (!strcmp(a, "-dev") || !strcmp(a, "--device")) devices = v;
        else if (!strcmp(a, "--trace")) trace = v;
        else if (!strcmp(a, "--trace-dump")) trace_dump = v;
        else if (!strcmp(a, "--trace-hash")) trace_hash = v;
        else return tg_cli_err("perplexity: unknown option '%s' (see 'tgdb help perplexity')", a);
        if (!ok) return tg_cli_err("perplexity: bad value '%s' for %s", v, a);
    }
    if (!model_path) return tg_cli_err("perplexity: no model (-m MODEL)");
    if (!text_path) return tg_cli_err("perplexity: no text file (-f TEXT)");
    if (trace_dump && !trace) return tg_cli_err("perplexity: --trace-dump needs --trace FILE");
    if (trace_hash && !trace) return tg_cli_err("perplexity: --trace-hash needs --trace FILE");
    struct tg_trace_options probe = tg_trace_default_options();
    if (trace_hash && !tg_trace_set_hash_mode(&probe, trace_hash))
        return tg_cli_err("perplexity: --trace-hash '%s': expected all, computed or none", trace_hash);
    size_t len = 0;
    char * text = read_text(text_path, &len);
    if (!text) return TG_CLI_ERROR;
    int rc = TG_CLI_ERROR;
    struct tg_llama_context * ctx = NULL;
    const struct tg_vocab * vocab = NULL;
    int32_t * ids = NULL;
    struct tg_trace_recorder * rec = NULL;
    struct tg_llama_model * model = tg_llama_model_load(model_path, NULL);
    if (!model) { tg_cli_err("perplexity: %s", tg_last_error()); goto done; }
    vocab = tg_llama_model_vocab(model);
    if (!vocab) { tg_cli_err("perplexity: %s", tg_last_error()); goto done; }
    int32_t n = tg_vocab_tokenize(vocab, text, len, NULL, 0, true, false);
    if (n == TG_VOCAB_ERROR) { tg_cli_err("perplexity: cannot tokenize %s: %s", text_path, tg_last_error()); goto done; }
    if (n < 0) n = -n;
    ids = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    if (!ids) { tg_cli_err("perplexity: out of memory"); goto done; }
    n = tg_vocab_tokenize(vocab, text, len, ids, n, true, false);
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch ? n_batch : n_ctx;
    cp.n_ubatch = cp.n_batch;
    cp.n_threads = n_threads;
    cp.devices = devices;
    if (kv_f32) cp.type_k = cp.type_v = TG_TYPE_F32;
    if (n < n_ctx) {
        tg_cli_err("perplexity: %s has %d tokens, fewer than the context size %d (-c)", text_path, n, n_ctx);
        goto done;
    }
    if (poison && tg_trace_set_poison(true) != TG_OK) { tg_cli_err("perplexity: --poison: %s", tg_last_error()); goto done; }
    if (trace) {
        struct tg_trace_options topt = tg_trace_default_options();
        topt.contents = trace_dump;
        if (trace_hash) tg_trace_set_hash_mode(&topt, trace_hash);
        topt.note = "tgdb perplexity";
        rec = tg_trace_attach(NULL, trace, &topt);
        if (!rec) { tg_cli_err("perplexity: %s", tg_last_error()); goto done; }
    }
    ctx = tg_llama_context_new(model, &cp);
    if (!ctx) { tg_cli_err("perplexity: %s", tg_last_error()); goto done; }
    fprintf(stderr, "perplexity: %d tokens, %d chunks of %d\n", n, n / n_ctx, n_ctx);
    struct tg_llama_ppl_result res;
    if (tg_llama_perplexity(ctx, ids, n, progress, NULL, &res) != TG_OK) {
        tg_cli_err("%s", tg_last_error());
        goto done;
    }
    printf("perplexity: %.6f chunks %d tokens %d\n", res.ppl, res.n_chunks, res.n_tokens);
    fprintf(stderr, "mean NLL %.6f +/- %.6f over %d predictions\n", res.nll, res.nll_stderr, res.n_scored);
    rc = 0;
done:
    if (rec && tg_trace_detach(rec) != TG_OK && rc == 0) rc = tg_cli_err("perplexity: trace %s: %s", trace, tg_last_error());
    tg_llama_context_free(ctx);
    tg_llama_model_free(model);
    free(ids);
    free(text);
    return rc;
}
