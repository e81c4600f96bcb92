// cmd_train.c - `tgdb train -m MODEL -f TEXT [--steps N] [--ctx N] [--lr X]
// [--seed S] [-t N] [-o OUT.gguf] [--json]`: trains F32 copies of a llama
// model's weights on a text with next-token cross-entropy and AdamW
// (tg_llama_trainer), printing the loss and gradient norm of every step, and
// writes the trained model as GGUF. Each step reads a window of ctx + 1
// tokens of the text, chosen by a generator seeded with --seed, so a run is
// reproducible bit for bit for a seed and thread count.
#include "cli.h"
#include "fx.h"
#include "tg/llama.h"
#include "tg/vocab.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct train_opts {
    const char * model, * text, * out;
    int steps, ctx, seed, threads;
    double lr;
    bool json;
};

#define TRO(f) offsetof(struct train_opts, f)
static const struct tg_cli_opt train_table[] = {
    { .name = "--model", .short_name = "-m", .value = "FILE", .kind = TG_CLI_STR, .off = TRO(model),
      .help = "the llama model to start from (any weight type; trained as F32)" },
    { .name = "--file", .short_name = "-f", .value = "TEXT", .kind = TG_CLI_STR, .off = TRO(text),
      .help = "the training text (tokenized with the model's vocabulary)" },
    { .name = "--steps", .value = "N", .kind = TG_CLI_INT, .off = TRO(steps), .lo = 1, .hi = 1000000,
      .help = "optimizer steps (default 50)" },
    { .name = "--ctx", .short_name = "-c", .value = "N", .kind = TG_CLI_INT, .off = TRO(ctx), .lo = 2, .hi = 4096,
      .help = "tokens per training sequence (default 64)" },
    { .name = "--lr", .value = "X", .kind = TG_CLI_DOUBLE, .off = TRO(lr), .lo = 0, .hi = 10, .open_lo = true,
      .help = "AdamW learning rate (default 0.001)" },
    { .name = "--seed", .value = "S", .kind = TG_CLI_INT, .off = TRO(seed), .lo = 0, .hi = 2147483647.0,
      .help = "which windows of the text the steps read (default 1)" },
    { .name = "--threads", .short_name = "-t", .value = "N", .kind = TG_CLI_INT, .off = TRO(threads), .lo = 1, .hi = 512,
      .help = "CPU threads (default 2)" },
    { .name = "--output", .short_name = "-o", .value = "OUT.gguf", .kind = TG_CLI_STR, .off = TRO(out),
      .help = "write the trained model here (F32 GGUF that generate and the other tools load)" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = TRO(json), .help = "the steps and the summary as one JSON object" },
    { 0 },
};

static void train_defaults(struct train_opts * o) {
    *o = (struct train_opts) { .steps = 50, .ctx = 64, .seed = 1, .threads = 2, .lr = 1e-3 };
}

TG_CLI_COMMAND_OPTS(train, "train -m MODEL -f TEXT [--steps N] [--ctx N] [--lr X] [--seed S] [-t N] [-o OUT.gguf] [--json]",
    "train a llama model (all weights F32, AdamW, next-token loss) on a text; prints loss and gradient norm per "
    "step and writes the trained model; exit 0 done, 2 usage or input error",
    train_table, struct train_opts, train_defaults)

