// view-nodes.c - execution order of the current graph, one row per node.
// Rows are fetched from the source only when drawn (virtualised), so a
// 200k-node graph costs what the visible rows cost.
#include "tui-impl.h"

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

enum tui_color tui_backend_color(int backend) {
    if (backend < 0) return TUI_C_DIM;
    return (enum tui_color) (TUI_C_BACKEND0 + backend % 4);
}

const char * tui_backend_name(struct tui * t, int backend) {
    const struct tg_tui_source_ops * o = t->src->ops;
    if (backend < 0 || !o->backend_name) return "-";
    const char * n = o->backend_name(t->src->ctx, backend);
    return n ? n : "?";
}

void tui_format_shape(const int64_t ne[4], char * buf, size_t n) {
    int nd = 4;
    while (nd > 1 && ne[nd - 1] == 1) nd--;
    size_t len = (size_t) snprintf(buf, n, "[");
    for (int i = 0; i < nd && len < n; i++)
        len += (size_t) snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long) ne[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

void tui_format_time(int64_t ns, char * buf, size_t n) {
    if (ns < 0) snprintf(buf, n, "-");
    else if (ns < 10000) snprintf(buf, n, "%lldns", (long long) ns);
    else if (ns < 10000000) snprintf(buf, n, "%.1fus", ns / 1e3);
    else snprintf(buf, n, "%.1fms", ns / 1e6);
}

static void node_status(const struct tg_tui_node * nd, struct tui_line * l) {
    if (nd->flags & TG_TUI_CURRENT) tui_line_add(l, TUI_C_WARN, ">");
    if (nd->flags & TG_TUI_BREAK) tui_line_add(l, TUI_C_BAD, "B ");
    if (nd->flags & (TG_TUI_NAN | TG_TUI_INF) || nd->n_nan > 0 || nd->n_inf > 0)
        tui_line_add(l, TUI_C_BAD, nd->n_nan > 0 || (nd->flags & TG_TUI_NAN) ? "NaN " : "Inf ");
    if (nd->flags & TG_TUI_STALE) tui_line_add(l, TUI_C_BAD, "STALE ");
    if (nd->flags & TG_TUI_DIFF_FIRST) tui_line_add(l, TUI_C_BAD, "FIRST-DIFF ");
    else if (nd->flags & TG_TUI_DIFF_DIFF) tui_line_add(l, TUI_C_BAD, "diff ");
    else if (nd->flags & TG_TUI_DIFF_NEAR) tui_line_add(l, TUI_C_WARN, "near ");
    else if (nd->flags & TG_TUI_DIFF_SAME) tui_line_add(l, TUI_C_GOOD, "same ");
    if (nd->has_hash) tui_line_addf(l, TUI_C_DIM, "%08llx", (unsigned long long) (nd->hash >> 32));
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
        tui_line_add(l, TUI_C_BAD, "(unreadable node)");
        return;
    }
    char shape[48], time[16], where[40];
    tui_line_add(l, nd.split_begin ? TUI_C_SPLIT : TUI_C_DIM, nd.split_begin ? "\xe2\x94\x8c" : "\xe2\x94\x82");
    tui_line_colf(l, TUI_C_DIM, 5, true, "%d", nd.index);
    tui_line_add(l, TUI_C_DEFAULT, " ");
    tui_line_col(l, TUI_C_DEFAULT, c.name, false, nd.name[0] ? nd.name : "(unnamed)");
    tui_line_add(l, TUI_C_DEFAULT, " ");
    tui_line_col(l, TUI_C_DEFAULT, 11, false, nd.op);
    tui_format_shape(nd.ne, shape, sizeof(shape));
    tui_line_colf(l, TUI_C_DEFAULT, 17, false, "%s %s", nd.type, shape);
    tui_line_col(l, tui_backend_color(nd.backend), 6, false, tui_backend_name(v->tui, nd.backend));
    if (c.buffer) {
        if (nd.buffer >= 0) snprintf(where, sizeof(where), "b%d@0x%llx", nd.buffer, (unsigned long long) nd.offset);
        else snprintf(where, sizeof(where), "%s", nd.view_src[0] ? "view" : "-");
        tui_line_col(l, TUI_C_DIM, 13, false, where);
    }
    tui_format_time(nd.time_ns, time, sizeof(time));
    tui_line_col(l, TUI_C_DEFAULT, 8, true, time);
    tui_line_add(l, TUI_C_DEFAULT, " ");
    node_status(&nd, l);
}

