// tui.c - the view stack, generic navigation and search, the input loop.
#include "tui-impl.h"
#include "tg/status.h"

#include <curses.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tui_view * tg_tui_view_new(struct tui * t, const struct tui_view_ops * ops, void * priv) {
    struct tui_view * v = calloc(1, sizeof(*v));
    if (!v) return NULL;
    v->ops = ops;
    v->tui = t;
    v->priv = priv;
    return v;
}

static void view_free(struct tui_view * v) {
    if (!v) return;
    if (v->ops->close) v->ops->close(v);
    free(v);
}

bool tg_tui_push(struct tui * t, struct tui_view * v) {
    if (!v) {  // the constructor may have said why already
        if (!t->message[0]) tg_tui_message(t, true, "cannot open the view (out of memory)");
        return false;
    }
    if (t->n_views == (int) (sizeof(t->stack) / sizeof(t->stack[0]))) {
        view_free(v);
        tg_tui_message(t, true, "too many open views: close some with q");
        return false;
    }
    t->stack[t->n_views++] = v;
    return true;
}

void tg_tui_pop(struct tui * t) {
    if (t->n_views <= 1) return;
    view_free(t->stack[--t->n_views]);
}

struct tui_view * tg_tui_top(struct tui * t) {
    return t->n_views ? t->stack[t->n_views - 1] : NULL;
}

void tg_tui_message(struct tui * t, bool error, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->message, sizeof(t->message), fmt, ap);
    va_end(ap);
    t->message_error = error;
}

int tg_tui_view_height(struct tui * t, struct tui_view * v) {
    int h = t->rows - 2 - (v->ops->header ? 1 : 0);
    return h < 1 ? 1 : h;
}

void tg_tui_view_goto(struct tui_view * v, int row) {
    int n = v->ops->n_rows(v);
    int h = tg_tui_view_height(v->tui, v);
    if (row >= n) row = n - 1;
    if (row < 0) row = 0;
    v->cur = row;
    if (v->cur < v->top) v->top = v->cur;
    if (v->cur >= v->top + h) v->top = v->cur - h + 1;
    if (v->top > n - h) v->top = n - h > 0 ? n - h : 0;
    if (v->top < 0) v->top = 0;
    if (v->ops->moved) v->ops->moved(v);
}

bool tg_tui_view_search(struct tui_view * v, const char * pattern, bool forward) {
    struct tui * t = v->tui;
    if (!v->ops->match) { tg_tui_message(t, true, "this view cannot be searched"); return false; }
    if (!pattern[0]) { tg_tui_message(t, true, "no search pattern (use /)"); return false; }
    int n = v->ops->n_rows(v);
    for (int k = 1; k <= n; k++) {
        int row = forward ? (v->cur + k) % n : ((v->cur - k) % n + n) % n;
        if (v->ops->match(v, row, pattern)) {
            tg_tui_view_goto(v, row);
            bool wrapped = forward ? row <= v->cur - 0 && k > n - v->cur - 1 : k > v->cur;
            tg_tui_message(t, false, "/%s: row %d%s", pattern, row + 1, wrapped ? " (wrapped)" : "");
            return true;
        }
    }
    tg_tui_message(t, true, "/%s: not found", pattern);
    return false;
}

