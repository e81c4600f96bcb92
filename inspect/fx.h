// fx.h - helpers shared by the debugging-feature commands (trace export, mem,
// splits, replay, repro, stability): opening a trace with the standard
// warning, JSON strings that stay valid UTF-8 whatever a name holds, byte
// sizes for people, and the entry point of `tgdb trace export`.
#ifndef TG_CLI_FX_H
#define TG_CLI_FX_H

#include <stdint.h>
#include <stdio.h>

struct tg_trace;

// Opens a trace; on failure prints "tgdb: <why>" and returns NULL. Prints the
// one-line warning of a damaged or truncated trace.
struct tg_trace * tg_fx_open(const char * path);
// Writes s as a JSON string literal on f (control characters escaped, bytes
// that are not valid UTF-8 written as U+FFFD).
void tg_fx_json_str(FILE * f, const char * s);
// "1.50 MiB", "12.0 KiB", "17 B".
const char * tg_fx_bytes(uint64_t n, char * buf, size_t cap);

// Tensor owning the bytes of tensor ti of graph gi in its allocation: ti
// itself for a planned tensor, else following in-place parents and view
// sources. -1 if none (no allocation record, a loop, a damaged trace).
int tg_fx_alloc_owner(const struct tg_trace * tr, int gi, int ti);

// Graph gi of a trace rebuilt as engine tensors without data (a no_alloc
// context): ts[i] is tensor i of the record (nodes, then leafs), with the
// recorded op, op_params, sources and views; every dimension equal to `from`
// becomes `to` (from 0: as recorded). Tensors whose memory the graph did not
// plan (weights, caches, inputs) get a placeholder data pointer; bufid[i] is
// the recorded buffer index of tensor i (TG_TRACE_NONE if none). NULL with
// why[] on failure.
struct tg_fx_graph {
    struct tg_context * ctx;
    struct tg_graph *   graph;
    struct tg_tensor ** ts;
    int *               bufid;
    int                 n;
};
struct tg_fx_graph * tg_fx_rebuild(const struct tg_trace * tr, int gi, int64_t from, int64_t to, char * why, size_t cap);
void tg_fx_graph_free(struct tg_fx_graph * fg);

// `tgdb trace export FILE --format perfetto -o OUT [--json]` (argv[0] = "trace",
// argv[1] = "export"). Returns the exit status.
int tg_fx_trace_export(int argc, char ** argv);

#endif
