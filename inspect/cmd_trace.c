// cmd_trace.c - `tgdb trace info|nodes|node|dump`: read a trace file.
#include "cli.h"
#include "core/text.h"
#include "json.h"
#include "fx.h"
#include "tg/trace-check.h"
#include "tg/trace-read.h"
#include "tg/types.h"

#include <inttypes.h>
#include <stddef.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct trace_opts {
    int graph, compute;
    const char * filter, * npy, * slice;
    bool json;
};

#define TRO(f) offsetof(struct trace_opts, f)
static const struct tg_cli_opt trace_table[] = {
    { .name = "--graph", .value = "G", .kind = TG_CLI_INT, .off = TRO(graph), .lo = 0, .hi = INT_MAX,
      .help = "nodes: only graph G (the id `trace info` prints)" },
    { .name = "--compute", .value = "N", .kind = TG_CLI_INT, .off = TRO(compute), .lo = 0, .hi = INT_MAX,
      .help = "nodes, node, dump: only computation N (the eval listing's number)" },
    { .name = "--filter", .value = "PATTERN", .kind = TG_CLI_STR, .off = TRO(filter),
      .help = "nodes: only nodes matching PATTERN (name glob, op=GLOB, type=GLOB; comma = or)" },
    { .name = "--slice", .value = "SLICE", .kind = TG_CLI_STR, .off = TRO(slice),
      .help = "dump: print only a part: a:b (flat), r,: (row r), r,c (one element), : (all); also NODE[SLICE]" },
    { .name = "--npy", .value = "OUT", .kind = TG_CLI_STR, .off = TRO(npy),
      .help = "dump: write the contents as a float32 .npy file" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = TRO(json),
      .help = "info, nodes, node: print one JSON object instead of text" },
    { 0 },
};

static void trace_defaults(struct trace_opts * o) { *o = (struct trace_opts) { .graph = -1, .compute = -1 }; }

TG_CLI_COMMAND_OPTS(trace,
    "trace info FILE [--json] | nodes FILE [--graph G] [--filter PATTERN] [--compute N] [--json] | "
    "node FILE NODE [--compute N] [--json] | dump FILE NODE[SLICE] [--compute N] [--slice SLICE] [--npy OUT] | "
    "export FILE --format perfetto [-o OUT] [--json]\n"
    "  G: a graph id as `trace info` prints it (\"graph G\"); N: a computation number (eval listing)\n"
    "  NODE: NAME, NAME@G (the name in graph G), G:INDEX (tensor INDEX of graph G) or #EVAL;\n"
    "        a NAME held by several graphs is ambiguous unless --compute N picks one\n"
    "  PATTERN: comma-separated alternatives, each a name glob, op=GLOB or type=GLOB\n"
    "  export: Chrome trace-event JSON for Perfetto UI / chrome://tracing: a track per backend (node slices coloured\n"
    "          by op; split input copies), a computations track with decode markers, a live-bytes counter per buffer\n"
    "  exit status: 0 success, 2 usage or input error (bad option, unknown node, unreadable file)",
    "read a trace: summary, evaluated nodes, one node in full, recorded contents",
    trace_table, struct trace_opts, trace_defaults)

// Usage and input errors: one line on stderr, exit status 2.
#define trace_err(...) (tg_cli_err(__VA_ARGS__), 2)

static struct tg_trace * open_trace(const char * path) {
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) tg_cli_err("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    return tr;
}

static const char * human_bytes(uint64_t n, char * buf, size_t cap) {
    if (n >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double) n / (1ull << 30));
    else if (n >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double) n / (1ull << 20));
    else if (n >= (1ull << 10)) snprintf(buf, cap, "%.1f KiB", (double) n / (1ull << 10));
    else snprintf(buf, cap, "%" PRIu64 " B", n);
    return buf;
}

static const char * usage_name(int usage) {
    return usage == TG_TRACE_USAGE_WEIGHTS ? "weights" : usage == TG_TRACE_USAGE_COMPUTE ? "compute" : "any";
}

// JSON pieces: a string (NULL as null), a number (non-finite as null).
static void jstr(const char * s) {
    if (s) tg_json_write_string(stdout, s, strlen(s));
    else fputs("null", stdout);
}
static void jnum(double v) {
    if (isfinite(v)) printf("%.9g", v);
    else fputs("null", stdout);
}

// ---- info ---------------------------------------------------------------------

static void info_run(struct tg_trace * tr) {
    struct tg_trace_run run;
    if (!tg_trace_get_run(tr, &run)) { printf("run: (no RUN record)\n"); return; }
    time_t t = (time_t) (run.time_unix_ns / 1000000000ull);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&t, &tm)) strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("run: pid %u, %d threads, engine %s, started %s\n", run.pid, run.n_threads, run.engine_version, when);
    printf("  command: %s\n", run.cmdline[0] ? tg_escape_str(run.cmdline) : "(unknown)");
    printf("  backends: %s\n", run.backends[0] ? tg_escape_str(run.backends) : "(unknown)");
    if (run.note[0]) printf("  note: %s\n", tg_escape_str(run.note));
}

static void info_graphs(struct tg_trace * tr) {
    int ng = tg_trace_n_graphs(tr), n_delta = 0;
    for (int gi = 0; gi < ng; gi++) {
        struct tg_trace_graph g;
        n_delta += tg_trace_get_graph(tr, gi, &g) && g.base_graph_id != 0;
    }
    if (n_delta) printf("graphs: %d (%d stored as changes to an earlier graph)\n", ng, n_delta);
    else printf("graphs: %d\n", ng);
    int shown = 0;
    for (int gi = 0; gi < ng; gi++) {
        struct tg_trace_graph g;
        struct tg_trace_split_summary ss;
        if (!tg_trace_get_graph(tr, gi, &g)) continue;
        if (shown++ == 12 && ng > 14) { printf("  ... %d more graphs\n", ng - 12); break; }
        tg_trace_split_summary(tr, gi, &ss);
        char b1[32];
        printf("  graph %u (sched %d): %d nodes, %d leafs, %d splits, %d copies (%s)", g.graph_id,
               g.sched_id == UINT32_MAX ? -1 : (int) g.sched_id, g.n_nodes, g.n_leafs, ss.n_splits, ss.n_copies,
               human_bytes(ss.copy_bytes, b1, sizeof(b1)));
        int nb = tg_trace_n_buffers(tr, gi);
        for (int bi = 0; bi < nb; bi++) {
            struct tg_trace_buffer b;
            if (tg_trace_get_buffer(tr, gi, bi, &b))
                printf("%s %s %s #%" PRIu64 " %s", bi ? "," : "; buffers:", tg_escape_str(b.buft), usage_name(b.usage), b.uid,
                       human_bytes(b.size, b1, sizeof(b1)));
        }
        printf("\n");
    }
}

