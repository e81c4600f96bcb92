// view-breaks.c - live mode: the breakpoints, one row each; X (or Del)
// deletes the selected one, b adds one.
#include "tui-impl.h"

#include <stdio.h>
#include <stdlib.h>

static int breaks_rows(struct tui_view * v) {
    return v->tui->src->ops->n_breaks(v->tui->src->ctx);
}

static void breaks_row(struct tui_view * v, int row, struct tui_line * l) {
    char buf[192];
    if (!v->tui->src->ops->break_info(v->tui->src->ctx, row, buf, sizeof(buf))) { tg_tui_line_add(l, TUI_C_BAD, "(gone)"); return; }
    tg_tui_line_colf(l, TUI_C_DIM, 4, true, "%d", row + 1);
    tg_tui_line_add(l, TUI_C_DEFAULT, "  ");
    tg_tui_line_add(l, TUI_C_DEFAULT, buf);
}

static void breaks_header(struct tui_view * v, struct tui_line * l) {
    (void) v;
    tg_tui_line_col(l, TUI_C_HEADER, 4, true, "#");
    tg_tui_line_add(l, TUI_C_HEADER, "  kind  pattern");
}

static void breaks_title(struct tui_view * v, char * buf, size_t n) {
    snprintf(buf, n, "breakpoints: %d (X deletes, b adds, q back)", breaks_rows(v));
}

static bool breaks_request(struct tui_view * v, enum tui_request r) {
    struct tui * t = v->tui;
    const struct tg_tui_source_ops * o = t->src->ops;
    char msg[256] = "";
    if (r == TUI_REQ_DELETE) {
        if (!breaks_rows(v)) { tg_tui_message(t, true, "no breakpoint to delete"); return true; }
        bool ok = o->del_break(t->src->ctx, v->cur, msg, sizeof(msg));
        tg_tui_view_goto(v, v->cur);   // clamp to the shorter list
        tg_tui_message(t, !ok, "%s", msg);
        return true;
    }
    if (r == TUI_REQ_BREAK) {
        char pat[128];
        if (!tg_tui_prompt(t, "break on name pattern (op GLOB, nan): ", pat, sizeof(pat)) || !pat[0]) return true;
        bool ok = o->set_break(t->src->ctx, pat, msg, sizeof(msg));
        tg_tui_view_goto(v, breaks_rows(v) - 1);
        tg_tui_message(t, !ok, "%s", msg);
        return true;
    }
    return false;
}

static const struct tui_view_ops breaks_ops = {
    .name = "breakpoints", .n_rows = breaks_rows, .row = breaks_row, .header = breaks_header,
    .title = breaks_title, .request = breaks_request,
};

struct tui_view * tg_tui_view_breaks(struct tui * t) {
    const struct tg_tui_source_ops * o = t->src->ops;
    if (!o->n_breaks || !o->break_info || !o->del_break || !o->set_break) {
        tg_tui_message(t, true, "breakpoints need a live run (tgdb tui -m MODEL -p PROMPT)");
        return NULL;
    }
    return tg_tui_view_new(t, &breaks_ops, NULL);
}
