// cmd_bench.c - `tgdb bench`: prompt processing and generation speed, as
// llama-bench measures them: pp<P> decodes P random tokens in one batch,
// tg<N> decodes N tokens one at a time, both after DEPTH tokens already in
// the KV cache (-d; filled untimed before each repetition). Each test runs
// -r times; the line gives the mean and the standard deviation:
//   pp256: 123.45 ± 1.23 tok/s
//   tg64 @ d1024: 45.67 ± 0.89 tok/s
// -p, -n, -d, -t and -fa take comma lists (every combination is measured).
// After the tests, each generation test's weight traffic (tokens/s x the
// weights a token reads) next to the memory bandwidth it is bound by: the
// GPU's copy bandwidth with layers on a GPU, else this host's read
// bandwidth measured with the test's thread count.
#include "cli.h"
#include "json.h"
#include "runopts.h"
#include "tg/backend.h"
#include "tg/cpu.h"
#include "tg/llama.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bench_opts {
    struct tg_cli_run_opts run;
    struct tg_cli_ints n_prompt, n_gen, depth, threads, fa;
    int reps;
    bool json, no_warmup;
};

#define BEN(f) offsetof(struct bench_opts, f)
static const struct tg_cli_opt bench_table[] = {
    { .name = "--n-prompt", .short_name = "-p", .value = "N[,N..]", .kind = TG_CLI_INTS, .off = BEN(n_prompt), .lo = 0, .hi = 1 << 16,
      .help = "prompt tests: decode N tokens in one batch (0 = none)" },
    { .name = "--n-gen", .short_name = "-n", .value = "N[,N..]", .kind = TG_CLI_INTS, .off = BEN(n_gen), .lo = 0, .hi = 1 << 16,
      .help = "generation tests: decode N tokens one at a time (0 = none)" },
    { .name = "--n-depth", .short_name = "-d", .value = "D[,D..]", .kind = TG_CLI_INTS, .off = BEN(depth), .lo = 0, .hi = 1 << 20,
      .help = "tokens already in the KV cache before each test (filled untimed)" },
    { .name = "--threads", .short_name = "-t", .value = "N[,N..]", .kind = TG_CLI_INTS, .off = BEN(threads), .lo = 1, .hi = 512,
      .help = "CPU threads; by default one a core of the CPUs this process may use" },
    { .name = "--flash-attn", .short_name = "-fa", .value = "MODE[,..]", .kind = TG_CLI_CHOICES, .off = BEN(fa),
      .choices = TG_CLI_FA_CHOICES, .help = "attention path per test: on = fused FLASH_ATTN_EXT, off = kq/kq_soft_max/kqv nodes, auto" },
    { .name = "--repetitions", .short_name = "-r", .value = "N", .kind = TG_CLI_INT, .off = BEN(reps), .lo = 1, .hi = 1000,
      .help = "runs of each test (mean and standard deviation over them)" },
    { .name = "--no-warmup", .kind = TG_CLI_FLAG, .off = BEN(no_warmup),
      .help = "skip each test's unmeasured first run (its prompt at its depth, or one generated token), as llama-bench's --no-warmup" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = BEN(json),
      .help = "print the results as one JSON object (llama-bench's field names: avg_ts, stddev_ts, samples_ts)" },
    { .name = "run options", .kind = TG_CLI_TABLE, .off = BEN(run), .table = tg_cli_run_table },
    { 0 },
};

static void bench_defaults(struct bench_opts * o) {
    *o = (struct bench_opts) {
        .n_prompt = { .n = 1, .v = { 512 } }, .n_gen = { .n = 1, .v = { 128 } }, .depth = { .n = 1, .v = { 0 } },
        .threads = { .n = 1, .v = { tg_cpu_default_threads() } }, .fa = { .n = 1, .v = { TG_CLI_FA_AUTO } }, .reps = 3,
    };
    tg_cli_run_defaults(&o->run);
}

TG_CLI_COMMAND_OPTS(bench, "bench -m MODEL [-p N] [-n N] [-d DEPTH] [-t N] [-r REPS] [OPTIONS]",
    "measure prompt processing (pp) and generation (tg) speed in tokens/s (mean ± standard deviation)",
    bench_table, struct bench_opts, bench_defaults)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

// One test: n_prompt tokens in one batch or n_gen one at a time, at depth.
struct test {
    int n_prompt, n_gen, depth, threads, fa;
    double * samples;   // [reps] tokens/s of each repetition
    int n;
    double mean, sd;
    bool probe;         // CPU-only generation: the host's read bandwidth after each repetition
    double * bw;        // [reps] with probe: GB/s measured after repetition i (with `threads`)
    double read_gbs;    // their mean (0: not measured)
    char bw_err[256];   // why not
};

