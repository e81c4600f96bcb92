// trace_layouts_swapped.c - part of test_trace_layouts: the trace codecs
// generated from a copy of tg/trace-records.def in which CMake swapped the
// EVAL fields t_begin_ns and t_end_ns (same width). The structs still come
// from the real list (tg/trace-types.h), so only the byte order differs.
#define TRACE_RECORDS_DEF "trace-records-swapped.def"
#include "trace/records.h"

uint8_t *       swapped_put_eval(uint8_t * p, const struct tg_trace_eval * e);
const uint8_t * swapped_get_eval(const uint8_t * p, struct tg_trace_eval * e);

uint8_t * swapped_put_eval(uint8_t * p, const struct tg_trace_eval * e) { return trace_put_eval(p, e); }
const uint8_t * swapped_get_eval(const uint8_t * p, struct tg_trace_eval * e) { return trace_get_eval(p, e); }
