// keys.c - the one table binding keys to requests; help is generated from it.
#include "tui-impl.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

static const struct { const char * name; const char * help; } requests[TUI_REQ_COUNT] = {
    [TUI_REQ_NONE] = {"none", ""},
#define TUI_REQ(id, name, help) [TUI_REQ_##id] = {name, help},
#include "requests.def"
#undef TUI_REQ
};

#define CTRL(c) ((c) & 0x1f)

static const struct { int key; const char * label; enum tui_request req; } bindings[] = {
    {'j', "j", TUI_REQ_DOWN},          {KEY_DOWN, "Down", TUI_REQ_DOWN},
    {'k', "k", TUI_REQ_UP},            {KEY_UP, "Up", TUI_REQ_UP},
    {' ', "Space", TUI_REQ_PAGE_DOWN}, {KEY_NPAGE, "PgDn", TUI_REQ_PAGE_DOWN},
    {CTRL('f'), "^F", TUI_REQ_PAGE_DOWN},
    {'-', "-", TUI_REQ_PAGE_UP},       {KEY_PPAGE, "PgUp", TUI_REQ_PAGE_UP},
    {CTRL('b'), "^B", TUI_REQ_PAGE_UP},
    {'g', "g", TUI_REQ_HOME},          {KEY_HOME, "Home", TUI_REQ_HOME},
    {'G', "G", TUI_REQ_END},           {KEY_END, "End", TUI_REQ_END},
    {'h', "h", TUI_REQ_LEFT},          {KEY_LEFT, "Left", TUI_REQ_LEFT},
    {'l', "l", TUI_REQ_RIGHT},         {KEY_RIGHT, "Right", TUI_REQ_RIGHT},
    {'\n', "Enter", TUI_REQ_ENTER},    {'\r', "Enter", TUI_REQ_ENTER}, {KEY_ENTER, "Enter", TUI_REQ_ENTER},
    {'q', "q", TUI_REQ_BACK},          {27, "Esc", TUI_REQ_BACK},
    {'Q', "Q", TUI_REQ_QUIT},
    {'?', "?", TUI_REQ_HELP},          {KEY_F(1), "F1", TUI_REQ_HELP},
    {'/', "/", TUI_REQ_SEARCH},
    {'n', "n", TUI_REQ_SEARCH_NEXT},
    {'N', "N", TUI_REQ_SEARCH_PREV},
    {'F', "F", TUI_REQ_FILTER},
    {'!', "!", TUI_REQ_NEXT_NAN},
    {'e', "e", TUI_REQ_NEXT_PROBLEM},
    {'E', "E", TUI_REQ_PROBLEMS},
    {':', ":", TUI_REQ_GOTO_GRAPH},
    {']', "]", TUI_REQ_NEXT_GRAPH},
    {'[', "[", TUI_REQ_PREV_GRAPH},
    {'1', "1", TUI_REQ_VIEW_NODES},
    {'i', "i", TUI_REQ_VIEW_DETAIL},
    {'v', "v", TUI_REQ_GRAD},          // v: the shape of the nabla (g is "first")
    {'t', "t", TUI_REQ_VIEW_TENSOR},
    {'m', "m", TUI_REQ_VIEW_MEMORY},
    {'s', "s", TUI_REQ_VIEW_SPLITS},
    {'d', "d", TUI_REQ_VIEW_DIFF},
    {'D', "D", TUI_REQ_DIMS},
    {'f', "f", TUI_REQ_FORMAT},
    {'T', "T", TUI_REQ_THRESHOLD},
    {'S', "S", TUI_REQ_STEP},          {KEY_F(10), "F10", TUI_REQ_STEP},
    {'c', "c", TUI_REQ_CONTINUE},      {KEY_F(5), "F5", TUI_REQ_CONTINUE},
    {'b', "b", TUI_REQ_BREAK},
    {'B', "B", TUI_REQ_BREAKPOINTS},
    {'>', ">", TUI_REQ_NEXT_TOKEN},
    {'X', "X", TUI_REQ_DELETE},        {KEY_DC, "Del", TUI_REQ_DELETE},
    {CTRL('l'), "^L", TUI_REQ_REDRAW},
};

const char * tg_tui_request_name(enum tui_request r) {
    return (unsigned) r < TUI_REQ_COUNT ? requests[r].name : "?";
}

const char * tg_tui_request_help(enum tui_request r) {
    return (unsigned) r < TUI_REQ_COUNT ? requests[r].help : "";
}

enum tui_request tg_tui_key_request(int key) {
    for (size_t i = 0; i < sizeof(bindings) / sizeof(bindings[0]); i++)
        if (bindings[i].key == key) return bindings[i].req;
    return TUI_REQ_NONE;
}

char * tg_tui_request_keys(enum tui_request r, char * buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    const char * last = NULL;
    for (size_t i = 0; i < sizeof(bindings) / sizeof(bindings[0]); i++) {
        if (bindings[i].req != r) continue;
        if (last && strcmp(last, bindings[i].label) == 0) continue;  // Enter twice
        last = bindings[i].label;
        int k = snprintf(buf + len, n - len, "%s%s", len ? " " : "", bindings[i].label);
        if (k < 0 || (size_t) k >= n - len) break;
        len += (size_t) k;
    }
    return buf;
}
