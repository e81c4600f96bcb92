// cmd_generate.c - `tgdb generate`: text generation with the llama runtime
// (llama.cpp's flags): tokenize the prompt (with BOS), decode it, then sample
// and decode one token at a time; print the text, or JSON, and optionally the
// last prompt position's logits and a graph summary with timings.
#include "cli.h"
#include "runopts.h"
#include "json.h"
#include "tg/gguf.h"
#include "tg/llama.h"
#include "tg/trace.h"
#include "tg/vocab.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gen_opts {
    struct tg_cli_run_opts run;
    struct tg_llama_sampler_params sp;
    const char * prompt, * logits_out;
    int n_predict;
    bool json, graph;
};

#define GEN(f) offsetof(struct gen_opts, f)
static const struct tg_cli_opt gen_table[] = {
    { .name = "--prompt", .short_name = "-p", .value = "TEXT", .kind = TG_CLI_STR, .off = GEN(prompt),
      .help = "the prompt (required; BOS is added as the vocabulary says)" },
    { .name = "--n-predict", .short_name = "-n", .value = "N", .kind = TG_CLI_INT, .off = GEN(n_predict), .lo = 0, .hi = 1 << 20,
      .help = "tokens to generate (fewer when the model emits end-of-sequence)" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = GEN(json),
      .help = "print {prompt_ids, generated_ids, text} as JSON instead of the text" },
    { .name = "--logits-out", .value = "FILE", .kind = TG_CLI_STR, .off = GEN(logits_out),
      .help = "write the last prompt position's logits (n_vocab little-endian float32)" },
    { .name = "--graph", .kind = TG_CLI_FLAG, .off = GEN(graph),
      .help = "print the last decode step's graph and the time per op" },
    { .name = "run options", .kind = TG_CLI_TABLE, .off = GEN(run), .table = tg_cli_run_table },
    { .name = "sampling", .kind = TG_CLI_TABLE, .off = GEN(sp), .table = tg_cli_sampling_table },
    { 0 },
};

static void gen_defaults(struct gen_opts * o) {
    *o = (struct gen_opts) { .n_predict = 16, .sp = tg_llama_sampler_default_params() };
    tg_cli_run_defaults(&o->run);
}

TG_CLI_COMMAND_OPTS(generate, "generate -m MODEL -p PROMPT [OPTIONS]",
    "generate text from a llama GGUF model (greedy with --temp 0); -c 0 (default) = prompt + -n tokens",
    gen_table, struct gen_opts, gen_defaults)

static int parse_gen(int argc, char ** argv, struct gen_opts * o) {
    gen_defaults(o);
    if (tg_cli_parse_opts("generate", gen_table, o, argc, argv, NULL, 0, NULL)) return TG_CLI_ERROR;
    if (tg_cli_run_validate("generate", &o->run)) return TG_CLI_ERROR;
    if (!o->prompt) return tg_cli_err("generate: no prompt (-p PROMPT)");
    return 0;
}

// Writes n floats as little-endian IEEE 754 binary32.
static int write_logits(const char * path, const float * logits, int n) {
    FILE * f = fopen(path, "wb");
    if (!f) return tg_cli_err("generate: cannot write %s: %s", path, strerror(errno));
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        uint32_t u;
        memcpy(&u, &logits[i], sizeof u);
        unsigned char b[4] = { (unsigned char) u, (unsigned char) (u >> 8), (unsigned char) (u >> 16), (unsigned char) (u >> 24) };
        ok = fwrite(b, 1, 4, f) == 4;
    }
    ok = fclose(f) == 0 && ok;
    return ok ? 0 : tg_cli_err("generate: cannot write %s: %s", path, strerror(errno));
}

static void print_graph(struct tg_llama_context * ctx) {
    struct tg_graph * g = tg_llama_last_graph(ctx);
    if (!g) return;
    size_t need = tg_graph_summary(g, NULL, 0) + 1;
    char * buf = malloc(need);
    printf("\n== graph of the last decode step: %d nodes, %d leafs\n", g->n_nodes, g->n_leafs);
    if (buf) { tg_graph_summary(g, buf, need); fputs(buf, stdout); free(buf); }
    const struct tg_llama_op_time * prof = tg_llama_profile(ctx);
    double total = 0.0;
    for (int op = 0; op < TG_OP_COUNT; op++) total += prof[op].ms;
    printf("\n== time per op (all decode steps)\n%-16s %8s %10s %6s\n", "op", "nodes", "ms", "%");
    for (int op = 0; op < TG_OP_COUNT; op++)
        if (prof[op].n_calls)
            printf("%-16s %8lld %10.3f %5.1f%%\n", tg_op_name((enum tg_op) op), (long long) prof[op].n_calls,
                   prof[op].ms, total > 0 ? 100.0 * prof[op].ms / total : 0.0);
    struct tg_llama_stats s = tg_llama_stats(ctx);
    printf("total %.3f ms compute, %.3f ms building graphs, %.3f ms placing/allocating; %lld graphs (last: %d splits, %d copies);"
           " compute memory %.2f MiB, KV cache %.2f MiB\n", s.ms_compute, s.ms_build, s.ms_alloc, (long long) s.n_graphs,
           s.n_splits, s.n_copies, s.compute_bytes / 1048576.0, s.kv_bytes / 1048576.0);
}

// Prompt ids (BOS added as the vocabulary says) into *ids; returns the count or -1.
static int tokenize_prompt(const struct tg_vocab * v, const char * text, int32_t ** ids) {
    int32_t n = tg_vocab_tokenize(v, text, strlen(text), NULL, 0, true, false);
    if (n == TG_VOCAB_ERROR) return tg_cli_err("generate: cannot tokenize the prompt: %s", tg_last_error()), -1;
    if (n < 0) n = -n;
    *ids = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    if (!*ids) return tg_cli_err("generate: out of memory"), -1;
    return tg_vocab_tokenize(v, text, strlen(text), *ids, n, true, false);
}

