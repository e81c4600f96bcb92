// tg/tui-live.h - the TUI over a model running in-process (tg/live.h).
#ifndef TG_TUI_LIVE_H
#define TG_TUI_LIVE_H

#include "tg/status.h"
#include "tg/tui.h"

#include <stdbool.h>

// Loads the model, starts decoding the prompt (then n_predict greedy tokens)
// and stops after the first node. False + last error on failure. Close with
// src->ops->close(src->ctx) (aborts the run).
bool tg_tui_source_live(const char * model, const char * prompt, int n_predict, int n_threads, struct tg_tui_source * out);

#endif