// Clears the cache and fills it with `depth` tokens (untimed), in batches
// of at most n_batch.
static int fill_depth(struct tg_llama_context * ctx, const int32_t * toks, int depth, int n_batch) {
    tg_llama_kv_clear(ctx);
    for (int p = 0; p < depth; p += n_batch) {
        int n = depth - p < n_batch ? depth - p : n_batch;
        if (tg_llama_decode(ctx, toks + p, n, p) != TG_OK) return tg_cli_err("bench: filling depth %d: %s", depth, tg_last_error());
    }
    return 0;
}

// The host read bandwidth a CPU generation test is compared with: sums over
// 256 MiB (DRAM, not the caches) with the test's thread count, median of 3
// passes, measured after every repetition (a shared machine's bandwidth
// moves by tens of percent within minutes, and by ~10% from one second to
// the next: a figure taken at another time says little about the test's).
#define BENCH_BW_BYTES ((size_t) 256 << 20)

// Runs t->n repetitions of a test; tokens/s of each into t->samples
// (with t->probe, the read bandwidth after each into t->bw).
// First, unless no_warmup, one unmeasured run of the test's shape (its
// prompt, or one generated token, at its depth), as llama-bench does: the
// first batch of a size sets up what later ones reuse (a compute buffer that
// size, a backend's kernels and workspaces: CUDA pp512 with fa on had a
// standard deviation half its mean without it).
static int run_test(struct tg_llama_context * ctx, const int32_t * toks, struct test * t, int reps, int n_batch, bool progress,
                    bool no_warmup) {
    const int32_t * in = toks + t->depth;   // the measured tokens follow the depth tokens
    if (!no_warmup) {
        if (progress) fprintf(stderr, "bench: %s%d @ d%d, t=%d: warm-up\n", t->n_prompt ? "pp" : "tg",
                              t->n_prompt ? t->n_prompt : t->n_gen, t->depth, t->threads);
        if (fill_depth(ctx, toks, t->depth, n_batch)) return TG_CLI_ERROR;
        if (tg_llama_decode(ctx, in, t->n_prompt ? t->n_prompt : 1, t->depth) != TG_OK)
            return tg_cli_err("bench: %s", tg_last_error());
    }
    for (int r = 0; r < reps; r++) {
        if (progress) fprintf(stderr, "bench: %s%d @ d%d, t=%d: repetition %d/%d\n", t->n_prompt ? "pp" : "tg",
                              t->n_prompt ? t->n_prompt : t->n_gen, t->depth, t->threads, r + 1, reps);
        if (fill_depth(ctx, toks, t->depth, n_batch)) return TG_CLI_ERROR;
        double t0 = now_s();
        int n = t->n_prompt ? t->n_prompt : t->n_gen;
        if (t->n_prompt) {
            if (tg_llama_decode(ctx, in, n, t->depth) != TG_OK) return tg_cli_err("bench: %s", tg_last_error());
        } else {
            for (int i = 0; i < n; i++)
                if (tg_llama_decode(ctx, in + i, 1, t->depth + i) != TG_OK) return tg_cli_err("bench: %s", tg_last_error());
        }
        t->samples[t->n++] = n / (now_s() - t0);
        if (t->probe && !t->bw_err[0]) {
            const double bw = tg_cpu_read_bandwidth(t->threads, BENCH_BW_BYTES, 3);
            if (bw > 0) t->bw[t->n - 1] = bw;
            else snprintf(t->bw_err, sizeof(t->bw_err), "%s", tg_last_error());
        }
    }
    t->read_gbs = 0.0;
    if (t->probe && !t->bw_err[0] && t->n > 0) {
        for (int i = 0; i < t->n; i++) t->read_gbs += t->bw[i] / t->n;
    }
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < t->n; i++) sum += t->samples[i];
    t->mean = sum / t->n;
    for (int i = 0; i < t->n; i++) sq += (t->samples[i] - t->mean) * (t->samples[i] - t->mean);
    t->sd = t->n > 1 ? sqrt(sq / (t->n - 1)) : 0.0;
    return 0;
}

static const char * fa_name(int fa) { return fa == TG_CLI_FA_ON ? "on" : fa == TG_CLI_FA_OFF ? "off" : "auto"; }

