// cmd_perplexity.c - `tgdb perplexity`: perplexity of a text file the
// llama.cpp way (chunks of n_ctx tokens, the second half of each scored);
// progress per chunk on stderr, the result on stdout:
//   perplexity: 236210.206731 chunks 21 tokens 2718
#include "cli.h"
#include "runopts.h"
#include "tg/llama.h"
#include "tg/trace.h"
#include "tg/vocab.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ppl_opts {
    struct tg_cli_run_opts run;
    const char * text;
    bool json;
};

#define PPL(f) offsetof(struct ppl_opts, f)
static const struct tg_cli_opt ppl_table[] = {
    { .name = "--file", .short_name = "-f", .value = "TEXT", .kind = TG_CLI_STR, .off = PPL(text),
      .help = "the text file to score (required; at least -c tokens)" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = PPL(json),
      .help = "print the result as one JSON object (ppl, nll, nll_stderr, chunks, scored, tokens, n_ctx)" },
    { .name = "run options", .kind = TG_CLI_TABLE, .off = PPL(run), .table = tg_cli_run_table },
    { 0 },
};

static void ppl_defaults(struct ppl_opts * o) {
    *o = (struct ppl_opts) { 0 };
    tg_cli_run_defaults(&o->run);
    o->run.n_ctx = 512;
}

TG_CLI_COMMAND_OPTS(perplexity, "perplexity -m MODEL -f TEXT [OPTIONS]",
    "perplexity of a text file (llama.cpp's method; result line 'perplexity: X'; progress per chunk on stderr)",
    ppl_table, struct ppl_opts, ppl_defaults)

static void progress(int chunk, int n_chunks, double ppl, double seconds, void * user) {
    (void) user;
    fprintf(stderr, "[%d/%d] %.4f (%.2f s)\n", chunk + 1, n_chunks, ppl, seconds);
}

static int cmd_perplexity(int argc, char ** argv) {
    struct ppl_opts o;
    ppl_defaults(&o);
    if (tg_cli_parse_opts("perplexity", ppl_table, &o, argc, argv, NULL, 0, NULL)) return TG_CLI_ERROR;
    if (tg_cli_run_validate("perplexity", &o.run)) return TG_CLI_ERROR;
    if (!o.text) return tg_cli_err("perplexity: no text file (-f TEXT)");
    if (o.run.n_ctx < 4) return tg_cli_err("perplexity: -c %d: the context must hold at least 4 tokens", o.run.n_ctx);
    size_t len = 0;
    char * text = tg_cli_read_file("perplexity", o.text, &len);
    if (!text) return TG_CLI_ERROR;
    int rc = TG_CLI_ERROR;
    const struct tg_vocab * vocab = NULL;
    int32_t * ids = NULL;
    struct tg_cli_run r;
    if (tg_cli_run_open(&r, "perplexity", &o.run)) goto done;
    vocab = tg_llama_model_vocab(r.model);
    if (!vocab) { tg_cli_err("perplexity: %s", tg_last_error()); goto done; }
    int32_t n = tg_vocab_tokenize(vocab, text, len, NULL, 0, true, false);
    if (n == TG_VOCAB_ERROR) { tg_cli_err("perplexity: cannot tokenize %s: %s", o.text, tg_last_error()); goto done; }
    if (n < 0) n = -n;
    ids = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    if (!ids) { tg_cli_err("perplexity: out of memory"); goto done; }
    n = tg_vocab_tokenize(vocab, text, len, ids, n, true, false);
    struct tg_llama_context_params cp = tg_cli_run_params(&o.run);
    if (!o.run.n_batch) cp.n_batch = cp.n_ctx;
    if (!o.run.n_ubatch) cp.n_ubatch = cp.n_batch;
    if (n < cp.n_ctx) {
        tg_cli_err("perplexity: %s has %d tokens, fewer than the context size %d (-c)", o.text, n, cp.n_ctx);
        goto done;
    }
    if (tg_cli_run_context(&r, &cp, "tgdb perplexity")) goto done;
    bool show = tg_cli_run_progress(&o.run);
    if (show) fprintf(stderr, "perplexity: %d tokens, %d chunks of %d\n", n, n / cp.n_ctx, cp.n_ctx);
    struct tg_llama_ppl_result res;
    if (tg_llama_perplexity(r.ctx, ids, n, show ? progress : NULL, NULL, &res) != TG_OK) {
        tg_cli_err("perplexity: %s", tg_last_error());
        goto done;
    }
    if (o.json) {
        printf("{\"ppl\": %.6f, \"nll\": %.6f, \"nll_stderr\": %.6f, \"chunks\": %d, \"scored\": %d, \"tokens\": %d, \"n_ctx\": %d}\n",
               res.ppl, res.nll, res.nll_stderr, res.n_chunks, res.n_scored, res.n_tokens, cp.n_ctx);
    } else {
        printf("perplexity: %.6f chunks %d tokens %d\n", res.ppl, res.n_chunks, res.n_tokens);
        fprintf(stderr, "mean NLL %.6f +/- %.6f over %d predictions\n", res.nll, res.nll_stderr, res.n_scored);
    }
    rc = 0;
done:
    free(ids);
    free(text);
    return tg_cli_run_close(&r, rc);
}