// Decodes whose "decode" marker names the attention path (attn=fused|unfused).
static void attn_paths(const struct tg_trace * tr, int * fused, int * unfused) {
    *fused = *unfused = 0;
    for (int i = 0; i < tg_trace_n_markers(tr); i++) {
        struct tg_trace_marker m;
        if (!tg_trace_get_marker(tr, i, &m) || !m.text) continue;
        if (strstr(m.text, "attn=fused")) (*fused)++;
        else if (strstr(m.text, "attn=unfused")) (*unfused)++;
    }
}

// A training run's steps from its train_result markers and the most gradient
// links of any graph (0, 0 for an inference trace).
struct train_info { int steps, links; double loss0, loss1, norm0, norm1; };

static struct train_info training(const struct tg_trace * tr) {
    struct train_info t = { 0 };
    for (int i = 0; i < tg_trace_n_markers(tr); i++) {
        struct tg_trace_marker m;
        const char * p = tg_trace_get_marker(tr, i, &m) && m.text ? strstr(m.text, "train_result ") : NULL;
        const char * l = p ? strstr(p, "loss=") : NULL, * g = p ? strstr(p, "grad_norm=") : NULL;
        if (!l || !g) continue;
        t.loss1 = strtod(l + 5, NULL);
        t.norm1 = strtod(g + 10, NULL);
        if (t.steps++ == 0) t.loss0 = t.loss1, t.norm0 = t.norm1;
    }
    for (int gi = 0; gi < tg_trace_n_graphs(tr); gi++)
        if (tg_trace_n_grads(tr, gi) > t.links) t.links = tg_trace_n_grads(tr, gi);
    return t;
}

static void info_totals(struct tg_trace * tr) {
    int nc = tg_trace_n_computes(tr), ok = 0, failed = 0, begun = 0;
    for (int i = 0; i < nc; i++) {
        struct tg_trace_compute c;
        if (!tg_trace_get_compute(tr, i, &c)) continue;
        if (c.phase == TG_TRACE_BEGIN) begun++;
        else if (c.status == 0) ok++;
        else failed++;
    }
    int ne = tg_trace_n_evals(tr), nhash = 0, nsum = 0, nnan = 0, npend = 0;
    uint64_t t_ns = 0;
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e)) continue;
        npend += (e.flags & TG_TRACE_EVAL_PENDING) != 0;
        nhash += (e.flags & TG_TRACE_EVAL_HASH) != 0;
        nsum += (e.flags & TG_TRACE_EVAL_SUMMARY) != 0;
        nnan += (e.flags & TG_TRACE_EVAL_SUMMARY) && (e.sum.n_nan || e.sum.n_inf);
        if ((e.flags & TG_TRACE_EVAL_TIME) && e.t_end_ns >= e.t_begin_ns) t_ns += e.t_end_ns - e.t_begin_ns;
    }
    printf("computations: %d begun, %d ok, %d failed%s\n", begun, ok, failed,
           begun > ok + failed ? " (some did not finish)" : "");
    printf("evaluated nodes: %d (%d hashed, %d summarized, %d with NaN/Inf), node time %.3f ms\n", ne, nhash, nsum,
           nnan, (double) t_ns / 1e6);
    if (npend)   // EVALs written before their hash (the recorder's hashing thread) whose RESULT never came
        printf("  %d of them not hashed: the process ended before the recorder's hashing thread reached them\n", npend);
    int nct = tg_trace_n_contents(tr);
    uint64_t raw = 0, stored = 0;
    for (int i = 0; i < nct; i++) {
        struct tg_trace_contents c;
        if (tg_trace_get_contents(tr, i, &c)) { raw += c.raw_size; stored += c.stored_size; }
    }
    char b1[32], b2[32];
    printf("contents: %d tensors (%s, %s stored)\n", nct, human_bytes(raw, b1, sizeof(b1)),
           human_bytes(stored, b2, sizeof(b2)));
    int nh = tg_trace_n_hosts(tr), nr = 0;
    for (int i = 0; i < nh; i++) {
        struct tg_trace_host h;
        if (tg_trace_get_host(tr, i, &h)) nr += h.kind == TG_TRACE_HOST_READ;
    }
    printf("host accesses: %d reads, %d writes; markers: %d; events: %d\n", nr, nh - nr, tg_trace_n_markers(tr),
           tg_trace_n_events(tr));
    int fa_on, fa_off;
    attn_paths(tr, &fa_on, &fa_off);
    if (fa_on || fa_off)
        printf("attention: %s (%d decode%s fused FLASH_ATTN_EXT, %d unfused kq/kq_soft_max/kqv)\n",
               fa_on && fa_off ? "mixed" : fa_on ? "fused" : "unfused", fa_on, fa_on == 1 ? "" : "s", fa_off);
    const struct train_info ti = training(tr);
    if (ti.steps || ti.links)
        printf("training: %d step%s, loss %.6g -> %.6g, gradient norm %.6g -> %.6g; %d gradient links (tgdb check looks "
               "for gradients of gradients, parameters without one, exploding norms)\n", ti.steps, ti.steps == 1 ? "" : "s",
               ti.loss0, ti.loss1, ti.norm0, ti.norm1, ti.links);
    // the events worth reading (a new allocation plan is routine): errors, poison mode, ...
    static const char * const sev[] = { "info", "warning", "error" };
    int shown = 0, more = 0;
    for (int i = 0; i < tg_trace_n_events(tr); i++) {
        struct tg_trace_event e;
        if (!tg_trace_get_event(tr, i, &e) || e.kind == TG_TRACE_EV_GRAPH_ALLOCATED) continue;
        if (shown == 10) { more++; continue; }
        printf("  event %s (%s): %s\n", tg_trace_event_kind_name(e.kind), e.severity < 3 ? sev[e.severity] : "?",
               tg_escape_str(e.message && e.message[0] ? e.message : e.name));
        shown++;
    }
    if (more) printf("  ... %d more events\n", more);
}

