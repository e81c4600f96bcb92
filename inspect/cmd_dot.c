// cmd_dot.c - `tgdb dot TRACE -o OUT.{dot,svg,png,pdf}`: a traced graph as
// Graphviz, rendered in-process; selections and highlights.
#include "cli.h"
#include "tg/dot-trace.h"
#include "tg/live.h"
#include "tg/trace.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct dot_opts {
    struct tg_dot_trace_options d;
    const char * out, * diff, * model, * prompt;
    bool live, no_leafs;
};

#define DTO(f) offsetof(struct dot_opts, f)
static const struct tg_cli_opt dot_table[] = {
    { .name = "--output", .short_name = "-o", .value = "OUT", .kind = TG_CLI_STR, .off = DTO(out),
      .help = "the output: .dot, .svg, .png or .pdf (required; replaced only when written whole)" },
    { .name = "--graph", .value = "G", .kind = TG_CLI_INT, .off = DTO(d.graph), .lo = 0, .hi = INT32_MAX,
      .help = "the graph id `trace info` prints (default: the last)" },
    { .name = "--around", .value = "NODE", .kind = TG_CLI_STR, .off = DTO(d.around),
      .help = "only the neighbourhood of NODE" },
    { .name = "--depth", .value = "K", .kind = TG_CLI_INT, .off = DTO(d.depth), .lo = 0, .hi = 1 << 20,
      .help = "--around: radius in edges" },
    { .name = "--layer", .value = "N", .kind = TG_CLI_INT, .off = DTO(d.layer), .lo = 0, .hi = 1 << 20,
      .help = "only layer N with the views, reshapes and permutes feeding it (an error if the graph has no layer N)" },
    { .name = "--collapse", .kind = TG_CLI_FLAG, .off = DTO(d.collapse), .help = "fold the middle layers into one node per kind" },
    { .name = "--grad", .kind = TG_CLI_FLAG, .off = DTO(d.grad),
      .help = "training traces: with --around NODE also NODE's gradient (for a gradient: its forward node) and its neighbourhood; "
              "dashed 'grad' edges from each drawn tensor to its drawn gradient (an error when the trace has no gradient links)" },
    { .name = "--no-leafs", .kind = TG_CLI_FLAG, .off = DTO(no_leafs), .help = "do not draw leafs (weights, inputs)" },
    { .name = "--diff", .value = "B", .kind = TG_CLI_STR, .off = DTO(diff),
      .help = "highlight the nodes that differ from trace B (.tgt) or a per-node TSV dump (.tsv)" },
    { .name = "--live", .kind = TG_CLI_FLAG, .off = DTO(live),
      .help = "draw a model's graph without a trace file (needs -m and -p)" },
    { .name = "--model", .short_name = "-m", .value = "MODEL", .kind = TG_CLI_STR, .off = DTO(model), .help = "--live: the model" },
    { .name = "--prompt", .short_name = "-p", .value = "TEXT", .kind = TG_CLI_STR, .off = DTO(prompt), .help = "--live: the prompt" },
    { 0 },
};

static void dot_defaults(struct dot_opts * o) { *o = (struct dot_opts) { .d = tg_dot_trace_default_options() }; }

TG_CLI_COMMAND_OPTS(dot, "dot TRACE|--live -m MODEL -p PROMPT -o OUT.{dot,svg,png,pdf} [--graph G] [--around NODE [--depth K]] [--grad] [--layer N] [--collapse] [--no-leafs] [--diff B.tgt|B.tsv]",
               "render a traced graph (splits as clusters, highlights for diffs, NaN and stale reads); --live: a model's graph without a "
               "trace file; --graph G: the graph id `trace info` prints (default: the last); --layer N: layer N with its views; --grad: gradient links of a training trace; "
               "the output is replaced only when written whole; exit 0 written, 1 could not write or render the output, "
               "2 usage or input error (no such graph, layer or node)",
               dot_table, struct dot_opts, dot_defaults)

// Usage and input errors exit 2; 1 is left for "the output could not be written".
#define DOT_ERR(...) (tg_cli_err(__VA_ARGS__), 2)

