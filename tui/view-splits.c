// view-splits.c - the scheduler's splits: backend, node range, inputs and
// the bytes copied into each split.
#include "tui-impl.h"

#include <stdio.h>
#include <stdlib.h>

struct splits_priv { int graph; };

static int splits_rows(struct tui_view * v) {
    struct splits_priv * p = v->priv;
    const struct tg_tui_source_ops * o = v->tui->src->ops;
    return o->n_splits ? o->n_splits(v->tui->src->ctx, p->graph) : 0;
}

static void fmt_bytes(int64_t b, char * buf, size_t n) {
    if (b < 10 * 1024) snprintf(buf, n, "%lld B", (long long) b);
    else if (b < 10 * 1024 * 1024) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else snprintf(buf, n, "%.1f MiB", b / 1048576.0);
}

static void splits_row(struct tui_view * v, int row, struct tui_line * l) {
    struct splits_priv * p = v->priv;
    struct tg_tui_split s;
    if (!v->tui->src->ops->split(v->tui->src->ctx, p->graph, row, &s)) { tg_tui_line_add(l, TUI_C_BAD, "(unreadable split)"); return; }
    char bytes[32];
    fmt_bytes(s.copy_bytes, bytes, sizeof(bytes));
    tg_tui_line_colf(l, TUI_C_DIM, 5, true, "%d", row);
    tg_tui_line_add(l, TUI_C_DEFAULT, "  ");
    tg_tui_line_col(l, tg_tui_backend_color(s.backend), 8, false, tg_tui_backend_name(v->tui, s.backend));
    tg_tui_line_colf(l, TUI_C_DEFAULT, 16, false, "%d..%d", s.node_begin, s.node_end - 1);
    tg_tui_line_colf(l, TUI_C_DEFAULT, 8, true, "%d", s.n_inputs);
    tg_tui_line_col(l, TUI_C_DEFAULT, 12, true, bytes);
    tg_tui_line_add(l, TUI_C_DEFAULT, "  ");
    tg_tui_line_add(l, TUI_C_DIM, s.inputs);
}

static void splits_header(struct tui_view * v, struct tui_line * l) {
    (void) v;
    tg_tui_line_col(l, TUI_C_HEADER, 5, true, "split");
    tg_tui_line_add(l, TUI_C_HEADER, "  ");
    tg_tui_line_col(l, TUI_C_HEADER, 8, false, "backend");
    tg_tui_line_col(l, TUI_C_HEADER, 16, false, "nodes");
    tg_tui_line_col(l, TUI_C_HEADER, 8, true, "inputs");
    tg_tui_line_col(l, TUI_C_HEADER, 12, true, "copied");
    tg_tui_line_add(l, TUI_C_HEADER, "  input tensors");
}

static void splits_title(struct tui_view * v, char * buf, size_t n) {
    struct splits_priv * p = v->priv;
    snprintf(buf, n, "splits: graph %d, %d splits (Enter: first node)", tg_tui_graph_number(v->tui, p->graph), splits_rows(v));
}

static bool splits_request(struct tui_view * v, enum tui_request r) {
    struct splits_priv * p = v->priv;
    if (r != TUI_REQ_ENTER) return false;
    struct tg_tui_split s;
    if (splits_rows(v) && v->tui->src->ops->split(v->tui->src->ctx, p->graph, v->cur, &s))
        tg_tui_push(v->tui, tg_tui_view_detail(v->tui, p->graph, s.node_begin));
    return true;
}

static void splits_close(struct tui_view * v) { free(v->priv); }

static const struct tui_view_ops splits_ops = {
    .name = "splits", .n_rows = splits_rows, .row = splits_row, .header = splits_header,
    .title = splits_title, .request = splits_request, .close = splits_close,
};

struct tui_view * tg_tui_view_splits(struct tui * t, int graph) {
    if (!t->src->ops->n_splits || !t->src->ops->split) { tg_tui_message(t, true, "no split data in this source"); return NULL; }
    struct splits_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->graph = graph;
    struct tui_view * v = tg_tui_view_new(t, &splits_ops, p);
    if (!v) free(p);
    return v;
}
