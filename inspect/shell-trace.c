// shell-trace.c - the shell's commands on a trace (post-mortem): moving
// through evaluated nodes in recorded order, breakpoints, printing values,
// info, and the diff/dot/check tools on the open trace.
#include "cli.h"
#include "core/text.h"
#include "shell.h"
#include "tg/trace.h"
#include "tg/core.h"
#include "tg/types.h"

#include <ctype.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Live versions of the moving commands (shell-live.c); 0/1 like commands.
int shell_live_step(struct shell * sh, int n, bool same_graph);
int shell_live_continue(struct shell * sh, bool finish);
int shell_live_print(struct shell * sh, int argc, char ** argv);
int shell_live_where(struct shell * sh);
int shell_live_list(struct shell * sh, int n);
void shell_live_node_names(struct shell * sh, void (*fn)(const char *, void *), void * user);

bool shell_open_trace(struct shell * sh, const char * path) {
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) return false;
    shell_close_trace(sh);
    sh->tr = tr;
    snprintf(sh->path, sizeof(sh->path), "%s", path);
    sh->eval = -1;
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    printf("opened %s: %d graphs, %d evaluated nodes%s\n", path, tg_trace_n_graphs(tr), tg_trace_n_evals(tr),
           st.truncated ? " (TRUNCATED: " : "");
    if (st.truncated) printf("%s)\n", st.message);
    fflush(stdout);
    tg_cli_trace_warning(tr);
    return true;
}

void shell_close_trace(struct shell * sh) {
    if (sh->report_ready) tg_trace_report_free(&sh->report);
    sh->report_ready = false;
    tg_trace_close(sh->tr);
    sh->tr = NULL;
}

static bool need_trace(struct shell * sh) {
    if (sh->tr) return true;
    shell_err(sh, "no trace open (use 'open TRACE', or start with tgdb shell TRACE)");
    return false;
}

static const struct tg_trace_report * report(struct shell * sh) {
    if (!sh->report_ready && sh->tr && tg_trace_check(sh->tr, &sh->report) == TG_OK) sh->report_ready = true;
    return sh->report_ready ? &sh->report : NULL;
}

// The graph (gi) and node of the current position; false before the first eval.
static bool position(struct shell * sh, struct tg_trace_eval * e, int * gi) {
    if (!sh->tr || sh->eval < 0 || !tg_trace_get_eval(sh->tr, sh->eval, e)) return false;
    *gi = tg_trace_find_graph(sh->tr, e->graph_id);
    return *gi >= 0;
}

static bool is_stale_write(struct shell * sh, int eval) {
    const struct tg_trace_report * r = report(sh);
    for (int k = 0; r && k < r->n_findings; k++)
        if (r->findings[k].kind == TG_TRACE_FIND_STALE_READ && r->findings[k].eval == eval) return true;
    return false;
}

bool shell_break_matches(struct shell * sh, const char * name, const char * op, bool nonfinite, bool stale) {
    for (int k = 0; k < sh->n_breaks; k++) {
        struct shell_break * b = &sh->breaks[k];
        if (!b->enabled) continue;
        bool hit = (b->kind == BREAK_NAME && tg_trace_glob(b->pattern, name)) ||
                   (b->kind == BREAK_OP && tg_trace_glob(b->pattern, op)) ||
                   (b->kind == BREAK_NAN && nonfinite) || (b->kind == BREAK_STALE && stale);
        if (hit) { b->hits++; printf("breakpoint %d (%s%s%s) hit\n", k + 1, b->kind == BREAK_OP ? "op " : "", b->pattern,
                                     b->kind == BREAK_NAN ? "" : ""); return true; }
    }
    return false;
}

