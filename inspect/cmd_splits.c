// cmd_splits.c - `tgdb splits FILE [--graph G]`: every split of a graph with its
// backend and node range, the copies of its inputs (bytes per computation,
// time), the placement that opened it (the first node's backend and the cause
// the scheduler recorded) and the splits ranked by cost (copy bytes, then copy
// time). Times: node times are the recorded ones (summed per split, averaged
// over the graph's computations); the copies' time is the gap between the
// previous split's last node and the split's first node (the trace records no
// separate copy times).
#include "cli.h"
#include "fx.h"
#include "tg/backend.h"
#include "tg/core.h"
#include "tg/sched.h"
#include "tg/status.h"
#include "tg/trace-read.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct splits_opts {
    int          graph;
    bool         json;
    const char * what_if;
};

static const struct tg_cli_opt splits_opts_table[] = {
    { "--graph", "-g", "G", "the graph (an id as `trace info` prints it; default: the graph with the most copy bytes, "
      "then the most splits)", TG_CLI_INT, offsetof(struct splits_opts, graph), 0, 2147483647.0, false, NULL, NULL },
    { "--what-if", NULL, "NODE=BACKEND", "re-run the scheduler's placement passes on the recorded graph with NODE "
      "forced onto BACKEND and print the splits and copy bytes it would save (without it: each split's opening node "
      "moved to the previous split's backend)", TG_CLI_STR, offsetof(struct splits_opts, what_if), 0, 0, false, NULL, NULL },
    { "--json", NULL, NULL, "the same as JSON", TG_CLI_FLAG, offsetof(struct splits_opts, json), 0, 0, false, NULL, NULL },
    { 0 },
};

static void splits_defaults(struct splits_opts * o) { *o = (struct splits_opts) { .graph = -1 }; }

TG_CLI_COMMAND_OPTS(splits, "splits FILE [--graph G] [--what-if NODE=BACKEND] [--json]",
    "a graph's splits: backend, node range, input copies (bytes, time), the placement cause that opened each split, "
    "ranked by cost, and what moving a node to another backend would save (the placement re-run offline)",
    splits_opts_table, struct splits_opts, splits_defaults)

struct split_row {
    int      si;
    struct tg_trace_split sp;
    uint64_t copy_bytes;
    double   node_us, copy_us;   // per computation
    int      n_computes;
};

static int by_cost(const void * a, const void * b) {
    const struct split_row * x = a, * y = b;
    if (x->copy_bytes != y->copy_bytes) return x->copy_bytes < y->copy_bytes ? 1 : -1;
    if (x->copy_us != y->copy_us) return x->copy_us < y->copy_us ? 1 : -1;
    return x->si - y->si;
}

// Times of graph gi's splits over every computation of it.
static void split_times(struct tg_trace * tr, int gi, struct split_row * rows, int ns) {
    struct tg_trace_graph g;
    tg_trace_get_graph(tr, gi, &g);
    int ne = tg_trace_n_evals(tr);
    uint32_t cur = UINT32_MAX;
    int last_split = -1;
    uint64_t prev_end = 0;
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e) || e.graph_id != g.graph_id || e.split < 0 || e.split >= ns) continue;
        if (!(e.flags & TG_TRACE_EVAL_TIME) || e.t_end_ns < e.t_begin_ns) continue;
        if (e.compute_seq != cur) {
            cur = e.compute_seq;
            last_split = -1;
            prev_end = 0;
            for (int c = 0; c < tg_trace_n_computes(tr); c++) {
                struct tg_trace_compute cc;
                if (tg_trace_get_compute(tr, c, &cc) && cc.compute_seq == cur && cc.phase == TG_TRACE_BEGIN) {
                    prev_end = cc.time_ns;
                    break;
                }
            }
        }
        struct split_row * r = &rows[e.split];
        if (e.split != last_split) {
            if (prev_end && e.t_begin_ns > prev_end && r->sp.n_inputs) r->copy_us += (double) (e.t_begin_ns - prev_end) / 1e3;
            r->n_computes++;
            last_split = e.split;
        }
        r->node_us += (double) (e.t_end_ns - e.t_begin_ns) / 1e3;
        if (e.t_end_ns > prev_end) prev_end = e.t_end_ns;
    }
    for (int s = 0; s < ns; s++)
        if (rows[s].n_computes) { rows[s].node_us /= rows[s].n_computes; rows[s].copy_us /= rows[s].n_computes; }
}