static void info_json(struct tg_trace * tr, const char * path, const struct tg_trace_status * st) {
    printf("{\"file\": ");
    jstr(path);
    printf(", \"format\": \"%u.%u\", \"bytes\": %" PRIu64 ", \"complete\": %s, \"truncated\": %s, \"damaged\": %u, \"status\": ",
           st->version_major, st->version_minor, st->file_size, st->complete ? "true" : "false", st->truncated ? "true" : "false",
           st->n_damaged);
    jstr(st->message);
    struct tg_trace_run run;
    if (tg_trace_get_run(tr, &run)) {
        printf(", \"run\": {\"pid\": %u, \"threads\": %d, \"time_unix_ns\": %" PRIu64 ", \"engine\": ", run.pid, run.n_threads,
               run.time_unix_ns);
        jstr(run.engine_version);
        printf(", \"command\": ");
        jstr(run.cmdline);
        printf(", \"backends\": ");
        jstr(run.backends);
        printf(", \"note\": ");
        jstr(run.note);
        printf("}");
    } else {
        printf(", \"run\": null");
    }
    printf(", \"graphs\": [");
    int ng = tg_trace_n_graphs(tr), k = 0;
    for (int gi = 0; gi < ng; gi++) {
        struct tg_trace_graph g;
        struct tg_trace_split_summary ss;
        if (!tg_trace_get_graph(tr, gi, &g)) continue;
        tg_trace_split_summary(tr, gi, &ss);
        printf("%s{\"id\": %u, \"sched\": %d, \"nodes\": %d, \"leafs\": %d, \"splits\": %d, \"copies\": %d, \"copy_bytes\": %" PRIu64 "}",
               k++ ? ", " : "", g.graph_id, g.sched_id == UINT32_MAX ? -1 : (int) g.sched_id, g.n_nodes, g.n_leafs, ss.n_splits,
               ss.n_copies, (uint64_t) ss.copy_bytes);
    }
    int nc = tg_trace_n_computes(tr), ok = 0, failed = 0, begun = 0;
    for (int i = 0; i < nc; i++) {
        struct tg_trace_compute c;
        if (!tg_trace_get_compute(tr, i, &c)) continue;
        if (c.phase == TG_TRACE_BEGIN) begun++;
        else if (c.status == 0) ok++;
        else failed++;
    }
    int ne = tg_trace_n_evals(tr), nhash = 0, nsum = 0, nnan = 0;
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e)) continue;
        nhash += (e.flags & TG_TRACE_EVAL_HASH) != 0;
        nsum += (e.flags & TG_TRACE_EVAL_SUMMARY) != 0;
        nnan += (e.flags & TG_TRACE_EVAL_SUMMARY) && (e.sum.n_nan || e.sum.n_inf);
    }
    printf("], \"schedulers\": %d, \"computations\": {\"begun\": %d, \"ok\": %d, \"failed\": %d}"
           ", \"evals\": {\"total\": %d, \"hashed\": %d, \"summarized\": %d, \"nan_inf\": %d}"
           ", \"contents\": %d, \"markers\": %d, \"events\": %d",
           tg_trace_n_scheds(tr), begun, ok, failed, ne, nhash, nsum, nnan, tg_trace_n_contents(tr), tg_trace_n_markers(tr),
           tg_trace_n_events(tr));
    int fa_on, fa_off;
    attn_paths(tr, &fa_on, &fa_off);
    const struct train_info ti = training(tr);
    printf(", \"attention\": {\"fused\": %d, \"unfused\": %d}", fa_on, fa_off);
    printf(", \"training\": {\"steps\": %d, \"grad_links\": %d", ti.steps, ti.links);
    if (ti.steps) printf(", \"first_loss\": %.9g, \"last_loss\": %.9g, \"first_grad_norm\": %.9g, \"last_grad_norm\": %.9g",
                         ti.loss0, ti.loss1, ti.norm0, ti.norm1);
    printf("}}\n");
}

static int trace_info(const struct trace_opts * o, const char ** pos, int np) {
    if (np != 2) return tg_cli_usage("trace"), 2;
    if (o->graph >= 0 || o->compute >= 0 || o->filter || o->slice || o->npy)
        return trace_err("trace info: only --json applies (see 'tgdb help trace')");
    struct tg_trace * tr = open_trace(pos[1]);
    if (!tr) return TG_CLI_ERROR;
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    if (o->json) {
        info_json(tr, pos[1], &st);
        tg_trace_close(tr);
        return 0;
    }
    printf("trace: %s (format %u.%u, %" PRIu64 " bytes)\n", pos[1], st.version_major, st.version_minor, st.file_size);
    printf("status: %s\n", st.message);
    if (st.truncated)
        printf("truncated: yes, at offset %" PRIu64 " (record %u): %s\n", st.stop_offset, st.n_records,
               st.stop == TG_TRACE_STOP_NONE ? "not closed" : tg_trace_stop_str(st.stop));
    if (st.n_unknown || st.n_invalid) printf("skipped: %u unknown, %u invalid records\n", st.n_unknown, st.n_invalid);
    info_run(tr);
    int ns = tg_trace_n_scheds(tr);
    printf("schedulers: %d\n", ns);
    for (int i = 0; i < ns; i++) {
        struct tg_trace_sched s;
        if (!tg_trace_get_sched(tr, i, &s)) continue;
        printf("  sched %u:", s.sched_id);
        for (int b = 0; b < s.n_backends; b++) printf("%s %d=%s (%s)", b ? "," : "", b, tg_escape_str(s.backend[b]), tg_escape_str(s.buft[b]));
        printf("\n");
    }
    info_graphs(tr);
    info_totals(tr);
    tg_trace_close(tr);
    return 0;
}

// ---- nodes ----------------------------------------------------------------------

