// cmd_generate.c - `tgdb generate`: text generation with the llama runtime
// (llama.cpp's flags): tokenize the prompt (with BOS), decode it, then sample
// and decode one token at a time; print the text, or JSON, and optionally the
// last prompt position's logits and a graph summary with timings.
#include "cli.h"
#include "json.h"
#include "tg/gguf.h"
#include "tg/llama.h"
#include "tg/trace.h"
#include "tg/vocab.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TG_CLI_COMMAND(generate,
    "generate -m MODEL -p PROMPT [-n N] [-t THREADS] [-c N_CTX] [--temp T] [--top-k K] [--top-p P] [--min-p P] "
    "[--seed S] [--json] [--logits-out FILE] [--graph] [--ctk f16|f32] [--device LIST] [--trace FILE] [--trace-dump PATTERN] [--trace-hash all|computed|none] [--poison]",
    "generate text from a llama GGUF model (greedy with --temp 0)")

struct gen_opts {
    const char * model, * prompt, * logits_out, * trace, * trace_dump, * trace_hash, * devices;
    int n_predict, n_threads, n_ctx;
    struct tg_llama_sampler_params sp;
    bool json, graph, kv_f32, poison;
};

static bool parse_f(const char * s, float * out) {
    char * end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || *end || end == s || isnan(v)) return false;
    *out = v;
    return true;
}

static int parse_gen(int argc, char ** argv, struct gen_opts * o) {
    memset(o, 0, sizeof *o);
    o->n_predict = 16; o->n_threads = 4;
    o->sp = tg_llama_sampler_default_params();
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        if (!strcmp(a, "--json")) { o->json = true; continue; }
        if (!strcmp(a, "--graph")) { o->graph = true; continue; }
        if (!strcmp(a, "--poison")) { o->poison = true; continue; }
        if (i + 1 >= argc) return tg_cli_err("generate: option %s needs a value (see 'tgdb help generate')", a);
        const char * v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) ok = tg_cli_parse_int(v, 0, 1 << 20, &o->n_predict);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = tg_cli_parse_int(v, 1, 512, &o->n_threads);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) ok = tg_cli_parse_int(v, 0, 1 << 20, &o->n_ctx);
        else if (!strcmp(a, "--temp")) ok = parse_f(v, &o->sp.temp);
        else if (!strcmp(a, "--top-k")) ok = tg_cli_parse_int(v, 0, 1 << 30, &o->sp.top_k);
        else if (!strcmp(a, "--top-p")) ok = parse_f(v, &o->sp.top_p);
        else if (!strcmp(a, "--min-p")) ok = parse_f(v, &o->sp.min_p);
        else if (!strcmp(a, "--seed")) { char * e; errno = 0; o->sp.seed = strtoull(v, &e, 0); ok = !errno && !*e && e != v; }
        else if (!strcmp(a, "--logits-out")) o->logits_out = v;
        else if (!strcmp(a, "--ctk")) { o->kv_f32 = !strcmp(v, "f32"); ok = o->kv_f32 || !strcmp(v, "f16"); }
        else if (!strcmp(a, "-dev") || !strcmp(a, "--device")) o->devices = v;
        else if (!strcmp(a, "--trace")) o->trace = v;
        else if (!strcmp(a, "--trace-dump")) o->trace_dump = v;
        else if (!strcmp(a, "--trace-hash")) o->trace_hash = v;
        else return tg_cli_err("generate: unknown option '%s' (see 'tgdb help generate')", a);
        if (!ok) return tg_cli_err("generate: bad value '%s' for %s", v, a);
    }
    if (!o->model) return tg_cli_err("generate: no model (-m MODEL)");
    if (!o->prompt) return tg_cli_err("generate: no prompt (-p PROMPT)");
    if (o->trace_dump && !o->trace) return tg_cli_err("generate: --trace-dump needs --trace FILE");
    if (o->trace_hash && !o->trace) return tg_cli_err("generate: --trace-hash needs --trace FILE");
    struct tg_trace_options probe = tg_trace_default_options();
    if (o->trace_hash && !tg_trace_set_hash_mode(&probe, o->trace_hash))
        return tg_cli_err("generate: --trace-hash '%s': expected all, computed or none", o->trace_hash);
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
    struct tg_trace_recorder * rec;
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
    r.model = tg_llama_model_load(o.model, NULL);
    if (!r.model) return tg_cli_err("generate: %s", tg_last_error());
    r.vocab = tg_llama_model_vocab(r.model);
    if (!r.vocab) { tg_cli_err("generate: %s", tg_last_error()); goto done; }
    r.n_prompt = tokenize_prompt(r.vocab, o.prompt, &r.ids);
    if (r.n_prompt < 0) goto done;
    if (r.n_prompt == 0) { tg_cli_err("generate: the prompt has no tokens"); goto done; }
    int32_t * grown = realloc(r.ids, sizeof(int32_t) * (size_t) (r.n_prompt + o.n_predict + 1));
    if (!grown) { tg_cli_err("generate: out of memory"); goto done; }
    r.ids = grown;
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = o.n_ctx ? o.n_ctx : r.n_prompt + o.n_predict;
    if (cp.n_ctx < r.n_prompt + o.n_predict) {
        tg_cli_err("generate: prompt (%d tokens) + %d tokens exceed the context size %d", r.n_prompt, o.n_predict, cp.n_ctx);
        goto done;
    }
    cp.n_batch = cp.n_ctx;
    cp.n_threads = o.n_threads;
    cp.devices = o.devices;
    if (o.kv_f32) cp.type_k = cp.type_v = TG_TYPE_F32;
    // --poison (TGDB_POISON=1): freed and reused compute ranges are filled with
    // NaN as the allocator gives them up, so a stale read shows in the output
    if (o.poison && tg_trace_set_poison(true) != TG_OK) { tg_cli_err("generate: --poison: %s", tg_last_error()); goto done; }
    if (o.trace) {  // global recorder attached before the context: its scheduler is recorded from birth
        struct tg_trace_options topt = tg_trace_default_options();
        topt.contents = o.trace_dump;
        if (o.trace_hash) tg_trace_set_hash_mode(&topt, o.trace_hash);
        topt.note = "tgdb generate";
        r.rec = tg_trace_attach(NULL, o.trace, &topt);
        if (!r.rec) { tg_cli_err("generate: %s", tg_last_error()); goto done; }
    }
    r.ctx = tg_llama_context_new(r.model, &cp);
    r.smp = r.ctx ? tg_llama_sampler_new(&o.sp) : NULL;
    if (!r.smp) { tg_cli_err("generate: %s", tg_last_error()); goto done; }
    tg_llama_set_profile(r.ctx, o.graph);
    if (!o.json) { fputs(o.prompt, stdout); fflush(stdout); }
    if (generate(&o, &r)) goto done;
    if (o.json) rc = print_json(&r);
    else { putchar('\n'); rc = 0; }
    if (rc == 0 && o.graph) print_graph(r.ctx);
done:
    if (r.rec && tg_trace_detach(r.rec) != TG_OK && rc == 0) rc = tg_cli_err("generate: trace %s: %s", o.trace, tg_last_error());
    else if (r.rec && rc == 0) fprintf(stderr, "trace written to %s\n", o.trace);
    tg_llama_sampler_free(r.smp);
    tg_llama_context_free(r.ctx);
    tg_llama_model_free(r.model);
    free(r.ids);
    return rc;
}