// ---- what-if: the scheduler's placement re-run on the rebuilt graph ------------------------

struct replace_result { int n_splits; uint64_t copy_bytes; };

// Re-runs the placement of graph gi on the recorded scheduler's backends (the
// real ones of this build, weights and other pre-allocated tensors in small
// stand-in buffers of the recorded backend and usage), with node `pin` (-1:
// none) forced onto backend `pin_backend`. False with why[] on failure.
static bool replace_graph(struct tg_trace * tr, int gi, int pin, int pin_backend, struct replace_result * out,
                          char * why, size_t cap) {
    struct tg_trace_graph g;
    struct tg_trace_sched sc;
    if (!tg_trace_get_graph(tr, gi, &g)) { snprintf(why, cap, "graph unreadable"); return false; }
    int si = -1;
    for (int i = 0; i < tg_trace_n_scheds(tr); i++)
        if (tg_trace_get_sched(tr, i, &sc) && sc.sched_id == g.sched_id) { si = i; break; }
    if (si < 0) { snprintf(why, cap, "graph %u was computed without a scheduler", g.graph_id); return false; }
    struct tg_fx_graph * fg = tg_fx_rebuild(tr, gi, 0, 0, why, cap);
    if (!fg) return false;
    struct tg_backend * be[TG_TRACE_MAX_BACKENDS] = { NULL };
    enum { MAXB = 64 };
    struct tg_buffer * bufs[MAXB] = { NULL };
    struct tg_sched * sched = NULL;
    bool ok = false;
    for (int b = 0; b < sc.n_backends; b++) {
        be[b] = tg_backend_init_by_name(sc.backend[b], NULL);
        if (!be[b]) { snprintf(why, cap, "backend %s of the trace is not available here: %s", sc.backend[b], tg_last_error()); goto done; }
    }
    // pre-allocated memory: a stand-in buffer per recorded buffer (the placement reads only where it lives)
    const int nb = tg_trace_n_buffers(tr, gi);
    for (int i = 0; i < fg->n; i++) {
        struct tg_tensor * x = fg->ts[i];
        struct tg_trace_alloc a;
        if (x->view_src || !tg_trace_get_alloc(tr, gi, i, &a) || !(a.flags & TG_TRACE_ALLOC_EXTERNAL)) continue;
        x->data = NULL;
        struct tg_trace_buffer tb;
        if (a.buffer < 0 || a.buffer >= nb || a.buffer >= MAXB || !tg_trace_get_buffer(tr, gi, a.buffer, &tb)) continue;
        if (!bufs[a.buffer]) {
            const int owner = tb.backend >= 0 && tb.backend < sc.n_backends ? tb.backend : sc.n_backends - 1;
            bufs[a.buffer] = tg_backend_alloc_buffer(be[owner], 64);
            if (!bufs[a.buffer]) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
            tg_buffer_set_usage(bufs[a.buffer], tb.usage == TG_TRACE_USAGE_WEIGHTS ? TG_BUFFER_USAGE_WEIGHTS
                                                : tb.usage == TG_TRACE_USAGE_COMPUTE ? TG_BUFFER_USAGE_COMPUTE
                                                                                     : TG_BUFFER_USAGE_ANY);
        }
        x->buffer = bufs[a.buffer];
        x->data = tg_buffer_get_base(bufs[a.buffer]);
    }
    for (int i = 0; i < fg->n; i++) {   // views of pre-allocated tensors share their buffer
        struct tg_tensor * x = fg->ts[i];
        if (x->view_src && x->view_src->buffer) { x->buffer = x->view_src->buffer; x->data = x->view_src->data; }
        else if (x->view_src) x->data = NULL;
    }
    sched = tg_sched_new(be, sc.n_backends, fg->graph->n_nodes + 16);
    if (!sched) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    if (pin >= 0 && tg_sched_set_tensor_backend(sched, fg->ts[pin], be[pin_backend]) != TG_OK) {
        snprintf(why, cap, "%s", tg_last_error());
        goto done;
    }
    if (tg_sched_alloc_graph(sched, fg->graph) != TG_OK) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    out->n_splits = tg_sched_get_n_splits(sched);
    out->copy_bytes = 0;
    for (int s = 0; s < out->n_splits; s++) {   // the bytes of each split's inputs, as the trace records them
        const struct tg_sched_split * sp = tg_sched_get_split(sched, s);
        for (int k = 0; k < sp->n_inputs; k++) out->copy_bytes += tg_nbytes(sp->inputs[k]);
    }
    ok = true;
done:
    tg_sched_free(sched);
    for (int i = 0; i < MAXB; i++) tg_buffer_free(bufs[i]);
    for (int b = 0; b < sc.n_backends; b++) tg_backend_free(be[b]);
    tg_fx_graph_free(fg);
    return ok;
}