static void print_position(struct shell * sh) {
    struct tg_trace_eval e;
    int gi;
    if (!position(sh, &e, &gi)) { printf("at the start of the trace (no node evaluated yet): 'step' moves to the first\n"); return; }
    struct tg_trace_tensor t;
    tg_trace_get_tensor(sh->tr, gi, e.node, &t);
    struct tg_trace_graph gr;
    tg_trace_get_graph(sh->tr, gi, &gr);
    printf("eval %d/%d: graph %d (id %u), node %d/%d %s (%s %s", sh->eval + 1, tg_trace_n_evals(sh->tr), gi, e.graph_id,
           e.node, gr.n_nodes, tg_escape_str(t.name), tg_escape_str(tg_trace_op_name(sh->tr, t.op)), tg_trace_type_name(sh->tr, t.type));
    char shape[64];
    printf(" %s)", tg_trace_shape_str(t.ne, shape, sizeof(shape)));
    int split = tg_trace_split_of_node(sh->tr, gi, e.node);
    if (split >= 0) printf(", split %d on %s", split, tg_escape_str(tg_trace_backend_name(sh->tr, gr.sched_id, e.backend)));
    int mi = tg_trace_marker_before(sh->tr, e.record);
    struct tg_trace_marker m;
    if (mi >= 0 && tg_trace_get_marker(sh->tr, mi, &m) && m.kind == TG_TRACE_MARK_DECODE)
        printf(", tokens %d..%d", m.pos, m.pos + m.n_tokens - 1);
    int layer = tg_trace_layer_of_name(t.name);
    if (layer >= 0) printf(", layer %d", layer);
    printf("\n");
    if (e.flags & TG_TRACE_EVAL_SUMMARY)
        printf("    min %.6g max %.6g mean %.6g rms %.6g nan %llu inf %llu%s\n", e.sum.min, e.sum.max, e.sum.mean, e.sum.rms,
               (unsigned long long) e.sum.n_nan, (unsigned long long) e.sum.n_inf, e.sum.n_nan || e.sum.n_inf ? "  <-- non-finite" : "");
}

int shell_cmd_where(struct shell * sh, int argc, char ** argv) {
    (void) argc; (void) argv;
    if (sh->live) return shell_live_where(sh);
    if (!need_trace(sh)) return 1;
    print_position(sh);
    return 0;
}

static int parse_count(struct shell * sh, int argc, char ** argv, int * n) {
    *n = 1;
    if (argc > 1) {
        if (!tg_cli_parse_int(argv[1], 1, 1000000, n)) return shell_err(sh, "%s: '%s' is not a count >= 1 (at most 1000000)", argv[0], argv[1]);
    }
    return 0;
}

static int move(struct shell * sh, int argc, char ** argv, int dir, bool same_graph) {
    int n;
    if (parse_count(sh, argc, argv, &n)) return 1;
    if (sh->live) return dir > 0 ? shell_live_step(sh, n, same_graph) : shell_err(sh, "prev: a live run cannot go back (use a trace)");
    if (!need_trace(sh)) return 1;
    int total = tg_trace_n_evals(sh->tr);
    struct tg_trace_eval cur, e;
    bool have = sh->eval >= 0 && tg_trace_get_eval(sh->tr, sh->eval, &cur);
    for (int k = 0; k < n; k++) {
        int next = sh->eval + dir;
        if (next < 0 || next >= total) {
            print_position(sh);
            return shell_err(sh, "%s: %s of the trace", argv[0], dir > 0 ? "end" : "start");
        }
        if (same_graph && have && tg_trace_get_eval(sh->tr, next, &e) && e.graph_id != cur.graph_id) {
            print_position(sh);
            return shell_err(sh, "next: last evaluated node of graph %d (use step to go on)", tg_trace_find_graph(sh->tr, cur.graph_id));
        }
        sh->eval = next;
    }
    print_position(sh);
    return 0;
}

int shell_cmd_step(struct shell * sh, int argc, char ** argv) { return move(sh, argc, argv, +1, false); }
int shell_cmd_next(struct shell * sh, int argc, char ** argv) { return move(sh, argc, argv, +1, true); }
int shell_cmd_prev(struct shell * sh, int argc, char ** argv) { return move(sh, argc, argv, -1, false); }

// Node index in graph gi from a number or a name; -1 + error.
static int resolve_node(struct shell * sh, int gi, const char * arg) {
    int v;
    struct tg_trace_graph gr;
    if (!tg_trace_get_graph(sh->tr, gi, &gr)) return -1;
    if (tg_cli_parse_int(arg, INT_MIN, INT_MAX, &v)) {
        if (v < 0 || v >= gr.n_nodes + gr.n_leafs) { shell_err(sh, "no node %d in graph %d (0..%d)", v, gi, gr.n_nodes + gr.n_leafs - 1); return -1; }
        return v;
    }
    int ti = tg_trace_find_tensor(sh->tr, gi, arg);
    if (ti < 0) shell_err(sh, "no node named '%s' in graph %d (tab completes names)", arg, gi);
    return ti;
}

static int current_gi(struct shell * sh) {
    struct tg_trace_eval e;
    int gi;
    if (position(sh, &e, &gi)) return gi;
    return tg_trace_n_graphs(sh->tr) > 0 ? 0 : -1;
}

