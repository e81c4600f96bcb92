// tg/tui.h - the terminal UI (libtgtui): an ncurses browser over a "source"
// of graph data, post-mortem (a trace file) or live (a model running
// in-process, stopped by the eval callback).
//
// The views read everything through struct tg_tui_source, so the same
// screens work on traces and on live runs.
#ifndef TG_TUI_H
#define TG_TUI_H

#include "tg/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Node flags shown in the status column.
enum tg_tui_node_flag {
    TG_TUI_NAN        = 1 << 0,  // contents had NaN
    TG_TUI_INF        = 1 << 1,  // contents had Inf
    TG_TUI_STALE      = 1 << 2,  // a stale read involves this node
    TG_TUI_DIFF_SAME  = 1 << 3,  // diff: identical hash
    TG_TUI_DIFF_NEAR  = 1 << 4,  // diff: within tolerance
    TG_TUI_DIFF_DIFF  = 1 << 5,  // diff: differs
    TG_TUI_DIFF_FIRST = 1 << 6,  // diff: first divergent node
    TG_TUI_BREAK      = 1 << 7,  // live: breakpoint here
    TG_TUI_CURRENT    = 1 << 8,  // live: execution stopped here
};

#define TG_TUI_NAME 96

// One node (or leaf) as the views see it. Unknown numbers are -1.
struct tg_tui_node {
    int32_t  index;            // execution order in its graph (leafs: -1)
    char     name[TG_TUI_NAME];
    char     op[24];           // "MUL_MAT"; "NONE" for leafs
    char     type[12];         // "f32"
    int64_t  ne[4];
    uint64_t nb[4];
    int32_t  op_params[16];
    int32_t  flags_tensor;     // input/output/param bits
    int32_t  backend;          // index into backends, -1 unknown
    int32_t  split;            // split index, -1 none
    bool     split_begin;      // first node of its split
    char     cause[128];       // placement cause text ("" unknown)
    int32_t  buffer;           // buffer index, -1 none
    uint64_t buffer_uid;       // the buffer's id as tgdb prints it everywhere (#uid), 0 unknown
    int64_t  offset, size;     // bytes in the buffer
    int32_t  inplace_of;       // node index whose memory it reuses, -1 none
    int32_t  first_step, last_step; // live range in node steps
    char     view_src[TG_TUI_NAME]; // memory owner when a view ("" none)
    int32_t  n_src;
    char     src[6][TG_TUI_NAME];   // source names
    int32_t  src_index[6];          // node index of each source, -1 if a leaf
    bool     evaluated;
    int64_t  time_ns;          // -1 when not timed
    uint64_t hash;
    bool     has_hash;
    bool     has_summary;
    double   min, max, mean, rms;
    int64_t  n_nan, n_inf, n_zero;
    bool     has_contents;     // full contents recorded / readable
    uint32_t flags;            // enum tg_tui_node_flag
    int32_t  token;            // decode position context, -1 unknown
    int32_t  layer;            // layer number parsed from the name, -1 none
    // Gradient links (training graphs, see has_grads): tensor indices as
    // node() takes them (nodes first, then leafs), -1 none.
    int32_t  grad;             // its gradient
    int32_t  grad_of;          // the tensor it is the gradient of
};

struct tg_tui_split {
    int32_t backend;
    int32_t node_begin, node_end;   // [begin, end)
    int32_t n_inputs;
    int64_t copy_bytes;             // bytes copied into this split
    char    inputs[256];            // comma-separated input names (may be elided)
};

// One finding of the trace checks (the analysis `tgdb check` prints).
struct tg_tui_problem {
    char         kind[24];         // "stale-read", "nan", "unallocated-use", ...
    bool         problem;          // true: a bug; false: a warning
    int32_t      graph, node;      // graph index and node of the tensor concerned (-1 unknown)
    int32_t      graph_u, node_u;  // stale read: the first overwriting node (-1 none)
    const char * text;             // multi-line explanation (owned by the source)
};