// --live: evaluates the prompt with the model while recording a temporary
// trace (so the drawing has the real placements, splits and allocation),
// then renders from it. Returns the temporary path (caller unlinks) or NULL.
static char * live_trace(const char * model, const char * prompt) {
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/tgdb-dot-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) { tg_error(TG_ERR_IO, "dot --live: cannot create a temporary file in /tmp"); return NULL; }
    close(fd);
    struct tg_trace_options opt = tg_trace_default_options();
    opt.note = "tgdb dot --live";
    struct tg_trace_recorder * rec = tg_trace_attach(NULL, path, &opt);  // before the model: its scheduler is recorded from birth
    if (!rec) { unlink(path); return NULL; }
    struct tg_live * lv = tg_live_open(model, 2, 0);
    enum tg_status st = lv ? tg_live_run(lv, prompt, 0) : tg_last_status();
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", tg_last_error());
    tg_live_close(lv);
    enum tg_status st2 = tg_trace_detach(rec);
    if (!lv || st != TG_OK || st2 != TG_OK) {
        unlink(path);
        tg_error(TG_ERR_INVALID_ARG, "%s", msg);
        return NULL;
    }
    return path;
}

static int cmd_dot(int argc, char ** argv) {
    struct dot_opts opts;
    dot_defaults(&opts);
    const char * pos[1];
    int np = 0;
    if (tg_cli_parse_opts("dot", dot_table, &opts, argc, argv, pos, 1, &np)) return 2;
    const char * path = np ? pos[0] : NULL, * out = opts.out, * diff = opts.diff, * model = opts.model, * prompt = opts.prompt;
    bool live = opts.live;
    struct tg_dot_trace_options o = opts.d;
    if (opts.no_leafs) o.leafs = false;
    if (live) {
        if (path) return DOT_ERR("dot: give a trace or --live -m MODEL -p PROMPT, not both");
        if (!model || !prompt) return DOT_ERR("dot: --live needs -m MODEL and -p PROMPT");
        if (!out) return (tg_cli_usage("dot"), 2);
        fprintf(stderr, "evaluating the prompt with %s (recorded to a temporary trace)...\n", model);
        if (!(path = live_trace(model, prompt))) return DOT_ERR("%s", tg_last_error());
    }
    if (!path || !out) return (tg_cli_usage("dot"), 2);
    struct tg_trace * tr = tg_trace_open(path);
    if (live) unlink(path);  // the mapping stays valid
    if (!tr) return DOT_ERR("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    struct tg_trace_report rep;
    memset(&rep, 0, sizeof(rep));
    if (tg_trace_check(tr, &rep) == TG_OK) o.check = &rep;
    struct tg_trace * tb = NULL;
    struct tg_diff_side * sa = NULL, * sb = NULL;
    struct tg_diff_result dr;
    memset(&dr, 0, sizeof(dr));
    int rc = 2;
    if (diff) {
        const char * dot = strrchr(diff, '.');
        bool tsv = dot && (!strcmp(dot, ".tsv") || !strcmp(dot, ".txt"));
        sa = tg_diff_side_trace(tr);
        if (tsv) sb = tg_diff_side_tsv(diff);
        else if ((tb = tg_trace_open(diff))) { tg_cli_trace_warning(tb); sb = tg_diff_side_trace(tb); }
        if (!sa || !sb || tg_diff_run(sa, sb, NULL, &dr) != TG_OK) { tg_cli_err("%s", tg_last_error()); goto done; }
        o.diff = &dr;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct tg_dot * d = tg_dot_from_trace(tr, &o);
    if (!d) { tg_cli_err("%s: %s", path, tg_last_error()); goto done; }
    enum tg_status st = tg_dot_save(d, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != TG_OK) rc = st == TG_ERR_INVALID_ARG ? DOT_ERR("%s", tg_last_error()) : (tg_cli_err("%s", tg_last_error()), 1);
    else {
        fprintf(stderr, "wrote %s: %d nodes, %d edges, %d clusters (%.2f s)\n", out, tg_dot_n_nodes(d), tg_dot_n_edges(d),
                tg_dot_n_clusters(d), (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
        rc = 0;
    }
    tg_dot_free(d);
done:
    tg_diff_result_free(&dr);
    tg_diff_side_free(sa);
    tg_diff_side_free(sb);
    tg_trace_close(tb);
    tg_trace_report_free(&rep);
    tg_trace_close(tr);
    return rc;
}