int shell_cmd_goto(struct shell * sh, int argc, char ** argv) {
    if (argc != 2) return shell_err(sh, "usage: goto N|NODE");
    if (sh->live) return shell_err(sh, "goto: a live run moves forward only (use break NAME; continue)");
    if (!need_trace(sh)) return 1;
    int gi = current_gi(sh);
    int ti = gi >= 0 ? resolve_node(sh, gi, argv[1]) : -1;
    if (ti < 0) return gi < 0 ? shell_err(sh, "the trace has no graphs") : 1;
    struct tg_trace_graph gr;
    tg_trace_get_graph(sh->tr, gi, &gr);
    struct tg_trace_eval cur;
    uint32_t seq = sh->eval >= 0 && tg_trace_get_eval(sh->tr, sh->eval, &cur) ? cur.compute_seq : UINT32_MAX;
    int ei = tg_trace_find_eval(sh->tr, gr.graph_id, ti, seq);
    if (ei < 0) ei = tg_trace_find_eval(sh->tr, gr.graph_id, ti, UINT32_MAX);
    if (ei < 0) return shell_err(sh, "node %d of graph %d was not evaluated (a leaf, a view, or not recorded)", ti, gi);
    sh->eval = ei;
    print_position(sh);
    return 0;
}

int shell_cmd_graph(struct shell * sh, int argc, char ** argv) {
    if (argc != 2) return shell_err(sh, "usage: graph G");
    if (!need_trace(sh)) return 1;
    int g;
    struct tg_trace_graph gr;
    if (!tg_cli_parse_int(argv[1], 0, INT_MAX, &g) || !tg_trace_get_graph(sh->tr, g, &gr)) {
        // G counts the trace's graphs from 0; `tgdb trace info` and the other commands name them by id
        const int n = tg_trace_n_graphs(sh->tr);
        struct tg_trace_graph first, last;
        const int as_id = tg_cli_parse_int(argv[1], 0, INT_MAX, &g) ? tg_trace_find_graph(sh->tr, (uint32_t) g) : -1;
        if (as_id >= 0)
            return shell_err(sh, "no graph '%s' (the trace has %d: 0..%d; graph id %s, as `tgdb trace info` names it, is "
                             "'graph %d' here)", argv[1], n, n - 1, argv[1], as_id);
        if (n > 0 && tg_trace_get_graph(sh->tr, 0, &first) && tg_trace_get_graph(sh->tr, n - 1, &last))
            return shell_err(sh, "no graph '%s' (the trace has %d: 0..%d, ids %u..%u; 'info graphs' lists them)", argv[1], n,
                             n - 1, first.graph_id, last.graph_id);
        return shell_err(sh, "no graph '%s' (the trace has %d: 0..%d)", argv[1], n, n - 1);
    }
    struct tg_trace_eval e;
    for (int i = 0; i < tg_trace_n_evals(sh->tr); i++)
        if (tg_trace_get_eval(sh->tr, i, &e) && e.graph_id == gr.graph_id) { sh->eval = i; print_position(sh); return 0; }
    return shell_err(sh, "graph %d has no evaluated node", g);
}