struct tg_tui_buffer {
    char    name[64];               // "CPU compute", ...
    int32_t backend;
    int64_t size;
    char    usage[16];              // "weights" / "compute" / "any"
    uint64_t uid;                   // the buffer's id as tgdb prints it (#uid), 0 unknown
};

// The data behind the views. Optional functions may be NULL.
struct tg_tui_source_ops {
    // File name or "live: MODEL".
    const char * (*name)(void * ctx);
    int  (*n_graphs)(void * ctx);
    // The number graph g is shown and typed as (traces: the graph id recorded
    // in the trace, as `tgdb trace info` prints it). Optional (NULL: g).
    int  (*graph_number)(void * ctx, int g);
    // Short description of graph g ("graph 3: decode 1 token at pos 11").
    void (*graph_label)(void * ctx, int g, char * buf, size_t n);
    int  (*n_nodes)(void * ctx, int g);
    // Fills node i of graph g. False if out of range.
    bool (*node)(void * ctx, int g, int i, struct tg_tui_node * out);
    int  (*n_backends)(void * ctx);
    const char * (*backend_name)(void * ctx, int b);
    int  (*n_splits)(void * ctx, int g);
    bool (*split)(void * ctx, int g, int i, struct tg_tui_split * out);
    int  (*n_buffers)(void * ctx, int g);
    bool (*buffer)(void * ctx, int g, int i, struct tg_tui_buffer * out);
    // Reads up to n elements (logical order, converted to float) of node i's
    // contents starting at element `first`. Returns the number read (0 if
    // none are recorded; fewer than n at a paging boundary: ask again).
    // Never loads a big tensor whole.
    int64_t (*read)(void * ctx, int g, int i, int64_t first, int64_t n, float * out);
    // Tensors whose bytes overlapped node i's before/after it (memory sharing),
    // written as text lines into buf. Optional.
    void (*sharing)(void * ctx, int g, int i, char * buf, size_t n);
    // True when graph g records which tensor is the gradient of which (a
    // training graph: trace format 1.3 GRADS records, or a live graph built
    // by tg_graph_build_backward); then tg_tui_node.grad/grad_of are filled.
    // Optional (NULL: the source knows no gradients).
    bool (*has_grads)(void * ctx, int g);
    // Findings of the trace checks (tg/trace-check.h), computed once on first
    // use. Optional (NULL: no checks, e.g. live runs).
    int  (*n_problems)(void * ctx);
    bool (*problem)(void * ctx, int k, struct tg_tui_problem * out);
    // Live control (NULL for traces). Return false with a message in msg.
    bool (*step)(void * ctx, char * msg, size_t n);
    bool (*cont)(void * ctx, char * msg, size_t n);
    bool (*set_break)(void * ctx, const char * pattern, char * msg, size_t n);
    // Live: finish this decode, stop at the start of the next (next token).
    bool (*next_decode)(void * ctx, char * msg, size_t n);
    // Live: the breakpoints (k from 0), described in buf; deleting one
    // renumbers the later ones.
    int  (*n_breaks)(void * ctx);
    bool (*break_info)(void * ctx, int k, char * buf, size_t n);
    bool (*del_break)(void * ctx, int k, char * msg, size_t n);
    // Live: where execution stands ("stopped before node 12 Kcur-0 (token 3)").
    void (*where)(void * ctx, char * buf, size_t n);
    void (*close)(void * ctx);
};

struct tg_tui_source {
    const struct tg_tui_source_ops * ops;
    void * ctx;
};

struct tg_tui_options {
    struct tg_tui_source * diff;  // second source for the diff view, or NULL
    bool monochrome;              // force no colours
};

// Runs the UI until the user quits. Returns TG_OK, or a status + last error
// (TG_ERR_IO: the terminal cannot be used, not a tty or no terminfo;
// TG_ERR_INVALID_ARG: no source; TG_ERR_NOMEM) and prints nothing: the caller
// reports it. Does not close the sources.
enum tg_status tg_tui_run(struct tg_tui_source * src, const struct tg_tui_options * opts);
// The curses library the TUI runs on, as it names itself ("ncurses 6.4.20221231").
const char * tg_tui_curses_version(void);

#ifdef __cplusplus
}
#endif
#endif
