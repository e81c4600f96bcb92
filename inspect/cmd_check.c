// cmd_check.c - `tgdb check FILE`: buffer-reuse bugs (stale reads),
// unallocated use, the first NaN/Inf and its path, split and copy traffic.
// Exit status 1 when it finds a problem.
#include "cli.h"
#include "core/text.h"
#include "json.h"
#include "tg/trace-check.h"
#include "tg/trace-read.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct check_opts { bool quiet, json; };

static const struct tg_cli_opt check_table[] = {
    { .name = "--quiet", .kind = TG_CLI_FLAG, .off = offsetof(struct check_opts, quiet),
      .help = "show only the problems (no informational findings, no split summary)" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = offsetof(struct check_opts, json), .help = "print the findings as JSON" },
    { 0 },
};

static void check_defaults(struct check_opts * o) { *o = (struct check_opts) { 0 }; }

TG_CLI_COMMAND_OPTS(check, "check FILE [--quiet] [--json]",
    "find stale reads, unallocated use and the first NaN/Inf in a trace; summarize splits; --json: the findings as "
    "JSON (kind, severity, tensors by graph id and node, buffer range, text); exit 0 no problem, 1 a problem found, "
    "2 usage or input error", check_table, struct check_opts, check_defaults)

// Usage and input errors exit 2 (1 means "a problem was found").
#define CHECK_ERR(...) (tg_cli_err(__VA_ARGS__), 2)

static void json_str(const char * s) { tg_json_write_string(stdout, s, strlen(s)); }

// {"graph": 2, "node": 0, "name": "y3"} or null.
static void json_tensor(struct tg_trace * tr, int32_t graph_id, int32_t ti) {
    int gi = graph_id >= 0 ? tg_trace_find_graph(tr, (uint32_t) graph_id) : -1;
    if (gi < 0 || ti < 0) { printf("null"); return; }
    char name[TG_TRACE_NAME];
    printf("{\"graph\": %d, \"node\": %d, \"name\": ", graph_id, ti);
    json_str(tg_trace_tensor_name(tr, gi, ti, name));
    printf("}");
}

static void print_json(struct tg_trace * tr, const char * path, const struct tg_trace_report * rep, bool quiet) {
    printf("{\"file\": ");
    json_str(path);
    printf(", \"graphs\": %d, \"evaluated_nodes\": %d, \"host_reads_checked\": %d, \"problems\": %d, \"findings\": [",
           tg_trace_n_graphs(tr), tg_trace_n_evals(tr), rep->n_host_reads_checked, rep->n_problems);
    int n = 0;
    for (int i = 0; i < rep->n_findings; i++) {
        const struct tg_trace_finding * f = &rep->findings[i];
        if (quiet && !f->problem) continue;
        printf("%s{\"kind\": ", n++ ? ", " : "");
        json_str(tg_trace_finding_kind_name(f->kind));
        printf(", \"severity\": \"%s\", \"tensor\": ", f->problem ? "problem" : "warning");
        json_tensor(tr, f->graph_t, f->tensor_t);
        printf(", \"%s\": ", f->kind == TG_TRACE_FIND_GRAD_OF_GRAD ? "gradient" : "writer");   // U: its gradient / the overwriter
        json_tensor(tr, f->graph_u, f->tensor_u);
        if (f->kind == TG_TRACE_FIND_STALE_READ) {
            printf(", \"last_writer\": ");
            json_tensor(tr, f->graph_last, f->tensor_last);
            printf(", \"writers\": %d, \"buffer\": %llu, \"begin\": %llu, \"end\": %llu", f->n_writers,
                   (unsigned long long) f->buffer_uid, (unsigned long long) f->begin, (unsigned long long) f->end);
        }
        printf(", \"record\": %u, \"text\": ", f->record);
        json_str(f->text);
        printf("}");
    }
    printf("]}\n");
}

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
                printf(" [%s %d..%d, %u in]", tg_escape_str(tg_trace_backend_name(tr, g.sched_id, sp.backend)), sp.node_begin,
                       sp.node_end - 1, sp.n_inputs);
        }
        printf("%s\n", max_splits > 8 ? " ..." : "");
    }
}

static int cmd_check(int argc, char ** argv) {
    struct check_opts o;
    check_defaults(&o);
    const char * pos[1];
    int np = 0;
    if (tg_cli_parse_opts("check", check_table, &o, argc, argv, pos, 1, &np)) return TG_CLI_ERROR;
    bool quiet = o.quiet, json = o.json;
    const char * path = np ? pos[0] : NULL;
    if (!path) return (tg_cli_usage("check"), 2);
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) return CHECK_ERR("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    struct tg_trace_report rep;
    if (tg_trace_check(tr, &rep) != TG_OK) {
        tg_trace_close(tr);
        return CHECK_ERR("check: %s", tg_last_error());
    }
    struct tg_trace_damage d;
    int n_damage = 0;
    while (tg_trace_get_damage(tr, n_damage, &d)) n_damage++;
    if (json) {   // damage is on stderr (tg_cli_trace_warning) and in the exit status
        print_json(tr, path, &rep, quiet);
        int rc = rep.n_problems + n_damage ? 1 : 0;
        tg_trace_report_free(&rep);
        tg_trace_close(tr);
        return rc;
    }
    for (int i = 0; i < rep.n_findings; i++) {
        const struct tg_trace_finding * f = &rep.findings[i];
        if (quiet && !f->problem) continue;
        printf("%s [%s] %s", f->problem ? "PROBLEM" : "warning", tg_trace_finding_kind_name(f->kind), f->text);
    }
    // damaged stretches of the file are problems: what they held was not checked
    for (int i = 0; tg_trace_get_damage(tr, i, &d); i++)
        printf("PROBLEM [damage] %s: record %u%s%s at offset %llu: %s, %llu bytes skipped%s\n", path, d.record,
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