static void print_text(const struct bench_opts * o, const struct test * t) {
    printf("%s%d", t->n_prompt ? "pp" : "tg", t->n_prompt ? t->n_prompt : t->n_gen);
    if (t->depth) printf(" @ d%d", t->depth);
    if (o->threads.n > 1) printf(" t=%d", t->threads);
    if (o->fa.n > 1) printf(" fa=%s", fa_name(t->fa));
    if (t->n > 1) printf(": %.2f ± %.2f tok/s\n", t->mean, t->sd);
    else printf(": %.2f tok/s\n", t->mean);
}

// With layers on a GPU: each generation test's weight traffic (the GPU's
// weights read once per token) next to the GPU's measured memory bandwidth.
static void print_gpu_bandwidth(const struct tg_llama_model * model, const struct test * tests, int n) {
    const size_t wb = tg_llama_model_gpu_bytes(model);
    struct tg_device * dev = tg_llama_model_gpu_device(model);
    if (!wb || !dev) return;
    const double bw = tg_device_copy_bandwidth(dev, (size_t) 512 << 20);
    if (bw <= 0) { printf("%s: memory bandwidth not measured: %s\n", tg_device_name(dev), tg_last_error()); return; }
    printf("%s: %.1f MiB of weights; measured memory bandwidth %.0f GB/s (copies, read+write)\n", tg_device_name(dev),
           wb / 1048576.0, bw);
    for (int i = 0; i < n; i++) {
        const struct test * t = &tests[i];
        if (t->n_prompt || !t->n_gen) continue;
        const double gbs = t->mean * (double) wb / 1e9;
        printf("tg%d", t->n_gen);
        if (t->depth) printf(" @ d%d", t->depth);
        printf(" fa=%s: %.1f GB/s of weights = %.1f%% of %.0f GB/s\n", fa_name(t->fa), gbs, 100.0 * gbs / bw, bw);
    }
}

// The KV cache a generation test's tokens attend to, bytes per token on
// average: token i sits at position depth + i and reads the keys and values
// of depth + i + 1 cells (kv_cell: bytes of one cell over all layers). The
// cells past them up to the cache's padding are read too and not counted.
static double kv_bytes_per_token(const struct test * t, double kv_cell) {
    return t->n_gen ? kv_cell * (t->depth + (t->n_gen + 1) / 2.0) : 0.0;
}

// CPU only: the weights a token reads, and each generation test's weight
// traffic as a share of the host's read bandwidth with the same threads;
// with a context (-d, or long tests), the same with the KV cache read too.
static void print_cpu_bandwidth(const struct bench_opts * o, const struct tg_llama_model * model, struct test * tests, int n,
                                double kv_cell) {
    const size_t wb = tg_llama_model_bytes_per_token(model);
    bool any = false;
    for (int i = 0; i < n; i++) any = any || tests[i].n_gen;
    if (!wb || !any) return;
    printf("CPU: %.1f MiB of weights read per generated token; %% = their GB/s (tokens/s x bytes) over this host's "
           "read bandwidth with the test's threads, measured after each repetition (mean); \"+ KV\": the weights and the KV cache "
           "the tokens attend to (%.1f KiB a cell)\n", wb / 1048576.0, kv_cell / 1024.0);
    for (int i = 0; i < n; i++) {
        struct test * t = &tests[i];
        if (!t->n_gen) continue;
        const double bw = t->read_gbs, gbs = t->mean * (double) wb / 1e9;
        const double kvb = kv_bytes_per_token(t, kv_cell), all = t->mean * ((double) wb + kvb) / 1e9;
        printf("tg%d", t->n_gen);
        if (t->depth) printf(" @ d%d", t->depth);
        if (o->threads.n > 1) printf(" t=%d", t->threads);
        if (bw <= 0) {
            printf(" fa=%s: %.1f GB/s of weights; read bandwidth not measured: %s\n", fa_name(t->fa), gbs,
                   t->bw_err[0] ? t->bw_err : "no repetition");
            continue;
        }
        printf(" fa=%s: %.1f GB/s of weights = %.1f%% of %.1f GB/s (sums over %zu MiB, %d thread%s)", fa_name(t->fa), gbs,
               100.0 * gbs / bw, bw, BENCH_BW_BYTES >> 20, t->threads, t->threads == 1 ? "" : "s");
        if (t->depth || kvb >= 0.01 * (double) wb) {   // a context worth a second figure
            const bool mib = kvb >= 1048576.0;
            printf("; + KV (%.1f %s a token): %.1f GB/s = %.1f%%", kvb / (mib ? 1048576.0 : 1024.0), mib ? "MiB" : "KiB", all,
                   100.0 * all / bw);
        }
        printf("\n");
    }
}

