// tui-impl.h - private structure of the terminal UI.
//
// Shape (after tig): views are small modules behind an ops table; a view
// never calls curses, it fills `struct tui_line` rows (text segments with a
// colour role) and draw.c puts them on the screen. One table (keys.c) binds
// keys to requests with their help text.
#ifndef TG_TUI_IMPL_H
#define TG_TUI_IMPL_H

#include "tg/tui.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ---- colour roles (draw.c maps them to curses pairs or mono attributes) ----
enum tui_color {
    TUI_C_DEFAULT = 0,
    TUI_C_TITLE,      // view title bar
    TUI_C_STATUS,     // status bar
    TUI_C_HEADER,     // column headers
    TUI_C_CURSOR,     // selected row
    TUI_C_DIM,        // secondary text
    TUI_C_SPLIT,      // split boundary marker
    TUI_C_BAD,        // NaN/Inf, stale read, diff mismatch
    TUI_C_WARN,       // near values, truncation
    TUI_C_GOOD,       // identical
    TUI_C_KEY,        // key names in help
    TUI_C_BACKEND0,   // backend colours (cycled)
    TUI_C_BACKEND1,
    TUI_C_BACKEND2,
    TUI_C_BACKEND3,
    TUI_C_COUNT
};

// ---- requests (bound to keys in keys.c) ----
enum tui_request {
    TUI_REQ_NONE = 0,
#define TUI_REQ(id, name, help) TUI_REQ_##id,
#include "requests.def"
#undef TUI_REQ
    TUI_REQ_COUNT
};
const char * tg_tui_request_name(enum tui_request r);
const char * tg_tui_request_help(enum tui_request r);
// Request bound to a curses key code (TUI_REQ_NONE if unbound).
enum tui_request tg_tui_key_request(int key);
// Human name of the keys bound to r ("j Down"); buf always terminated.
char * tg_tui_request_keys(enum tui_request r, char * buf, size_t n);