static void print_eval_row(struct tg_trace * tr, int i, const struct tg_trace_eval * e, int gi) {
    struct tg_trace_tensor t;
    struct tg_trace_graph g;
    bool have = tg_trace_get_tensor(tr, gi, e->node, &t) && tg_trace_get_graph(tr, gi, &g);
    printf("%6d %5u %5d  %-24s %-10s %-6s %3d  #%" PRIu64 "@%-9" PRIu64, i, e->graph_id, e->node, have ? tg_escape_str(t.name) : "?",
           have ? tg_escape_str(tg_trace_op_name(tr, t.op)) : "?", have ? tg_escape_str(tg_trace_backend_name(tr, g.sched_id, e->backend)) : "?",
           e->split, e->buffer_uid, e->offset);
    if (e->flags & TG_TRACE_EVAL_TIME) printf(" %9.1f", (double) (e->t_end_ns - e->t_begin_ns) / 1e3);
    else printf(" %9s", "-");
    if (e->flags & TG_TRACE_EVAL_HASH) printf("  %016" PRIx64, e->hash);
    else printf("  %16s", "-");
    if (e->flags & TG_TRACE_EVAL_SUMMARY) {
        printf("  %11.4g %11.4g %11.4g %11.4g", e->sum.min, e->sum.max, e->sum.mean, e->sum.rms);
        if (e->sum.n_nan || e->sum.n_inf)
            printf("  nan=%" PRIu64 " inf=%" PRIu64, e->sum.n_nan, e->sum.n_inf);
    }
    printf("%s\n", e->flags & TG_TRACE_EVAL_CONTENTS ? "  [contents]" : "");
}

static void eval_json(struct tg_trace * tr, int i, const struct tg_trace_eval * e, int gi) {
    struct tg_trace_tensor t;
    struct tg_trace_graph g;
    bool have = tg_trace_get_tensor(tr, gi, e->node, &t) && tg_trace_get_graph(tr, gi, &g);
    printf("{\"eval\": %d, \"graph\": %u, \"node\": %d, \"compute\": %u, \"name\": ", i, e->graph_id, e->node, e->compute_seq);
    jstr(have ? t.name : NULL);
    printf(", \"op\": ");
    jstr(have ? tg_trace_op_name(tr, t.op) : NULL);
    printf(", \"backend\": ");
    jstr(have ? tg_trace_backend_name(tr, g.sched_id, e->backend) : NULL);
    printf(", \"split\": %d, \"buffer\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"time_us\": ", e->split, e->buffer_uid, e->offset);
    if (e->flags & TG_TRACE_EVAL_TIME) jnum((double) (e->t_end_ns - e->t_begin_ns) / 1e3);
    else fputs("null", stdout);
    if (e->flags & TG_TRACE_EVAL_HASH) printf(", \"hash\": \"%016" PRIx64 "\"", e->hash);
    else printf(", \"hash\": null");
    if (e->flags & TG_TRACE_EVAL_SUMMARY) {
        printf(", \"summary\": {\"min\": ");
        jnum(e->sum.min);
        printf(", \"max\": ");
        jnum(e->sum.max);
        printf(", \"mean\": ");
        jnum(e->sum.mean);
        printf(", \"rms\": ");
        jnum(e->sum.rms);
        printf(", \"nan\": %" PRIu64 ", \"inf\": %" PRIu64 ", \"zero\": %" PRIu64 "}", e->sum.n_nan, e->sum.n_inf, e->sum.n_zero);
    } else {
        printf(", \"summary\": null");
    }
    printf(", \"contents\": %s}", e->flags & TG_TRACE_EVAL_CONTENTS ? "true" : "false");
}

static int trace_nodes(const struct trace_opts * o, const char ** pos, int np) {
    if (np != 2) return tg_cli_usage("trace"), 2;
    if (o->slice || o->npy) return trace_err("trace nodes: --slice and --npy apply to 'trace dump' (see 'tgdb help trace')");
    long graph = o->graph, compute = o->compute;
    const char * filter = o->filter;
    char why[160];
    if (filter && !tg_trace_filter_check(filter, why, sizeof(why)))
        return trace_err("trace nodes: bad --filter '%s': %s", filter, why);
    struct tg_trace * tr = open_trace(pos[1]);
    if (!tr) return TG_CLI_ERROR;
    if (graph >= 0 && tg_trace_find_graph(tr, (uint32_t) graph) < 0) {
        tg_trace_close(tr);
        return trace_err("trace nodes: no graph %ld in %s", graph, pos[1]);
    }
    if (o->json) printf("{\"file\": "), jstr(pos[1]), printf(", \"evals\": [");
    else
        printf("%6s %5s %5s  %-24s %-10s %-6s %3s  %-20s %9s  %-16s  %11s %11s %11s %11s\n", "eval", "graph", "node", "name",
               "op", "backend", "spl", "buffer@offset", "time_us", "hash", "min", "max", "mean", "rms");
    int ne = tg_trace_n_evals(tr), shown = 0, cached_gid = -1, gi = -1, last_marker = -2;
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e)) continue;
        if (graph >= 0 && e.graph_id != (uint32_t) graph) continue;
        if (compute >= 0 && e.compute_seq != (uint32_t) compute) continue;
        if ((int) e.graph_id != cached_gid) { cached_gid = (int) e.graph_id; gi = tg_trace_find_graph(tr, e.graph_id); }
        if (filter) {
            struct tg_trace_tensor t;
            if (!tg_trace_get_tensor(tr, gi, e.node, &t) || !tg_trace_filter_match(filter, t.name, tg_trace_op_name(tr, t.op),
                                                                            tg_trace_type_name(tr, t.type)))
                continue;
        }
        if (o->json) {
            if (shown++) fputs(", ", stdout);
            eval_json(tr, i, &e, gi);
            continue;
        }
        int mi = tg_trace_marker_before(tr, e.record);
        struct tg_trace_marker m;
        if (mi != last_marker && mi >= 0 && tg_trace_get_marker(tr, mi, &m)) {
            if (strstr(m.text, "n_tokens=") || m.kind == TG_TRACE_MARK_USER)   // engine markers carry them; user markers have none
                printf("-- marker %d: %s\n", mi, tg_escape_str(m.text));
            else printf("-- marker %d: %s n_tokens=%d pos=%d\n", mi, tg_escape_str(m.text), m.n_tokens, m.pos);
        }
        last_marker = mi;
        print_eval_row(tr, i, &e, gi);
        shown++;
    }
    if (o->json) printf("], \"shown\": %d, \"total\": %d}\n", shown, ne);
    else printf("%d of %d evaluated nodes\n", shown, ne);
    tg_trace_close(tr);
    return 0;
}

