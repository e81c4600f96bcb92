// cmd_tui.c - `tgdb tui`: the terminal UI on a trace (post-mortem) or on a
// model running in-process (live).
#include "cli.h"
#include "tg/tui-trace.h"
#include "tg/tui.h"

#include <stdio.h>
#include <string.h>

TG_CLI_COMMAND(tui, "tui TRACE [--diff TRACE2] [--mono]",
               "browse a trace in the terminal UI: nodes, detail, tensors, memory map, splits, diff")

static int cmd_tui(int argc, char ** argv) {
    const char * path = NULL, * diff = NULL;
    struct tg_tui_options opt = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--diff")) {
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
    if (!path) return tg_cli_usage("tui");
    struct tg_tui_source src, src2;
    if (!tg_tui_source_trace(path, &src)) return tg_cli_err("%s", tg_last_error());
    if (diff) {
        if (!tg_tui_source_trace(diff, &src2)) {
            src.ops->close(src.ctx);
            return tg_cli_err("%s", tg_last_error());
        }
        opt.diff = &src2;
    }
    int rc = tg_tui_run(&src, &opt);
    src.ops->close(src.ctx);
    if (diff) src2.ops->close(src2.ctx);
    return rc;
}
