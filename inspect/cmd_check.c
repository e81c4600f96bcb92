// cmd_check.c - `tgdb check FILE`: buffer-reuse bugs (stale reads),
// unallocated use, the first NaN/Inf and its path, split and copy traffic.
// Exit status 1 when it finds a problem.
#include "cli.h"
#include "tg/trace-check.h"
#include "tg/trace-read.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

TG_CLI_COMMAND(check, "check FILE [--quiet]",
    "find stale reads, unallocated use and the first NaN/Inf in a trace; summarize splits (exit 1 on a problem)")

static void split_traffic(struct tg_trace * tr) {
    int ng = tg_trace_n_graphs(tr), with_splits = 0;
    uint64_t bytes = 0;
    long splits = 0, copies = 0;
    int max_splits = 0, max_gi = -1;
    for (int gi = 0; gi < ng; gi++) {
        struct tg_trace_split_summary s;
        if (!tg_trace_split_summary(tr, gi, &s) || s.n_splits == 0) continue;
        with_splits++;
        splits += s.n_splits;
        copies += s.n_copies;
        bytes += s.copy_bytes;
        if (s.n_splits > max_splits) { max_splits = s.n_splits; max_gi = gi; }
    }
    printf("splits: %d graphs with split records, %ld splits, %ld input copies, %.3f MiB copied per computation set\n",
           with_splits, splits, copies, (double) bytes / (1 << 20));
    struct tg_trace_graph g;
    if (max_gi >= 0 && tg_trace_get_graph(tr, max_gi, &g)) {
        printf("  most split: graph %u with %d splits:", g.graph_id, max_splits);
        for (int si = 0; si < max_splits && si < 8; si++) {
            struct tg_trace_split sp;
            if (tg_trace_get_split(tr, max_gi, si, &sp))
                printf(" [%s %d..%d, %u in]", tg_trace_backend_name(tr, g.sched_id, sp.backend), sp.node_begin,
                       sp.node_end - 1, sp.n_inputs);
        }
        printf("%s\n", max_splits > 8 ? " ..." : "");
    }
}

static int cmd_check(int argc, char ** argv) {
    if (argc < 2) return tg_cli_usage("check");
    bool quiet = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet")) quiet = true;
        else return tg_cli_err("check: unknown argument '%s'", argv[i]);
    }
    struct tg_trace * tr = tg_trace_open(argv[1]);
    if (!tr) return tg_cli_err("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    struct tg_trace_report rep;
    if (tg_trace_check(tr, &rep) != TG_OK) {
        tg_trace_close(tr);
        return tg_cli_err("check: %s", tg_last_error());
    }
    for (int i = 0; i < rep.n_findings; i++) {
        const struct tg_trace_finding * f = &rep.findings[i];
        if (quiet && !f->problem) continue;
        printf("%s [%s] %s", f->problem ? "PROBLEM" : "warning", tg_trace_finding_kind_name(f->kind), f->text);
    }
    // damaged stretches of the file are problems: what they held was not checked
    struct tg_trace_damage d;
    int n_damage = 0;
    for (int i = 0; tg_trace_get_damage(tr, i, &d); i++, n_damage++)
        printf("PROBLEM [damage] %s: record %u%s%s at offset %llu: %s, %llu bytes skipped%s\n", argv[1], d.record,
               d.type ? " " : "", d.type ? tg_trace_rec_name(d.type) : "", (unsigned long long) d.offset,
               tg_trace_stop_str(d.why), (unsigned long long) d.bytes, d.to_end ? " (to the end of the file)" : "");
    if (!quiet) split_traffic(tr);
    int n_problems = rep.n_problems + n_damage;
    printf("checked %d graphs, %d evaluated nodes, %d host reads: %d problem%s\n", tg_trace_n_graphs(tr),
           tg_trace_n_evals(tr), rep.n_host_reads_checked, n_problems, n_problems == 1 ? "" : "s");
    int rc = n_problems ? 1 : 0;
    tg_trace_report_free(&rep);
    tg_trace_close(tr);
    return rc;
}