static char * read_text(const char * path, size_t * n) {
    FILE * f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char * buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap) break;
        char * nb = realloc(buf, (cap *= 2) + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
    }
    if (buf) buf[len] = 0;
    fclose(f);
    *n = len;
    return buf;
}

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
    if (!o.model) return tg_cli_err("train: give the model to start from (-m MODEL)");
    if (!o.text) return tg_cli_err("train: give the training text (-f TEXT)");
    size_t tlen = 0;
    char * text = read_text(o.text, &tlen);
    if (!text) return tg_cli_err("train: cannot read %s", o.text);
    int rc = TG_CLI_ERROR;
    int32_t * toks = NULL;
    float * losses = NULL, * norms = NULL;
    struct tg_llama_trainer * tr = NULL;
    struct tg_llama_model * m = tg_llama_model_load(o.model, NULL);
    if (!m) { tg_cli_err("train: %s", tg_last_error()); goto done; }
    const struct tg_vocab * v = tg_llama_model_vocab(m);
    if (!v) { tg_cli_err("train: %s has no usable vocabulary", o.model); goto done; }
    const int32_t cap = (int32_t) (tlen + 16);
    toks = malloc((size_t) cap * sizeof(int32_t));
    const int32_t nt = toks ? tg_vocab_tokenize(v, text, tlen, toks, cap, true, false) : -1;
    if (nt < 0) { tg_cli_err("train: cannot tokenize %s: %s", o.text, tg_last_error()); goto done; }
    if (nt < o.ctx + 1)
        { tg_cli_err("train: %s has %d tokens, fewer than --ctx %d + 1 (use a longer text or a smaller --ctx)", o.text, nt, o.ctx); goto done; }
    struct tg_llama_train_params tp = tg_llama_train_default_params();
    tp.n_ctx = o.ctx;
    tp.lr = (float) o.lr;
    tp.n_threads = o.threads;
    tr = tg_llama_trainer_new(m, &tp);
    if (!tr) { tg_cli_err("train: %s", tg_last_error()); goto done; }
    losses = malloc((size_t) o.steps * sizeof(float));
    norms = malloc((size_t) o.steps * sizeof(float));
    if (!losses || !norms) { tg_cli_err("train: out of memory"); goto done; }
    if (!o.json)
        printf("training %s on %s: %d tokens, %d parameter tensors, %d steps of %d tokens, lr %g, seed %d, %d threads\n",
               o.model, o.text, nt, tg_llama_trainer_n_params(tr), o.steps, o.ctx, o.lr, o.seed, o.threads);
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t) o.seed;
    const double t0 = now_s();
    for (int s = 0; s < o.steps; s++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const int32_t start = (int32_t) ((rng >> 33) % (uint64_t) (nt - o.ctx));
        if (tg_llama_train_step(tr, toks + start, &losses[s], &norms[s]) != TG_OK) {
            tg_cli_err("train: step %d: %s", s + 1, tg_last_error());
            goto done;
        }
        if (!o.json) {
            printf("step %d/%d: loss %.4f, grad norm %.4g (%.1f s)\n", s + 1, o.steps, losses[s], norms[s], now_s() - t0);
            fflush(stdout);
        }
    }
    const double secs = now_s() - t0;
    if (o.out && tg_llama_trainer_save(tr, o.out) != TG_OK) { tg_cli_err("train: %s", tg_last_error()); goto done; }
    if (o.json) {
        printf("{\"model\": ");
        tg_fx_json_str(stdout, o.model);
        printf(", \"text\": ");
        tg_fx_json_str(stdout, o.text);
        printf(", \"tokens\": %d, \"ctx\": %d, \"lr\": %g, \"seed\": %d, \"threads\": %d, \"seconds\": %.3f, \"steps\": [",
               nt, o.ctx, o.lr, o.seed, o.threads, secs);
        for (int s = 0; s < o.steps; s++) printf("%s{\"loss\": %.6f, \"grad_norm\": %.6g}", s ? ", " : "", losses[s], norms[s]);
        printf("], \"output\": ");
        tg_fx_json_str(stdout, o.out ? o.out : "");
        printf("}\n");
    } else {
        printf("loss %.4f -> %.4f in %d steps, %.1f s%s%s\n", losses[0], losses[o.steps - 1], o.steps, secs,
               o.out ? "; wrote " : "", o.out ? o.out : "");
    }
    rc = TG_CLI_OK;
done:
    tg_llama_trainer_free(tr);
    tg_llama_model_free(m);
    free(losses);
    free(norms);
    free(toks);
    free(text);
    return rc;
}
