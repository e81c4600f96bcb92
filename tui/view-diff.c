// view-diff.c - two traces side by side, graph by graph: nodes aligned by
// name, op and shape (tolerant of inserted/missing nodes), each pair
// classified (same hash / near / different / only in one), the first
// divergence marked.
#include "tg/trace-diff.h"
#include "tg/tui-trace.h"
#include "tui-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The alignment and classification are tgdb diff's (tg/trace-diff.h): the
// view shows the pairs of the current graph.
struct diff_priv {
    struct tg_tui_source * B;
    int graph;
    struct tg_diff_result res;
    int * rows;        // pair indices of this graph
    int n;
    int first;         // row of the first divergence, -1 none
};

static bool align(struct tui * t, struct diff_priv * p) {
    struct tg_trace * ta = tg_tui_source_trace_handle(t->src), * tb = tg_tui_source_trace_handle(p->B);
    if (!ta || !tb) { tg_tui_message(t, true, "diff needs two traces"); return false; }
    struct tg_diff_side * a = tg_diff_side_trace(ta), * b = tg_diff_side_trace(tb);
    bool ok = a && b && tg_diff_run(a, b, NULL, &p->res) == TG_OK;
    tg_diff_side_free(a);
    tg_diff_side_free(b);
    if (!ok) { tg_tui_message(t, true, "diff failed: %s", tg_last_error()); return false; }
    p->rows = malloc(sizeof(int) * (size_t) (p->res.n_pairs + 1));
    if (!p->rows) { tg_diff_result_free(&p->res); return false; }
    p->first = -1;
    for (int k = 0; k < p->res.n_pairs; k++) {
        if (p->res.pairs[k].graph != p->graph) continue;
        if (k == p->res.first) p->first = p->n;
        p->rows[p->n++] = k;
    }
    return true;
}

static int diff_rows(struct tui_view * v) { return ((struct diff_priv *) v->priv)->n; }

static void side(struct tg_tui_source * s, int graph, int i, int w, struct tui_line * l) {
    struct tg_tui_node nd;
    if (i < 0 || !s->ops->node(s->ctx, graph, i, &nd)) { tg_tui_line_col(l, TUI_C_DIM, w, false, ""); return; }
    char txt[160];
    snprintf(txt, sizeof(txt), "%5d %s %s", nd.index, nd.name, nd.op);
    tg_tui_line_col(l, TUI_C_DEFAULT, w, false, txt);
}

static void diff_row(struct tui_view * v, int row, struct tui_line * l) {
    struct diff_priv * p = v->priv;
    static const char * kind_name[] = {"same", "near", "DIFF", "only A", "only B", "?"};
    static const enum tui_color kind_color[] = {TUI_C_GOOD, TUI_C_WARN, TUI_C_BAD, TUI_C_WARN, TUI_C_WARN, TUI_C_DIM};
    const struct tg_diff_pair * pr = &p->res.pairs[p->rows[row]];
    int w = (v->tui->cols - 10) / 2;
    tg_tui_line_col(l, row == p->first ? TUI_C_BAD : kind_color[pr->kind], 8, false,
                 row == p->first ? "FIRST" : kind_name[pr->kind]);
    side(v->tui->src, p->graph, pr->node_a, w, l);
    tg_tui_line_add(l, TUI_C_DIM, "|");
    side(p->B, p->graph, pr->node_b, w, l);
}

static void diff_header(struct tui_view * v, struct tui_line * l) {
    struct diff_priv * p = v->priv;
    int w = (v->tui->cols - 10) / 2;
    tg_tui_line_col(l, TUI_C_HEADER, 8, false, "status");
    tg_tui_line_col(l, TUI_C_HEADER, w, false, v->tui->src->ops->name ? v->tui->src->ops->name(v->tui->src->ctx) : "A");
    tg_tui_line_add(l, TUI_C_HEADER, "|");
    tg_tui_line_col(l, TUI_C_HEADER, w, false, p->B->ops->name ? p->B->ops->name(p->B->ctx) : "B");
}

