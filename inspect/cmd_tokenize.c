// cmd_tokenize.c - `tgdb tokenize`: a model's tokenizer on a prompt, a file,
// or a JSON Lines file of {"text": ...} objects.
//
//   tgdb tokenize -m MODEL -p TEXT [--bos] [--pieces] [--parse-special]
//   tgdb tokenize -m MODEL -f FILE [...]
//   tgdb tokenize -m MODEL --jsonl FILE [-o OUT] [--bos] [--parse-special]
//
// -p/-f print the ids space-separated on one line; --pieces then prints one
// line per token: id, tab, the piece as a JSON string. --jsonl writes each
// line back as {"text": ..., "ids": [...]} to stdout or OUT.
#include "cli.h"
#include "json.h"
#include "tg/gguf.h"
#include "tg/vocab.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tok_opts {
    const char * model;
    const char * prompt;
    const char * file;
    const char * jsonl;
    const char * out;
    bool bos, pieces, parse_special;
};

#define TKO(f) offsetof(struct tok_opts, f)
static const struct tg_cli_opt tok_table[] = {
    { .name = "--model", .short_name = "-m", .value = "MODEL", .kind = TG_CLI_STR, .off = TKO(model),
      .help = "the GGUF file whose tokenizer.* keys give the vocabulary (required)" },
    { .name = "--prompt", .short_name = "-p", .value = "TEXT", .kind = TG_CLI_STR, .off = TKO(prompt), .help = "tokenize TEXT" },
    { .name = "--file", .short_name = "-f", .value = "FILE", .kind = TG_CLI_STR, .off = TKO(file), .help = "tokenize a file's text" },
    { .name = "--jsonl", .value = "FILE", .kind = TG_CLI_STR, .off = TKO(jsonl),
      .help = "tokenize the \"text\" of each JSON line; prints {text, ids} lines" },
    { .name = "--output", .short_name = "-o", .value = "OUT", .kind = TG_CLI_STR, .off = TKO(out),
      .help = "--jsonl: write the lines to OUT instead of stdout" },
    { .name = "--bos", .kind = TG_CLI_FLAG, .off = TKO(bos), .help = "add the BOS token as the vocabulary says" },
    { .name = "--pieces", .kind = TG_CLI_FLAG, .off = TKO(pieces), .help = "print each token's text beside its id" },
    { .name = "--parse-special", .kind = TG_CLI_FLAG, .off = TKO(parse_special),
      .help = "recognise special tokens (<s>, <|im_start|>, ...) written in the text" },
    { 0 },
};

static void tok_defaults(struct tok_opts * o) { *o = (struct tok_opts) { 0 }; }

TG_CLI_COMMAND_OPTS(tokenize,
               "tokenize -m MODEL (-p TEXT | -f FILE | --jsonl FILE [-o OUT]) [--bos] [--pieces] [--parse-special]",
               "tokenize text with a model's vocabulary", tok_table, struct tok_opts, tok_defaults)

// Tokenizes text into a malloc'd array (*ids, caller frees); returns the
// count or -1 after printing the error.
static int tok_run(const struct tg_vocab * v, const char * text, size_t len, const struct tok_opts * o,
                   int32_t ** ids) {
    size_t guess = len + 4;
    int32_t n_max = guess > INT32_MAX ? INT32_MAX : (int32_t) guess;
    *ids = malloc((size_t) n_max * sizeof(int32_t));
    if (!*ids) return tg_cli_err("tokenize: out of memory"), -1;
    int32_t n = tg_vocab_tokenize(v, text, len, *ids, n_max, o->bos, o->parse_special);
    if (n < 0 && n != TG_VOCAB_ERROR) {   // cannot happen with len + 4 for SPM, but be exact
        int32_t * p = realloc(*ids, (size_t) -n * sizeof(int32_t));
        if (!p) return tg_cli_err("tokenize: out of memory"), -1;
        *ids = p;
        n = tg_vocab_tokenize(v, text, len, *ids, -n, o->bos, o->parse_special);
    }
    if (n < 0) return tg_cli_err("tokenize: %s", tg_last_error()), -1;
    return n;
}