static void nodes_header(struct tui_view * v, struct tui_line * l) {
    struct cols c = layout(v->tui);
    tui_line_add(l, TUI_C_HEADER, " ");
    tui_line_col(l, TUI_C_HEADER, 5, true, "#");
    tui_line_add(l, TUI_C_HEADER, " ");
    tui_line_col(l, TUI_C_HEADER, c.name, false, "name");
    tui_line_add(l, TUI_C_HEADER, " ");
    tui_line_col(l, TUI_C_HEADER, 11, false, "op");
    tui_line_col(l, TUI_C_HEADER, 17, false, "type shape");
    tui_line_col(l, TUI_C_HEADER, 6, false, "where");
    if (c.buffer) tui_line_col(l, TUI_C_HEADER, 13, false, "buffer@offset");
    tui_line_col(l, TUI_C_HEADER, 8, true, "time");
    tui_line_add(l, TUI_C_HEADER, " status");
}

static void nodes_title(struct tui_view * v, char * buf, size_t n) {
    struct nodes_priv * p = v->priv;
    const struct tg_tui_source_ops * o = SRC(v)->ops;
    char label[128] = "";
    if (o->graph_label) o->graph_label(SRC(v)->ctx, p->graph, label, sizeof(label));
    else snprintf(label, sizeof(label), "graph %d", p->graph);
    snprintf(buf, n, "nodes: %s%s%s%s", label, p->filtered ? "  filter: " : "", p->filtered ? p->filter : "",
             p->filtered ? "" : "");
}

static bool nodes_match(struct tui_view * v, int row, const char * pat) {
    struct nodes_priv * p = v->priv;
    struct tg_tui_node nd;
    int i = node_at(v, row);
    if (i < 0 || !SRC(v)->ops->node(SRC(v)->ctx, p->graph, i, &nd)) return false;
    return tui_match_pattern(pat, nd.name) || strcmp(pat, nd.op) == 0;
}

static void set_graph(struct tui_view * v, int g) {
    struct nodes_priv * p = v->priv;
    int ng = SRC(v)->ops->n_graphs ? SRC(v)->ops->n_graphs(SRC(v)->ctx) : 1;
    if (g < 0 || g >= ng) { tui_message(v->tui, true, "no graph %d (have %d)", g, ng); return; }
    p->graph = g;
    v->tui->graph = g;
    free(p->filtered);
    p->filtered = NULL;
    v->top = v->cur = 0;
    tui_message(v->tui, false, "graph %d of %d", g, ng);
}

static void apply_filter(struct tui_view * v, const char * pat) {
    struct nodes_priv * p = v->priv;
    free(p->filtered);
    p->filtered = NULL;
    p->n_filtered = 0;
    v->top = v->cur = 0;
    if (!pat[0]) { tui_message(v->tui, false, "filter cleared"); return; }
    int n = SRC(v)->ops->n_nodes(SRC(v)->ctx, p->graph);
    p->filtered = malloc(sizeof(int) * (size_t) (n > 0 ? n : 1));
    if (!p->filtered) { tui_message(v->tui, true, "out of memory"); return; }
    snprintf(p->filter, sizeof(p->filter), "%s", pat);
    struct tg_tui_node nd;
    for (int i = 0; i < n; i++)
        if (SRC(v)->ops->node(SRC(v)->ctx, p->graph, i, &nd) &&
            (tui_match_pattern(pat, nd.name) || strcmp(pat, nd.op) == 0))
            p->filtered[p->n_filtered++] = i;
    tui_message(v->tui, false, "filter '%s': %d of %d nodes", pat, p->n_filtered, n);
}

