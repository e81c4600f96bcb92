// draw.c - puts views on the screen. With tui.c's input loop, the only code
// that calls curses. Layout: title bar, optional column header, the view's
// rows, status bar.
#include "tui-impl.h"
#include "tg/status.h"

#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

static chtype color_attr(struct tui * t, enum tui_color c) {
    if (t->has_color) {
        chtype a = COLOR_PAIR((short) c);
        if (c == TUI_C_TITLE || c == TUI_C_HEADER || c == TUI_C_KEY || c == TUI_C_BAD) a |= A_BOLD;
        return a;
    }
    switch (c) {  // monochrome fallback
    case TUI_C_TITLE: case TUI_C_STATUS: case TUI_C_CURSOR: return A_REVERSE;
    case TUI_C_HEADER: case TUI_C_KEY: case TUI_C_BAD: return A_BOLD;
    case TUI_C_DIM: return A_DIM;
    case TUI_C_SPLIT: case TUI_C_WARN: return A_UNDERLINE;
    default: return A_NORMAL;
    }
}

static void init_colors(struct tui * t) {
    static const short fg_bg[TUI_C_COUNT][2] = {
        [TUI_C_DEFAULT] = {-1, -1},               [TUI_C_TITLE] = {COLOR_WHITE, COLOR_BLUE},
        [TUI_C_STATUS] = {COLOR_BLACK, COLOR_CYAN}, [TUI_C_HEADER] = {COLOR_YELLOW, -1},
        [TUI_C_CURSOR] = {COLOR_BLACK, COLOR_GREEN}, [TUI_C_DIM] = {COLOR_BLUE, -1},
        [TUI_C_SPLIT] = {COLOR_MAGENTA, -1},     [TUI_C_BAD] = {COLOR_RED, -1},
        [TUI_C_WARN] = {COLOR_YELLOW, -1},       [TUI_C_GOOD] = {COLOR_GREEN, -1},
        [TUI_C_KEY] = {COLOR_CYAN, -1},          [TUI_C_BACKEND0] = {COLOR_CYAN, -1},
        [TUI_C_BACKEND1] = {COLOR_YELLOW, -1},   [TUI_C_BACKEND2] = {COLOR_MAGENTA, -1},
        [TUI_C_BACKEND3] = {COLOR_GREEN, -1},
    };
    start_color();
    use_default_colors();
    for (int i = 1; i < TUI_C_COUNT; i++) init_pair((short) i, fg_bg[i][0], fg_bg[i][1]);
}

bool tg_tui_screen_init(struct tui * t) {
    setlocale(LC_ALL, "");
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        tg_error(TG_ERR_IO, "the TUI needs a terminal (stdin and stdout must be a tty)");
        return false;
    }
    if (!newterm(NULL, stdout, stdin)) {
        tg_error(TG_ERR_IO, "cannot initialise the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
        return false;
    }
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    t->has_color = !t->monochrome && has_colors();
    if (t->has_color) init_colors(t);
    tg_tui_screen_size(t);
    return true;
}

void tg_tui_screen_end(struct tui * t) {
    (void) t;
    endwin();
}

void tg_tui_screen_size(struct tui * t) {
    getmaxyx(stdscr, t->rows, t->cols);
    t->too_small = t->rows < TUI_MIN_ROWS || t->cols < TUI_MIN_COLS;
}

// Draws `s` (escaped UTF-8) from display column `skip`, at most `width` columns.
static int put_text(const char * s, int len, int skip, int width) {
    mbstate_t st;
    memset(&st, 0, sizeof(st));
    int col = 0, drawn = 0, off = 0;
    while (off < len && drawn < width) {
        wchar_t wc;
        size_t k = mbrtowc(&wc, s + off, (size_t) (len - off), &st);
        if (k == (size_t) -1 || k == (size_t) -2 || k == 0) { k = 1; wc = L'?'; memset(&st, 0, sizeof(st)); }
        int cw = wcwidth(wc);
        if (cw < 0) cw = 1;
        if (col >= skip) {
            if (drawn + cw > width) break;
            addnstr(s + off, (int) k);
            drawn += cw;
        }
        col += cw;
        off += (int) k;
    }
    return drawn;
}

static void draw_line(struct tui * t, int y, const struct tui_line * l, int hscroll, bool cursor) {
    move(y, 0);
    int x = 0, col = 0;
    for (int i = 0; i < l->n_segs && x < t->cols; i++) {
        const struct tui_seg * s = &l->segs[i];
        char tmp[TUI_LINE_MAX];
        memcpy(tmp, l->text + s->start, (size_t) s->len);
        tmp[s->len] = '\0';
        int w = tg_tui_str_width(tmp);
        int skip = hscroll > col ? hscroll - col : 0;
        attrset(color_attr(t, cursor ? TUI_C_CURSOR : s->color));
        if (skip < w) x += put_text(tmp, s->len, skip, t->cols - x);
        col += w;
    }
    attrset(color_attr(t, cursor ? TUI_C_CURSOR : l->fill));
    for (; x < t->cols; x++) addch(' ');
    attrset(A_NORMAL);
}