static int tok_print(const struct tg_vocab * v, const char * text, size_t len, const struct tok_opts * o) {
    int32_t * ids = NULL;
    int n = tok_run(v, text, len, o, &ids);
    if (n < 0) { free(ids); return TG_CLI_ERROR; }
    for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", (int) ids[i]);
    printf("\n");
    for (int i = 0; o->pieces && i < n; i++) {
        char buf[512];
        int32_t k = tg_vocab_token_to_piece(v, ids[i], buf, sizeof(buf), true);
        printf("%d\t", (int) ids[i]);
        if (k >= 0) tg_json_write_string(stdout, buf, (size_t) k);
        else printf("(piece of %d bytes)", (int) -k);
        printf("\n");
    }
    free(ids);
    return 0;
}

static bool tok_blank(const char * s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return false;
    }
    return true;
}

// One JSON line: parse, tokenize, write {"text": ..., "ids": [...]}.
static int tok_jsonl_line(const struct tg_vocab * v, const char * line, size_t n, long lineno,
                          const struct tok_opts * o, FILE * out) {
    struct tg_json_object obj;
    char err[160];
    if (!tg_json_parse_object(line, n, &obj, err, sizeof(err))) {
        return tg_cli_err("tokenize: %s: bad JSON line %ld: %s", o->jsonl, lineno, err);
    }
    const struct tg_json_field * t = tg_json_get(&obj, "text");
    if (!t || t->kind != TG_JSON_STRING) {
        tg_json_object_free(&obj);
        return tg_cli_err("tokenize: %s: bad JSON line %ld: no \"text\" string", o->jsonl, lineno);
    }
    int32_t * ids = NULL;
    int k = tok_run(v, t->str, t->str_len, o, &ids);
    if (k >= 0) {
        fputs("{\"text\": ", out);
        tg_json_write_string(out, t->str, t->str_len);
        fputs(", \"ids\": ", out);
        tg_json_write_ints(out, ids, (size_t) k);
        fputs("}\n", out);
    }
    free(ids);
    tg_json_object_free(&obj);
    return k < 0 ? TG_CLI_ERROR : 0;
}

static int tok_jsonl(const struct tg_vocab * v, const struct tok_opts * o) {
    FILE * in = fopen(o->jsonl, "rb");
    if (!in) return tg_cli_err("tokenize: cannot open %s", o->jsonl);
    FILE * out = stdout;
    if (o->out && !(out = fopen(o->out, "wb"))) {
        fclose(in);
        return tg_cli_err("tokenize: cannot create %s", o->out);
    }
    char * line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (tok_blank(line, (size_t) n)) continue;
        rc = tok_jsonl_line(v, line, (size_t) n, lineno, o, out);
    }
    if (rc == 0 && ferror(in)) rc = tg_cli_err("tokenize: cannot read %s", o->jsonl);
    free(line);
    fclose(in);
    if (out != stdout && fclose(out) != 0 && rc == 0) rc = tg_cli_err("tokenize: cannot write %s", o->out);
    return rc;
}

// Parses the arguments into *o; returns 0, or 1 after printing the error.
static int tok_args(int argc, char ** argv, struct tok_opts * o) {
    tok_defaults(o);
    if (tg_cli_parse_opts("tokenize", tok_table, o, argc, argv, NULL, 0, NULL)) return TG_CLI_ERROR;
    if (!o->model) return tg_cli_err("tokenize: missing -m MODEL");
    int inputs = (o->prompt != NULL) + (o->file != NULL) + (o->jsonl != NULL);
    if (inputs != 1) return tg_cli_err("tokenize: give exactly one of -p TEXT, -f FILE, --jsonl FILE");
    if (o->out && !o->jsonl) return tg_cli_err("tokenize: -o only applies to --jsonl");
    return 0;
}

static int cmd_tokenize(int argc, char ** argv) {
    struct tok_opts o;
    if (tok_args(argc, argv, &o) != 0) return TG_CLI_ERROR;
    struct tg_gguf * g = tg_gguf_open(o.model);
    if (!g) return tg_cli_err("tokenize: cannot load model %s: %s", o.model, tg_last_error());
    struct tg_vocab * v = tg_vocab_load(g);
    tg_gguf_close(g);
    if (!v) return tg_cli_err("tokenize: %s: %s", o.model, tg_last_error());
    int rc;
    if (o.prompt) {
        rc = tok_print(v, o.prompt, strlen(o.prompt), &o);
    } else if (o.file) {
        size_t len = 0;
        char * text = tg_cli_read_file("tokenize", o.file, &len);
        rc = text ? tok_print(v, text, len, &o) : TG_CLI_ERROR;
        free(text);
    } else {
        rc = tok_jsonl(v, &o);
    }
    tg_vocab_free(v);
    return rc;
}