// ---- node ---------------------------------------------------------------------------

// Resolves NODE: "#E" (eval index), "G:I" (graph id : tensor index), "NAME@G"
// (NAME in graph id G) or NAME. A bare NAME held by several tensors (in several
// graphs, or twice in one) is ambiguous unless --compute keeps only one that
// was evaluated in that computation. Sets *gi, *ti and *eval (-1 if not
// evaluated); false with a one-line reason in why[] otherwise.
static bool resolve_node(struct tg_trace * tr, const char * spec, long compute, int * gi, int * ti, int * eval,
                         char * why, size_t cap) {
    struct tg_trace_graph g;
    *gi = -1; *ti = -1; *eval = -1;
    uint32_t cseq = compute >= 0 ? (uint32_t) compute : UINT32_MAX;
    int v;
    snprintf(why, cap, "no node '%s' (use a name, NAME@GRAPH, GRAPH:INDEX or #EVAL)", spec);
    if (spec[0] == '#') {
        struct tg_trace_eval ev;
        if (!tg_cli_parse_int(spec + 1, 0, INT_MAX, &v) || !tg_trace_get_eval(tr, v, &ev)) return false;
        *gi = tg_trace_find_graph(tr, ev.graph_id);
        *ti = ev.node;
        *eval = v;
        return *gi >= 0;
    }
    const char * colon = strchr(spec, ':');
    const char * at = strrchr(spec, '@');
    char gbuf[32];
    if (colon && (size_t) (colon - spec) < sizeof(gbuf)) {
        memcpy(gbuf, spec, (size_t) (colon - spec));
        gbuf[colon - spec] = '\0';
        int gid, t;
        if (tg_cli_parse_int(gbuf, 0, INT_MAX, &gid) && tg_cli_parse_int(colon + 1, 0, INT_MAX, &t)) {
            *gi = tg_trace_find_graph(tr, (uint32_t) gid);
            if (*gi < 0) { snprintf(why, cap, "no graph %d (see `tgdb trace info`)", gid); return false; }
            tg_trace_get_graph(tr, *gi, &g);
            if (t >= g.n_nodes + g.n_leafs) {
                snprintf(why, cap, "graph %d has %d tensors, no index %d", gid, g.n_nodes + g.n_leafs, t);
                return false;
            }
            *ti = t;
            *eval = tg_trace_find_eval(tr, g.graph_id, *ti, cseq);
            return true;
        }
    }
    char name[TG_TRACE_NAME];
    int only_gi = -1;
    snprintf(name, sizeof(name), "%s", spec);
    if (at && tg_cli_parse_int(at + 1, 0, INT_MAX, &v) && (size_t) (at - spec) < sizeof(name)) {
        name[at - spec] = '\0';
        only_gi = tg_trace_find_graph(tr, (uint32_t) v);
        if (only_gi < 0) { snprintf(why, cap, "no graph %d (see `tgdb trace info`)", v); return false; }
    }
    // every tensor with this name (in the one graph with NAME@G)
    int n = 0, ng = tg_trace_n_graphs(tr);
    size_t len = 0;
    char list[512] = "";
    for (int k = only_gi >= 0 ? only_gi : 0; k < (only_gi >= 0 ? only_gi + 1 : ng); k++) {
        if (!tg_trace_get_graph(tr, k, &g)) continue;
        for (int t = 0; t < g.n_nodes + g.n_leafs; t++) {
            char tn[TG_TRACE_NAME];
            if (strcmp(tg_trace_tensor_name(tr, k, t, tn), name)) continue;
            int e = tg_trace_find_eval(tr, g.graph_id, t, cseq);
            if (compute >= 0 && e < 0) continue;   // not evaluated in that computation
            struct tg_trace_tensor tt;
            const char * op = tg_trace_get_tensor(tr, k, t, &tt) ? tg_trace_op_name(tr, tt.op) : "?";
            if (n < 8 && len < sizeof(list))
                len += (size_t) snprintf(list + len, sizeof(list) - len, "%s%u:%d (graph %u %s %d, %s)", n ? ", " : "",
                                         g.graph_id, t, g.graph_id, t < g.n_nodes ? "node" : "leaf",
                                         t < g.n_nodes ? t : t - g.n_nodes, op);
            if (n++ == 0) { *gi = k; *ti = t; *eval = e; }
        }
    }
    if (n == 1) return true;
    if (n == 0) {
        if (compute >= 0) snprintf(why, cap, "no node '%s' evaluated in computation %ld", name, compute);
        *gi = -1;
        return false;
    }
    snprintf(why, cap, "'%s' is ambiguous, %d tensors: %s%s; pick one with NAME@GRAPH, GRAPH:INDEX or --compute N",
             name, n, list, n > 8 ? ", ..." : "");
    *gi = -1;
    return false;
}

static void print_ref(struct tg_trace * tr, int gi, int ti) {
    struct tg_trace_graph g;
    char name[TG_TRACE_NAME];
    tg_trace_get_graph(tr, gi, &g);
    tg_trace_tensor_name(tr, gi, ti, name);
    if (ti < g.n_nodes) {
        struct tg_trace_tensor t;
        tg_trace_get_tensor(tr, gi, ti, &t);
        printf("'%s' (node %d, %s)", tg_escape_str(name), ti, tg_escape_str(tg_trace_op_name(tr, t.op)));
    } else {
        printf("'%s' (leaf %d)", tg_escape_str(name), ti - g.n_nodes);
    }
}