// One what-if line (or JSON object): node ti of graph gi on backend b.
static void print_what_if(struct tg_trace * tr, int gi, const struct tg_trace_graph * g, int ti, int b,
                          const struct replace_result * base, bool json, bool first) {
    char name[TG_TRACE_NAME], why[512], b1[32], b2[32];
    tg_trace_tensor_name(tr, gi, ti, name);
    const char * be = tg_trace_backend_name(tr, g->sched_id, b);
    struct replace_result r;
    const bool ok = replace_graph(tr, gi, ti, b, &r, why, sizeof(why));
    if (json) {
        printf("%s{\"node\": ", first ? "" : ", ");
        tg_fx_json_str(stdout, name);
        printf(", \"backend\": ");
        tg_fx_json_str(stdout, be);
        if (ok) printf(", \"n_splits\": %d, \"copy_bytes\": %" PRIu64 ", \"splits_saved\": %d, \"copy_bytes_saved\": %" PRId64 "}",
                       r.n_splits, r.copy_bytes, base->n_splits - r.n_splits, (int64_t) base->copy_bytes - (int64_t) r.copy_bytes);
        else {
            printf(", \"error\": ");
            tg_fx_json_str(stdout, why);
            printf("}");
        }
        return;
    }
    if (!ok) { printf("  if '%s' ran on %s: not possible (%s)\n", name, be, why); return; }
    const int64_t saved = (int64_t) base->copy_bytes - (int64_t) r.copy_bytes;
    printf("  if '%s' ran on %s: %d split%s, %s copied (saves %d split%s and %s%s)\n", name, be, r.n_splits,
           r.n_splits == 1 ? "" : "s", tg_fx_bytes(r.copy_bytes, b1, sizeof(b1)), base->n_splits - r.n_splits,
           base->n_splits - r.n_splits == 1 ? "" : "s", saved < 0 ? "-" : "", tg_fx_bytes((uint64_t) (saved < 0 ? -saved : saved), b2, sizeof(b2)));
}

static int pick_graph(struct tg_trace * tr) {
    int best = -1, best_splits = 0;
    uint64_t best_bytes = 0;
    for (int gi = 0; gi < tg_trace_n_graphs(tr); gi++) {
        int ns = tg_trace_n_splits(tr, gi);
        if (ns <= 0) continue;
        uint64_t bytes = 0;
        for (int ii = 0; ii < tg_trace_n_split_inputs(tr, gi); ii++) {
            struct tg_trace_split_input in;
            if (tg_trace_get_split_input(tr, gi, ii, &in)) bytes += in.bytes;
        }
        if (best < 0 || bytes > best_bytes || (bytes == best_bytes && ns > best_splits)) {
            best = gi;
            best_bytes = bytes;
            best_splits = ns;
        }
    }
    return best;
}

