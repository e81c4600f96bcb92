// view-tensor.c - pager over recorded contents of a tensor of any rank: two
// displayed dimensions (rows x columns, D cycles the pair), the others fixed
// at a slice index ([ ] move it), number formats (f), NaN/Inf and values
// beyond a threshold (T) highlighted. Only visible cells are read.
#include "tui-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELL_W 12

struct tensor_priv {
    int graph, node;
    struct tg_tui_node nd;
    int drow, dcol;          // displayed dimensions
    int64_t idx[4];          // slice indices of the other dimensions
    int slice_dim;           // which other dim [ ] moves
    int64_t col0;            // first visible column
    int fmt;                 // 0 %.5g, 1 %.4e, 2 %.6f
    double threshold;        // 0 = off
    bool readable;
};

static int64_t logical_index(const struct tensor_priv * p, int64_t r, int64_t c) {
    int64_t i[4] = {p->idx[0], p->idx[1], p->idx[2], p->idx[3]};
    i[p->drow] = r;
    i[p->dcol] = c;
    const int64_t * ne = p->nd.ne;
    return i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]));
}

static int tensor_rows(struct tui_view * v) {
    struct tensor_priv * p = v->priv;
    return p->readable ? (int) p->nd.ne[p->drow] : 1;
}

static int visible_cols(struct tui_view * v) {
    int n = (v->tui->cols - 8) / CELL_W;
    return n < 1 ? 1 : n;
}

static void fmt_value(const struct tensor_priv * p, float x, char * buf, size_t n) {
    if (isnan(x)) { snprintf(buf, n, "nan"); return; }
    if (isinf(x)) { snprintf(buf, n, x > 0 ? "inf" : "-inf"); return; }
    switch (p->fmt) {
    case 1:  snprintf(buf, n, "%.4e", x); break;
    case 2:  snprintf(buf, n, "%.6f", x); break;
    default: snprintf(buf, n, "%.5g", x); break;
    }
}

static void tensor_row(struct tui_view * v, int row, struct tui_line * l) {
    struct tensor_priv * p = v->priv;
    if (!p->readable) {
        tg_tui_line_add(l, TUI_C_DIM, "contents not recorded for this node (record them with TGDB_TRACE_DUMP=PATTERN or --trace-dump)");
        return;
    }
    const struct tg_tui_source_ops * o = v->tui->src->ops;
    int nc = visible_cols(v);
    int64_t ncols = p->nd.ne[p->dcol];
    float vals[256];
    int64_t n = ncols - p->col0 < nc ? ncols - p->col0 : nc;
    if (n > 256) n = 256;
    bool ok = true;
    if (p->dcol == 0 && p->drow != 0) {  // a run of consecutive elements (a source may return it in parts)
        for (int64_t got = 0, k; got < n && ok; got += k)
            ok = (k = o->read(v->tui->src->ctx, p->graph, p->node, logical_index(p, row, p->col0) + got, n - got, vals + got)) > 0;
    } else {
        for (int64_t c = 0; c < n && ok; c++)
            ok = o->read(v->tui->src->ctx, p->graph, p->node, logical_index(p, row, p->col0 + c), 1, &vals[c]) == 1;
    }
    tg_tui_line_colf(l, TUI_C_DIM, 7, true, "%d", row);
    tg_tui_line_add(l, TUI_C_DIM, " ");
    if (!ok) { tg_tui_line_add(l, TUI_C_BAD, "(read failed)"); return; }
    for (int64_t c = 0; c < n; c++) {
        char s[32];
        fmt_value(p, vals[c], s, sizeof(s));
        enum tui_color col = TUI_C_DEFAULT;
        if (!isfinite(vals[c])) col = TUI_C_BAD;
        else if (p->threshold > 0 && fabs(vals[c]) > p->threshold) col = TUI_C_WARN;
        tg_tui_line_col(l, col, CELL_W, true, s);
    }
}

static void tensor_header(struct tui_view * v, struct tui_line * l) {
    struct tensor_priv * p = v->priv;
    tg_tui_line_colf(l, TUI_C_HEADER, 8, false, "d%d\\d%d", p->drow, p->dcol);
    int nc = visible_cols(v);
    for (int64_t c = p->col0; c < p->nd.ne[p->dcol] && c < p->col0 + nc; c++)
        tg_tui_line_colf(l, TUI_C_HEADER, CELL_W, true, "%lld", (long long) c);
}