static void diff_title(struct tui_view * v, char * buf, size_t n) {
    struct diff_priv * p = v->priv;
    const int g = tg_tui_graph_number(v->tui, p->graph);
    if (p->first >= 0) { snprintf(buf, n, "diff: graph %d, first divergence at row %d (e jumps)", g, p->first + 1); return; }
    // no value diverges: say what the rows rest on (nodes in one trace only, nodes without data)
    int only_a = 0, only_b = 0, compared = 0, unknown = 0;
    for (int r = 0; r < p->n; r++) {
        const int kind = p->res.pairs[p->rows[r]].kind;
        only_a += kind == TG_DIFF_ONLY_A;
        only_b += kind == TG_DIFF_ONLY_B;
        compared += kind == TG_DIFF_SAME || kind == TG_DIFF_NEAR || kind == TG_DIFF_DIFF;
        unknown += kind == TG_DIFF_UNKNOWN;
    }
    char agree[48];
    if (compared) snprintf(agree, sizeof agree, "the %d compared agree", compared);
    else snprintf(agree, sizeof agree, "no values compared");
    if (only_a || only_b)
        snprintf(buf, n, "diff: graph %d, the graphs differ (%d node%s only in A, %d only in B); %s", g, only_a,
                 only_a == 1 ? "" : "s", only_b, agree);
    else if (!compared && unknown)
        snprintf(buf, n, "diff: graph %d, nothing compared (%d nodes without hashes, summaries or contents)", g, unknown);
    else
        snprintf(buf, n, "diff: graph %d, no divergence (%d compared)", g, compared);
}

static bool diff_match(struct tui_view * v, int row, const char * pat) {
    struct diff_priv * p = v->priv;
    struct tg_tui_node nd;
    const struct tg_diff_pair * pr = &p->res.pairs[p->rows[row]];
    if (pr->node_a >= 0 && v->tui->src->ops->node(v->tui->src->ctx, p->graph, pr->node_a, &nd) && tg_tui_match_pattern(pat, nd.name)) return true;
    return pr->node_b >= 0 && p->B->ops->node(p->B->ctx, p->graph, pr->node_b, &nd) && tg_tui_match_pattern(pat, nd.name);
}

static bool diff_request(struct tui_view * v, enum tui_request r) {
    struct diff_priv * p = v->priv;
    if (r == TUI_REQ_NEXT_PROBLEM || r == TUI_REQ_NEXT_NAN) {
        for (int row = v->cur + 1; row < p->n; row++) {
            int kind = p->res.pairs[p->rows[row]].kind;
            if (kind != TG_DIFF_SAME && kind != TG_DIFF_NEAR) { tg_tui_view_goto(v, row); return true; }
        }
        tg_tui_message(v->tui, true, "no difference below the cursor");
        return true;
    }
    if (r == TUI_REQ_ENTER) {
        if (p->n && p->res.pairs[p->rows[v->cur]].node_a >= 0) tg_tui_push(v->tui, tg_tui_view_detail(v->tui, p->graph, p->res.pairs[p->rows[v->cur]].node_a));
        return true;
    }
    return false;
}

static void diff_close(struct tui_view * v) {
    struct diff_priv * p = v->priv;
    tg_diff_result_free(&p->res);
    free(p->rows);
    free(p);
}

static const struct tui_view_ops diff_ops = {
    .name = "diff", .n_rows = diff_rows, .row = diff_row, .header = diff_header, .title = diff_title,
    .request = diff_request, .match = diff_match, .close = diff_close,
};

struct tui_view * tg_tui_view_diff(struct tui * t) {
    struct tg_tui_source * B = t->diff;
    if (!B) { tg_tui_message(t, true, "no second trace: open with tgdb tui A.trace --diff B.trace"); return NULL; }
    struct diff_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->B = B;
    p->graph = t->graph;
    if (!align(t, p)) { free(p); return NULL; }
    struct tui_view * v = tg_tui_view_new(t, &diff_ops, p);
    if (!v) { tg_diff_result_free(&p->res); free(p->rows); free(p); return NULL; }
    tg_tui_push(t, v);
    if (p->first >= 0) tg_tui_view_goto(v, p->first);
    return v;
}