static int cmd_splits(int argc, char ** argv) {
    struct splits_opts o;
    splits_defaults(&o);
    const char * pos[2];
    int n_pos = 0;
    if (tg_cli_parse_opts("splits", splits_opts_table, &o, argc, argv, pos, 2, &n_pos) != TG_CLI_OK) return TG_CLI_ERROR;
    if (n_pos != 1) return tg_cli_usage("splits");
    struct tg_trace * tr = tg_fx_open(pos[0]);
    if (!tr) return TG_CLI_ERROR;
    int rc = TG_CLI_OK, gi;
    struct split_row * rows = NULL;
    if (o.graph >= 0) {
        gi = tg_trace_find_graph(tr, (uint32_t) o.graph);
        if (gi < 0) { rc = tg_cli_err("splits: no graph %d in %s (see `tgdb trace info`)", o.graph, pos[0]); goto done; }
    } else gi = pick_graph(tr);
    int ns = gi >= 0 ? tg_trace_n_splits(tr, gi) : 0;
    if (ns <= 0) {
        rc = tg_cli_err("splits: %s has no split record%s (trace a run that computes through a scheduler: generate, "
                        "perplexity, samples/sched-splits)", pos[0], o.graph >= 0 ? " for that graph" : "");
        goto done;
    }
    struct tg_trace_graph g;
    tg_trace_get_graph(tr, gi, &g);
    rows = calloc((size_t) ns, sizeof(*rows));
    if (!rows) { rc = tg_cli_err("splits: out of memory"); goto done; }
    for (int s = 0; s < ns; s++) {
        rows[s].si = s;
        tg_trace_get_split(tr, gi, s, &rows[s].sp);
        for (uint32_t k = 0; k < rows[s].sp.n_inputs; k++) {
            struct tg_trace_split_input in;
            if (tg_trace_get_split_input(tr, gi, (int) (rows[s].sp.first_input + k), &in)) rows[s].copy_bytes += in.bytes;
        }
    }
    split_times(tr, gi, rows, ns);
    uint64_t total = 0;
    for (int s = 0; s < ns; s++) total += rows[s].copy_bytes;
    char b1[32], name[TG_TRACE_NAME];
    if (o.json) {
        printf("{\"file\": ");
        tg_fx_json_str(stdout, pos[0]);
        printf(", \"graph\": %u, \"n_splits\": %d, \"copy_bytes\": %" PRIu64 ", \"splits\": [", g.graph_id, ns, total);
    } else {
        printf("graph %u: %d split%s, %s copied per computation\n", g.graph_id, ns, ns == 1 ? "" : "s",
               tg_fx_bytes(total, b1, sizeof(b1)));
    }
    for (int s = 0; s < ns; s++) {
        const struct split_row * r = &rows[s];
        struct tg_trace_placement pl = { .backend = -1, .text = "" };
        int first = r->sp.node_begin;
        bool have_pl = tg_trace_get_placement(tr, gi, first, &pl);
        const char * be = tg_trace_backend_name(tr, g.sched_id, r->sp.backend);
        tg_trace_tensor_name(tr, gi, first, name);
        const char * cause = have_pl ? tg_trace_cause_name(tr, pl.cause) : "?";
        char cause_buf[64];
        snprintf(cause_buf, sizeof(cause_buf), "%s", cause);
        if (o.json) {
            printf("%s{\"split\": %d, \"backend\": ", s ? ", " : "", s);
            tg_fx_json_str(stdout, be);
            printf(", \"node_begin\": %d, \"node_end\": %d, \"first_node\": ", r->sp.node_begin, r->sp.node_end);
            tg_fx_json_str(stdout, name);
            printf(", \"cause\": ");
            tg_fx_json_str(stdout, cause_buf);
            printf(", \"cause_text\": ");
            tg_fx_json_str(stdout, have_pl && pl.text ? pl.text : "");
            printf(", \"node_us\": %.3f, \"copy_us\": %.3f, \"copy_bytes\": %" PRIu64 ", \"inputs\": [", r->node_us,
                   r->copy_us, r->copy_bytes);
        } else {
            printf("split %d: %s, nodes %d..%d (%d), %.1f us of nodes", s, be, r->sp.node_begin, r->sp.node_end - 1,
                   r->sp.node_end - r->sp.node_begin, r->node_us);
            if (r->sp.n_inputs) printf(", %u input%s (%s, ~%.1f us before it)", r->sp.n_inputs, r->sp.n_inputs == 1 ? "" : "s",
                                       tg_fx_bytes(r->copy_bytes, b1, sizeof(b1)), r->copy_us);
            printf("\n  opened by '%s' on %s: %s%s%s\n", name, be, cause_buf, have_pl && pl.text && pl.text[0] ? ": " : "",
                   have_pl && pl.text ? pl.text : "");
        }
        for (uint32_t k = 0; k < r->sp.n_inputs; k++) {
            struct tg_trace_split_input in;
            if (!tg_trace_get_split_input(tr, gi, (int) (r->sp.first_input + k), &in)) continue;
            char src[TG_TRACE_NAME];
            tg_trace_tensor_name(tr, gi, in.tensor, src);
            const char * from = tg_trace_backend_name(tr, g.sched_id, in.from_backend);
            if (o.json) {
                printf("%s{\"tensor\": ", k ? ", " : "");
                tg_fx_json_str(stdout, src);
                printf(", \"from\": ");
                tg_fx_json_str(stdout, from);
                printf(", \"bytes\": %" PRIu64 "}", in.bytes);
            } else {
                printf("  input '%s' from %s: %s\n", src, from, tg_fx_bytes(in.bytes, b1, sizeof(b1)));
            }
        }
        if (o.json) printf("]}");
    }
    qsort(rows, (size_t) ns, sizeof(*rows), by_cost);
    // what-if: the asked node, else each split's opening node on the previous split's backend
    int wi_node = -1, wi_backend = -1;
    if (o.what_if) {
        const char * eq = strrchr(o.what_if, '=');
        char node[TG_TRACE_NAME];
        snprintf(node, sizeof(node), "%.*s", eq ? (int) (eq - o.what_if) : 0, o.what_if);
        wi_node = eq && node[0] ? tg_trace_find_tensor(tr, gi, node) : -1;
        if (!eq || !node[0] || !eq[1]) { rc = tg_cli_err("splits: --what-if '%s': expected NODE=BACKEND", o.what_if); goto done; }
        if (wi_node < 0 || wi_node >= g.n_nodes) {
            rc = tg_cli_err("splits: --what-if: graph %u has no node '%s' (see `tgdb trace nodes %s --graph %u`)", g.graph_id,
                            node, pos[0], g.graph_id);
            goto done;
        }
        struct tg_trace_sched sc = { 0 };
        for (int i = 0; i < tg_trace_n_scheds(tr); i++)
            if (tg_trace_get_sched(tr, i, &sc) && sc.sched_id == g.sched_id) break;
        for (int b = 0; b < sc.n_backends; b++)
            if (!strcasecmp(sc.backend[b], eq + 1)) wi_backend = b;
        if (wi_backend < 0) {
            char list[256] = "";
            for (int b = 0; b < sc.n_backends; b++) snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", b ? ", " : "", sc.backend[b]);
            rc = tg_cli_err("splits: --what-if: '%s' is not a backend of graph %u's scheduler (%s)", eq + 1, g.graph_id, list);
            goto done;
        }
    }
    struct replace_result base = { ns, total };
    char why[512];
    struct replace_result rerun;
    const bool rerun_ok = replace_graph(tr, gi, -1, -1, &rerun, why, sizeof(why));
    if (o.json) {
        printf("], \"ranked\": [");
        for (int s = 0; s < ns; s++) printf("%s%d", s ? ", " : "", rows[s].si);
        printf("], \"replanned\": ");
        if (rerun_ok) printf("{\"n_splits\": %d, \"copy_bytes\": %" PRIu64 "}", rerun.n_splits, rerun.copy_bytes);
        else tg_fx_json_str(stdout, why);
        printf(", \"what_if\": [");
        if (o.what_if) print_what_if(tr, gi, &g, wi_node, wi_backend, &base, true, true);
        else for (int k = 0, n = 0; k < ns && n < 8; k++) {
            if (rows[k].si == 0) continue;
            struct tg_trace_split prev;
            tg_trace_get_split(tr, gi, rows[k].si - 1, &prev);
            print_what_if(tr, gi, &g, rows[k].sp.node_begin, prev.backend, &base, true, n++ == 0);
        }
        printf("]}\n");
    } else {
        printf("ranked by cost (copy bytes, then copy time):\n");
        for (int s = 0; s < ns && rows[s].copy_bytes; s++)
            printf("  %d. split %d (%s): %s copied, ~%.1f us\n", s + 1, rows[s].si,
                   tg_trace_backend_name(tr, g.sched_id, rows[s].sp.backend), tg_fx_bytes(rows[s].copy_bytes, b1, sizeof(b1)),
                   rows[s].copy_us);
        if (!rows[0].copy_bytes) printf("  no copies between splits\n");
        if (!rerun_ok) printf("what if: the placement cannot be re-run offline: %s\n", why);
        else {
            printf("what if (the placement passes re-run on the recorded graph: %d split%s, %s copied%s):\n", rerun.n_splits,
                   rerun.n_splits == 1 ? "" : "s", tg_fx_bytes(rerun.copy_bytes, b1, sizeof(b1)),
                   rerun.n_splits == ns && rerun.copy_bytes == total ? ", as recorded" : "; differs from the recording");
            if (o.what_if) print_what_if(tr, gi, &g, wi_node, wi_backend, &base, false, true);
            else {
                int n = 0;
                for (int k = 0; k < ns && n < 8; k++) {
                    if (rows[k].si == 0) continue;
                    struct tg_trace_split prev;
                    tg_trace_get_split(tr, gi, rows[k].si - 1, &prev);
                    print_what_if(tr, gi, &g, rows[k].sp.node_begin, prev.backend, &base, false, n++ == 0);
                }
                if (!n) printf("  one split: nothing to move\n");
            }
        }
    }
done:
    free(rows);
    tg_trace_close(tr);
    return rc;
}