static void draw_too_small(struct tui * t) {
    erase();
    char msg[96];
    snprintf(msg, sizeof(msg), "terminal too small (%dx%d); need %dx%d", t->cols, t->rows, TUI_MIN_COLS, TUI_MIN_ROWS);
    int len = (int) strlen(msg);
    // wrap over the available rows
    for (int y = 0, off = 0; y < t->rows && off < len; y++, off += t->cols)
        mvaddnstr(y, 0, msg + off, t->cols);
    refresh();
}

static void draw_status(struct tui * t, struct tui_view * v) {
    struct tui_line l;
    tg_tui_line_clear(&l);
    l.fill = TUI_C_STATUS;
    if (t->message[0]) {
        tg_tui_line_add(&l, t->message_error ? TUI_C_BAD : TUI_C_STATUS, t->message);
    } else {
        char where[160] = "";
        const struct tg_tui_source_ops * o = t->src->ops;
        if (o->where) o->where(t->src->ctx, where, sizeof(where));
        int n = v->ops->n_rows(v);
        tg_tui_line_addf(&l, TUI_C_STATUS, "[%s] %s", v->ops->name, o->name ? o->name(t->src->ctx) : "");
        if (o->n_graphs) tg_tui_line_addf(&l, TUI_C_STATUS, "  graph %d (%d/%d)", tg_tui_graph_number(t, t->graph), t->graph + 1, o->n_graphs(t->src->ctx));
        tg_tui_line_addf(&l, TUI_C_STATUS, "  row %d/%d", n ? v->cur + 1 : 0, n);
        if (where[0]) tg_tui_line_addf(&l, TUI_C_STATUS, "  %s", where);
    }
    int w = tg_tui_str_width(l.text);
    const char * hint = "  ? help";
    if (w + 8 < t->cols) {
        for (int i = w; i < t->cols - 8; i++) tg_tui_line_add(&l, TUI_C_STATUS, " ");
        tg_tui_line_add(&l, TUI_C_STATUS, hint);
    }
    draw_line(t, t->rows - 1, &l, 0, false);
}

void tg_tui_draw(struct tui * t) {
    if (t->too_small) { draw_too_small(t); return; }
    struct tui_view * v = tg_tui_top(t);
    if (!v) return;
    erase();
    struct tui_line l;
    tg_tui_line_clear(&l);
    l.fill = TUI_C_TITLE;
    char title[256] = "";
    if (v->ops->title) v->ops->title(v, title, sizeof(title));
    tg_tui_line_add(&l, TUI_C_TITLE, title);
    draw_line(t, 0, &l, 0, false);
    int y = 1;
    if (v->ops->header) {
        tg_tui_line_clear(&l);
        v->ops->header(v, &l);
        l.fill = TUI_C_HEADER;
        draw_line(t, y++, &l, v->hscroll, false);
    }
    int h = tg_tui_view_height(t, v), n = v->ops->n_rows(v);
    for (int i = 0; i < h; i++) {
        int row = v->top + i;
        if (row >= n) break;
        tg_tui_line_clear(&l);
        v->ops->row(v, row, &l);  // only visible rows are fetched
        draw_line(t, y + i, &l, v->hscroll, row == v->cur);
    }
    draw_status(t, v);
    refresh();
}

int tg_tui_getkey(struct tui * t) {
    (void) t;
    return getch();
}

bool tg_tui_prompt(struct tui * t, const char * prompt, char * buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (;;) {
        move(t->rows - 1, 0);
        attrset(color_attr(t, TUI_C_STATUS));
        char line[512];
        snprintf(line, sizeof(line), "%s%s", prompt, buf);
        addnstr(line, t->cols);
        for (int x = (int) strlen(line); x < t->cols; x++) addch(' ');
        attrset(A_NORMAL);
        refresh();
        int c = getch();
        if (c == 27) return false;
        if (c == '\n' || c == '\r' || c == KEY_ENTER) return true;
        if (c == KEY_RESIZE) { tg_tui_screen_size(t); continue; }
        if ((c == KEY_BACKSPACE || c == 127 || c == 8) && len > 0) { buf[--len] = '\0'; continue; }
        if (c >= 0x20 && c < 0x7f && len + 1 < n) { buf[len++] = (char) c; buf[len] = '\0'; }
    }
}
