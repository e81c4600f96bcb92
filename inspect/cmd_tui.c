// cmd_tui.c - `tgdb tui`: the terminal UI on a trace (post-mortem) or on a
// model running in-process (live).
#include "cli.h"
#include "tg/cpu.h"
#include "tg/tui-live.h"
#include "tg/tui-trace.h"
#include "tg/tui.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tui_opts {
    const char * diff, * model, * prompt;
    int n_predict, n_threads;
    bool mono;
};

#define TUO(f) offsetof(struct tui_opts, f)
static const struct tg_cli_opt tui_table[] = {
    { .name = "--diff", .value = "TRACE2", .kind = TG_CLI_STR, .off = TUO(diff),
      .help = "compare with a second trace (diff view)" },
    { .name = "--mono", .kind = TG_CLI_FLAG, .off = TUO(mono), .help = "no colours" },
    { .name = "--model", .short_name = "-m", .value = "MODEL", .kind = TG_CLI_STR, .off = TUO(model),
      .help = "live: run this llama GGUF model in-process instead of reading a trace" },
    { .name = "--prompt", .short_name = "-p", .value = "TEXT", .kind = TG_CLI_STR, .off = TUO(prompt),
      .help = "live: the prompt" },
    { .name = "--n-predict", .short_name = "-n", .value = "N", .kind = TG_CLI_INT, .off = TUO(n_predict), .lo = 0, .hi = 1 << 20,
      .help = "live: tokens generated after the prompt ('>' steps one at a time)" },
    { .name = "--threads", .short_name = "-t", .value = "N", .kind = TG_CLI_INT, .off = TUO(n_threads), .lo = 1, .hi = 512,
      .help = "live: CPU threads" },
    { 0 },
};

static void tui_defaults(struct tui_opts * o) { *o = (struct tui_opts) { .prompt = "Hello", .n_predict = 16, .n_threads = tg_cpu_default_threads() }; }

TG_CLI_COMMAND_OPTS(tui, "tui TRACE [--diff TRACE2] [--mono] | tui -m MODEL -p PROMPT [-n N] [-t THREADS]",
               "terminal UI on a trace (nodes, detail, tensors, memory map, splits, diff) or on a live run (-m)",
               tui_table, struct tui_opts, tui_defaults)

static int cmd_tui(int argc, char ** argv) {
    struct tui_opts o;
    tui_defaults(&o);
    const char * pos[1];
    int np = 0;
    if (tg_cli_parse_opts("tui", tui_table, &o, argc, argv, pos, 1, &np)) return TG_CLI_ERROR;
    const char * path = np ? pos[0] : NULL, * diff = o.diff, * model = o.model, * prompt = o.prompt;
    int n_predict = o.n_predict, n_threads = o.n_threads;
    struct tg_tui_options opt = { .monochrome = o.mono };
    if (model) {
        if (path || diff) return tg_cli_err("tui: give either a trace or -m MODEL, not both");
        struct tg_tui_source live;
        if (!tg_tui_source_live(model, prompt, n_predict, n_threads, &live)) return tg_cli_err("%s", tg_last_error());
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
