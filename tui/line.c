// line.c - rows as coloured segments; escaping of names for the screen.
#include "core/text.h"
#include "tui-impl.h"

#include <stdio.h>
#include <string.h>
#include <wchar.h>

void tg_tui_line_clear(struct tui_line * l) {
    l->len = 0;
    l->text[0] = '\0';
    l->n_segs = 0;
    l->fill = TUI_C_DEFAULT;
}

char * tg_tui_escape(const char * s, char * buf, size_t n) {
    size_t j = 0;
    if (n == 0) return buf;
    const unsigned char * p = (const unsigned char *) (s ? s : "");
    while (*p && j + 5 < n) {
        int k = (int) tg_utf8_seq(p, 4);   // stops at the NUL: it is no continuation byte
        if (tg_utf8_is_control(p, (size_t) k)) k = 0;   // C0, DEL, C1: \xNN byte by byte
        if (k == 0) {
            j += (size_t) snprintf(buf + j, n - j, "\\x%02X", *p);
            p++;
            continue;
        }
        if (j + (size_t) k >= n) break;
        memcpy(buf + j, p, (size_t) k);
        j += (size_t) k;
        p += k;
    }
    buf[j] = '\0';
    return buf;
}

int tg_tui_str_width(const char * s) {
    mbstate_t st;
    memset(&st, 0, sizeof(st));
    int w = 0;
    const char * p = s;
    size_t left = strlen(s);
    while (left > 0) {
        wchar_t wc;
        size_t k = mbrtowc(&wc, p, left, &st);
        if (k == (size_t) -1 || k == (size_t) -2) { w++; p++; left--; memset(&st, 0, sizeof(st)); continue; }
        if (k == 0) break;
        int cw = wcwidth(wc);
        w += cw < 0 ? 1 : cw;
        p += k;
        left -= k;
    }
    return w;
}

static void add_raw(struct tui_line * l, enum tui_color c, const char * s, size_t n) {
    if (l->len + (int) n >= TUI_LINE_MAX) n = (size_t) (TUI_LINE_MAX - 1 - l->len);
    if (n == 0) return;
    if (l->n_segs > 0 && l->segs[l->n_segs - 1].color == c) {
        l->segs[l->n_segs - 1].len += (int) n;
    } else if (l->n_segs < (int) (sizeof(l->segs) / sizeof(l->segs[0]))) {
        l->segs[l->n_segs++] = (struct tui_seg){l->len, (int) n, c};
    } else {
        l->segs[l->n_segs - 1].len += (int) n;  // out of segments: extend the last
    }
    memcpy(l->text + l->len, s, n);
    l->len += (int) n;
    l->text[l->len] = '\0';
}

void tg_tui_line_add(struct tui_line * l, enum tui_color c, const char * s) {
    char esc[TUI_LINE_MAX];
    tg_tui_escape(s, esc, sizeof(esc));
    add_raw(l, c, esc, strlen(esc));
}

void tg_tui_line_addf(struct tui_line * l, enum tui_color c, const char * fmt, ...) {
    char buf[TUI_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    tg_tui_line_add(l, c, buf);
}

// Byte length of the longest prefix of s that fits in `width` columns.
static size_t prefix_for_width(const char * s, int width, int * used) {
    mbstate_t st;
    memset(&st, 0, sizeof(st));
    size_t off = 0, left = strlen(s);
    int w = 0;
    while (left > 0) {
        wchar_t wc;
        size_t k = mbrtowc(&wc, s + off, left, &st);
        int cw = 1;
        if (k == (size_t) -1 || k == (size_t) -2) { k = 1; memset(&st, 0, sizeof(st)); }
        else if (k == 0) break;
        else { cw = wcwidth(wc); if (cw < 0) cw = 1; }
        if (w + cw > width) break;
        w += cw;
        off += k;
        left -= k;
    }
    *used = w;
    return off;
}

void tg_tui_line_col(struct tui_line * l, enum tui_color c, int width, bool right, const char * s) {
    char esc[TUI_LINE_MAX];
    tg_tui_escape(s, esc, sizeof(esc));
    int w = tg_tui_str_width(esc);
    char pad[TUI_LINE_MAX];
    if (width <= 0) return;
    if (w > width) {  // truncate, mark with '~'
        int used;
        size_t n = prefix_for_width(esc, width - 1, &used);
        add_raw(l, c, esc, n);
        for (int i = used; i < width - 1; i++) add_raw(l, c, " ", 1);
        add_raw(l, TUI_C_DIM, "~", 1);
        return;
    }
    int fill = width - w;
    if (fill > (int) sizeof(pad) - 1) fill = (int) sizeof(pad) - 1;
    memset(pad, ' ', (size_t) fill);
    if (right) add_raw(l, c, pad, (size_t) fill);
    add_raw(l, c, esc, strlen(esc));
    if (!right) add_raw(l, c, pad, (size_t) fill);
}

void tg_tui_line_colf(struct tui_line * l, enum tui_color c, int width, bool right, const char * fmt, ...) {
    char buf[TUI_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    tg_tui_line_col(l, c, width, right, buf);
}
