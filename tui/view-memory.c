// view-memory.c - memory map of one buffer: offset across, execution step
// down, each tensor's lifetime a block, so reuse is seen at a glance.
// '#' marks the tensor computed at that step, letters the other live tensors.
#include "tui-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct alloc { int node; int64_t offset, size; int first, last; };

struct memory_priv {
    int graph, buffer, n_buffers;
    struct alloc * allocs;
    int n_allocs;
    int n_steps;
    int64_t size;  // span shown (buffer size or highest end)
    char bufname[64];
};

static void load(struct tui * t, struct memory_priv * p) {
    const struct tg_tui_source_ops * o = t->src->ops;
    free(p->allocs);
    p->allocs = NULL;
    p->n_allocs = 0;
    p->size = 0;
    p->n_steps = o->n_nodes(t->src->ctx, p->graph);
    struct tg_tui_buffer b;
    snprintf(p->bufname, sizeof(p->bufname), "buffer %d", p->buffer);
    if (o->buffer && o->buffer(t->src->ctx, p->graph, p->buffer, &b)) {
        snprintf(p->bufname, sizeof(p->bufname), "%s", b.name);
        p->size = b.size;
    }
    p->allocs = malloc(sizeof(*p->allocs) * (size_t) (p->n_steps > 0 ? p->n_steps : 1));
    if (!p->allocs) return;
    struct tg_tui_node nd;
    for (int i = 0; i < p->n_steps; i++) {
        if (!o->node(t->src->ctx, p->graph, i, &nd) || nd.buffer != p->buffer || nd.size <= 0) continue;
        int first = nd.first_step >= 0 ? nd.first_step : i, last = nd.last_step >= first ? nd.last_step : first;
        p->allocs[p->n_allocs++] = (struct alloc){i, nd.offset, nd.size, first, last};
        if (nd.offset + nd.size > p->size) p->size = nd.offset + nd.size;
    }
}

static int memory_rows(struct tui_view * v) { return ((struct memory_priv *) v->priv)->n_steps; }

static int map_width(struct tui_view * v) {
    int w = v->tui->cols - 30;
    return w < 8 ? 8 : w > 400 ? 400 : w;
}

static void memory_row(struct tui_view * v, int row, struct tui_line * l) {
    struct memory_priv * p = v->priv;
    int w = map_width(v);
    char cells[401];
    signed char owner[401];
    memset(cells, '.', (size_t) w);
    memset(owner, -1, (size_t) w);
    cells[w] = '\0';
    double per = p->size > 0 ? (double) p->size / w : 1;
    for (int k = 0; k < p->n_allocs; k++) {
        const struct alloc * a = &p->allocs[k];
        if (row < a->first || row > a->last) continue;
        int c0 = (int) (a->offset / per), c1 = (int) ((a->offset + a->size - 1) / per);
        if (c1 >= w) c1 = w - 1;
        for (int c = c0; c <= c1; c++) {
            cells[c] = a->node == row ? '#' : (char) ('a' + a->node % 26);
            owner[c] = (signed char) (a->node == row ? 4 : a->node % 4);
        }
    }
    struct tg_tui_node nd;
    const char * name = "";
    if (v->tui->src->ops->node(v->tui->src->ctx, p->graph, row, &nd)) name = nd.name;
    tg_tui_line_colf(l, TUI_C_DIM, 6, true, "%d", row);
    tg_tui_line_add(l, TUI_C_DEFAULT, " ");
    tg_tui_line_col(l, TUI_C_DEFAULT, 20, false, name);
    tg_tui_line_add(l, TUI_C_DIM, "|");
    for (int c = 0; c < w;) {  // runs of the same owner share a colour
        int e = c;
        while (e < w && owner[e] == owner[c]) e++;
        char run[401];
        memcpy(run, cells + c, (size_t) (e - c));
        run[e - c] = '\0';
        enum tui_color col = owner[c] < 0 ? TUI_C_DIM : owner[c] == 4 ? TUI_C_BAD : (enum tui_color) (TUI_C_BACKEND0 + owner[c]);
        tg_tui_line_add(l, col, run);
        c = e;
    }
    tg_tui_line_add(l, TUI_C_DIM, "|");
}

static void memory_header(struct tui_view * v, struct tui_line * l) {
    struct memory_priv * p = v->priv;
    tg_tui_line_col(l, TUI_C_HEADER, 28, false, "  step name");
    tg_tui_line_addf(l, TUI_C_HEADER, "0 .. %lld bytes (%.0f bytes/column)", (long long) p->size,
                  p->size > 0 ? (double) p->size / map_width(v) : 0.0);
}

static void memory_title(struct tui_view * v, char * buf, size_t n) {
    struct memory_priv * p = v->priv;
    snprintf(buf, n, "memory map: graph %d, %s (%d of %d, [ ] switch), %d tensors",
             tg_tui_graph_number(v->tui, p->graph), p->bufname, p->buffer + 1, p->n_buffers, p->n_allocs);
}

static bool memory_request(struct tui_view * v, enum tui_request r) {
    struct memory_priv * p = v->priv;
    if (r == TUI_REQ_ENTER) { tg_tui_push(v->tui, tg_tui_view_detail(v->tui, p->graph, v->cur)); return true; }
    if (r == TUI_REQ_NEXT_GRAPH || r == TUI_REQ_PREV_GRAPH) {
        int b = p->buffer + (r == TUI_REQ_NEXT_GRAPH ? 1 : -1);
        if (b < 0 || b >= p->n_buffers) { tg_tui_message(v->tui, true, "no buffer %d (have %d)", b, p->n_buffers); return true; }
        p->buffer = b;
        load(v->tui, p);
        return true;
    }
    return false;
}

static bool memory_match(struct tui_view * v, int row, const char * pat) {
    struct memory_priv * p = v->priv;
    struct tg_tui_node nd;
    return v->tui->src->ops->node(v->tui->src->ctx, p->graph, row, &nd) && tg_tui_match_pattern(pat, nd.name);
}

static void memory_moved(struct tui_view * v) { v->tui->node = v->cur; }

static void memory_close(struct tui_view * v) {
    struct memory_priv * p = v->priv;
    free(p->allocs);
    free(p);
}

static const struct tui_view_ops memory_ops = {
    .name = "memory", .n_rows = memory_rows, .row = memory_row, .header = memory_header,
    .title = memory_title, .request = memory_request, .match = memory_match, .moved = memory_moved,
    .close = memory_close,
};

struct tui_view * tg_tui_view_memory(struct tui * t, int graph) {
    const struct tg_tui_source_ops * o = t->src->ops;
    int nb = o->n_buffers ? o->n_buffers(t->src->ctx, graph) : 0;
    if (nb <= 0) { tg_tui_message(t, true, "no allocation data for graph %d", tg_tui_graph_number(t, graph)); return NULL; }
    struct memory_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->graph = graph;
    p->n_buffers = nb;
    // start on the buffer of the selected node when it has one
    struct tg_tui_node nd;
    if (t->node >= 0 && o->node(t->src->ctx, graph, t->node, &nd) && nd.buffer >= 0 && nd.buffer < nb) p->buffer = nd.buffer;
    load(t, p);
    struct tui_view * v = tg_tui_view_new(t, &memory_ops, p);
    if (!v) { free(p->allocs); free(p); return NULL; }
    if (t->node >= 0) tg_tui_view_goto(v, t->node);
    return v;
}