struct run {
    struct tg_cli_run cr;   // model, context, trace recorder
    struct tg_llama_model * model;
    struct tg_llama_context * ctx;
    const struct tg_vocab * vocab;
    struct tg_llama_sampler * smp;
    int32_t * ids;     // prompt then generated
    int n_prompt, n_gen;
};

static int generate(const struct gen_opts * o, struct run * r) {
    int n_vocab = tg_llama_model_hparams(r->model)->n_vocab;
    int32_t eos = tg_llama_model_eos(r->model);
    if (tg_llama_decode(r->ctx, r->ids, r->n_prompt, 0) != TG_OK)
        return tg_cli_err("generate: decoding the prompt failed: %s", tg_last_error());
    const float * logits = tg_llama_get_logits(r->ctx, -1);
    if (o->logits_out && write_logits(o->logits_out, logits, n_vocab)) return TG_CLI_ERROR;
    int pos = r->n_prompt;
    for (int i = 0; i < o->n_predict; i++) {
        int32_t tok = tg_llama_sample(r->smp, logits, n_vocab);
        if (tok < 0) return tg_cli_err("generate: sampling failed: %s", tg_last_error());
        r->ids[r->n_prompt + r->n_gen++] = tok;
        tg_llama_sampler_accept(r->smp, tok);
        if (!o->json) {
            char piece[256];
            int32_t len = tg_vocab_token_to_piece(r->vocab, tok, piece, sizeof piece, false);
            if (len > 0) { fwrite(piece, 1, (size_t) len, stdout); fflush(stdout); }
        }
        if (tok == eos || i + 1 == o->n_predict) break;
        if (tg_llama_decode(r->ctx, &tok, 1, pos) != TG_OK)
            return tg_cli_err("generate: decoding failed at position %d: %s", pos, tg_last_error());
        logits = tg_llama_get_logits(r->ctx, -1);
        pos++;
    }
    return 0;
}

static int print_json(struct run * r) {
    char * text = NULL;
    int32_t n = tg_vocab_detokenize(r->vocab, r->ids + r->n_prompt, r->n_gen, NULL, 0, false);
    if (n == TG_VOCAB_ERROR) return tg_cli_err("generate: %s", tg_last_error());
    if (n < 0) n = -n;
    text = malloc((size_t) n + 1);
    if (!text) return tg_cli_err("generate: out of memory");
    n = tg_vocab_detokenize(r->vocab, r->ids + r->n_prompt, r->n_gen, text, (size_t) n + 1, false);
    printf("{\"prompt_ids\": ");
    tg_json_write_ints(stdout, r->ids, (size_t) r->n_prompt);
    printf(", \"generated_ids\": ");
    tg_json_write_ints(stdout, r->ids + r->n_prompt, (size_t) r->n_gen);
    printf(", \"text\": ");
    tg_json_write_string(stdout, text, n > 0 ? (size_t) n : 0);
    printf("}\n");
    free(text);
    return 0;
}

static int cmd_generate(int argc, char ** argv) {
    struct gen_opts o;
    if (parse_gen(argc, argv, &o)) return TG_CLI_ERROR;
    struct run r = { 0 };
    int rc = TG_CLI_ERROR;
    if (tg_cli_run_open(&r.cr, "generate", &o.run)) goto done;
    r.model = r.cr.model;
    r.vocab = tg_llama_model_vocab(r.model);
    if (!r.vocab) { tg_cli_err("generate: %s", tg_last_error()); goto done; }
    r.n_prompt = tokenize_prompt(r.vocab, o.prompt, &r.ids);
    if (r.n_prompt < 0) goto done;
    if (r.n_prompt == 0) { tg_cli_err("generate: the prompt has no tokens"); goto done; }
    int32_t * grown = realloc(r.ids, sizeof(int32_t) * (size_t) (r.n_prompt + o.n_predict + 1));
    if (!grown) { tg_cli_err("generate: out of memory"); goto done; }
    r.ids = grown;
    struct tg_llama_context_params cp = tg_cli_run_params(&o.run);
    cp.n_ctx = o.run.n_ctx ? o.run.n_ctx : r.n_prompt + o.n_predict;
    if (cp.n_ctx < r.n_prompt + o.n_predict) {
        tg_cli_err("generate: prompt (%d tokens) + %d tokens exceed the context size %d", r.n_prompt, o.n_predict, cp.n_ctx);
        goto done;
    }
    if (!o.run.n_batch) cp.n_batch = cp.n_ctx;
    if (tg_cli_run_context(&r.cr, &cp, "tgdb generate")) goto done;
    r.ctx = r.cr.ctx;
    r.smp = tg_llama_sampler_new(&o.sp);
    if (!r.smp) { tg_cli_err("generate: %s", tg_last_error()); goto done; }
    for (int i = 0; i < r.n_prompt; i++) tg_llama_sampler_accept(r.smp, r.ids[i]);
    tg_llama_set_profile(r.ctx, o.graph);
    if (!o.json) { fputs(o.prompt, stdout); fflush(stdout); }
    if (generate(&o, &r)) goto done;
    if (o.json) rc = print_json(&r);
    else { putchar('\n'); rc = 0; }
    if (rc == 0 && o.graph) print_graph(r.ctx);
done:
    tg_llama_sampler_free(r.smp);
    free(r.ids);
    return tg_cli_run_close(&r.cr, rc);
}
