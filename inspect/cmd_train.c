// cmd_train.c - `tgdb train -m MODEL -f TEXT [--steps N] [--ctx N] [--batch N]
// [--lr X] [--schedule constant|cosine] [--lr-min X] [--warmup N] [--seed S]
// [-t N] [-dev LIST] [--trace FILE] [-o OUT.gguf] [--json]`: trains F32
// copies of a llama model's weights on a text with next-token cross-entropy
// and AdamW (tg_llama_trainer), printing the loss and gradient norm of every
// step, and writes the trained model as GGUF. Each step reads --batch windows
// of ctx + 1 tokens of the text, chosen by a generator seeded with --seed, so
// a run is reproducible bit for bit for a seed and thread count. --trace
// records every step's graph (forward, gradients, optimizer) with the
// gradient links and a "train" marker per step.
#include "cli.h"
#include "fx.h"
#include "runopts.h"
#include "tg/llama.h"
#include "tg/vocab.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct train_opts {
    struct tg_cli_run_opts run;   // model, threads, devices, tracing, poison, progress
    const char * text, * out;
    int steps, ctx, batch, seed, warmup, schedule;
    double lr, lr_min;
    bool json, debug_grad_of_grad;
};

#define TRO(f) offsetof(struct train_opts, f)
static const struct tg_cli_opt train_table[] = {
    { .name = "--model", .short_name = "-m", .value = "FILE", .kind = TG_CLI_STR, .off = TRO(run.model),
      .help = "the llama model to start from (any weight type; trained as F32)" },
    { .name = "--file", .short_name = "-f", .value = "TEXT", .kind = TG_CLI_STR, .off = TRO(text),
      .help = "the training text (tokenized with the model's vocabulary)" },
    { .name = "--steps", .value = "N", .kind = TG_CLI_INT, .off = TRO(steps), .lo = 1, .hi = 1000000,
      .help = "optimizer steps (default 50)" },
    { .name = "--ctx", .short_name = "-c", .value = "N", .kind = TG_CLI_INT, .off = TRO(ctx), .lo = 2, .hi = 4096,
      .help = "tokens per training sequence (default 64)" },
    { .name = "--batch", .short_name = "-b", .value = "N", .kind = TG_CLI_INT, .off = TRO(batch), .lo = 1, .hi = 256,
      .help = "sequences per step, in one graph (default 1; ctx x batch at most 8192)" },
    { .name = "--lr", .value = "X", .kind = TG_CLI_DOUBLE, .off = TRO(lr), .lo = 0, .hi = 10, .open_lo = true,
      .help = "AdamW learning rate (default 0.001)" },
    { .name = "--schedule", .value = "NAME", .kind = TG_CLI_CHOICE, .off = TRO(schedule), .choices = "constant|cosine",
      .help = "learning-rate schedule after the warm-up: constant, or cosine from --lr to --lr-min over --steps (default constant)" },
    { .name = "--lr-min", .value = "X", .kind = TG_CLI_DOUBLE, .off = TRO(lr_min), .lo = 0, .hi = 10,
      .help = "the rate the cosine schedule ends at (default 0)" },
    { .name = "--warmup", .value = "N", .kind = TG_CLI_INT, .off = TRO(warmup), .lo = 0, .hi = 1000000,
      .help = "steps of linear warm-up from 0 to --lr (default 0)" },
    { .name = "--seed", .value = "S", .kind = TG_CLI_INT, .off = TRO(seed), .lo = 0, .hi = 2147483647.0,
      .help = "which windows of the text the steps read (default 1)" },
    { .name = "--threads", .short_name = "-t", .value = "N", .kind = TG_CLI_INT, .off = TRO(run.n_threads), .lo = 1, .hi = 512,
      .help = "CPU threads (default 2)" },
    { .name = "--device", .short_name = "-dev", .value = "LIST", .kind = TG_CLI_STR, .off = TRO(run.devices),
      .help = "backends in priority order, e.g. BLAS,CPU (default CPU; see tgdb devices)" },
    { .name = "--output", .short_name = "-o", .value = "OUT.gguf", .kind = TG_CLI_STR, .off = TRO(out),
      .help = "write the trained model here (F32 GGUF that generate and the other tools load)" },
    { .name = "--trace", .value = "FILE", .kind = TG_CLI_STR, .off = TRO(run.trace),
      .help = "record every step's graph (forward, gradients, optimizer), the gradient links and a marker per step" },
    { .name = "--trace-dump", .value = "PATTERN", .kind = TG_CLI_STR, .off = TRO(run.trace_dump),
      .help = "store the full contents of the nodes matching PATTERN (needs --trace)" },
    { .name = "--trace-hash", .value = "MODE", .kind = TG_CLI_STR, .off = TRO(run.trace_hash),
      .help = "which nodes get content hashes: all, computed or none (needs --trace; default all)" },
    { .name = "--trace-thread", .value = "MODE", .kind = TG_CLI_STR, .off = TRO(run.trace_thread),
      .help = "hash on the recorder's own thread: on, off or auto (when -t leaves a CPU free; needs --trace; "
              "default auto, or TGDB_TRACE_HASH_THREAD)" },
    { .name = "--poison", .kind = TG_CLI_FLAG, .off = TRO(run.poison),
      .help = "fill freed compute memory with NaN so stale reads show" },
    { .name = "--progress", .kind = TG_CLI_FLAG, .off = TRO(run.progress),
      .help = "with --json: a progress line per step on stderr even when it is not a terminal" },
    { .name = "--debug-grad-of-grad", .kind = TG_CLI_FLAG, .off = TRO(debug_grad_of_grad),
      .help = "build the step graph with the classic bug (every gradient gets a gradient of its own) to try tgdb check on it" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = TRO(json), .help = "the steps and the summary as one JSON object" },
    { 0 },
};

