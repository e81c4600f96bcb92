// check-impl.h - private to libtgtrace: the pieces the trace checks share
// (check.c: reuse, events, NaN; check-train.c: training).
#ifndef TG_TRACE_CHECK_IMPL_H
#define TG_TRACE_CHECK_IMPL_H
#include "tg/trace-check.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A growing string; oom set (and text dropped) when memory runs out.
struct tg_trace_sbuf { char * s; size_t n, cap; bool oom; };
void tg_trace_sb_printf(struct tg_trace_sbuf * b, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
// Appends f with text (taking text's memory) to rep; false when out of memory.
bool tg_trace_add_finding(struct tg_trace_report * rep, const struct tg_trace_finding * f, struct tg_trace_sbuf * text);
struct tg_trace_finding tg_trace_finding_init(int kind, bool problem);
// "'name' (graph 3 node 12, MUL_MAT)" / "'name' (graph 3 leaf 2)".
void tg_trace_describe_tensor(struct tg_trace_sbuf * b, struct tg_trace * tr, int32_t graph_id, int32_t ti);
// " [after marker M ...]" for the last marker before record, or nothing.
void tg_trace_describe_marker(struct tg_trace_sbuf * b, const struct tg_trace * tr, uint32_t record);
// check-train.c: for a node of a graph with gradient links, a line saying
// which forward tensor's gradient it is, feeds or is computed from ("" for a
// forward node or a graph without links).
void tg_trace_describe_grad_side(struct tg_trace_sbuf * b, struct tg_trace * tr, int32_t graph_id, int32_t ti);
// check-train.c: gradients of gradients, parameters without gradients,
// exploding gradient norms. False when out of memory.
bool tg_trace_check_train(struct tg_trace * tr, struct tg_trace_report * rep);
#endif
