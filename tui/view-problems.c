// view-problems.c - the findings of the trace checks (the analysis `tgdb
// check` prints: stale reads, NaN origins, unallocated use, engine errors),
// one row each; Enter selects the node concerned in the node list.
#include "tui-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int problems_rows(struct tui_view * v) {
    const struct tg_tui_source_ops * o = v->tui->src->ops;
    return o->n_problems(v->tui->src->ctx);
}

static void problems_row(struct tui_view * v, int row, struct tui_line * l) {
    struct tui * t = v->tui;
    struct tg_tui_problem pr;
    if (!t->src->ops->problem(t->src->ctx, row, &pr)) { tg_tui_line_add(l, TUI_C_BAD, "(unreadable finding)"); return; }
    tg_tui_line_col(l, pr.problem ? TUI_C_BAD : TUI_C_WARN, 8, false, pr.problem ? "PROBLEM" : "warning");
    tg_tui_line_col(l, TUI_C_DEFAULT, 16, false, pr.kind);
    if (pr.graph >= 0 && pr.node >= 0) tg_tui_line_colf(l, TUI_C_DIM, 14, false, "graph %d #%d", tg_tui_graph_number(t, pr.graph), pr.node);
    else tg_tui_line_col(l, TUI_C_DIM, 14, false, "-");
    const char * nl = strchr(pr.text, '\n');
    char first[TUI_LINE_MAX / 2];
    snprintf(first, sizeof(first), "%.*s", nl ? (int) (nl - pr.text) : (int) strlen(pr.text), pr.text);
    tg_tui_line_add(l, TUI_C_DEFAULT, first);
}

static void problems_header(struct tui_view * v, struct tui_line * l) {
    (void) v;
    tg_tui_line_col(l, TUI_C_HEADER, 8, false, "");
    tg_tui_line_col(l, TUI_C_HEADER, 16, false, "kind");
    tg_tui_line_col(l, TUI_C_HEADER, 14, false, "where");
    tg_tui_line_add(l, TUI_C_HEADER, "finding");
}

static void problems_title(struct tui_view * v, char * buf, size_t n) {
    snprintf(buf, n, "problems: %d findings of tgdb check (Enter: the node)", problems_rows(v));
}

static bool problems_match(struct tui_view * v, int row, const char * pat) {
    struct tg_tui_problem pr;
    return v->tui->src->ops->problem(v->tui->src->ctx, row, &pr) && (strstr(pr.text, pat) || strstr(pr.kind, pat));
}

static bool problems_request(struct tui_view * v, enum tui_request r) {
    struct tui * t = v->tui;
    struct tg_tui_problem pr;
    if (r != TUI_REQ_ENTER) return false;
    if (!problems_rows(v) || !t->src->ops->problem(t->src->ctx, v->cur, &pr)) return true;
    if (pr.graph < 0 || pr.node < 0) { tg_tui_message(t, true, "this finding names no node"); return true; }
    tg_tui_nodes_show(t, pr.graph, pr.node);   // closes this view
    return true;
}

static const struct tui_view_ops problems_ops = {
    .name = "problems", .n_rows = problems_rows, .row = problems_row, .header = problems_header,
    .title = problems_title, .request = problems_request, .match = problems_match,
};

struct tui_view * tg_tui_view_problems(struct tui * t) {
    const struct tg_tui_source_ops * o = t->src->ops;
    if (!o->n_problems || !o->problem) { tg_tui_message(t, true, "no checks for this source (they need a trace)"); return NULL; }
    struct tui_view * v = tg_tui_view_new(t, &problems_ops, NULL);
    if (v && o->n_problems(t->src->ctx) == 0) tg_tui_message(t, false, "tgdb check found nothing in this trace");
    return v;
}
