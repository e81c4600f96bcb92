// cmd_dot.c - `tgdb dot TRACE -o OUT.{dot,svg,png,pdf}`: a traced graph as
// Graphviz, rendered in-process; selections and highlights.
#include "cli.h"
#include "tg/dot-trace.h"
#include "tg/live.h"
#include "tg/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TG_CLI_COMMAND(dot, "dot TRACE|--live -m MODEL -p PROMPT -o OUT.{dot,svg,png,pdf} [--graph G] [--around NODE [--depth K]] [--layer N] [--collapse] [--no-leafs] [--diff B.tgt|B.tsv]",
               "render a traced graph (splits as clusters, highlights for diffs, NaN and stale reads); --live: a model's graph without a trace file")

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

static bool parse_int(const char * s, int * out) {
    char * end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > 1 << 30) return false;
    *out = (int) v;
    return true;
}

static int cmd_dot(int argc, char ** argv) {
    const char * path = NULL, * out = NULL, * diff = NULL, * model = NULL, * prompt = NULL;
    bool live = false;
    struct tg_dot_trace_options o = tg_dot_trace_default_options();
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-o")) { if (!has_val) return tg_cli_err("dot: -o needs a file"); out = argv[++i]; }
        else if (!strcmp(a, "--live")) live = true;
        else if (!strcmp(a, "-m")) { if (!has_val) return tg_cli_err("dot: -m needs a model file"); model = argv[++i]; }
        else if (!strcmp(a, "-p")) { if (!has_val) return tg_cli_err("dot: -p needs a prompt"); prompt = argv[++i]; }
        else if (!strcmp(a, "--graph")) { if (!has_val || !parse_int(argv[++i], &o.graph)) return tg_cli_err("dot: --graph needs a graph number"); }
        else if (!strcmp(a, "--around")) { if (!has_val) return tg_cli_err("dot: --around needs a node name"); o.around = argv[++i]; }
        else if (!strcmp(a, "--depth")) { if (!has_val || !parse_int(argv[++i], &o.depth)) return tg_cli_err("dot: --depth needs a number"); }
        else if (!strcmp(a, "--layer")) { if (!has_val || !parse_int(argv[++i], &o.layer)) return tg_cli_err("dot: --layer needs a layer number"); }
        else if (!strcmp(a, "--collapse")) o.collapse = true;
        else if (!strcmp(a, "--no-leafs")) o.leafs = false;
        else if (!strcmp(a, "--diff")) { if (!has_val) return tg_cli_err("dot: --diff needs a trace or TSV"); diff = argv[++i]; }
        else if (a[0] == '-') return tg_cli_err("dot: unknown option '%s' (see 'tgdb help dot')", a);
        else if (!path) path = a;
        else return tg_cli_err("dot: unexpected argument '%s'", a);
    }
    if (live) {
        if (path) return tg_cli_err("dot: give a trace or --live -m MODEL -p PROMPT, not both");
        if (!model || !prompt) return tg_cli_err("dot: --live needs -m MODEL and -p PROMPT");
        if (!out) return tg_cli_usage("dot");
        fprintf(stderr, "evaluating the prompt with %s (recorded to a temporary trace)...\n", model);
        if (!(path = live_trace(model, prompt))) return tg_cli_err("%s", tg_last_error());
    }
    if (!path || !out) return tg_cli_usage("dot");
    struct tg_trace * tr = tg_trace_open(path);
    if (live) unlink(path);  // the mapping stays valid
    if (!tr) return tg_cli_err("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    struct tg_trace_report rep;
    memset(&rep, 0, sizeof(rep));
    if (tg_trace_check(tr, &rep) == TG_OK) o.check = &rep;
    struct tg_trace * tb = NULL;
    struct tg_diff_side * sa = NULL, * sb = NULL;
    struct tg_diff_result dr;
    memset(&dr, 0, sizeof(dr));
    int rc = 1;
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
    if (st != TG_OK) tg_cli_err("%s", tg_last_error());
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