// Moves to the next row whose node has the wanted problem flags.
static void next_problem(struct tui_view * v, bool nan_only) {
    struct nodes_priv * p = v->priv;
    int n = nodes_rows(v);
    struct tg_tui_node nd;
    for (int row = v->cur + 1; row < n; row++) {
        if (!SRC(v)->ops->node(SRC(v)->ctx, p->graph, node_at(v, row), &nd)) continue;
        bool nan = nd.n_nan > 0 || nd.n_inf > 0 || (nd.flags & (TG_TUI_NAN | TG_TUI_INF));
        bool other = nd.flags & (TG_TUI_STALE | TG_TUI_DIFF_DIFF | TG_TUI_DIFF_FIRST);
        if (nan || (!nan_only && other)) {
            tui_view_goto(v, row);
            tui_message(v->tui, false, "%s at node %d %s", nan ? "NaN/Inf" : "problem", nd.index, nd.name);
            return;
        }
    }
    tui_message(v->tui, true, nan_only ? "no NaN/Inf below the cursor in this graph" : "no problem below the cursor in this graph");
}

static void live_action(struct tui_view * v, enum tui_request r) {
    struct tui * t = v->tui;
    const struct tg_tui_source_ops * o = t->src->ops;
    char msg[256] = "";
    bool ok;
    if (r == TUI_REQ_BREAK) {
        char pat[128];
        if (!o->set_break) { tui_message(t, true, "breakpoints need a live run (tgdb tui -m MODEL -p PROMPT)"); return; }
        if (!tui_prompt(t, "break on name pattern: ", pat, sizeof(pat))) return;
        ok = o->set_break(t->src->ctx, pat, msg, sizeof(msg));
    } else {
        bool (*fn)(void *, char *, size_t) = r == TUI_REQ_STEP ? o->step : o->cont;
        if (!fn) { tui_message(t, true, "stepping needs a live run (tgdb tui -m MODEL -p PROMPT)"); return; }
        ok = fn(t->src->ctx, msg, sizeof(msg));
        struct nodes_priv * p = v->priv;
        int ng = o->n_graphs ? o->n_graphs(t->src->ctx) : 1;
        if (ng - 1 != p->graph) set_graph(v, ng - 1);
        // follow the execution point
        int n = nodes_rows(v);
        struct tg_tui_node nd;
        for (int row = 0; row < n; row++)
            if (o->node(t->src->ctx, p->graph, node_at(v, row), &nd) && (nd.flags & TG_TUI_CURRENT)) { tui_view_goto(v, row); break; }
    }
    tui_message(t, !ok, "%s", msg);
}

static bool nodes_request(struct tui_view * v, enum tui_request r) {
    struct nodes_priv * p = v->priv;
    int i = node_at(v, v->cur);
    switch (r) {
    case TUI_REQ_ENTER: case TUI_REQ_VIEW_DETAIL:
        if (i >= 0) tui_push(v->tui, tui_view_detail(v->tui, p->graph, i));
        return true;
    case TUI_REQ_VIEW_TENSOR:
        if (i >= 0) tui_push(v->tui, tui_view_tensor(v->tui, p->graph, i));
        return true;
    case TUI_REQ_NEXT_GRAPH: set_graph(v, p->graph + 1); return true;
    case TUI_REQ_PREV_GRAPH: set_graph(v, p->graph - 1); return true;
    case TUI_REQ_FILTER: {
        char pat[128];
        if (tui_prompt(v->tui, "filter (name pattern or OP, empty clears): ", pat, sizeof(pat))) apply_filter(v, pat);
        return true;
    }
    case TUI_REQ_NEXT_NAN: next_problem(v, true); return true;
    case TUI_REQ_NEXT_PROBLEM: next_problem(v, false); return true;
    case TUI_REQ_STEP: case TUI_REQ_CONTINUE: case TUI_REQ_BREAK: live_action(v, r); return true;
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

struct tui_view * tui_view_nodes(struct tui * t) {
    struct nodes_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->graph = t->graph;
    struct tui_view * v = tui_view_new(t, &nodes_ops, p);
    if (!v) free(p);
    return v;
}