// Edit distance of two short words (case-insensitive), for "did you mean".
static int edit_distance(const char * a, const char * b) {
    int la = (int) strlen(a), lb = (int) strlen(b), row[64];
    if (la > 62 || lb > 62) return 99;
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = toupper((unsigned char) a[i - 1]) != toupper((unsigned char) b[j - 1]);
            int best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

// True when the op glob matches an op the engine knows; else an error naming
// the closest op names.
static bool check_op_glob(struct shell * sh, const char * pat) {
    for (int k = 0; k < TG_OP_COUNT; k++) if (tg_trace_glob(pat, tg_op_name((enum tg_op) k))) return true;
    char close[160] = "";
    size_t len = 0;
    for (int d = 0; d <= 3 && len == 0; d++)
        for (int k = 0; k < TG_OP_COUNT; k++)
            if (edit_distance(pat, tg_op_name((enum tg_op) k)) == d && len < sizeof(close))
                len += (size_t) snprintf(close + len, sizeof(close) - len, "%s%s", len ? ", " : "", tg_op_name((enum tg_op) k));
    shell_err(sh, "break op: no op matches '%s'%s%s (ops are upper case, e.g. MUL_MAT, ADD, SOFT_MAX; globs allowed)", pat,
              len ? "; did you mean " : "", close);
    return false;
}

int shell_cmd_break(struct shell * sh, int argc, char ** argv) {
    if (argc < 2) return shell_err(sh, "usage: break NAME-PATTERN | op OP | nan | stale");
    if (sh->n_breaks == SHELL_MAX_BREAKS) return shell_err(sh, "too many breakpoints (%d); delete some", SHELL_MAX_BREAKS);
    struct shell_break * b = &sh->breaks[sh->n_breaks];
    memset(b, 0, sizeof(*b));
    b->enabled = true;
    if (!strcmp(argv[1], "op")) {
        if (argc != 3) return shell_err(sh, "usage: break op OP (e.g. break op MUL_MAT)");
        if (!check_op_glob(sh, argv[2])) return 1;
        b->kind = BREAK_OP;
        snprintf(b->pattern, sizeof(b->pattern), "%s", argv[2]);
    } else if (!strcmp(argv[1], "nan") && argc == 2) {
        b->kind = BREAK_NAN;
        snprintf(b->pattern, sizeof(b->pattern), "nan");
    } else if (!strcmp(argv[1], "stale") && argc == 2) {
        b->kind = BREAK_STALE;
        snprintf(b->pattern, sizeof(b->pattern), "stale");
    } else if (argc == 2) {
        b->kind = BREAK_NAME;
        snprintf(b->pattern, sizeof(b->pattern), "%s", argv[1]);
    } else {
        return shell_err(sh, "usage: break NAME-PATTERN | op OP | nan | stale");
    }
    sh->n_breaks++;
    printf("breakpoint %d: %s%s\n", sh->n_breaks, b->kind == BREAK_OP ? "op " : b->kind == BREAK_NAME ? "name " : "", b->pattern);
    return 0;
}

int shell_cmd_delete(struct shell * sh, int argc, char ** argv) {
    if (argc == 1) { printf("deleted %d breakpoint%s\n", sh->n_breaks, sh->n_breaks == 1 ? "" : "s"); sh->n_breaks = 0; return 0; }
    int k;
    if (!tg_cli_parse_int(argv[1], 1, sh->n_breaks, &k)) return shell_err(sh, "no breakpoint '%s' (have %d)", argv[1], sh->n_breaks);
    memmove(&sh->breaks[k - 1], &sh->breaks[k], sizeof(sh->breaks[0]) * (size_t) (sh->n_breaks - k));
    sh->n_breaks--;
    printf("deleted breakpoint %d\n", k);
    return 0;
}

int shell_cmd_continue(struct shell * sh, int argc, char ** argv) {
    (void) argc; (void) argv;
    if (sh->live) return shell_live_continue(sh, false);
    if (!need_trace(sh)) return 1;
    if (sh->n_breaks == 0) return shell_err(sh, "no breakpoints: continue would run to the end (use break first)");
    int total = tg_trace_n_evals(sh->tr);
    for (int i = sh->eval + 1; i < total; i++) {
        struct tg_trace_eval e;
        struct tg_trace_tensor t;
        if (shell_interrupted) {  // Ctrl-C: stop here, say where
            shell_interrupted = 0;
            sh->eval = i - 1 >= 0 ? i - 1 : 0;
            printf("interrupted (Ctrl-C)\n");
            print_position(sh);
            return 0;
        }
        if (!tg_trace_get_eval(sh->tr, i, &e)) continue;
        int gi = tg_trace_find_graph(sh->tr, e.graph_id);
        if (gi < 0 || !tg_trace_get_tensor(sh->tr, gi, e.node, &t)) continue;
        bool nonfinite = (e.flags & TG_TRACE_EVAL_SUMMARY) && (e.sum.n_nan || e.sum.n_inf);
        bool stale = false;
        for (int k = 0; k < sh->n_breaks; k++) if (sh->breaks[k].kind == BREAK_STALE) stale = is_stale_write(sh, i);
        if (shell_break_matches(sh, t.name, tg_trace_op_name(sh->tr, t.op), nonfinite, stale)) {
            sh->eval = i;
            print_position(sh);
            return 0;
        }
    }
    sh->eval = total - 1;
    printf("no breakpoint hit: at the end of the trace\n");
    print_position(sh);
    return 0;
}

int shell_cmd_finish(struct shell * sh, int argc, char ** argv) {
    (void) argc; (void) argv;
    if (sh->live) return shell_live_continue(sh, true);
    return shell_err(sh, "finish: only in a live run (tgdb shell -m MODEL)");
}

int shell_cmd_list(struct shell * sh, int argc, char ** argv) {
    int n = 10;
    if (argc > 1 && parse_count(sh, argc, argv, &n)) return 1;
    if (sh->live) return shell_live_list(sh, n);
    if (!need_trace(sh)) return 1;
    struct tg_trace_eval e;
    int gi, center = 0;
    if (position(sh, &e, &gi)) center = e.node;
    else if ((gi = current_gi(sh)) < 0) return shell_err(sh, "the trace has no graphs");
    struct tg_trace_graph gr;
    tg_trace_get_graph(sh->tr, gi, &gr);
    int lo = center - n / 2 < 0 ? 0 : center - n / 2, hi = lo + n > gr.n_nodes ? gr.n_nodes : lo + n;
    for (int i = lo; i < hi; i++) {
        struct tg_trace_tensor t;
        if (!tg_trace_get_tensor(sh->tr, gi, i, &t)) continue;
        char shape[64];
        int ei = tg_trace_find_eval(sh->tr, gr.graph_id, i, UINT32_MAX);
        struct tg_trace_eval ev;
        bool nf = ei >= 0 && tg_trace_get_eval(sh->tr, ei, &ev) && (ev.flags & TG_TRACE_EVAL_SUMMARY) && (ev.sum.n_nan || ev.sum.n_inf);
        printf("%s %5d  %-28s %-12s %-6s %-18s%s\n", sh->eval >= 0 && i == center ? "=>" : "  ", i, tg_escape_str(t.name),
               tg_escape_str(tg_trace_op_name(sh->tr, t.op)), tg_trace_type_name(sh->tr, t.type), tg_trace_shape_str(t.ne, shape, sizeof(shape)),
               nf ? "  NaN/Inf" : ei < 0 ? "  (not evaluated)" : "");
    }
    return 0;
}

int shell_cmd_print(struct shell * sh, int argc, char ** argv) {
    if (sh->live) return shell_live_print(sh, argc, argv);
    if (!need_trace(sh)) return 1;
    struct tg_trace_eval e;
    int gi, ti;
    bool have = position(sh, &e, &gi);
    const char * slice = NULL;
    int a = 1;
    if (a < argc && argv[a][0] != '[') {
        if (!have && (gi = current_gi(sh)) < 0) return shell_err(sh, "the trace has no graphs");
        if ((ti = resolve_node(sh, gi, argv[a++])) < 0) return 1;
    } else {
        if (!have) return shell_err(sh, "no current node: step first, or name one (print NODE)");
        ti = e.node;
    }
    if (a < argc) slice = argv[a++];
    if (a < argc) return shell_err(sh, "usage: print [NODE] [SLICE]");
    struct tg_trace_graph gr;
    struct tg_trace_tensor t;
    tg_trace_get_graph(sh->tr, gi, &gr);
    tg_trace_get_tensor(sh->tr, gi, ti, &t);
    char shape[64];
    printf("%s: %s %s %s\n", tg_escape_str(t.name), tg_escape_str(tg_trace_op_name(sh->tr, t.op)), tg_trace_type_name(sh->tr, t.type), tg_trace_shape_str(t.ne, shape, sizeof(shape)));
    uint32_t seq = have ? e.compute_seq : UINT32_MAX;
    int ci = tg_trace_find_contents(sh->tr, gr.graph_id, ti, seq);
    if (ci < 0) ci = tg_trace_find_contents(sh->tr, gr.graph_id, ti, UINT32_MAX);
    struct tg_trace_contents c;
    if (ci >= 0 && tg_trace_get_contents(sh->tr, ci, &c)) {
        int64_t n = 0;
        float * v = tg_trace_contents_f32(sh->tr, ci, &n);
        if (!v) return shell_err(sh, "%s", tg_last_error());
        int64_t lo = 0, hi = n < 16 ? n : 16;
        char err[160];
        int rc = 0;
        if (slice && !tg_cli_parse_slice(slice, c.ne, &lo, &hi, err, sizeof(err))) rc = shell_err(sh, "%s", err);
        else {
            printf("  contents (recorded, compute %u):", c.compute_seq);
            tg_cli_print_range(v, c.ne, lo, hi);
            if (!slice && n > hi) printf("  ... %lld more (print %s [a:b])\n", (long long) (n - hi), tg_escape_str(t.name));
        }
        free(v);
        return rc;
    }
    int ei = tg_trace_find_eval(sh->tr, gr.graph_id, ti, seq);
    struct tg_trace_eval ev;
    if (ei < 0 || !tg_trace_get_eval(sh->tr, ei, &ev)) return shell_err(sh, "%s was not evaluated in this trace", t.name);
    printf("  no contents recorded%s (TGDB_TRACE_DUMP='%s' records them); summary:\n", slice ? ", so no slice" : "", tg_escape_str(t.name));
    if (ev.flags & TG_TRACE_EVAL_SUMMARY)
        printf("  min %.6g max %.6g mean %.6g rms %.6g  nan %llu inf %llu zeros %llu of %llu\n", ev.sum.min, ev.sum.max, ev.sum.mean,
               ev.sum.rms, (unsigned long long) ev.sum.n_nan, (unsigned long long) ev.sum.n_inf, (unsigned long long) ev.sum.n_zero,
               (unsigned long long) ev.sum.n_elem);
    if (ev.flags & TG_TRACE_EVAL_HASH) printf("  hash %016llx\n", (unsigned long long) ev.hash);
    return 0;
}

static void info_graphs(struct shell * sh) {
    for (int g = 0; g < tg_trace_n_graphs(sh->tr); g++) {
        struct tg_trace_graph gr;
        if (!tg_trace_get_graph(sh->tr, g, &gr)) continue;
        printf("  graph %-3d id %-4u %5d nodes %5d leafs %3d splits", g, gr.graph_id, gr.n_nodes, gr.n_leafs, tg_trace_n_splits(sh->tr, g));
        int mi = tg_trace_marker_before(sh->tr, gr.record);
        struct tg_trace_marker m;
        if (mi >= 0 && tg_trace_get_marker(sh->tr, mi, &m) && m.kind == TG_TRACE_MARK_DECODE)
            printf("   %s %d token%s at pos %d", tg_escape_str(m.text) && m.text[0] ? tg_escape_str(m.text) : "decode", m.n_tokens, m.n_tokens == 1 ? "" : "s", m.pos);
        printf("\n");
    }
}

static void info_node(struct shell * sh, int gi, int ti) {
    struct tg_trace_graph gr;
    struct tg_trace_tensor t;
    tg_trace_get_graph(sh->tr, gi, &gr);
    tg_trace_get_tensor(sh->tr, gi, ti, &t);
    char shape[64], nb[TG_TRACE_NAME];
    printf("node %d of graph %d: %s\n  op %s, type %s, shape %s, strides [%llu,%llu,%llu,%llu]\n", ti, gi, tg_escape_str(t.name),
           tg_escape_str(tg_trace_op_name(sh->tr, t.op)), tg_trace_type_name(sh->tr, t.type), tg_trace_shape_str(t.ne, shape, sizeof(shape)),
           (unsigned long long) t.nb[0], (unsigned long long) t.nb[1], (unsigned long long) t.nb[2], (unsigned long long) t.nb[3]);
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++)
        if (t.src[k] != TG_TRACE_NONE) printf("  src%d %s%s\n", k, tg_escape_str(tg_trace_tensor_name(sh->tr, gi, t.src[k], nb)), t.src[k] >= gr.n_nodes ? " (leaf)" : "");
    struct tg_trace_placement p;
    if (tg_trace_get_placement(sh->tr, gi, ti, &p))
        printf("  placement: %s, because %s\n", tg_escape_str(tg_trace_backend_name(sh->tr, gr.sched_id, p.backend)), tg_escape_str(p.text) && p.text[0] ? tg_escape_str(p.text) : "(no cause recorded)");
    struct tg_trace_alloc a;
    struct tg_trace_buffer bu;
    if (tg_trace_get_alloc(sh->tr, gi, ti, &a) && a.buffer != TG_TRACE_NONE)   // buffer #uid, as every tgdb command names it
        printf("  memory: buffer #%llu, offset %llu, %llu bytes, live steps %d..%d%s%s\n",
               tg_trace_get_buffer(sh->tr, gi, (int) a.buffer, &bu) ? (unsigned long long) bu.uid : 0ull, (unsigned long long) a.offset,
               (unsigned long long) a.size, a.first_step, a.last_step, a.inplace_parent != TG_TRACE_NONE ? ", in place of " : "",
               a.inplace_parent != TG_TRACE_NONE ? tg_escape_str(tg_trace_tensor_name(sh->tr, gi, a.inplace_parent, nb)) : "");
    int ei = tg_trace_find_eval(sh->tr, gr.graph_id, ti, UINT32_MAX);
    struct tg_trace_eval e;
    if (ei >= 0 && tg_trace_get_eval(sh->tr, ei, &e)) {
        printf("  evaluated: %.3f us", (double) (e.t_end_ns - e.t_begin_ns) / 1e3);
        if (e.flags & TG_TRACE_EVAL_HASH) printf(", hash %016llx", (unsigned long long) e.hash);
        printf("\n");
        if (e.flags & TG_TRACE_EVAL_SUMMARY)
            printf("  min %.6g max %.6g mean %.6g rms %.6g nan %llu inf %llu\n", e.sum.min, e.sum.max, e.sum.mean, e.sum.rms,
                   (unsigned long long) e.sum.n_nan, (unsigned long long) e.sum.n_inf);
    } else {
        printf("  not evaluated\n");
    }
}

