// cmd_bench.c - `tgdb bench`: prompt processing and generation speed, as
// llama-bench measures them: pp<P> decodes P random tokens in one batch from
// an empty cache; tg<N> decodes N tokens one at a time from an empty cache.
//   pp256: 123.45 tok/s
//   tg64: 45.67 tok/s
#include "cli.h"
#include "tg/llama.h"
#include "tg/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TG_CLI_COMMAND(bench,
    "bench -m MODEL [-p N_PROMPT] [-n N_GEN] [-t THREADS] [-r REPS] [--ctk f16|f32] [--device LIST] [--trace FILE] [--trace-dump PATTERN] [--trace-hash all|computed|none] [--poison]",
    "measure prompt processing (pp) and generation (tg) speed in tokens/s")

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

// Best of `reps` runs; returns tokens/s or -1 (error printed).
static double bench_pp(struct tg_llama_context * ctx, const int32_t * toks, int n, int reps) {
    double best = 0.0;
    for (int r = 0; r < reps; r++) {
        tg_llama_kv_clear(ctx);
        double t0 = now_s();
        if (tg_llama_decode(ctx, toks, n, 0) != TG_OK) return tg_cli_err("bench: %s", tg_last_error()), -1.0;
        double tps = n / (now_s() - t0);
        if (tps > best) best = tps;
    }
    return best;
}

static double bench_tg(struct tg_llama_context * ctx, const int32_t * toks, int n, int reps) {
    double best = 0.0;
    for (int r = 0; r < reps; r++) {
        tg_llama_kv_clear(ctx);
        double t0 = now_s();
        for (int i = 0; i < n; i++)
            if (tg_llama_decode(ctx, toks + i, 1, i) != TG_OK) return tg_cli_err("bench: %s", tg_last_error()), -1.0;
        double tps = n / (now_s() - t0);
        if (tps > best) best = tps;
    }
    return best;
}

static int cmd_bench(int argc, char ** argv) {
    const char * model_path = NULL, * trace = NULL, * trace_dump = NULL, * trace_hash = NULL, * devices = NULL;
    int n_prompt = 512, n_gen = 128, n_threads = 4, reps = 1;
    bool kv_f32 = false, poison = false;
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        if (!strcmp(a, "--poison")) { poison = true; continue; }
        if (i + 1 >= argc) return tg_cli_err("bench: option %s needs a value (see 'tgdb help bench')", a);
        const char * v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) ok = tg_cli_parse_int(v, 0, 1 << 16, &n_prompt);
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) ok = tg_cli_parse_int(v, 0, 1 << 16, &n_gen);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = tg_cli_parse_int(v, 1, 512, &n_threads);
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) ok = tg_cli_parse_int(v, 1, 1000, &reps);
        else if (!strcmp(a, "--ctk")) { kv_f32 = !strcmp(v, "f32"); ok = kv_f32 || !strcmp(v, "f16"); }
        else if (!strcmp(a, "-dev") || !strcmp(a, "--device")) devices = v;
        else if (!strcmp(a, "--trace")) trace = v;
        else if (!strcmp(a, "--trace-dump")) trace_dump = v;
        else if (!strcmp(a, "--trace-hash")) trace_hash = v;
        else return tg_cli_err("bench: unknown option '%s' (see 'tgdb help bench')", a);
        if (!ok) return tg_cli_err("bench: bad value '%s' for %s", v, a);
    }
    if (!model_path) return tg_cli_err("bench: no model (-m MODEL)");
    if (n_prompt + n_gen < 1) return tg_cli_err("bench: nothing to measure (-p 0 -n 0)");
    if (trace_dump && !trace) return tg_cli_err("bench: --trace-dump needs --trace FILE");
    if (trace_hash && !trace) return tg_cli_err("bench: --trace-hash needs --trace FILE");
    struct tg_trace_options probe = tg_trace_default_options();
    if (trace_hash && !tg_trace_set_hash_mode(&probe, trace_hash))
        return tg_cli_err("bench: --trace-hash '%s': expected all, computed or none", trace_hash);
    struct tg_llama_model * model = tg_llama_model_load(model_path, NULL);
    if (!model) return tg_cli_err("bench: %s", tg_last_error());
    const struct tg_llama_hparams * h = tg_llama_model_hparams(model);
    int n_max = n_prompt > n_gen ? n_prompt : n_gen;
    int32_t * toks = malloc(sizeof(int32_t) * (size_t) n_max);
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = n_max;
    cp.n_batch = cp.n_ubatch = n_max;
    cp.n_threads = n_threads;
    cp.devices = devices;
    if (kv_f32) cp.type_k = cp.type_v = TG_TYPE_F32;
    struct tg_trace_recorder * rec = NULL;
    if (poison && tg_trace_set_poison(true) != TG_OK) {
        tg_cli_err("bench: --poison: %s", tg_last_error());
        tg_llama_model_free(model);
        free(toks);
        return TG_CLI_ERROR;
    }
    if (trace) {  // timings then include the recorder's cost
        struct tg_trace_options topt = tg_trace_default_options();
        topt.contents = trace_dump;
        if (trace_hash) tg_trace_set_hash_mode(&topt, trace_hash);
        topt.note = "tgdb bench";
        rec = tg_trace_attach(NULL, trace, &topt);
        if (!rec) { tg_cli_err("bench: %s", tg_last_error()); tg_llama_model_free(model); free(toks); return TG_CLI_ERROR; }
    }
    struct tg_llama_context * ctx = toks ? tg_llama_context_new(model, &cp) : NULL;
    int rc = TG_CLI_ERROR;
    if (!ctx) { tg_cli_err("bench: %s", toks ? tg_last_error() : "out of memory"); goto done; }
    uint64_t x = 12345;
    for (int i = 0; i < n_max; i++) {  // fixed pseudo-random tokens
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t) ((x >> 33) % (uint64_t) h->n_vocab);
    }
    printf("model: %s, %.1fM params, %s, %.1f MiB; %d threads\n", model_path, tg_llama_model_n_params(model) / 1e6,
           tg_type_name(tg_llama_model_weight_type(model)), tg_llama_model_size(model) / 1048576.0, n_threads);
    if (tg_llama_decode(ctx, toks, n_max < 8 ? n_max : 8, 0) != TG_OK) {  // warm-up
        tg_cli_err("bench: %s", tg_last_error());
        goto done;
    }
    if (n_prompt > 0) {
        double tps = bench_pp(ctx, toks, n_prompt, reps);
        if (tps < 0) goto done;
        printf("pp%d: %.2f tok/s\n", n_prompt, tps);
    }
    if (n_gen > 0) {
        double tps = bench_tg(ctx, toks, n_gen, reps);
        if (tps < 0) goto done;
        printf("tg%d: %.2f tok/s\n", n_gen, tps);
    }
    rc = 0;
done:
    if (rec && tg_trace_detach(rec) != TG_OK && rc == 0) rc = tg_cli_err("bench: trace %s: %s", trace, tg_last_error());
    tg_llama_context_free(ctx);
    tg_llama_model_free(model);
    free(toks);
    return rc;
}
