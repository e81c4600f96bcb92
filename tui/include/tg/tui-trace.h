// tg/tui-trace.h - TUI data sources over traces.
#ifndef TG_TUI_TRACE_H
#define TG_TUI_TRACE_H

#include "tg/status.h"
#include "tg/tui.h"

#include <stdbool.h>

struct tg_trace;

// Opens the trace at path as a TUI source. False + last error (the reader's
// message: cannot open, not a trace...) on failure. A truncated trace opens
// (its name says "(truncated)"). Close with src->ops->close(src->ctx).
bool tg_tui_source_trace(const char * path, struct tg_tui_source * out);
// The trace behind a trace source (NULL for other sources).
struct tg_trace * tg_tui_source_trace_handle(struct tg_tui_source * src);

#endif