int shell_cmd_info(struct shell * sh, int argc, char ** argv) {
    if (argc < 2) return shell_err(sh, "usage: info run|graphs|splits|buffers|breaks|node NODE");
    const char * what = argv[1];
    if (!strcmp(what, "breaks") || !strcmp(what, "breakpoints")) {  // gdb spells it out
        if (!sh->n_breaks) printf("no breakpoints\n");
        for (int k = 0; k < sh->n_breaks; k++)
            printf("  %d: %s%s  (hit %d time%s)\n", k + 1, sh->breaks[k].kind == BREAK_OP ? "op " : "", sh->breaks[k].pattern,
                   sh->breaks[k].hits, sh->breaks[k].hits == 1 ? "" : "s");
        return 0;
    }
    if (!need_trace(sh)) return 1;
    int gi = current_gi(sh);
    if (!strcmp(what, "run")) {
        struct tg_trace_run r;
        struct tg_trace_status st;
        tg_trace_get_status(sh->tr, &st);
        if (tg_trace_get_run(sh->tr, &r))
            printf("  command: %s\n  engine %s, backends %s, %d threads, pid %u\n", tg_escape_str(r.cmdline), r.engine_version, tg_escape_str(r.backends), r.n_threads, r.pid);
        printf("  %d graphs, %d evaluated nodes, %d host accesses, %d markers; %s\n", tg_trace_n_graphs(sh->tr), tg_trace_n_evals(sh->tr),
               tg_trace_n_hosts(sh->tr), tg_trace_n_markers(sh->tr), st.message);
    } else if (!strcmp(what, "graphs")) {
        info_graphs(sh);
    } else if (!strcmp(what, "splits")) {
        if (gi < 0) return shell_err(sh, "the trace has no graphs");
        struct tg_trace_graph gr;
        tg_trace_get_graph(sh->tr, gi, &gr);
        int ns = tg_trace_n_splits(sh->tr, gi);
        printf("graph %d: %d splits\n", gi, ns);
        for (int s = 0; s < ns; s++) {
            struct tg_trace_split sp;
            if (!tg_trace_get_split(sh->tr, gi, s, &sp)) continue;
            uint64_t bytes = 0;
            for (uint32_t k = 0; k < sp.n_inputs; k++) {
                struct tg_trace_split_input in;
                if (tg_trace_get_split_input(sh->tr, gi, (int) (sp.first_input + k), &in)) bytes += in.bytes;
            }
            printf("  split %-3d %-6s nodes %d..%d, %u inputs, %llu bytes copied\n", s, tg_escape_str(tg_trace_backend_name(sh->tr, gr.sched_id, sp.backend)),
                   sp.node_begin, sp.node_end - 1, sp.n_inputs, (unsigned long long) bytes);
        }
    } else if (!strcmp(what, "buffers")) {
        if (gi < 0) return shell_err(sh, "the trace has no graphs");
        struct tg_trace_graph gr;
        tg_trace_get_graph(sh->tr, gi, &gr);
        static const char * usage[] = {"any", "weights", "compute"};
        for (int b = 0; b < tg_trace_n_buffers(sh->tr, gi); b++) {
            struct tg_trace_buffer bu;
            if (!tg_trace_get_buffer(sh->tr, gi, b, &bu)) continue;
            printf("  buffer #%llu: ", (unsigned long long) bu.uid);   // weights and 'any' buffers belong to no backend
            if (bu.backend >= 0) printf("%s, ", tg_escape_str(tg_trace_backend_name(sh->tr, gr.sched_id, bu.backend)));
            printf("type %s, usage %s, %llu bytes\n", tg_escape_str(bu.buft), bu.usage >= 0 && bu.usage < 3 ? usage[bu.usage] : "?",
                   (unsigned long long) bu.size);
        }
    } else if (!strcmp(what, "node")) {
        if (argc != 3) return shell_err(sh, "usage: info node NODE");
        if (gi < 0) return shell_err(sh, "the trace has no graphs");
        int ti = resolve_node(sh, gi, argv[2]);
        if (ti < 0) return 1;
        info_node(sh, gi, ti);
    } else {
        return shell_err(sh, "info: unknown topic '%s' (run, graphs, splits, buffers, breaks, node NODE)", what);
    }
    return 0;
}