// Navigation every view gets; true when handled.
static bool generic_request(struct tui * t, struct tui_view * v, enum tui_request r) {
    int h = tg_tui_view_height(t, v), n = v->ops->n_rows(v);
    switch (r) {
    case TUI_REQ_DOWN:      tg_tui_view_goto(v, v->cur + 1); return true;
    case TUI_REQ_UP:        tg_tui_view_goto(v, v->cur - 1); return true;
    case TUI_REQ_PAGE_DOWN: v->top += h; if (v->top > n - h) v->top = n - h > 0 ? n - h : 0;
                            tg_tui_view_goto(v, v->cur + h); return true;
    case TUI_REQ_PAGE_UP:   v->top -= h; if (v->top < 0) v->top = 0;
                            tg_tui_view_goto(v, v->cur - h); return true;
    case TUI_REQ_HOME:      tg_tui_view_goto(v, 0); return true;
    case TUI_REQ_END:       tg_tui_view_goto(v, n - 1); return true;
    case TUI_REQ_LEFT:      v->hscroll = v->hscroll >= 8 ? v->hscroll - 8 : 0; return true;
    case TUI_REQ_RIGHT:     v->hscroll += 8; return true;
    case TUI_REQ_SEARCH: {
        char pat[128];
        if (tg_tui_prompt(t, "/", pat, sizeof(pat)) && pat[0]) {
            snprintf(t->search, sizeof(t->search), "%s", pat);
            tg_tui_view_search(v, t->search, true);
        }
        return true;
    }
    case TUI_REQ_SEARCH_NEXT: tg_tui_view_search(v, t->search, true); return true;
    case TUI_REQ_SEARCH_PREV: tg_tui_view_search(v, t->search, false); return true;
    case TUI_REQ_HELP:      tg_tui_push(t, tg_tui_view_help(t)); return true;
    case TUI_REQ_BACK:
        if (t->n_views > 1) tg_tui_pop(t); else t->quit = true;
        return true;
    case TUI_REQ_QUIT:      t->quit = true; return true;
    case TUI_REQ_REDRAW:    clearok(stdscr, TRUE); return true;
    case TUI_REQ_VIEW_NODES:
        while (t->n_views > 1) tg_tui_pop(t);
        return true;
    case TUI_REQ_VIEW_MEMORY: tg_tui_push(t, tg_tui_view_memory(t, t->graph)); return true;
    case TUI_REQ_VIEW_SPLITS: tg_tui_push(t, tg_tui_view_splits(t, t->graph)); return true;
    case TUI_REQ_PROBLEMS:    tg_tui_push(t, tg_tui_view_problems(t)); return true;
    case TUI_REQ_BREAKPOINTS: tg_tui_push(t, tg_tui_view_breaks(t)); return true;
    case TUI_REQ_VIEW_DIFF:
        if (tg_tui_view_diff(t) == NULL) return true;  // message already set
        return true;
    default: return false;
    }
}

static void handle_key(struct tui * t, int key) {
    if (key == KEY_RESIZE) { tg_tui_screen_size(t); return; }
    if (t->too_small) {  // only quitting works while too small
        if (key == 'Q' || key == 'q') t->quit = true;
        return;
    }
    struct tui_view * v = tg_tui_top(t);
    enum tui_request r = tg_tui_key_request(key);
    t->message[0] = '\0';
    t->message_error = false;
    if (r == TUI_REQ_NONE) {
        if (key != ERR) tg_tui_message(t, true, "unbound key %s (press ? for help)", keyname(key) ? keyname(key) : "?");
        return;
    }
    if (v->ops->request && v->ops->request(v, r)) return;
    if (!generic_request(t, v, r))
        tg_tui_message(t, true, "'%s' does nothing in the %s view", tg_tui_request_name(r), v->ops->name);
}

enum tg_status tg_tui_run(struct tg_tui_source * src, const struct tg_tui_options * opts) {
    if (!src || !src->ops || !src->ops->n_nodes || !src->ops->node)
        return tg_error(TG_ERR_INVALID_ARG, "tui: no data source");
    struct tui t;
    memset(&t, 0, sizeof(t));
    t.src = src;
    t.diff = opts ? opts->diff : NULL;
    t.monochrome = opts && opts->monochrome;
    if (!tg_tui_screen_init(&t)) return tg_last_status();
    if (!tg_tui_push(&t, tg_tui_view_nodes(&t))) {
        tg_tui_screen_end(&t);
        return tg_error(TG_ERR_NOMEM, "tui: out of memory");
    }
    while (!t.quit) {
        tg_tui_draw(&t);
        int key = tg_tui_getkey(&t);
        handle_key(&t, key);
    }
    while (t.n_views > 0) view_free(t.stack[--t.n_views]);
    tg_tui_screen_end(&t);
    return TG_OK;
}

// Shared glob-style match used by the views' search and filter: '*' and '?'
// wildcards, otherwise a case-sensitive substring match.
bool tg_tui_match_pattern(const char * pattern, const char * text) {
    if (strpbrk(pattern, "*?[")) return fnmatch(pattern, text, 0) == 0;
    return strstr(text, pattern) != NULL;
}

const char * tg_tui_curses_version(void) { return curses_version(); }
