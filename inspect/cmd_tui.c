// cmd_tui.c - `tgdb tui`: the terminal UI on a trace (post-mortem) or on a
// model running in-process (live).
#include "cli.h"
#include "tg/tui-live.h"
#include "tg/tui-trace.h"
#include "tg/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TG_CLI_COMMAND(tui, "tui TRACE [--diff TRACE2] [--mono] | tui -m MODEL -p PROMPT [-n N (16)] [-t THREADS]",
               "terminal UI on a trace (nodes, detail, tensors, memory map, splits, diff) or on a live run (-m)")

static int cmd_tui(int argc, char ** argv) {
    const char * path = NULL, * diff = NULL, * model = NULL, * prompt = NULL;
    int n_predict = 16, n_threads = 2;   // live: tokens generated after the prompt (> steps one at a time)
    struct tg_tui_options opt = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "-p") || !strcmp(argv[i], "-n") || !strcmp(argv[i], "-t")) {
            if (i + 1 >= argc) return tg_cli_err("tui: %s needs a value", argv[i]);
            const char * v = argv[++i];
            switch (argv[i - 1][1]) {
            case 'm': model = v; break;
            case 'p': prompt = v; break;
            case 'n': n_predict = atoi(v); break;
            default:  n_threads = atoi(v) > 0 ? atoi(v) : 2; break;
            }
        } else if (!strcmp(argv[i], "--diff")) {
            if (++i >= argc) return tg_cli_err("tui: --diff needs a second trace file");
            diff = argv[i];
        } else if (!strcmp(argv[i], "--mono")) {
            opt.monochrome = true;
        } else if (argv[i][0] == '-') {
            return tg_cli_err("tui: unknown option '%s' (see 'tgdb help tui')", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return tg_cli_err("tui: unexpected argument '%s'", argv[i]);
        }
    }
    if (model) {
        if (path || diff) return tg_cli_err("tui: give either a trace or -m MODEL, not both");
        struct tg_tui_source live;
        if (!tg_tui_source_live(model, prompt ? prompt : "Hello", n_predict, n_threads, &live)) return tg_cli_err("%s", tg_last_error());
        enum tg_status st = tg_tui_run(&live, &opt);
        live.ops->close(live.ctx);
        return st == TG_OK ? 0 : tg_cli_err("%s", tg_last_error());
    }
    if (!path) return tg_cli_usage("tui");
    struct tg_tui_source src, src2;
    if (!tg_tui_source_trace(path, &src)) return tg_cli_err("%s", tg_last_error());
    tg_cli_trace_warning(tg_tui_source_trace_handle(&src));
    if (diff) {
        if (!tg_tui_source_trace(diff, &src2)) {
            src.ops->close(src.ctx);
            return tg_cli_err("%s", tg_last_error());
        }
        tg_cli_trace_warning(tg_tui_source_trace_handle(&src2));
        opt.diff = &src2;
    }
    enum tg_status st = tg_tui_run(&src, &opt);
    src.ops->close(src.ctx);
    if (diff) src2.ops->close(src2.ctx);
    return st == TG_OK ? 0 : tg_cli_err("%s", tg_last_error());
}