static void node_structure(struct tg_trace * tr, int gi, int ti, const struct tg_trace_tensor * t) {
    char shape[96];
    printf("  type %s, shape %s, strides [%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "], uid %#" PRIx64 "\n",
           tg_trace_type_name(tr, t->type), tg_trace_shape_str(t->ne, shape, sizeof(shape)), t->nb[0], t->nb[1],
           t->nb[2], t->nb[3], t->uid);
    if (t->flags)
        printf("  flags:%s%s%s%s\n", t->flags & 1 ? " input" : "", t->flags & 2 ? " output" : "",
               t->flags & 4 ? " param" : "", t->flags & 8 ? " loss" : "");
    int last = -1;
    for (int k = 0; k < TG_TRACE_MAX_OP_PARAMS; k++) if (t->op_params[k]) last = k;
    if (last >= 0) {
        printf("  op params:");
        for (int k = 0; k <= last; k++) {
            float f;
            memcpy(&f, &t->op_params[k], 4);
            printf(" [%d]=%d", k, t->op_params[k]);
            if (isfinite(f) && fabsf(f) > 1e-30f && fabsf(f) < 1e30f && (t->op_params[k] > 0x00FFFFFF || t->op_params[k] < -0x00FFFFFF))
                printf("(%g)", f);
        }
        printf("\n");
    }
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
        if (t->src[k] < 0) continue;
        printf("  src[%d]: ", k);
        print_ref(tr, gi, t->src[k]);
        printf("\n");
    }
    if (t->view_src >= 0) {
        printf("  view of: ");
        print_ref(tr, gi, t->view_src);
        printf(" at byte offset %" PRIu64 "\n", t->view_offs);
    }
}

static void node_placement(struct tg_trace * tr, int gi, int ti, const struct tg_trace_graph * g) {
    struct tg_trace_placement p;
    if (tg_trace_get_placement(tr, gi, ti, &p))
        printf("  placement: %s, cause %s%s%s\n", tg_escape_str(tg_trace_backend_name(tr, g->sched_id, p.backend)),
               tg_escape_str(tg_trace_cause_name(tr, p.cause)), p.text[0] ? ": " : "", tg_escape_str(p.text));
    int si = ti < g->n_nodes ? tg_trace_split_of_node(tr, gi, ti) : -1;
    struct tg_trace_split sp;
    if (si >= 0 && tg_trace_get_split(tr, gi, si, &sp))
        printf("  split %d of %d: %s, nodes %d..%d, %u inputs\n", si, tg_trace_n_splits(tr, gi),
               tg_escape_str(tg_trace_backend_name(tr, g->sched_id, sp.backend)), sp.node_begin, sp.node_end - 1, sp.n_inputs);
}

static void node_alloc(struct tg_trace * tr, int gi, int ti, const struct tg_trace_graph * g) {
    struct tg_trace_alloc a;
    struct tg_trace_buffer b;
    if (!tg_trace_get_alloc(tr, gi, ti, &a)) { printf("  allocation: not recorded\n"); return; }
    if (a.buffer < 0 || !tg_trace_get_buffer(tr, gi, a.buffer, &b)) {
        printf("  allocation: %s\n", a.flags & TG_TRACE_ALLOC_NONE ? "no memory" : "not in a recorded buffer");
        return;
    }
    printf("  allocation: buffer #%" PRIu64 " (%s, %s), offset %" PRIu64 ", %" PRIu64 " bytes, live steps %d..%d%s%s%s",
           b.uid, tg_escape_str(b.buft), usage_name(b.usage), a.offset, a.size, a.first_step, a.last_step,
           a.flags & TG_TRACE_ALLOC_VIEW ? ", view" : "", a.flags & TG_TRACE_ALLOC_EXTERNAL ? ", preallocated" : "",
           a.flags & TG_TRACE_ALLOC_PACKED ? ", the CPU reads a packed copy" : "");
    if (a.inplace_parent >= 0) { printf(", in place of "); print_ref(tr, gi, a.inplace_parent); }
    printf("\n");
    int shown = 0, nt = g->n_nodes + g->n_leafs;
    for (int k = 0; k < nt; k++) {
        struct tg_trace_alloc o;
        if (k == ti || !tg_trace_get_alloc(tr, gi, k, &o) || o.buffer != a.buffer || o.size == 0) continue;
        if (o.offset >= a.offset + a.size || a.offset >= o.offset + o.size) continue;
        if (shown++ == 0) printf("  shares memory with:\n");
        if (shown > 24) continue;
        printf("    ");
        print_ref(tr, gi, k);
        printf(" bytes [%" PRIu64 ", %" PRIu64 "), live steps %d..%d%s\n", o.offset, o.offset + o.size, o.first_step,
               o.last_step, o.flags & TG_TRACE_ALLOC_VIEW ? " (view)" : "");
    }
    if (shown > 24) printf("    ... %d more\n", shown - 24);
}

static void node_evals(struct tg_trace * tr, const struct tg_trace_graph * g, int ti) {
    int n = tg_trace_n_evals(tr), shown = 0;
    for (int i = 0; i < n; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e) || e.graph_id != g->graph_id || e.node != ti) continue;
        if (shown++ == 0) printf("  evaluations:\n");
        printf("    eval #%d, computation %u: %.1f us", i, e.compute_seq, (double) (e.t_end_ns - e.t_begin_ns) / 1e3);
        if (e.flags & TG_TRACE_EVAL_HASH) printf(", hash %016" PRIx64, e.hash);
        if (e.flags & TG_TRACE_EVAL_SUMMARY)
            printf(", min %.6g max %.6g mean %.6g rms %.6g, nan %" PRIu64 " inf %" PRIu64 " zero %" PRIu64, e.sum.min,
                   e.sum.max, e.sum.mean, e.sum.rms, e.sum.n_nan, e.sum.n_inf, e.sum.n_zero);
        if (e.flags & TG_TRACE_EVAL_CONTENTS) printf(", contents recorded");
        int mi = tg_trace_marker_before(tr, e.record);
        struct tg_trace_marker m;
        if (mi >= 0 && tg_trace_get_marker(tr, mi, &m)) printf(" [marker %d: n_tokens=%d pos=%d]", mi, m.n_tokens, m.pos);
        printf("\n");
    }
    if (!shown) printf("  evaluations: none recorded\n");
}

static void node_ref_json(struct tg_trace * tr, int gi, int ti) {
    char name[TG_TRACE_NAME];
    tg_trace_tensor_name(tr, gi, ti, name);
    printf("{\"index\": %d, \"name\": ", ti);
    jstr(name);
    printf("}");
}