static void train_defaults(struct train_opts * o) {
    *o = (struct train_opts) { .steps = 50, .ctx = 64, .batch = 1, .seed = 1, .lr = 1e-3 };
    tg_cli_run_defaults(&o->run);
}

TG_CLI_COMMAND_OPTS(train, "train -m MODEL -f TEXT [--steps N] [--ctx N] [--batch N] [--lr X] [--schedule constant|cosine] "
    "[--lr-min X] [--warmup N] [--seed S] [-t N] [-dev LIST] [--trace FILE] [-o OUT.gguf] [--json]",
    "train a llama model (all weights F32, AdamW, next-token loss) on a text; prints loss and gradient norm per "
    "step and writes the trained model; exit 0 done, 1 the loss became NaN or Inf, 2 usage or input error",
    train_table, struct train_opts, train_defaults)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmd_train(int argc, char ** argv) {
    struct train_opts o;
    train_defaults(&o);
    const char * pos[1];
    int np = 0;
    if (tg_cli_parse_opts("train", train_table, &o, argc, argv, pos, 1, &np) != TG_CLI_OK) return TG_CLI_ERROR;
    if (np) return tg_cli_usage("train");
    if (!o.run.model) return tg_cli_err("train: give the model to start from (-m MODEL)");
    if (!o.text) return tg_cli_err("train: give the training text (-f TEXT)");
    if (tg_cli_run_validate("train", &o.run) != TG_CLI_OK) return TG_CLI_ERROR;
    if ((int64_t) o.ctx * o.batch > 8192) return tg_cli_err("train: --ctx %d x --batch %d is more than 8192 tokens per step", o.ctx, o.batch);
    size_t tlen = 0;
    char * text = tg_cli_read_file("train", o.text, &tlen);
    if (!text) return TG_CLI_ERROR;
    int32_t * toks = NULL, * seqs = NULL;
    float * losses = NULL, * norms = NULL;
    struct tg_llama_trainer * tr = NULL;
    struct tg_cli_run r;
    int rc = tg_cli_run_open(&r, "train", &o.run);
    if (rc != TG_CLI_OK) goto done;
    rc = TG_CLI_ERROR;
    const struct tg_vocab * v = tg_llama_model_vocab(r.model);
    if (!v) { tg_cli_err("train: %s has no usable vocabulary", o.run.model); goto done; }
    const int32_t cap = (int32_t) (tlen + 16);
    toks = malloc((size_t) cap * sizeof(int32_t));
    const int32_t nt = toks ? tg_vocab_tokenize(v, text, tlen, toks, cap, true, false) : -1;
    if (nt < 0) { tg_cli_err("train: cannot tokenize %s: %s", o.text, tg_last_error()); goto done; }
    if (nt < o.ctx + 1)
        { tg_cli_err("train: %s has %d tokens, fewer than --ctx %d + 1 (use a longer text or a smaller --ctx)", o.text, nt, o.ctx); goto done; }
    struct tg_llama_train_params tp = tg_llama_train_default_params();
    tp.n_ctx = o.ctx;
    tp.n_batch = o.batch;
    tp.lr = (float) o.lr;
    tp.lr_min = (float) o.lr_min;
    tp.schedule = o.schedule ? TG_LR_COSINE : TG_LR_CONSTANT;
    tp.n_warmup = o.warmup;
    tp.n_steps = o.steps;
    tp.n_threads = o.run.n_threads;
    tp.devices = o.run.devices;
    tp.debug_grad_of_grad = o.debug_grad_of_grad;
    if (tg_cli_run_observe(&r, "tgdb train") != TG_CLI_OK) goto done;
    tr = tg_llama_trainer_new(r.model, &tp);
    if (!tr) { tg_cli_err("train: %s", tg_last_error()); goto done; }
    losses = malloc((size_t) o.steps * sizeof(float));
    norms = malloc((size_t) o.steps * sizeof(float));
    seqs = malloc((size_t) o.batch * (size_t) (o.ctx + 1) * sizeof(int32_t));
    if (!losses || !norms || !seqs) { tg_cli_err("train: out of memory"); goto done; }
    if (!o.json)
        printf("training %s on %s: %d tokens, %d parameter tensors, %d steps of %d x %d tokens, lr %g (%s), seed %d, %d threads\n",
               o.run.model, o.text, nt, tg_llama_trainer_n_params(tr), o.steps, o.batch, o.ctx, o.lr,
               o.schedule ? "cosine" : "constant", o.seed, o.run.n_threads);
    const bool progress = o.json && (o.run.progress || isatty(2));
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t) o.seed;
    const double t0 = now_s();
    for (int s = 0; s < o.steps; s++) {
        for (int b = 0; b < o.batch; b++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const int32_t start = (int32_t) ((rng >> 33) % (uint64_t) (nt - o.ctx));
            memcpy(seqs + (size_t) b * (size_t) (o.ctx + 1), toks + start, (size_t) (o.ctx + 1) * sizeof(int32_t));
        }
        if (tg_llama_train_step(tr, seqs, &losses[s], &norms[s]) != TG_OK) {
            tg_cli_err("train: step %d: %s", s + 1, tg_last_error());
            goto done;
        }
        const float lr = tg_llama_train_lr(&tp, s + 1);
        if (!o.json) {
            printf("step %d/%d: loss %.4f, grad norm %.4g, lr %.3g (%.1f s)\n", s + 1, o.steps, losses[s], norms[s], lr, now_s() - t0);
            fflush(stdout);
        } else if (progress) {
            fprintf(stderr, "train: step %d/%d loss %.4f\n", s + 1, o.steps, losses[s]);
        }
        if (!isfinite(losses[s])) {
            tg_cli_err("train: step %d: the loss is %g; stopping (trace the run with --trace and run tgdb check on it to find the first NaN)",
                       s + 1, (double) losses[s]);
            rc = TG_CLI_FOUND;
            goto done;
        }
    }
    const double secs = now_s() - t0;
    if (o.out && tg_llama_trainer_save(tr, o.out) != TG_OK) { tg_cli_err("train: %s", tg_last_error()); goto done; }
    if (o.json) {
        printf("{\"model\": ");
        tg_fx_json_str(stdout, o.run.model);
        printf(", \"text\": ");
        tg_fx_json_str(stdout, o.text);
        printf(", \"tokens\": %d, \"ctx\": %d, \"batch\": %d, \"lr\": %g, \"schedule\": \"%s\", \"seed\": %d, "
               "\"threads\": %d, \"seconds\": %.3f, \"steps\": [",
               nt, o.ctx, o.batch, o.lr, o.schedule ? "cosine" : "constant", o.seed, o.run.n_threads, secs);
        for (int s = 0; s < o.steps; s++)
            printf("%s{\"loss\": %.6f, \"grad_norm\": %.6g, \"lr\": %.6g}", s ? ", " : "", losses[s], norms[s],
                   tg_llama_train_lr(&tp, s + 1));
        printf("], \"output\": ");
        tg_fx_json_str(stdout, o.out ? o.out : "");
        printf("}\n");
    } else {
        printf("loss %.4f -> %.4f in %d steps, %.1f s%s%s\n", losses[0], losses[o.steps - 1], o.steps, secs,
               o.out ? "; wrote " : "", o.out ? o.out : "");
    }
    rc = TG_CLI_OK;
done:
    tg_llama_trainer_free(tr);   // before the recorder is detached: its scheduler's end is recorded
    rc = tg_cli_run_close(&r, rc);
    free(losses);
    free(norms);
    free(seqs);
    free(toks);
    free(text);
    return rc;
}
