// tg/live.h - live debugging of a model running in-process: the model's
// decode runs on a worker thread with the scheduler's eval callback
// installed; at a breakpoint (or after a step) the callback blocks, the
// caller (the shell, the TUI) inspects the engine's real tensors, then lets
// the computation continue. Unobserved nodes still run together: only nodes
// that a breakpoint or a step needs are observed.
#ifndef TG_LIVE_H
#define TG_LIVE_H

#include "tg/core.h"
#include "tg/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_live;

// Loads the model (llama GGUF) and creates a context (n_ctx cells, threads).
// NULL + last error on failure. Close with tg_live_close.
struct tg_live * tg_live_open(const char * model_path, int n_threads, int n_ctx);
// Stops a run in progress (the computation is aborted) and frees everything.
void tg_live_close(struct tg_live * lv);
const char * tg_live_model_path(const struct tg_live * lv);

enum tg_live_break_kind { TG_LIVE_BREAK_NAME = 0, TG_LIVE_BREAK_OP, TG_LIVE_BREAK_NAN };
// Adds a breakpoint: a node-name glob, an op name glob, or any NaN/Inf result.
// Returns its number (1..), or -1 (too many) with last error.
int  tg_live_break_add(struct tg_live * lv, enum tg_live_break_kind kind, const char * pattern);
void tg_live_break_clear(struct tg_live * lv);
// Number of breakpoints; breakpoint k (1..count): its kind and pattern
// ("nan" for NaN breakpoints) into buf. False when k is out of range.
int  tg_live_break_count(const struct tg_live * lv);
bool tg_live_break_get(const struct tg_live * lv, int k, enum tg_live_break_kind * kind, char * buf, size_t n);
// Deletes breakpoint k (1..count); the later ones move down one number.
// TG_ERR_INVALID_ARG + last error when there is no breakpoint k.
enum tg_status tg_live_break_delete(struct tg_live * lv, int k);

enum tg_live_state {
    TG_LIVE_IDLE = 0,   // nothing started
    TG_LIVE_STOPPED,    // paused after a node (breakpoint or step)
    TG_LIVE_DONE,       // the run finished
    TG_LIVE_FAILED,     // the run failed (message in tg_live_message)
};
enum tg_live_state tg_live_get_state(const struct tg_live * lv);
// Last event in words: "breakpoint 1 (Kcur-*) at node 12 Kcur-0", "done: ...".
const char * tg_live_message(const struct tg_live * lv);

// Starts a run: the prompt (with BOS) is decoded, then n_predict tokens are
// generated greedily, each one a decode. Returns when the run stops at a
// breakpoint or finishes: TG_OK (see the state), or an error. A previous
// run is aborted first.
enum tg_status tg_live_run(struct tg_live * lv, const char * prompt, int n_predict);
// While stopped: compute n more nodes (in execution order, across graphs).
enum tg_status tg_live_step(struct tg_live * lv, int n);
// While stopped: run to the next breakpoint, or to the end.
enum tg_status tg_live_continue(struct tg_live * lv);
// While stopped: run to the last node of the current graph.
enum tg_status tg_live_finish(struct tg_live * lv);
// While stopped: finish this decode and stop after the first node of the
// next one (the next generated token); breakpoints on the way still stop.
// The run ends (TG_LIVE_DONE) when no decode is left.
enum tg_status tg_live_next_decode(struct tg_live * lv);
// Asks a running move (run, continue, step, finish, next decode) to stop
// after the node being computed, as if a breakpoint were there; the move
// returns with the state STOPPED and the message "interrupted after node
// ...". Async-signal-safe (one atomic store): meant for a SIGINT handler.
// A request made while nothing runs is dropped by the next move.
void tg_live_interrupt(struct tg_live * lv);

struct tg_live_where {
    struct tg_graph *  graph;     // the graph being computed (valid while stopped)
    struct tg_tensor * node;      // the node just computed
    int  index;                   // its index in graph
    int  graph_seq;               // graphs computed before this one in this run
    int  pos0, n_tokens;          // tokens of the current decode
    int  layer;                   // parsed from the node name, -1 if none
    int  n_generated;             // tokens generated so far
};
// Where the run is stopped. False when not stopped.
bool tg_live_where(const struct tg_live * lv, struct tg_live_where * w);
// The graph of the current or last decode (valid until the next decode),
// NULL before the first. While running it must not be read.
struct tg_graph * tg_live_graph(const struct tg_live * lv);
// True when node i of the current graph has been computed already.
bool tg_live_node_done(const struct tg_live * lv, int i);
// Reads n elements (logical order, as float) of a tensor of the current graph
// from its backend, starting at element `first`. Returns the count read, or
// -1 + last error (no data, not computed yet is allowed but flagged by
// tg_live_node_done).
int64_t tg_live_read(struct tg_live * lv, const struct tg_tensor * t, int64_t first, int64_t n, float * out);
// Text generated so far (UTF-8, owned by lv).
const char * tg_live_text(const struct tg_live * lv);

#ifdef __cplusplus
}
#endif
#endif