// ---- a row: segments of text with a colour role ----
#define TUI_LINE_MAX 512
struct tui_seg { int start, len; enum tui_color color; };
struct tui_line {
    char text[TUI_LINE_MAX];   // escaped, printable UTF-8
    int  len;
    struct tui_seg segs[48];
    int  n_segs;
    enum tui_color fill;       // colour of the rest of the row
};
void tg_tui_line_clear(struct tui_line * l);
// Appends text (escaped: control characters and invalid UTF-8 become \xNN).
void tg_tui_line_add(struct tui_line * l, enum tui_color c, const char * s);
void tg_tui_line_addf(struct tui_line * l, enum tui_color c, const char * fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Appends s padded/truncated to exactly `width` display columns (left-aligned,
// or right-aligned when right is true; truncation marked with '~').
void tg_tui_line_col(struct tui_line * l, enum tui_color c, int width, bool right, const char * s);
void tg_tui_line_colf(struct tui_line * l, enum tui_color c, int width, bool right, const char * fmt, ...)
    __attribute__((format(printf, 5, 6)));
// Escapes arbitrary bytes into printable UTF-8 (always NUL-terminated).
char * tg_tui_escape(const char * s, char * buf, size_t n);
// Display width of an escaped UTF-8 string.
int tg_tui_str_width(const char * s);

// ---- views ----
struct tui;
struct tui_view;

struct tui_view_ops {
    const char * name;
    int  (*n_rows)(struct tui_view * v);
    // Fills row `row` (0-based) of the view.
    void (*row)(struct tui_view * v, int row, struct tui_line * line);
    // Optional column header line.
    void (*header)(struct tui_view * v, struct tui_line * line);
    // Title text shown in the title bar.
    void (*title)(struct tui_view * v, char * buf, size_t n);
    // View-specific request handling; return true when handled.
    bool (*request)(struct tui_view * v, enum tui_request r);
    // Search: does row match the pattern? (NULL: search unsupported)
    bool (*match)(struct tui_view * v, int row, const char * pattern);
    // Called when the cursor moves (to update shared selection). Optional.
    void (*moved)(struct tui_view * v);
    void (*close)(struct tui_view * v);
};

struct tui_view {
    const struct tui_view_ops * ops;
    struct tui * tui;
    int top;        // first row shown
    int cur;        // selected row
    int hscroll;    // horizontal offset in columns
    void * priv;
};

// The running UI.
struct tui {
    struct tg_tui_source * src;
    struct tui_view * stack[16];
    int n_views;
    int rows, cols;           // terminal size
    bool quit;
    bool too_small;
    bool monochrome;          // --mono: never use colours (an option)
    bool has_color;           // colours in use (set by tg_tui_screen_init)
    char message[256];        // status bar message (cleared on next key)
    bool message_error;
    char search[128];         // last search pattern
    int graph;                // current graph (shared by views)
    int node;                 // current node index in graph (shared selection)
    struct tg_tui_source * diff;  // second source for the diff view, or NULL
};

// Pushes a view (takes ownership of v). Returns false if the stack is full.
bool tg_tui_push(struct tui * t, struct tui_view * v);
// Pops the top view (the root view stays).
void tg_tui_pop(struct tui * t);
struct tui_view * tg_tui_top(struct tui * t);
struct tui_view * tg_tui_view_new(struct tui * t, const struct tui_view_ops * ops, void * priv);
void tg_tui_message(struct tui * t, bool error, const char * fmt, ...) __attribute__((format(printf, 3, 4)));
// Height available to a view's rows (screen minus title, header, status).
int tg_tui_view_height(struct tui * t, struct tui_view * v);
// Moves v's cursor to row (clamped) and scrolls it into view.
void tg_tui_view_goto(struct tui_view * v, int row);
// Generic search from the cursor: forward or backward; wraps; sets a message.
bool tg_tui_view_search(struct tui_view * v, const char * pattern, bool forward);
// Asks for a line of input on the status line (draw.c). Returns false on Esc.
bool tg_tui_prompt(struct tui * t, const char * prompt, char * buf, size_t n);

// ---- draw.c: the only curses user besides the input loop ----
#define TUI_MIN_COLS 40
#define TUI_MIN_ROWS 8
// False + last error (TG_ERR_IO) when the terminal cannot be used.
bool tg_tui_screen_init(struct tui * t);
void tg_tui_screen_end(struct tui * t);
void tg_tui_screen_size(struct tui * t);
void tg_tui_draw(struct tui * t);
int  tg_tui_getkey(struct tui * t);

bool tg_tui_match_pattern(const char * pattern, const char * text);
enum tui_color tg_tui_backend_color(int backend);
const char * tg_tui_backend_name(struct tui * t, int backend);
void tg_tui_format_shape(const int64_t ne[4], char * buf, size_t n);
void tg_tui_format_time(int64_t ns, char * buf, size_t n);

// ---- views (view-*.c) ----
struct tui_view * tg_tui_view_help(struct tui * t);
struct tui_view * tg_tui_view_nodes(struct tui * t);
struct tui_view * tg_tui_view_detail(struct tui * t, int graph, int node);
struct tui_view * tg_tui_view_tensor(struct tui * t, int graph, int node);
struct tui_view * tg_tui_view_memory(struct tui * t, int graph);
struct tui_view * tg_tui_view_splits(struct tui * t, int graph);
struct tui_view * tg_tui_view_diff(struct tui * t);
struct tui_view * tg_tui_view_problems(struct tui * t);
struct tui_view * tg_tui_view_breaks(struct tui * t);
// The tensor to jump to from node of graph (the gradient key): for a
// gradient, the tensor it is the gradient of, else its gradient. -1 when
// there is none (or the source or graph records no gradients); either way
// the status message says what was found.
int tg_tui_grad_partner(struct tui * t, int graph, int node);
// Closes every view but the node list and selects node of graph there.
void tg_tui_nodes_show(struct tui * t, int graph, int node);
// The number graph g is shown and typed as (the trace's graph id).
int tg_tui_graph_number(struct tui * t, int g);

#endif