static void print_json(const struct bench_opts * o, const struct tg_llama_model * model, struct test * tests, int n,
                       double kv_cell) {
    printf("{\"model\": ");
    tg_json_write_string(stdout, o->run.model, strlen(o->run.model));
    const char * type = tg_type_name(tg_llama_model_weight_type(model));
    printf(", \"model_type\": ");
    tg_json_write_string(stdout, type, strlen(type));
    size_t packed = 0;
    const int n_packed = tg_llama_model_n_packed(model, &packed);
    printf(", \"model_n_params\": %lld, \"model_size\": %llu, \"weights_bytes_per_token\": %llu, "
           "\"packed_weights\": %d, \"packed_bytes\": %llu, \"results\": [",
           (long long) tg_llama_model_n_params(model), (unsigned long long) tg_llama_model_size(model),
           (unsigned long long) tg_llama_model_bytes_per_token(model), n_packed, (unsigned long long) packed);
    for (int i = 0; i < n; i++) {
        struct test * t = &tests[i];
        printf("%s{\"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"n_threads\": %d, \"flash_attn\": \"%s\", "
               "\"repetitions\": %d, \"avg_ts\": %.6f, \"stddev_ts\": %.6f, \"samples_ts\": [",
               i ? ", " : "", t->n_prompt, t->n_gen, t->depth, t->threads, fa_name(t->fa), t->n, t->mean, t->sd);
        for (int k = 0; k < t->n; k++) printf("%s%.6f", k ? ", " : "", t->samples[k]);
        printf("]");
        if (t->n_gen) printf(", \"kv_bytes_per_token\": %.0f", kv_bytes_per_token(t, kv_cell));
        if (t->n_gen && !tg_llama_model_gpu_bytes(model)) {   // CPU generation: the host's read bandwidth, same threads
            const double bw = t->read_gbs;
            if (bw > 0) {
                printf(", \"read_bandwidth_gbs\": %.3f, \"read_bandwidth_samples_gbs\": [", bw);
                for (int k = 0; k < t->n; k++) printf("%s%.3f", k ? ", " : "", t->bw[k]);
                printf("]");
            } else {
                printf(", \"read_bandwidth_gbs\": null");
            }
        }
        printf("}");
    }
    printf("]}\n");
}

// The tests in llama-bench's order: for each thread count and -fa value,
// every pp then every tg, each at every depth.
#define BENCH_MAX_TESTS 1024
static int plan(const struct bench_opts * o, struct test ** out) {
    int cap = o->threads.n * o->fa.n * (o->n_prompt.n + o->n_gen.n) * o->depth.n, n = 0;
    if (cap > BENCH_MAX_TESTS)
        return tg_cli_err("bench: the lists make %d tests; at most %d (shorten -p, -n, -d, -t or -fa)", cap, BENCH_MAX_TESTS), -1;
    struct test * t = calloc((size_t) (cap ? cap : 1), sizeof *t);
    double * samples = calloc((size_t) (cap ? cap : 1) * (size_t) o->reps * 2, sizeof *samples);   // and bw
    if (!t || !samples) { free(t); free(samples); return tg_cli_err("bench: out of memory"), -1; }
    for (int ti = 0; ti < o->threads.n; ti++)
        for (int fi = 0; fi < o->fa.n; fi++)
            for (int kind = 0; kind < 2; kind++) {
                const struct tg_cli_ints * l = kind ? &o->n_gen : &o->n_prompt;
                for (int i = 0; i < l->n; i++)
                    for (int d = 0; d < o->depth.n; d++) {
                        if (l->v[i] == 0) continue;
                        t[n] = (struct test) { .n_prompt = kind ? 0 : l->v[i], .n_gen = kind ? l->v[i] : 0,
                                               .depth = o->depth.v[d], .threads = o->threads.v[ti], .fa = o->fa.v[fi],
                                               .samples = samples + (size_t) n * (size_t) o->reps,
                                               .bw = samples + ((size_t) cap + (size_t) n) * (size_t) o->reps };
                        n++;
                    }
            }
    if (n == 0) free(samples);
    *out = t;
    return n;
}

static void free_tests(struct test * t, int n) {
    if (t && n > 0) free(t[0].samples);   // one block for every test
    free(t);
}