static void node_json(struct tg_trace * tr, int gi, int ti, const struct tg_trace_graph * g, const struct tg_trace_tensor * t) {
    printf("{\"name\": ");
    jstr(t->name);
    printf(", \"graph\": %u, \"sched\": %d, \"kind\": \"%s\", \"index\": %d, \"tensor\": %d, \"op\": ", g->graph_id,
           g->sched_id == UINT32_MAX ? -1 : (int) g->sched_id, ti < g->n_nodes ? "node" : "leaf",
           ti < g->n_nodes ? ti : ti - g->n_nodes, ti);
    jstr(tg_trace_op_name(tr, t->op));
    printf(", \"type\": ");
    jstr(tg_trace_type_name(tr, t->type));
    printf(", \"shape\": [%lld, %lld, %lld, %lld], \"strides\": [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "], \"src\": [",
           (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3], t->nb[0], t->nb[1], t->nb[2], t->nb[3]);
    int k2 = 0;
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++)
        if (t->src[k] >= 0) { if (k2++) fputs(", ", stdout); node_ref_json(tr, gi, t->src[k]); }
    printf("], \"view_of\": ");
    if (t->view_src >= 0) node_ref_json(tr, gi, t->view_src);
    else fputs("null", stdout);
    struct tg_trace_placement p;
    if (tg_trace_get_placement(tr, gi, ti, &p)) {
        printf(", \"placement\": {\"backend\": ");
        jstr(tg_trace_backend_name(tr, g->sched_id, p.backend));
        printf(", \"cause\": ");
        jstr(tg_trace_cause_name(tr, p.cause));
        printf(", \"text\": ");
        jstr(p.text);
        printf("}");
    } else {
        printf(", \"placement\": null");
    }
    struct tg_trace_alloc a;
    struct tg_trace_buffer b;
    if (tg_trace_get_alloc(tr, gi, ti, &a)) {   // the text form's "allocation" line
        const bool hb = a.buffer >= 0 && tg_trace_get_buffer(tr, gi, a.buffer, &b);
        printf(", \"allocation\": {\"buffer\": ");
        if (hb) printf("%" PRIu64, b.uid); else printf("null");
        printf(", \"buffer_type\": ");
        if (hb) jstr(b.buft); else printf("null");
        printf(", \"offset\": %" PRIu64 ", \"size\": %" PRIu64 ", \"first_step\": %d, \"last_step\": %d, "
               "\"view\": %s, \"preallocated\": %s, \"no_memory\": %s, \"packed\": %s}", a.offset, a.size,
               a.first_step, a.last_step, a.flags & TG_TRACE_ALLOC_VIEW ? "true" : "false",
               a.flags & TG_TRACE_ALLOC_EXTERNAL ? "true" : "false", a.flags & TG_TRACE_ALLOC_NONE ? "true" : "false",
               a.flags & TG_TRACE_ALLOC_PACKED ? "true" : "false");
    } else {
        printf(", \"allocation\": null");
    }
    printf(", \"evals\": [");
    int n = tg_trace_n_evals(tr), shown = 0;
    for (int i = 0; i < n; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e) || e.graph_id != g->graph_id || e.node != ti) continue;
        if (shown++) fputs(", ", stdout);
        eval_json(tr, i, &e, gi);
    }
    printf("]}\n");
}

static int trace_node(const struct trace_opts * o, const char ** pos, int np) {
    if (np != 3) return tg_cli_usage("trace"), 2;
    if (o->graph >= 0 || o->filter || o->slice || o->npy)
        return trace_err("trace node: only --compute and --json apply (name the graph with NAME@G; see 'tgdb help trace')");
    long compute = o->compute;
    struct tg_trace * tr = open_trace(pos[1]);
    if (!tr) return TG_CLI_ERROR;
    int gi, ti, ev;
    char why[768];
    if (!resolve_node(tr, pos[2], compute, &gi, &ti, &ev, why, sizeof(why))) {
        tg_trace_close(tr);
        return trace_err("trace node: %s in %s", why, pos[1]);
    }
    struct tg_trace_graph g;
    struct tg_trace_tensor t;
    tg_trace_get_graph(tr, gi, &g);
    tg_trace_get_tensor(tr, gi, ti, &t);
    if (o->json) {
        node_json(tr, gi, ti, &g, &t);
        tg_trace_close(tr);
        return 0;
    }
    printf("'%s': graph %u (sched %d), %s %d, op %s\n", tg_escape_str(t.name), g.graph_id,
           g.sched_id == UINT32_MAX ? -1 : (int) g.sched_id, ti < g.n_nodes ? "node" : "leaf",
           ti < g.n_nodes ? ti : ti - g.n_nodes, tg_escape_str(tg_trace_op_name(tr, t.op)));
    node_structure(tr, gi, ti, &t);
    node_placement(tr, gi, ti, &g);
    node_alloc(tr, gi, ti, &g);
    node_evals(tr, &g, ti);
    tg_trace_close(tr);
    return 0;
}

// ---- dump ---------------------------------------------------------------------------

// Converts n elements of `type` to f32 (false if the type cannot be).
static bool to_f32(int type, const uint8_t * src, float * dst, int64_t n) {
    switch (type) {
    case TG_TYPE_F32: memcpy(dst, src, (size_t) n * 4); return true;
    case TG_TYPE_F64: for (int64_t i = 0; i < n; i++) { double v; memcpy(&v, src + 8 * i, 8); dst[i] = (float) v; } return true;
    case TG_TYPE_I8:  for (int64_t i = 0; i < n; i++) dst[i] = (int8_t) src[i]; return true;
    case TG_TYPE_I16: for (int64_t i = 0; i < n; i++) { int16_t v; memcpy(&v, src + 2 * i, 2); dst[i] = v; } return true;
    case TG_TYPE_I32: for (int64_t i = 0; i < n; i++) { int32_t v; memcpy(&v, src + 4 * i, 4); dst[i] = (float) v; } return true;
    case TG_TYPE_I64: for (int64_t i = 0; i < n; i++) { int64_t v; memcpy(&v, src + 8 * i, 8); dst[i] = (float) v; } return true;
    default: break;
    }
    const struct tg_type_traits * tt = tg_type_traits((enum tg_type) type);
    if (!tt || !tt->to_float || n % tt->blck_size) return false;
    tt->to_float(src, dst, n);
    return true;
}

