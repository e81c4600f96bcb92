// view-diff.c - two traces side by side, graph by graph: nodes aligned by
// name and op (tolerant of inserted/missing nodes), each pair classified
// (same hash / near by summary / different / only in one), the first
// divergence marked.
#include "tui-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum pair_kind { PAIR_SAME, PAIR_NEAR, PAIR_DIFF, PAIR_ONLY_A, PAIR_ONLY_B, PAIR_UNKNOWN };
struct pair { int a, b; enum pair_kind kind; };

struct diff_priv {
    struct tg_tui_source * B;
    int graph;
    struct pair * pairs;
    int n;
    int first;  // row of the first divergence, -1 none
};

static bool same_key(const struct tg_tui_node * x, const struct tg_tui_node * y) {
    return strcmp(x->name, y->name) == 0 && strcmp(x->op, y->op) == 0;
}

static enum pair_kind classify(const struct tg_tui_node * x, const struct tg_tui_node * y) {
    if (x->has_hash && y->has_hash && x->hash == y->hash) return PAIR_SAME;
    if (!x->has_summary || !y->has_summary) return x->has_hash && y->has_hash ? PAIR_DIFF : PAIR_UNKNOWN;
    double scale = fmax(fabs(x->rms), fabs(y->rms)) + 1e-12;
    double d = fmax(fabs(x->mean - y->mean), fmax(fabs(x->rms - y->rms), fmax(fabs(x->min - y->min), fabs(x->max - y->max))));
    if (x->n_nan != y->n_nan || x->n_inf != y->n_inf) return PAIR_DIFF;
    return d / scale <= 1e-3 ? PAIR_NEAR : PAIR_DIFF;
}

static bool align(struct tui * t, struct diff_priv * p) {
    struct tg_tui_source * A = t->src, * B = p->B;
    int na = A->ops->n_nodes(A->ctx, p->graph), nb = B->ops->n_nodes(B->ctx, p->graph);
    if (na < 0) na = 0;
    if (nb < 0) nb = 0;
    p->pairs = malloc(sizeof(*p->pairs) * (size_t) (na + nb + 1));
    if (!p->pairs) return false;
    struct tg_tui_node x, y;
    int i = 0, j = 0;
    p->first = -1;
    while (i < na || j < nb) {
        struct pair pr = {-1, -1, PAIR_UNKNOWN};
        bool hx = i < na && A->ops->node(A->ctx, p->graph, i, &x);
        bool hy = j < nb && B->ops->node(B->ctx, p->graph, j, &y);
        if (hx && hy && same_key(&x, &y)) {
            pr = (struct pair){i++, j++, classify(&x, &y)};
        } else if (hx && hy) {
            // look ahead a little for x in B and y in A; take the nearer
            int kb = -1, ka = -1;
            struct tg_tui_node z;
            for (int k = j + 1; k < nb && k < j + 64 && kb < 0; k++)
                if (B->ops->node(B->ctx, p->graph, k, &z) && same_key(&x, &z)) kb = k;
            for (int k = i + 1; k < na && k < i + 64 && ka < 0; k++)
                if (A->ops->node(A->ctx, p->graph, k, &z) && same_key(&z, &y)) ka = k;
            if (kb >= 0 && (ka < 0 || kb - j <= ka - i)) pr = (struct pair){-1, j++, PAIR_ONLY_B};
            else if (ka >= 0) pr = (struct pair){i++, -1, PAIR_ONLY_A};
            else pr = (struct pair){i++, j++, PAIR_DIFF};  // same position, different nodes
        } else if (hx) {
            pr = (struct pair){i++, -1, PAIR_ONLY_A};
        } else if (hy) {
            pr = (struct pair){-1, j++, PAIR_ONLY_B};
        } else {
            if (i < na) i++;
            if (j < nb) j++;
            continue;
        }
        if (p->first < 0 && pr.kind == PAIR_DIFF) p->first = p->n;
        p->pairs[p->n++] = pr;
    }
    return true;
}

static int diff_rows(struct tui_view * v) { return ((struct diff_priv *) v->priv)->n; }

static void side(struct tg_tui_source * s, int graph, int i, int w, struct tui_line * l) {
    struct tg_tui_node nd;
    if (i < 0 || !s->ops->node(s->ctx, graph, i, &nd)) { tui_line_col(l, TUI_C_DIM, w, false, ""); return; }
    char txt[160];
    snprintf(txt, sizeof(txt), "%5d %s %s", nd.index, nd.name, nd.op);
    tui_line_col(l, TUI_C_DEFAULT, w, false, txt);
}

