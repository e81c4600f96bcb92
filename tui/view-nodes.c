// view-nodes.c - execution order of the current graph, one row per node.
// Rows are fetched from the source only when drawn (virtualised), so a
// 200k-node graph costs what the visible rows cost.
#include "tui-impl.h"
#include "tg/trace-types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nodes_priv {
    int   graph;
    int * filtered;     // node indices matching the filter, or NULL (all)
    int   n_filtered;
    char  filter[128];
};

static struct tg_tui_source * SRC(struct tui_view * v) { return v->tui->src; }

static int node_at(struct tui_view * v, int row) {
    struct nodes_priv * p = v->priv;
    return p->filtered ? (row < p->n_filtered ? p->filtered[row] : -1) : row;
}

static int nodes_rows(struct tui_view * v) {
    struct nodes_priv * p = v->priv;
    if (p->filtered) return p->n_filtered;
    return SRC(v)->ops->n_nodes(SRC(v)->ctx, p->graph);
}

enum tui_color tg_tui_backend_color(int backend) {
    if (backend < 0) return TUI_C_DIM;
    return (enum tui_color) (TUI_C_BACKEND0 + backend % 4);
}

const char * tg_tui_backend_name(struct tui * t, int backend) {
    const struct tg_tui_source_ops * o = t->src->ops;
    if (backend < 0 || !o->backend_name) return "-";
    const char * n = o->backend_name(t->src->ctx, backend);
    return n ? n : "?";
}