static int cmd_bench(int argc, char ** argv) {
    struct bench_opts o;
    bench_defaults(&o);
    if (tg_cli_parse_opts("bench", bench_table, &o, argc, argv, NULL, 0, NULL)) return TG_CLI_ERROR;
    o.run.n_threads = o.threads.v[0];
    if (tg_cli_run_validate("bench", &o.run)) return TG_CLI_ERROR;
    struct test * tests = NULL;
    int n_tests = plan(&o, &tests);
    if (n_tests < 0) return TG_CLI_ERROR;
    if (n_tests == 0) { free_tests(tests, 0); return tg_cli_err("bench: nothing to measure (-p 0 -n 0)"); }
    int n_max = 1, d_max = 0, n_batch = 1;   // sizes over every test: one context fits them all
    for (int i = 0; i < n_tests; i++) {
        int n = tests[i].n_prompt + tests[i].n_gen;
        if (tests[i].depth + n > n_max) n_max = tests[i].depth + n;
        if (tests[i].depth > d_max) d_max = tests[i].depth;
        if (tests[i].n_prompt > n_batch) n_batch = tests[i].n_prompt;
    }
    // the depth is filled in batches (as the reference's llama-bench does): one
    // token per decode made -d 4096 minutes of untimed filling
    if (d_max > n_batch) n_batch = d_max < 512 ? d_max : 512;
    if (o.run.n_batch) n_batch = o.run.n_batch;
    int rc = TG_CLI_ERROR;
    int32_t * toks = malloc(sizeof(int32_t) * (size_t) n_max);
    struct tg_cli_run r;
    if (tg_cli_run_open(&r, "bench", &o.run)) goto done;
    if (!toks) { tg_cli_err("bench: out of memory"); goto done; }
    const struct tg_llama_hparams * h = tg_llama_model_hparams(r.model);
    uint64_t x = 12345;
    for (int i = 0; i < n_max; i++) {  // fixed pseudo-random tokens
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t) ((x >> 33) % (uint64_t) h->n_vocab);
    }
    struct tg_llama_context_params cp = tg_cli_run_params(&o.run);
    cp.n_ctx = o.run.n_ctx ? o.run.n_ctx : n_max;
    if (cp.n_ctx < n_max) { tg_cli_err("bench: -c %d is smaller than the largest test (%d tokens with its depth)", cp.n_ctx, n_max); goto done; }
    cp.n_batch = n_batch;
    if (!o.run.n_ubatch) cp.n_ubatch = n_batch;
    bool progress = tg_cli_run_progress(&o.run);
    if (!o.json) {
        size_t packed = 0;
        const int n_packed = tg_llama_model_n_packed(r.model, &packed);
        printf("model: %s, %.1fM params, %s, %.1f MiB; %d threads", o.run.model, tg_llama_model_n_params(r.model) / 1e6,
               tg_type_name(tg_llama_model_weight_type(r.model)), tg_llama_model_size(r.model) / 1048576.0, o.threads.v[0]);
        if (n_packed) printf("; %d matrices packed for the CPU (+%.1f MiB)", n_packed, packed / 1048576.0);
        printf("\n");
    }
    for (int i = 0; i < n_tests; i++) {
        struct test * t = &tests[i];
        if (!r.ctx || t->threads != (int) cp.n_threads || t->fa != (int) cp.flash_attn) {   // a context per thread count and -fa
            cp.n_threads = t->threads;
            tg_cli_note_threads("bench", t->threads);
            cp.flash_attn = (enum tg_llama_flash_attn) t->fa;
            if (!r.ctx) {
                if (tg_cli_run_context(&r, &cp, "tgdb bench")) goto done;
            } else {
                tg_llama_context_free(r.ctx);
                r.ctx = tg_llama_context_new(r.model, &cp);
                if (!r.ctx) { tg_cli_err("bench: %s", tg_last_error()); goto done; }
            }
        }
        t->probe = t->n_gen && !tg_llama_model_gpu_bytes(r.model);   // CPU generation: the host's bandwidth beside it
        if (run_test(r.ctx, toks, t, o.reps, n_batch, progress, o.no_warmup)) goto done;
        if (!o.json) { print_text(&o, t); fflush(stdout); }
    }
    const double kv_cell = r.ctx ? (double) tg_llama_stats(r.ctx).kv_bytes / (double) cp.n_ctx : 0.0;
    if (o.json) print_json(&o, r.model, tests, n_tests, kv_cell);
    else if (tg_llama_model_gpu_bytes(r.model)) print_gpu_bandwidth(r.model, tests, n_tests);
    else print_cpu_bandwidth(&o, r.model, tests, n_tests, kv_cell);
    rc = 0;
done:
    free_tests(tests, n_tests);
    free(toks);
    return tg_cli_run_close(&r, rc);
}
