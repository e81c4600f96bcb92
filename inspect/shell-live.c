// shell-live.c - the shell's commands on a model running in-process: run,
// step, continue, finish, print of the real tensors, where, list.
#include "cli.h"
#include "core/text.h"
#include "shell.h"
#include "tg/live.h"
#include "tg/trace.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The live model a Ctrl-C interrupts (one shell per process).
static struct tg_live * _Atomic sig_live;

void shell_live_interrupt(void) {
    struct tg_live * lv = atomic_load(&sig_live);
    if (lv) tg_live_interrupt(lv);
}

struct shell_live { struct tg_live * lv; struct tg_trace_recorder * rec; char rec_path[512]; };

struct shell_live * shell_live_open(const char * model, int n_threads, char * err, size_t n) {
    struct shell_live * sl = calloc(1, sizeof(*sl));
    if (!sl) { snprintf(err, n, "out of memory"); return NULL; }
    sl->lv = tg_live_open(model, n_threads, 512);
    if (!sl->lv) { snprintf(err, n, "%s", tg_last_error()); free(sl); return NULL; }
    atomic_store(&sig_live, sl->lv);
    printf("live: model %s loaded; 'run PROMPT' evaluates it (set breakpoints first)\n", model);
    return sl;
}

void shell_live_close(struct shell_live * sl) {
    if (!sl) return;
    atomic_store(&sig_live, NULL);
    tg_live_close(sl->lv);
    if (sl->rec) tg_trace_detach(sl->rec);
    free(sl);
}

// Breakpoints live in the shell; hand them to the live engine before moving.
static void sync_breaks(struct shell * sh) {
    struct tg_live * lv = sh->live->lv;
    tg_live_break_clear(lv);
    for (int k = 0; k < sh->n_breaks; k++) {
        const struct shell_break * b = &sh->breaks[k];
        if (!b->enabled) continue;
        if (b->kind == BREAK_NAME) tg_live_break_add(lv, TG_LIVE_BREAK_NAME, b->pattern);
        else if (b->kind == BREAK_OP) tg_live_break_add(lv, TG_LIVE_BREAK_OP, b->pattern);
        else if (b->kind == BREAK_NAN) tg_live_break_add(lv, TG_LIVE_BREAK_NAN, NULL);
    }
}

int shell_live_where(struct shell * sh) {
    struct tg_live * lv = sh->live->lv;
    struct tg_live_where w;
    if (!tg_live_where(lv, &w)) {
        printf("not stopped: %s\n", tg_live_message(lv)[0] ? tg_live_message(lv) : "no run yet ('run PROMPT')");
        return 0;
    }
    char shape[96];
    tg_shape_str(w.node, shape, sizeof(shape));
    printf("stopped after node %d/%d %s (%s %s) of graph %d; decode of %d token%s at pos %d (token %d)",
           w.index, w.graph ? w.graph->n_nodes : 0, tg_escape_str(w.node->name), tg_op_name(w.node->op), shape, w.graph_seq,
           w.n_tokens, w.n_tokens == 1 ? "" : "s", w.pos0, w.pos0 + w.n_tokens - 1);
    if (w.layer >= 0) printf(", layer %d", w.layer);
    printf("\n");
    return 0;
}

static int after_move(struct shell * sh, enum tg_status st) {
    struct tg_live * lv = sh->live->lv;
    if (st != TG_OK) return shell_err(sh, "%s", tg_last_error());
    printf("%s\n", tg_live_message(lv));
    if (tg_live_get_state(lv) == TG_LIVE_STOPPED) return shell_live_where(sh);
    if (tg_live_text(lv)[0]) printf("generated: %s\n", tg_live_text(lv));
    return 0;
}

int shell_live_step(struct shell * sh, int n, bool same_graph) {
    (void) same_graph;
    sync_breaks(sh);
    return after_move(sh, tg_live_step(sh->live->lv, n));
}

int shell_live_continue(struct shell * sh, bool finish) {
    sync_breaks(sh);
    return after_move(sh, finish ? tg_live_finish(sh->live->lv) : tg_live_continue(sh->live->lv));
}

int shell_cmd_run(struct shell * sh, int argc, char ** argv) {
    if (!sh->live) return shell_err(sh, "run: needs a model (tgdb shell -m MODEL)");
    if (argc < 2) return shell_err(sh, "usage: run PROMPT [-n N_PREDICT]");
    char prompt[4096] = "";
    int n_predict = 0;
    size_t len = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            if (!tg_cli_parse_int(argv[++i], 0, 1 << 20, &n_predict))
                return shell_err(sh, "run: -n '%s' is not a token count in 0..1048576", argv[i]);
            continue;
        }
        len += (size_t) snprintf(prompt + len, sizeof(prompt) - len, "%s%s", len ? " " : "", argv[i]);
        if (len >= sizeof(prompt)) return shell_err(sh, "run: prompt too long");
    }
    sync_breaks(sh);
    return after_move(sh, tg_live_run(sh->live->lv, prompt, n_predict));
}