void tg_tui_format_shape(const int64_t ne[4], char * buf, size_t n) {
    int nd = 4;
    while (nd > 1 && ne[nd - 1] == 1) nd--;
    size_t len = (size_t) snprintf(buf, n, "[");
    for (int i = 0; i < nd && len < n; i++)
        len += (size_t) snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long) ne[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

void tg_tui_format_time(int64_t ns, char * buf, size_t n) {
    if (ns < 0) snprintf(buf, n, "-");
    else if (ns < 10000) snprintf(buf, n, "%lldns", (long long) ns);
    else if (ns < 10000000) snprintf(buf, n, "%.1fus", ns / 1e3);
    else snprintf(buf, n, "%.1fms", ns / 1e6);
}

static void node_status(const struct tg_tui_node * nd, struct tui_line * l) {
    if (nd->flags & TG_TUI_CURRENT) tg_tui_line_add(l, TUI_C_WARN, ">");
    if (nd->flags & TG_TUI_BREAK) tg_tui_line_add(l, TUI_C_BAD, "B ");
    if (nd->flags & (TG_TUI_NAN | TG_TUI_INF) || nd->n_nan > 0 || nd->n_inf > 0)
        tg_tui_line_add(l, TUI_C_BAD, nd->n_nan > 0 || (nd->flags & TG_TUI_NAN) ? "NaN " : "Inf ");
    if (nd->flags & TG_TUI_STALE) tg_tui_line_add(l, TUI_C_BAD, "STALE ");
    if (nd->flags & TG_TUI_DIFF_FIRST) tg_tui_line_add(l, TUI_C_BAD, "FIRST-DIFF ");
    else if (nd->flags & TG_TUI_DIFF_DIFF) tg_tui_line_add(l, TUI_C_BAD, "diff ");
    else if (nd->flags & TG_TUI_DIFF_NEAR) tg_tui_line_add(l, TUI_C_WARN, "near ");
    else if (nd->flags & TG_TUI_DIFF_SAME) tg_tui_line_add(l, TUI_C_GOOD, "same ");
    if (nd->has_hash) tg_tui_line_addf(l, TUI_C_DIM, "%08llx", (unsigned long long) (nd->hash >> 32));
}

// Column layout for the terminal width: the name column takes what is left;
// buffer@offset is shown only on wide terminals.
struct cols { int name; bool buffer; };
static struct cols layout(struct tui * t) {
    struct cols c = {20, t->cols >= 110};
    int fixed = 1 + 5 + 1 + 1 + 11 + 17 + 6 + (c.buffer ? 13 : 0) + 8 + 1 + 14;
    c.name = t->cols - fixed;
    if (c.name < 16) c.name = 16;
    if (c.name > 40) c.name = 40;
    return c;
}

static void nodes_row(struct tui_view * v, int row, struct tui_line * l) {
    struct nodes_priv * p = v->priv;
    struct tg_tui_node nd;
    struct cols c = layout(v->tui);
    int i = node_at(v, row);
    if (i < 0 || !SRC(v)->ops->node(SRC(v)->ctx, p->graph, i, &nd)) {
        tg_tui_line_add(l, TUI_C_BAD, "(unreadable node)");
        return;
    }
    char shape[48], time[16], where[40];
    tg_tui_line_add(l, nd.split_begin ? TUI_C_SPLIT : TUI_C_DIM, nd.split_begin ? "\xe2\x94\x8c" : "\xe2\x94\x82");
    tg_tui_line_colf(l, TUI_C_DIM, 5, true, "%d", nd.index);
    tg_tui_line_add(l, TUI_C_DEFAULT, " ");
    tg_tui_line_col(l, TUI_C_DEFAULT, c.name, false, nd.name[0] ? nd.name : "(unnamed)");
    tg_tui_line_add(l, TUI_C_DEFAULT, " ");
    tg_tui_line_col(l, TUI_C_DEFAULT, 11, false, nd.op);
    tg_tui_format_shape(nd.ne, shape, sizeof(shape));
    tg_tui_line_colf(l, TUI_C_DEFAULT, 17, false, "%s %s", nd.type, shape);
    tg_tui_line_col(l, tg_tui_backend_color(nd.backend), 6, false, tg_tui_backend_name(v->tui, nd.backend));
    if (c.buffer) {
        // buffer #uid@offset, as `tgdb trace nodes` prints it
        if (nd.buffer >= 0) snprintf(where, sizeof(where), "#%llu@%lld", (unsigned long long) nd.buffer_uid, (long long) nd.offset);
        else snprintf(where, sizeof(where), "%s", nd.view_src[0] ? "view" : "-");
        tg_tui_line_col(l, TUI_C_DIM, 13, false, where);
    }
    tg_tui_format_time(nd.time_ns, time, sizeof(time));
    tg_tui_line_col(l, TUI_C_DEFAULT, 8, true, time);
    tg_tui_line_add(l, TUI_C_DEFAULT, " ");
    node_status(&nd, l);
}

static void nodes_header(struct tui_view * v, struct tui_line * l) {
    struct cols c = layout(v->tui);
    tg_tui_line_add(l, TUI_C_HEADER, " ");
    tg_tui_line_col(l, TUI_C_HEADER, 5, true, "#");
    tg_tui_line_add(l, TUI_C_HEADER, " ");
    tg_tui_line_col(l, TUI_C_HEADER, c.name, false, "name");
    tg_tui_line_add(l, TUI_C_HEADER, " ");
    tg_tui_line_col(l, TUI_C_HEADER, 11, false, "op");
    tg_tui_line_col(l, TUI_C_HEADER, 17, false, "type shape");
    tg_tui_line_col(l, TUI_C_HEADER, 6, false, "where");
    if (c.buffer) tg_tui_line_col(l, TUI_C_HEADER, 13, false, "buffer@offset");
    tg_tui_line_col(l, TUI_C_HEADER, 8, true, "time");
    tg_tui_line_add(l, TUI_C_HEADER, " status");
}

static void nodes_title(struct tui_view * v, char * buf, size_t n) {
    struct nodes_priv * p = v->priv;
    const struct tg_tui_source_ops * o = SRC(v)->ops;
    char label[128] = "";
    if (o->graph_label) o->graph_label(SRC(v)->ctx, p->graph, label, sizeof(label));
    else snprintf(label, sizeof(label), "graph %d", tg_tui_graph_number(v->tui, p->graph));
    snprintf(buf, n, "nodes: %s%s%s%s", label, p->filtered ? "  filter: " : "", p->filtered ? p->filter : "",
             p->filtered ? "" : "");
}

static bool nodes_match(struct tui_view * v, int row, const char * pat) {
    struct nodes_priv * p = v->priv;
    struct tg_tui_node nd;
    int i = node_at(v, row);
    if (i < 0 || !SRC(v)->ops->node(SRC(v)->ctx, p->graph, i, &nd)) return false;
    return tg_tui_match_pattern(pat, nd.name) || strcmp(pat, nd.op) == 0;
}

int tg_tui_graph_number(struct tui * t, int g) {
    const struct tg_tui_source_ops * o = t->src->ops;
    return o->graph_number ? o->graph_number(t->src->ctx, g) : g;
}

static int n_graphs(struct tui * t) {
    return t->src->ops->n_graphs ? t->src->ops->n_graphs(t->src->ctx) : 1;
}

static bool set_graph(struct tui_view * v, int g) {
    struct nodes_priv * p = v->priv;
    int ng = n_graphs(v->tui);
    if (g < 0 || g >= ng) {
        tg_tui_message(v->tui, true, g < 0 ? "no graph before graph %d" : "no graph after graph %d", tg_tui_graph_number(v->tui, p->graph));
        return false;
    }
    p->graph = g;
    v->tui->graph = g;
    free(p->filtered);
    p->filtered = NULL;
    v->top = v->cur = 0;
    tg_tui_message(v->tui, false, "graph %d (%d of %d)", tg_tui_graph_number(v->tui, g), g + 1, ng);
    return true;
}

// "Go to graph N": N is the graph's number as shown (the trace's graph id).
static void goto_graph(struct tui_view * v) {
    struct tui * t = v->tui;
    char buf[32], * end;
    if (!tg_tui_prompt(t, "go to graph: ", buf, sizeof(buf)) || !buf[0]) return;
    long want = strtol(buf, &end, 10);
    if (*end != '\0' || end == buf) { tg_tui_message(t, true, "not a graph number: '%s'", buf); return; }
    int ng = n_graphs(t);
    for (int g = 0; g < ng; g++)
        if (tg_tui_graph_number(t, g) == want) { set_graph(v, g); return; }
    tg_tui_message(t, true, "no graph %ld (graphs %d..%d)", want, tg_tui_graph_number(t, 0), tg_tui_graph_number(t, ng - 1));
}

static void apply_filter(struct tui_view * v, const char * pat) {
    struct nodes_priv * p = v->priv;
    free(p->filtered);
    p->filtered = NULL;
    p->n_filtered = 0;
    v->top = v->cur = 0;
    if (!pat[0]) { tg_tui_message(v->tui, false, "filter cleared"); return; }
    char why[160];
    if (!tg_trace_filter_check(pat, why, sizeof(why))) { tg_tui_message(v->tui, true, "filter '%s': %s", pat, why); return; }
    int n = SRC(v)->ops->n_nodes(SRC(v)->ctx, p->graph);
    p->filtered = malloc(sizeof(int) * (size_t) (n > 0 ? n : 1));
    if (!p->filtered) { tg_tui_message(v->tui, true, "out of memory"); return; }
    snprintf(p->filter, sizeof(p->filter), "%s", pat);
    struct tg_tui_node nd;
    for (int i = 0; i < n; i++)
        if (SRC(v)->ops->node(SRC(v)->ctx, p->graph, i, &nd) &&
            tg_trace_filter_match(pat, nd.name, nd.op, nd.type))   // the one filter syntax (CLI, shell, TUI)
            p->filtered[p->n_filtered++] = i;
    tg_tui_message(v->tui, false, "filter '%s': %d of %d nodes", pat, p->n_filtered, n);
}

// The first line of the check finding naming node i of graph g ("" none).
static void finding_line(struct tui * t, int g, int i, char * buf, size_t n) {
    const struct tg_tui_source_ops * o = t->src->ops;
    struct tg_tui_problem pr;
    buf[0] = '\0';
    int np = o->n_problems ? o->n_problems(t->src->ctx) : 0;
    for (int k = 0; k < np; k++) {
        if (!o->problem(t->src->ctx, k, &pr)) continue;
        if ((pr.graph == g && pr.node == i) || (pr.graph_u == g && pr.node_u == i)) {
            const char * nl = strchr(pr.text, '\n');
            int len = nl ? (int) (nl - pr.text) : (int) strlen(pr.text);
            snprintf(buf, n, "%.*s", len, pr.text);
            return;
        }
    }
}

static bool node_has_problem(const struct tg_tui_node * nd, bool nan_only, bool * nan) {
    *nan = nd->n_nan > 0 || nd->n_inf > 0 || (nd->flags & (TG_TUI_NAN | TG_TUI_INF));
    bool other = nd->flags & (TG_TUI_STALE | TG_TUI_DIFF_DIFF | TG_TUI_DIFF_FIRST);
    return *nan || (!nan_only && other);
}

// Moves to the next row whose node has the wanted problem flags: below the
// cursor, then (the problem key, no filter) in the following graphs.
static void next_problem(struct tui_view * v, bool nan_only) {
    struct nodes_priv * p = v->priv;
    struct tui * t = v->tui;
    struct tg_tui_node nd;
    bool nan;
    int ng = nan_only || p->filtered ? p->graph + 1 : n_graphs(t);
    for (int g = p->graph; g < ng; g++) {
        int n = g == p->graph ? nodes_rows(v) : SRC(v)->ops->n_nodes(SRC(v)->ctx, g);
        for (int row = g == p->graph ? v->cur + 1 : 0; row < n; row++) {
            int i = g == p->graph ? node_at(v, row) : row;
            if (!SRC(v)->ops->node(SRC(v)->ctx, g, i, &nd) || !node_has_problem(&nd, nan_only, &nan)) continue;
            if (g != p->graph) set_graph(v, g);
            tg_tui_view_goto(v, row);
            char what[200];
            finding_line(t, g, i, what, sizeof(what));
            if (!what[0] || nan) snprintf(what, sizeof(what), "%s", nan ? "NaN/Inf" : (nd.flags & TG_TUI_STALE) ? "stale read" : "diff");
            tg_tui_message(t, false, "graph %d node %d %s: %s", tg_tui_graph_number(t, g), nd.index, nd.name, what);
            return;
        }
    }
    tg_tui_message(t, true, nan_only ? "no NaN/Inf below the cursor in this graph"
                       : p->filtered ? "no problem below the cursor among the filtered nodes"
                       : "no problem below the cursor (this graph and the later ones)");
}

void tg_tui_nodes_show(struct tui * t, int graph, int node) {
    while (t->n_views > 1) tg_tui_pop(t);
    struct tui_view * v = tg_tui_top(t);
    struct nodes_priv * p = v->priv;
    if (graph != p->graph && !set_graph(v, graph)) return;
    int n = nodes_rows(v);
    for (int row = 0; row < n; row++)
        if (node_at(v, row) == node) { tg_tui_view_goto(v, row); return; }
    if (p->filtered) {  // not among the filtered rows: show all
        free(p->filtered);
        p->filtered = NULL;
        tg_tui_view_goto(v, node);
    }
}

static void live_action(struct tui_view * v, enum tui_request r) {
    struct tui * t = v->tui;
    const struct tg_tui_source_ops * o = t->src->ops;
    char msg[256] = "";
    bool ok;
    if (r == TUI_REQ_BREAK) {
        char pat[128];
        if (!o->set_break) { tg_tui_message(t, true, "breakpoints need a live run (tgdb tui -m MODEL -p PROMPT)"); return; }
        if (!tg_tui_prompt(t, "break on name pattern: ", pat, sizeof(pat))) return;
        ok = o->set_break(t->src->ctx, pat, msg, sizeof(msg));
    } else {
        bool (*fn)(void *, char *, size_t) = r == TUI_REQ_STEP ? o->step : r == TUI_REQ_NEXT_TOKEN ? o->next_decode : o->cont;
        if (!fn) { tg_tui_message(t, true, "stepping needs a live run (tgdb tui -m MODEL -p PROMPT)"); return; }
        ok = fn(t->src->ctx, msg, sizeof(msg));
        struct nodes_priv * p = v->priv;
        int ng = o->n_graphs ? o->n_graphs(t->src->ctx) : 1;
        if (ng - 1 != p->graph) set_graph(v, ng - 1);
        // follow the execution point
        int n = nodes_rows(v);
        struct tg_tui_node nd;
        for (int row = 0; row < n; row++)
            if (o->node(t->src->ctx, p->graph, node_at(v, row), &nd) && (nd.flags & TG_TUI_CURRENT)) { tg_tui_view_goto(v, row); break; }
    }
    tg_tui_message(t, !ok, "%s", msg);
}

// The gradient key: selects the partner (gradient or forward node) in this
// list; a leaf (a weight whose gradient this is) opens in the detail view.
static void grad_jump(struct tui_view * v, int i) {
    struct nodes_priv * p = v->priv;
    int j = i >= 0 ? tg_tui_grad_partner(v->tui, p->graph, i) : -1;
    if (j < 0) return;
    if (j < SRC(v)->ops->n_nodes(SRC(v)->ctx, p->graph)) tg_tui_nodes_show(v->tui, p->graph, j);
    else tg_tui_push(v->tui, tg_tui_view_detail(v->tui, p->graph, j));
}

static bool nodes_request(struct tui_view * v, enum tui_request r) {
    struct nodes_priv * p = v->priv;
    int i = node_at(v, v->cur);
    switch (r) {
    case TUI_REQ_ENTER: case TUI_REQ_VIEW_DETAIL:
        if (i >= 0) tg_tui_push(v->tui, tg_tui_view_detail(v->tui, p->graph, i));
        return true;
    case TUI_REQ_VIEW_TENSOR:
        if (i >= 0) tg_tui_push(v->tui, tg_tui_view_tensor(v->tui, p->graph, i));
        return true;
    case TUI_REQ_GRAD: grad_jump(v, i); return true;
    case TUI_REQ_NEXT_GRAPH: set_graph(v, p->graph + 1); return true;
    case TUI_REQ_PREV_GRAPH: set_graph(v, p->graph - 1); return true;
    case TUI_REQ_FILTER: {
        char pat[128];
        if (tg_tui_prompt(v->tui, "filter (name glob, op=, type=, a,b; empty clears): ", pat, sizeof(pat))) apply_filter(v, pat);
        return true;
    }
    case TUI_REQ_NEXT_NAN: next_problem(v, true); return true;
    case TUI_REQ_NEXT_PROBLEM: next_problem(v, false); return true;
    case TUI_REQ_GOTO_GRAPH: goto_graph(v); return true;
    case TUI_REQ_STEP: case TUI_REQ_CONTINUE: case TUI_REQ_BREAK: case TUI_REQ_NEXT_TOKEN: live_action(v, r); return true;
    default: return false;
    }
}

static void nodes_moved(struct tui_view * v) {
    v->tui->node = node_at(v, v->cur);
}

static void nodes_close(struct tui_view * v) {
    struct nodes_priv * p = v->priv;
    free(p->filtered);
    free(p);
}

static const struct tui_view_ops nodes_ops = {
    .name = "nodes", .n_rows = nodes_rows, .row = nodes_row, .header = nodes_header,
    .title = nodes_title, .request = nodes_request, .match = nodes_match, .moved = nodes_moved,
    .close = nodes_close,
};

struct tui_view * tg_tui_view_nodes(struct tui * t) {
    struct nodes_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->graph = t->graph;
    struct tui_view * v = tg_tui_view_new(t, &nodes_ops, p);
    if (!v) free(p);
    return v;
}