// Runs a registered `tgdb` subcommand with argv (diff, dot).
static int run_cli(struct shell * sh, const char * name, int argc, char ** argv) {
    const struct tg_cli_command * c = tg_cli_find(name);
    if (!c) return shell_err(sh, "%s is not available in this build", name);
    fflush(stdout);
    int rc = c->fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

int shell_cmd_diff(struct shell * sh, int argc, char ** argv) {
    if (argc < 2) return shell_err(sh, "usage: diff TRACE2 [--rtol R] [--atol A]");
    if (!need_trace(sh)) return 1;
    char * av[SHELL_MAX_ARGS + 2];
    int ac = 0;
    av[ac++] = "diff";
    av[ac++] = sh->path;
    for (int i = 1; i < argc && ac < SHELL_MAX_ARGS; i++) av[ac++] = argv[i];
    int rc = run_cli(sh, "diff", ac, av);
    if (rc > 1) sh->n_errors++;  // 1 only means "different"
    return rc > 1;
}

int shell_cmd_dot(struct shell * sh, int argc, char ** argv) {
    if (!need_trace(sh)) return 1;
    char * av[SHELL_MAX_ARGS + 4];
    char gbuf[16];
    int ac = 0;
    bool has_graph = false;
    av[ac++] = "dot";
    av[ac++] = sh->path;
    for (int i = 1; i < argc && ac < SHELL_MAX_ARGS; i++) { has_graph |= !strcmp(argv[i], "--graph"); av[ac++] = argv[i]; }
    int gi = current_gi(sh);
    if (!has_graph && gi >= 0) { snprintf(gbuf, sizeof(gbuf), "%d", gi); av[ac++] = "--graph"; av[ac++] = gbuf; }
    int rc = run_cli(sh, "dot", ac, av);
    if (rc) sh->n_errors++;
    return rc;
}

int shell_cmd_check(struct shell * sh, int argc, char ** argv) {
    (void) argc; (void) argv;
    if (!need_trace(sh)) return 1;
    const struct tg_trace_report * r = report(sh);
    if (!r) return shell_err(sh, "check failed: %s", tg_last_error());
    for (int k = 0; k < r->n_findings; k++)
        printf("%s %s\n%s\n", r->findings[k].problem ? "PROBLEM" : "note", tg_trace_finding_kind_name(r->findings[k].kind),
               r->findings[k].text ? r->findings[k].text : "");
    printf("%d problem%s, %d finding%s, %d host reads checked\n", r->n_problems, r->n_problems == 1 ? "" : "s", r->n_findings,
           r->n_findings == 1 ? "" : "s", r->n_host_reads_checked);
    return 0;
}

int shell_cmd_open(struct shell * sh, int argc, char ** argv) {
    if (argc != 2) return shell_err(sh, "usage: open TRACE");
    if (!shell_open_trace(sh, argv[1])) return shell_err(sh, "%s", tg_last_error());
    return 0;
}

void shell_node_names(struct shell * sh, void (*fn)(const char * name, void * user), void * user) {
    if (sh->live) { shell_live_node_names(sh, fn, user); return; }
    if (!sh->tr) return;
    int gi = current_gi(sh);
    struct tg_trace_graph gr;
    if (gi < 0 || !tg_trace_get_graph(sh->tr, gi, &gr)) return;
    char nb[TG_TRACE_NAME];
    for (int i = 0; i < gr.n_nodes + gr.n_leafs; i++) {
        const char * n = tg_trace_tensor_name(sh->tr, gi, i, nb);
        if (n[0]) fn(n, user);
    }
}