int shell_cmd_trace(struct shell * sh, int argc, char ** argv) {
    if (!sh->live) return shell_err(sh, "trace: needs a live model (tgdb shell -m MODEL); a trace file is read with open");
    struct shell_live * sl = sh->live;
    if (argc == 2 && !strcmp(argv[1], "off")) {
        if (!sl->rec) return shell_err(sh, "trace off: not recording");
        enum tg_status st = tg_trace_detach(sl->rec);
        sl->rec = NULL;
        if (st != TG_OK) return shell_err(sh, "trace off: %s", tg_last_error());
        printf("trace written to %s\n", sl->rec_path);
        return 0;
    }
    if (argc < 3 || strcmp(argv[1], "on") != 0) return shell_err(sh, "usage: trace on FILE [CONTENTS-PATTERN] | trace off");
    if (sl->rec) return shell_err(sh, "trace on: already recording to %s (trace off first)", sl->rec_path);
    struct tg_trace_options opt = tg_trace_default_options();
    opt.contents = argc > 3 ? argv[3] : NULL;
    opt.note = "recorded from tgdb shell (trace on)";
    sl->rec = tg_trace_attach(NULL, argv[2], &opt);   // every scheduler of the process, from now on
    if (!sl->rec) return shell_err(sh, "trace on: %s", tg_last_error());
    snprintf(sl->rec_path, sizeof(sl->rec_path), "%s", argv[2]);
    printf("recording to %s from here on%s%s\n", argv[2], opt.contents ? ", contents of " : "", opt.contents ? opt.contents : "");
    return 0;
}

static struct tg_tensor * find_node(struct tg_graph * g, const char * name, int * index) {
    for (int i = 0; g && i < g->n_nodes; i++) if (!strcmp(g->nodes[i]->name, name)) { *index = i; return g->nodes[i]; }
    for (int i = 0; g && i < g->n_leafs; i++) if (!strcmp(g->leafs[i]->name, name)) { *index = -1; return g->leafs[i]; }
    return NULL;
}

int shell_live_print(struct shell * sh, int argc, char ** argv) {
    struct tg_live * lv = sh->live->lv;
    struct tg_live_where w;
    if (!tg_live_where(lv, &w)) return shell_err(sh, "print: not stopped in a run (run PROMPT with a breakpoint, then step)");
    struct tg_tensor * t = w.node;
    int index = w.index, a = 1;
    if (a < argc && argv[a][0] != '[') {
        t = find_node(w.graph, argv[a], &index);
        if (!t) return shell_err(sh, "no node named '%s' in the current graph (tab completes names)", argv[a]);
        a++;
    }
    const char * slice = a < argc ? argv[a++] : NULL;
    if (a < argc) return shell_err(sh, "usage: print [NODE] [SLICE]");
    char shape[96];
    tg_shape_str(t, shape, sizeof(shape));
    printf("%s: %s %s (read from its backend buffer)%s\n", tg_escape_str(t->name), tg_op_name(t->op), shape,
           index >= 0 && !tg_live_node_done(lv, index) ? "  WARNING: not computed yet: stale memory" : "");
    int64_t lo = 0, hi = tg_nelements(t) < 16 ? tg_nelements(t) : 16;
    char err[160];
    if (slice && !tg_cli_parse_slice(slice, t->ne, &lo, &hi, err, sizeof(err))) return shell_err(sh, "%s", err);
    float * v = malloc(sizeof(float) * (size_t) (hi - lo));
    if (!v) return shell_err(sh, "out of memory");
    int64_t got = tg_live_read(lv, t, lo, hi - lo, v);
    if (got < 0) { free(v); return shell_err(sh, "%s", tg_last_error()); }
    for (int64_t k = 0; k < got; k++) printf("%s%.6g", k % 8 == 0 ? (k ? "\n    " : "    ") : " ", v[k]);
    printf("\n");
    if (!slice && tg_nelements(t) > hi) printf("  ... %lld more (print %s [a:b])\n", (long long) (tg_nelements(t) - hi), tg_escape_str(t->name));
    free(v);
    return 0;
}

int shell_live_list(struct shell * sh, int n) {
    struct tg_live * lv = sh->live->lv;
    struct tg_live_where w;
    if (!tg_live_where(lv, &w)) return shell_err(sh, "list: not stopped in a run");
    int lo = w.index - n / 2 < 0 ? 0 : w.index - n / 2, hi = lo + n > w.graph->n_nodes ? w.graph->n_nodes : lo + n;
    for (int i = lo; i < hi; i++) {
        struct tg_tensor * t = w.graph->nodes[i];
        char shape[96];
        tg_shape_str(t, shape, sizeof(shape));
        printf("%s %5d  %-28s %-12s %s%s\n", i == w.index ? "=>" : "  ", i, tg_escape_str(t->name), tg_op_name(t->op), shape,
               tg_live_node_done(lv, i) ? "" : "  (not computed yet)");
    }
    return 0;
}

void shell_live_node_names(struct shell * sh, void (*fn)(const char *, void *), void * user) {
    struct tg_live_where w;
    if (!tg_live_where(sh->live->lv, &w)) return;
    for (int i = 0; i < w.graph->n_nodes; i++) if (w.graph->nodes[i]->name[0]) fn(w.graph->nodes[i]->name, user);
}