static void tensor_title(struct tui_view * v, char * buf, size_t n) {
    struct tensor_priv * p = v->priv;
    char shape[64], slice[96] = "";
    size_t len = 0;
    tg_tui_format_shape(p->nd.ne, shape, sizeof(shape));
    for (int d = 0; d < 4; d++) {
        if (d == p->drow || d == p->dcol || p->nd.ne[d] == 1) continue;
        len += (size_t) snprintf(slice + len, sizeof(slice) - len, "%sd%d=%lld%s", len ? " " : "", d,
                                 (long long) p->idx[d], d == p->slice_dim ? "*" : "");
    }
    snprintf(buf, n, "tensor %s %s %s  rows=d%d cols=d%d %s%s", p->nd.name, p->nd.type, shape, p->drow, p->dcol,
             slice, p->threshold > 0 ? "  (highlight > threshold)" : "");
}

// Next pair of displayed dims (row dim, col dim) among dims with ne > 1.
static void cycle_dims(struct tensor_priv * p) {
    int dims[4], nd = 0;
    for (int d = 0; d < 4; d++) if (p->nd.ne[d] > 1) dims[nd++] = d;
    if (nd < 2) return;
    int pairs[12][2], np = 0;
    for (int a = 0; a < nd; a++) for (int b = 0; b < nd; b++) if (a != b) { pairs[np][0] = dims[b]; pairs[np][1] = dims[a]; np++; }
    int k = 0;
    for (; k < np; k++) if (pairs[k][0] == p->drow && pairs[k][1] == p->dcol) break;
    k = (k + 1) % np;
    p->drow = pairs[k][0];
    p->dcol = pairs[k][1];
    p->col0 = 0;
    p->slice_dim = -1;
    for (int d = 3; d >= 0; d--) if (d != p->drow && d != p->dcol && p->nd.ne[d] > 1) p->slice_dim = d;
}

static bool tensor_request(struct tui_view * v, enum tui_request r) {
    struct tensor_priv * p = v->priv;
    int nc = visible_cols(v);
    switch (r) {
    case TUI_REQ_LEFT: p->col0 = p->col0 > nc ? p->col0 - nc : 0; return true;
    case TUI_REQ_RIGHT:
        if (p->col0 + nc < p->nd.ne[p->dcol]) p->col0 += nc;
        return true;
    case TUI_REQ_DIMS: cycle_dims(p); v->top = v->cur = 0; return true;
    case TUI_REQ_FORMAT: p->fmt = (p->fmt + 1) % 3; return true;
    case TUI_REQ_THRESHOLD: {
        char buf[64];
        if (tg_tui_prompt(v->tui, "highlight |value| > (0 = off): ", buf, sizeof(buf))) {
            char * end;
            double th = strtod(buf, &end);
            if (end == buf || *end || !(th >= 0) || th == HUGE_VAL) tg_tui_message(v->tui, true, "'%s' is not a threshold (a number >= 0)", buf);
            else p->threshold = th;
        }
        return true;
    }
    case TUI_REQ_NEXT_GRAPH: case TUI_REQ_PREV_GRAPH:
        if (p->slice_dim < 0) { tg_tui_message(v->tui, true, "no other dimension to slice"); return true; }
        p->idx[p->slice_dim] += r == TUI_REQ_NEXT_GRAPH ? 1 : -1;
        if (p->idx[p->slice_dim] < 0) p->idx[p->slice_dim] = 0;
        if (p->idx[p->slice_dim] >= p->nd.ne[p->slice_dim]) p->idx[p->slice_dim] = p->nd.ne[p->slice_dim] - 1;
        return true;
    default: return false;
    }
}

static void tensor_close(struct tui_view * v) { free(v->priv); }

static const struct tui_view_ops tensor_ops = {
    .name = "tensor", .n_rows = tensor_rows, .row = tensor_row, .header = tensor_header,
    .title = tensor_title, .request = tensor_request, .close = tensor_close,
};

struct tui_view * tg_tui_view_tensor(struct tui * t, int graph, int node) {
    struct tensor_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->graph = graph;
    p->node = node;
    p->slice_dim = -1;
    const struct tg_tui_source_ops * o = t->src->ops;
    if (!o->node(t->src->ctx, graph, node, &p->nd)) { free(p); tg_tui_message(t, true, "node %d is not readable", node); return NULL; }
    float probe;
    p->readable = o->read && o->read(t->src->ctx, graph, node, 0, 1, &probe) == 1;
    // default: columns along dim 0, rows along the next dim with ne > 1
    p->dcol = 0;
    p->drow = 1;
    for (int d = 1; d < 4; d++) if (p->nd.ne[d] > 1) { p->drow = d; break; }
    for (int d = 3; d >= 0; d--) if (d != p->drow && d != p->dcol && p->nd.ne[d] > 1) p->slice_dim = d;
    struct tui_view * v = tg_tui_view_new(t, &tensor_ops, p);
    if (!v) free(p);
    return v;
}