static int write_npy(const char * path, const float * v, const int64_t ne[4]) {
    int nd = 1;
    for (int d = 0; d < 4; d++) if (ne[d] > 1) nd = d + 1;
    char shape[128] = "", hdr[256];
    for (int d = nd - 1; d >= 0; d--) {
        char one[32];
        snprintf(one, sizeof(one), "%lld,%s", (long long) ne[d], nd == 1 ? "" : " ");
        strcat(shape, one);
    }
    int hl = snprintf(hdr, sizeof(hdr), "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    FILE * f = fopen(path, "wb");
    if (!f) return trace_err("trace dump: cannot create '%s'", path);
    uint16_t hlen = (uint16_t) (hl + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hlen & 0xFF, f); fputc(hlen >> 8, f);
    fwrite(hdr, 1, (size_t) hl, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    size_t n = (size_t) (ne[0] * ne[1] * ne[2] * ne[3]);
    bool ok = fwrite(v, 4, n, f) == n;
    if (fclose(f) != 0 || !ok) return trace_err("trace dump: write to '%s' failed", path);
    return 0;
}

static void print_values(const float * v, const int64_t ne[4]) {
    int64_t rows = ne[1] * ne[2] * ne[3];
    for (int64_t r = 0; r < rows && r < 8; r++) {
        printf("  [%lld,%lld,%lld] ", (long long) (r % ne[1]), (long long) (r / ne[1] % ne[2]),
               (long long) (r / (ne[1] * ne[2])));
        for (int64_t c = 0; c < ne[0] && c < 10; c++) printf(" %10.5g", v[r * ne[0] + c]);
        printf("%s\n", ne[0] > 10 ? " ..." : "");
    }
    if (rows > 8) printf("  ... %lld more rows\n", (long long) (rows - 8));
}

static int trace_dump(const struct trace_opts * o, const char ** pos, int np) {
    if (np != 3) return tg_cli_usage("trace"), 2;
    if (o->graph >= 0 || o->filter || o->json)
        return trace_err("trace dump: only --compute, --slice and --npy apply (see 'tgdb help trace')");
    long compute = o->compute;
    const char * npy = o->npy;
    // NODE[SLICE]: the slice written after the name, as in the shell's print
    char node[512];
    const char * slice = o->slice;
    snprintf(node, sizeof node, "%s", pos[2]);
    char * br = strchr(node, '[');
    if (br && node[strlen(node) - 1] == ']') {
        if (slice) return trace_err("trace dump: a slice both after the name and in --slice");
        slice = pos[2] + (br - node);
        *br = 0;
    }
    if (slice && npy) return trace_err("trace dump: --npy writes the whole tensor; drop the slice");
    struct tg_trace * tr = open_trace(pos[1]);
    if (!tr) return TG_CLI_ERROR;
    int gi, ti, ev, rc = 2;
    struct tg_trace_graph g;
    struct tg_trace_contents c;
    float * v = NULL;
    uint8_t * raw = NULL;
    char why[768];
    if (!resolve_node(tr, node, compute, &gi, &ti, &ev, why, sizeof(why))) {
        rc = trace_err("trace dump: %s in %s", why, pos[1]);
        goto done;
    }
    tg_trace_get_graph(tr, gi, &g);
    int ci = tg_trace_find_contents(tr, g.graph_id, ti, compute >= 0 ? (uint32_t) compute : UINT32_MAX);
    if (ci < 0 || !tg_trace_get_contents(tr, ci, &c)) {
        rc = trace_err("trace dump: no contents recorded for '%s' (record them with TGDB_TRACE_DUMP=PATTERN)", node);
        goto done;
    }
    int64_t n = c.ne[0] * c.ne[1] * c.ne[2] * c.ne[3];
    raw = malloc(c.raw_size ? (size_t) c.raw_size : 1);
    v = malloc((size_t) (n > 0 ? n : 1) * sizeof(float));
    if (!raw || !v) { rc = trace_err("trace dump: out of memory"); goto done; }
    if (tg_trace_read_contents(tr, ci, raw, (size_t) c.raw_size) != TG_OK) {
        rc = trace_err("trace dump: %s", tg_last_error());
        goto done;
    }
    if (!to_f32(c.type, raw, v, n)) {
        rc = trace_err("trace dump: cannot convert type %s", tg_trace_type_name(tr, c.type));
        goto done;
    }
    int64_t lo = 0, hi = 0;
    char err[256];
    if (slice && !tg_cli_parse_slice(slice, c.ne, &lo, &hi, err, sizeof err)) { rc = trace_err("trace dump: %s", err); goto done; }
    char shape[96];
    char tname[TG_TRACE_NAME];
    printf("'%s' graph %u node %d, computation %u: %s %s, hash %016" PRIx64 "\n", tg_escape_str(tg_trace_tensor_name(tr, gi, ti, tname)),
           g.graph_id, ti,
           c.compute_seq, tg_trace_type_name(tr, c.type), tg_trace_shape_str(c.ne, shape, sizeof(shape)), c.hash);
    if (npy) {
        rc = write_npy(npy, v, c.ne);
        if (rc == 0) printf("wrote %s (float32)\n", npy);
    } else if (slice) {
        tg_cli_print_range(v, c.ne, lo, hi);
        rc = 0;
    } else {
        print_values(v, c.ne);
        rc = 0;
    }
done:
    free(raw);
    free(v);
    tg_trace_close(tr);
    return rc;
}

static int cmd_trace(int argc, char ** argv) {
    // export has its own options (--format, -o)
    if (argc >= 2 && !strcmp(argv[1], "export")) return tg_fx_trace_export(argc, argv);
    struct trace_opts o;
    trace_defaults(&o);
    const char * pos[4];
    int np = 0;
    if (tg_cli_parse_opts("trace", trace_table, &o, argc, argv, pos, 4, &np)) return TG_CLI_ERROR;
    if (np < 2) return tg_cli_usage("trace"), 2;
    const char * sub = pos[0];
    if (!strcmp(sub, "info")) return trace_info(&o, pos, np);
    if (!strcmp(sub, "nodes")) return trace_nodes(&o, pos, np);
    if (!strcmp(sub, "node")) return trace_node(&o, pos, np);
    if (!strcmp(sub, "dump")) return trace_dump(&o, pos, np);
    return trace_err("trace: unknown subcommand '%s' (info, nodes, node, dump, export)", sub);
}
