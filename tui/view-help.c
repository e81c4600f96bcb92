// view-help.c - every key binding, generated from the request table.
#include "tui-impl.h"

#include <stdio.h>

static int help_rows(struct tui_view * v) { (void) v; return TUI_REQ_COUNT - 1; }

static void help_row(struct tui_view * v, int row, struct tui_line * l) {
    (void) v;
    enum tui_request r = (enum tui_request) (row + 1);
    char keys[64];
    tg_tui_line_col(l, TUI_C_KEY, 18, false, tg_tui_request_keys(r, keys, sizeof(keys)));
    tg_tui_line_col(l, TUI_C_DEFAULT, 14, false, tg_tui_request_name(r));
    tg_tui_line_add(l, TUI_C_DEFAULT, tg_tui_request_help(r));
}

static void help_header(struct tui_view * v, struct tui_line * l) {
    (void) v;
    tg_tui_line_col(l, TUI_C_HEADER, 18, false, "keys");
    tg_tui_line_col(l, TUI_C_HEADER, 14, false, "request");
    tg_tui_line_add(l, TUI_C_HEADER, "what it does");
}

static void help_title(struct tui_view * v, char * buf, size_t n) {
    (void) v;
    snprintf(buf, n, "tgdb help: key bindings (q to close)");
}

static bool help_match(struct tui_view * v, int row, const char * pat) {
    (void) v;
    enum tui_request r = (enum tui_request) (row + 1);
    return tg_tui_match_pattern(pat, tg_tui_request_name(r)) || tg_tui_match_pattern(pat, tg_tui_request_help(r));
}

static const struct tui_view_ops help_ops = {
    .name = "help", .n_rows = help_rows, .row = help_row, .header = help_header,
    .title = help_title, .match = help_match,
};

struct tui_view * tg_tui_view_help(struct tui * t) { return tg_tui_view_new(t, &help_ops, NULL); }