static void diff_row(struct tui_view * v, int row, struct tui_line * l) {
    struct diff_priv * p = v->priv;
    static const char * kind_name[] = {"same", "near", "DIFF", "only A", "only B", "?"};
    static const enum tui_color kind_color[] = {TUI_C_GOOD, TUI_C_WARN, TUI_C_BAD, TUI_C_WARN, TUI_C_WARN, TUI_C_DIM};
    const struct pair * pr = &p->pairs[row];
    int w = (v->tui->cols - 10) / 2;
    tui_line_col(l, row == p->first ? TUI_C_BAD : kind_color[pr->kind], 8, false,
                 row == p->first ? "FIRST" : kind_name[pr->kind]);
    side(v->tui->src, p->graph, pr->a, w, l);
    tui_line_add(l, TUI_C_DIM, "|");
    side(p->B, p->graph, pr->b, w, l);
}

static void diff_header(struct tui_view * v, struct tui_line * l) {
    struct diff_priv * p = v->priv;
    int w = (v->tui->cols - 10) / 2;
    tui_line_col(l, TUI_C_HEADER, 8, false, "status");
    tui_line_col(l, TUI_C_HEADER, w, false, v->tui->src->ops->name ? v->tui->src->ops->name(v->tui->src->ctx) : "A");
    tui_line_add(l, TUI_C_HEADER, "|");
    tui_line_col(l, TUI_C_HEADER, w, false, p->B->ops->name ? p->B->ops->name(p->B->ctx) : "B");
}

static void diff_title(struct tui_view * v, char * buf, size_t n) {
    struct diff_priv * p = v->priv;
    if (p->first >= 0) snprintf(buf, n, "diff: graph %d, first divergence at row %d (e jumps)", p->graph, p->first + 1);
    else snprintf(buf, n, "diff: graph %d, no divergence", p->graph);
}

static bool diff_match(struct tui_view * v, int row, const char * pat) {
    struct diff_priv * p = v->priv;
    struct tg_tui_node nd;
    const struct pair * pr = &p->pairs[row];
    if (pr->a >= 0 && v->tui->src->ops->node(v->tui->src->ctx, p->graph, pr->a, &nd) && tui_match_pattern(pat, nd.name)) return true;
    return pr->b >= 0 && p->B->ops->node(p->B->ctx, p->graph, pr->b, &nd) && tui_match_pattern(pat, nd.name);
}

static bool diff_request(struct tui_view * v, enum tui_request r) {
    struct diff_priv * p = v->priv;
    if (r == TUI_REQ_NEXT_PROBLEM || r == TUI_REQ_NEXT_NAN) {
        for (int row = v->cur + 1; row < p->n; row++)
            if (p->pairs[row].kind != PAIR_SAME && p->pairs[row].kind != PAIR_NEAR) { tui_view_goto(v, row); return true; }
        tui_message(v->tui, true, "no difference below the cursor");
        return true;
    }
    if (r == TUI_REQ_ENTER) {
        if (p->n && p->pairs[v->cur].a >= 0) tui_push(v->tui, tui_view_detail(v->tui, p->graph, p->pairs[v->cur].a));
        return true;
    }
    return false;
}

static void diff_close(struct tui_view * v) {
    struct diff_priv * p = v->priv;
    free(p->pairs);
    free(p);
}

static const struct tui_view_ops diff_ops = {
    .name = "diff", .n_rows = diff_rows, .row = diff_row, .header = diff_header, .title = diff_title,
    .request = diff_request, .match = diff_match, .close = diff_close,
};

struct tui_view * tui_view_diff(struct tui * t) {
    struct tg_tui_source * B = (struct tg_tui_source *) t->scr;
    if (!B) { tui_message(t, true, "no second trace: open with tgdb tui A.trace --diff B.trace"); return NULL; }
    struct diff_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->B = B;
    p->graph = t->graph;
    if (!align(t, p)) { free(p); return NULL; }
    struct tui_view * v = tui_view_new(t, &diff_ops, p);
    if (!v) { free(p->pairs); free(p); return NULL; }
    tui_push(t, v);
    if (p->first >= 0) tui_view_goto(v, p->first);
    return v;
}
