// cmd_mem.c - `tgdb mem FILE [--graph G] [--what-if ubatch=N|ctx=N]`: what sets
// the peak of each compute buffer, what is live there, how well memory is
// reused, the bytes live over the graph's node steps; and what the peak would
// be for another batch or context size (the recorded graph replanned offline
// by the engine's graph allocator).
//
// Terms: a buffer's "peak" is the high-water mark of the allocator's plan for
// a graph (the end of the highest range it handed out): the bytes the buffer
// must hold, which is what the allocator reserves. "Live bytes" at a node
// step are the bytes of the tensors whose ranges are in use at that step; the
// difference between the peak and the most bytes ever live is fragmentation
// (free holes inside the buffer when it is fullest).
#include "cli.h"
#include "fx.h"
#include "tg/alloc.h"
#include "tg/backend.h"
#include "tg/core.h"
#include "tg/trace-read.h"
#include "tg/types.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct mem_opts {
    int          graph;
    const char * what_if;
    int          top;
    int          rows;
    bool         json;
};

static const struct tg_cli_opt mem_opts_table[] = {
    { "--graph", "-g", "G", "the graph to explain (a graph id as `trace info` prints it; default: for each compute "
      "buffer, the graph whose plan needs the most)", TG_CLI_INT, offsetof(struct mem_opts, graph), 0, 2147483647.0, false, NULL, NULL },
    { "--what-if", NULL, "KEY=N", "replan the graph offline for another size: ubatch=N (tokens per micro-batch) or "
      "ctx=N (KV cells); prints the new peak per buffer", TG_CLI_STR, offsetof(struct mem_opts, what_if), 0, 0, false, NULL, NULL },
    { "--top", NULL, "N", "tensors live at the peak to list (largest first, default 10)", TG_CLI_INT,
      offsetof(struct mem_opts, top), 0, 100000, false, NULL, NULL },
    { "--rows", NULL, "N", "rows of the memory timeline table (default 16; 0: none)", TG_CLI_INT,
      offsetof(struct mem_opts, rows), 0, 100000, false, NULL, NULL },
    { "--json", NULL, NULL, "the same as JSON", TG_CLI_FLAG, offsetof(struct mem_opts, json), 0, 0, false, NULL, NULL },
    { 0 },
};

static void mem_defaults(struct mem_opts * o) { *o = (struct mem_opts) { .graph = -1, .top = 10, .rows = 16 }; }

TG_CLI_COMMAND_OPTS(mem, "mem FILE [--graph G] [--what-if ubatch=N|ctx=N] [--top N] [--rows N] [--json]",
    "compute buffers: the peak and what sets it, tensors live at the peak, fragmentation, reuse, memory timeline; "
    "--what-if replans the recorded graph for another batch or context size", mem_opts_table, struct mem_opts, mem_defaults)

// One compute buffer of one graph, analysed.
struct buf_report {
    int      bi;
    struct tg_trace_buffer b;
    uint64_t high_water;      // end of the highest planned range
    int      high_tensor;     // tensor whose range ends there
    uint64_t peak_live;       // most bytes live at one step
    int      peak_step;
    uint64_t no_reuse;        // bytes if every planned tensor had its own range
    int      n_planned, n_inplace, n_reused;
    uint64_t * live;          // per step
};

struct graph_report {
    int gi;
    struct tg_trace_graph g;
    int n_bufs;
    struct buf_report * bufs;
    int32_t * last;            // per tensor: last step its bytes are live (in-place children included)
};

static void graph_report_free(struct graph_report * r) {
    for (int i = 0; i < r->n_bufs; i++) free(r->bufs[i].live);
    free(r->bufs);
    free(r->last);
    memset(r, 0, sizeof(*r));
}

static bool is_owner(const struct tg_trace_alloc * a) {
    return (a->flags & TG_TRACE_ALLOC_ALLOCATED) && !(a->flags & (TG_TRACE_ALLOC_INPLACE | TG_TRACE_ALLOC_VIEW));
}

static bool analyse_graph(struct tg_trace * tr, int gi, struct graph_report * r) {
    memset(r, 0, sizeof(*r));
    r->gi = gi;
    if (!tg_trace_get_graph(tr, gi, &r->g) || !tg_trace_has_alloc(tr, gi)) return false;
    int ns = r->g.n_nodes > 0 ? r->g.n_nodes : 1, nt = r->g.n_nodes + r->g.n_leafs, nb = tg_trace_n_buffers(tr, gi);
    r->bufs = calloc((size_t) (nb > 0 ? nb : 1), sizeof(*r->bufs));
    r->last = malloc((size_t) (nt > 0 ? nt : 1) * sizeof(int32_t));
    if (!r->bufs || !r->last) return false;
    for (int ti = 0; ti < nt; ti++) {
        struct tg_trace_alloc a;
        r->last[ti] = tg_trace_get_alloc(tr, gi, ti, &a) ? (a.last_step < 0 ? ns - 1 : a.last_step) : -1;
    }
    for (int ti = 0; ti < nt; ti++) {   // an in-place child keeps its owner's bytes live
        struct tg_trace_alloc a;
        if (!tg_trace_get_alloc(tr, gi, ti, &a) || !(a.flags & TG_TRACE_ALLOC_INPLACE)) continue;
        int o = tg_fx_alloc_owner(tr, gi, ti);
        if (o >= 0 && r->last[o] < r->last[ti]) r->last[o] = r->last[ti];
    }
    for (int bi = 0; bi < nb; bi++) {
        struct tg_trace_buffer b;
        if (!tg_trace_get_buffer(tr, gi, bi, &b) || b.usage == TG_TRACE_USAGE_WEIGHTS) continue;
        struct buf_report * br = &r->bufs[r->n_bufs];
        memset(br, 0, sizeof(*br));
        br->bi = bi;
        br->b = b;
        br->high_tensor = -1;
        br->live = calloc((size_t) ns + 1, sizeof(uint64_t));
        if (!br->live) return false;
        int64_t * delta = calloc((size_t) ns + 1, sizeof(int64_t));
        if (!delta) return false;
        for (int ti = 0; ti < nt; ti++) {
            struct tg_trace_alloc a;
            if (!tg_trace_get_alloc(tr, gi, ti, &a) || a.buffer != bi) continue;
            if (a.flags & TG_TRACE_ALLOC_INPLACE) br->n_inplace++;
            if (!is_owner(&a)) continue;
            br->n_planned++;
            // reused: its range overlaps a range handed out before and released before this tensor's first step
            for (int tj = 0; tj < nt; tj++) {
                struct tg_trace_alloc p;
                if (tj == ti || !tg_trace_get_alloc(tr, gi, tj, &p) || p.buffer != bi || !is_owner(&p)) continue;
                if (r->last[tj] < (a.first_step < 0 ? 0 : a.first_step) && p.offset < a.offset + a.size &&
                    a.offset < p.offset + p.size) { br->n_reused++; break; }
            }
            br->no_reuse += a.size;
            if (a.offset + a.size > br->high_water) { br->high_water = a.offset + a.size; br->high_tensor = ti; }
            int s0 = a.first_step < 0 ? 0 : a.first_step, s1 = r->last[ti];
            if (s0 >= ns || s1 < s0) continue;
            if (s1 >= ns) s1 = ns - 1;
            delta[s0] += (int64_t) a.size;
            delta[s1 + 1] -= (int64_t) a.size;
        }
        int64_t acc = 0;
        br->peak_step = 0;
        for (int s = 0; s < ns; s++) {
            acc += delta[s];
            br->live[s] = acc > 0 ? (uint64_t) acc : 0;
            if (br->live[s] > br->peak_live) { br->peak_live = br->live[s]; br->peak_step = s; }
        }
        free(delta);
        if (br->n_planned > 0) r->n_bufs++;
        else free(br->live);
    }
    return true;
}

// ---- what-if: the recorded graph rebuilt with other sizes, planned by gallocr

struct resize { int64_t from, to; };

// Peak (high-water mark) per recorded compute buffer of graph gi when every
// dimension equal to rs->from is rs->to (rs NULL: as recorded). Buffers are
// identified by the recorded buffer index of the tensors placed in them.
// Returns false with why[] on failure.
static bool replan(struct tg_trace * tr, int gi, const struct resize * rs, uint64_t * peak, int n_peak,
                   char * why, size_t cap) {
    struct tg_fx_graph * fg = tg_fx_rebuild(tr, gi, rs ? rs->from : 0, rs ? rs->to : 0, why, cap);
    if (!fg) return false;
    const int n_nodes = fg->graph->n_nodes, n_leafs = fg->graph->n_leafs;
    bool ok = false;
    // one buffer type per recorded buffer index: copies of the CPU buffer type (the same sizes and
    // alignment; distinct, so the allocator keeps one buffer per recorded buffer)
    int nb = tg_trace_n_buffers(tr, gi);
    if (nb <= 0) nb = 1;
    struct tg_buffer_type * bt = malloc((size_t) nb * sizeof(*bt));
    struct tg_buffer_type ** bufts = malloc((size_t) nb * sizeof(*bufts));
    int * node_ids = malloc((size_t) (n_nodes ? n_nodes : 1) * sizeof(int));
    int * leaf_ids = malloc((size_t) (n_leafs ? n_leafs : 1) * sizeof(int));
    if (bt && bufts && node_ids && leaf_ids) {
        for (int b = 0; b < nb; b++) { bt[b] = *tg_cpu_buffer_type(); bufts[b] = &bt[b]; }
        for (int k = 0; k < n_nodes; k++) node_ids[k] = fg->bufid[k] >= 0 && fg->bufid[k] < nb ? fg->bufid[k] : 0;
        for (int k = 0; k < n_leafs; k++) {
            const int id = fg->bufid[n_nodes + k];
            leaf_ids[k] = id >= 0 && id < nb ? id : 0;
        }
        struct tg_gallocr * ga = tg_gallocr_new_n(bufts, nb);
        if (!ga) snprintf(why, cap, "%s", tg_last_error());
        else if (tg_gallocr_reserve_n(ga, fg->graph, node_ids, leaf_ids) != TG_OK)
            snprintf(why, cap, "the allocator failed: %s", tg_last_error());
        else {
            for (int b = 0; b < n_peak; b++) {
                int d = b < nb ? tg_gallocr_buffer_of_buft(ga, b) : -1;
                const struct tg_alloc_buffer_info * bi = d >= 0 ? tg_gallocr_buffer_info(ga, d) : NULL;
                peak[b] = bi ? bi->high_water : 0;
            }
            ok = true;
        }
        tg_gallocr_free(ga);
    } else snprintf(why, cap, "out of memory");
    free(bt);
    free(bufts);
    free(node_ids);
    free(leaf_ids);
    tg_fx_graph_free(fg);
    return ok;
}

// ---- printing -----------------------------------------------------------------

struct live_entry { int ti; uint64_t size; };

static int by_size_desc(const void * a, const void * b) {
    const struct live_entry * x = a, * y = b;
    return x->size < y->size ? 1 : x->size > y->size ? -1 : x->ti - y->ti;
}

// Tensors whose bytes are live in buffer br at step s (owners), largest first.
static int live_at(struct tg_trace * tr, const struct graph_report * r, const struct buf_report * br, int s,
                   struct live_entry ** out) {
    int nt = r->g.n_nodes + r->g.n_leafs, n = 0;
    struct live_entry * v = malloc((size_t) (nt ? nt : 1) * sizeof(*v));
    if (!v) { *out = NULL; return 0; }
    for (int ti = 0; ti < nt; ti++) {
        struct tg_trace_alloc a;
        if (!tg_trace_get_alloc(tr, r->gi, ti, &a) || a.buffer != br->bi || !is_owner(&a)) continue;
        int s0 = a.first_step < 0 ? 0 : a.first_step;
        if (s0 <= s && s <= r->last[ti]) v[n++] = (struct live_entry) { ti, a.size };
    }
    qsort(v, (size_t) n, sizeof(*v), by_size_desc);
    *out = v;
    return n;
}

static void print_buffer(struct tg_trace * tr, const struct graph_report * r, const struct buf_report * br,
                         const struct mem_opts * o, bool first) {
    char b1[32], b2[32], b3[32], name[TG_TRACE_NAME];
    if (o->json) {
        printf("%s{\"graph\": %u, \"buffer\": %" PRIu64 ", \"buft\": ", first ? "" : ", ", r->g.graph_id, br->b.uid);
        tg_fx_json_str(stdout, br->b.buft);
        printf(", \"backend\": ");
        tg_fx_json_str(stdout, tg_trace_backend_name(tr, r->g.sched_id, br->b.backend));
        printf(", \"size\": %" PRIu64 ", \"peak\": %" PRIu64 ", \"peak_is_size\": %s, \"peak_tensor\": ", br->b.size,
               br->high_water, br->high_water == br->b.size ? "true" : "false");
        tg_fx_json_str(stdout, br->high_tensor >= 0 ? tg_trace_tensor_name(tr, r->gi, br->high_tensor, name) : "");
        printf(", \"max_live\": %" PRIu64 ", \"max_live_step\": %d, \"max_live_node\": ", br->peak_live, br->peak_step);
        tg_fx_json_str(stdout, tg_trace_tensor_name(tr, r->gi, br->peak_step, name));
        printf(", \"free_inside_at_max_live\": %" PRIu64 ", \"planned\": %d, \"inplace\": %d, \"reused\": %d, "
               "\"bytes_without_reuse\": %" PRIu64 ", \"live_at_peak\": [",
               br->high_water - br->peak_live, br->n_planned, br->n_inplace, br->n_reused, br->no_reuse);
    } else {
        printf("graph %u, buffer #%" PRIu64 " %s (%s, backend %s): size %s (%" PRIu64 " B)\n", r->g.graph_id, br->b.uid,
               br->b.buft, br->b.usage == TG_TRACE_USAGE_COMPUTE ? "compute" : "any",
               tg_trace_backend_name(tr, r->g.sched_id, br->b.backend), tg_fx_bytes(br->b.size, b1, sizeof(b1)), br->b.size);
        printf("  peak: %s (%" PRIu64 " B), the end of '%s' (the highest range the plan hands out)%s\n",
               tg_fx_bytes(br->high_water, b1, sizeof(b1)), br->high_water,
               br->high_tensor >= 0 ? tg_trace_tensor_name(tr, r->gi, br->high_tensor, name) : "?",
               br->high_water == br->b.size ? " = the buffer size the allocator reserved"
               : br->high_water < br->b.size ? "; the buffer is larger: reserved for a bigger graph" : "");
        printf("  most bytes live: %s at node %d '%s'; free inside the peak then: %s (fragmentation %.1f%%)\n",
               tg_fx_bytes(br->peak_live, b1, sizeof(b1)), br->peak_step, tg_trace_tensor_name(tr, r->gi, br->peak_step, name),
               tg_fx_bytes(br->high_water - br->peak_live, b2, sizeof(b2)),
               br->high_water ? 100.0 * (double) (br->high_water - br->peak_live) / (double) br->high_water : 0.0);
        printf("  reuse: %d tensors planned (%d reuse memory of earlier ones), %d in place of a parent; %s without reuse "
               "-> %s (%.2fx)\n", br->n_planned, br->n_reused, br->n_inplace, tg_fx_bytes(br->no_reuse, b1, sizeof(b1)),
               tg_fx_bytes(br->high_water, b3, sizeof(b3)), br->high_water ? (double) br->no_reuse / (double) br->high_water : 0.0);
    }
    struct live_entry * v = NULL;
    int n = live_at(tr, r, br, br->peak_step, &v);
    if (!o->json && n) printf("  live at node %d (%d tensors, largest first):\n  %12s %12s  %-11s %s\n", br->peak_step, n,
                             "bytes", "offset", "live steps", "name");
    for (int k = 0; k < n && k < o->top; k++) {
        struct tg_trace_alloc a;
        tg_trace_get_alloc(tr, r->gi, v[k].ti, &a);
        tg_trace_tensor_name(tr, r->gi, v[k].ti, name);
        int s0 = a.first_step < 0 ? 0 : a.first_step;
        if (o->json) {
            printf("%s{\"name\": ", k ? ", " : "");
            tg_fx_json_str(stdout, name);
            printf(", \"tensor\": %d, \"size\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"first_step\": %d, \"last_step\": %d}",
                   v[k].ti, a.size, a.offset, s0, r->last[v[k].ti]);
        } else {
            char range[32];
            snprintf(range, sizeof(range), "%d..%d", s0, r->last[v[k].ti]);
            printf("  %12" PRIu64 " %12" PRIu64 "  %-11s ", a.size, a.offset, range);
            tg_cli_fputs_escaped(stdout, name);
            printf("\n");
        }
    }
    if (!o->json && n > o->top) printf("  ... %d more\n", n - o->top);
    free(v);
    int ns = r->g.n_nodes;
    if (o->json) {
        printf("], \"timeline\": [");
        for (int s = 0; s < ns; s++) printf("%s%" PRIu64, s ? ", " : "", br->live[s]);
        printf("]}");
        return;
    }
    if (o->rows <= 0 || ns <= 0) return;
    int rows = o->rows < ns ? o->rows : ns;
    printf("  timeline (bytes live at each node step; each row the most over its steps):\n  %-11s %12s  %s\n", "steps",
           "live bytes", "");
    for (int k = 0; k < rows; k++) {
        int s0 = (int) ((int64_t) ns * k / rows), s1 = (int) ((int64_t) ns * (k + 1) / rows) - 1;
        uint64_t m = 0;
        for (int s = s0; s <= s1; s++) if (br->live[s] > m) m = br->live[s];
        int bar = br->high_water ? (int) (40.0 * (double) m / (double) br->high_water + 0.5) : 0;
        char range[32];
        snprintf(range, sizeof(range), "%d..%d", s0, s1);
        printf("  %-11s %12" PRIu64 "  %.*s\n", range, m, bar, "########################################");
    }
}

static bool parse_what_if(const char * s, bool * ubatch, int * n) {
    const char * eq = strchr(s, '=');
    if (!eq) return false;
    size_t k = (size_t) (eq - s);
    if (k == 6 && !strncmp(s, "ubatch", 6)) *ubatch = true;
    else if (k == 3 && !strncmp(s, "ctx", 3)) *ubatch = false;
    else return false;
    return tg_cli_int("--what-if", eq + 1, 1, 1 << 24, n);
}

// Recorded size the what-if substitutes: the tokens of the micro-batch (the
// first dimension of the token-ids input) or the KV cells (the first dimension of
// the attention mask).
static int64_t recorded_dim(struct tg_trace * tr, int gi, bool ubatch, char * why, size_t cap) {
    struct tg_trace_graph g;
    tg_trace_get_graph(tr, gi, &g);
    const char * names[] = { ubatch ? "inp_tokens" : "KQ_mask", ubatch ? "inp_pos" : "kq_mask" };
    for (int k = 0; k < 2; k++) {
        int ti = tg_trace_find_tensor(tr, gi, names[k]);
        struct tg_trace_tensor t;
        if (ti >= 0 && tg_trace_get_tensor(tr, gi, ti, &t)) return t.ne[0];
    }
    snprintf(why, cap, "graph %u has no '%s' tensor: --what-if %s needs a llama graph", g.graph_id, names[0],
             ubatch ? "ubatch" : "ctx");
    return -1;
}

static int cmd_mem(int argc, char ** argv) {
    struct mem_opts o;
    mem_defaults(&o);
    const char * pos[2];
    int n_pos = 0;
    if (tg_cli_parse_opts("mem", mem_opts_table, &o, argc, argv, pos, 2, &n_pos) != TG_CLI_OK) return TG_CLI_ERROR;
    if (n_pos != 1) return tg_cli_usage("mem");
    bool ubatch = true;
    int wi_n = 0;
    if (o.what_if && !strchr(o.what_if, '='))
        return tg_cli_err("mem: --what-if '%s': expected ubatch=N or ctx=N", o.what_if);
    if (o.what_if && !parse_what_if(o.what_if, &ubatch, &wi_n)) {
        if (strncmp(o.what_if, "ubatch=", 7) && strncmp(o.what_if, "ctx=", 4))
            return tg_cli_err("mem: --what-if '%s': expected ubatch=N or ctx=N", o.what_if);
        return TG_CLI_ERROR;   // tg_cli_int said what is wrong with N
    }
    struct tg_trace * tr = tg_fx_open(pos[0]);
    if (!tr) return TG_CLI_ERROR;
    int rc = TG_CLI_OK, ng = tg_trace_n_graphs(tr);
    int * chosen = calloc((size_t) (ng ? ng : 1), sizeof(int));
    if (!chosen) { tg_trace_close(tr); return tg_cli_err("mem: out of memory"); }
    if (o.graph >= 0) {
        int gi = tg_trace_find_graph(tr, (uint32_t) o.graph);
        if (gi < 0) { rc = tg_cli_err("mem: no graph %d in %s (see `tgdb trace info`)", o.graph, pos[0]); goto done; }
        if (!tg_trace_has_alloc(tr, gi)) {
            rc = tg_cli_err("mem: graph %d of %s has no allocation record (it was not planned by a scheduler's graph "
                            "allocator while tracing)", o.graph, pos[0]);
            goto done;
        }
        chosen[gi] = 1;
    } else {
        // per compute buffer (uid): the graph whose plan needs the most (the first such graph)
        enum { MAXB = 64 };
        uint64_t uids[MAXB], hws[MAXB];
        int best_gi[MAXB], n_uid = 0, n_any = 0;
        for (int gi = 0; gi < ng; gi++) {
            struct graph_report r;
            if (analyse_graph(tr, gi, &r)) {
                for (int k = 0; k < r.n_bufs; k++) {
                    int u = 0;
                    while (u < n_uid && uids[u] != r.bufs[k].b.uid) u++;
                    if (u == n_uid) {
                        if (n_uid == MAXB) continue;
                        uids[n_uid] = r.bufs[k].b.uid; hws[n_uid] = 0; best_gi[n_uid] = -1; n_uid++;
                    }
                    if (best_gi[u] < 0 || r.bufs[k].high_water > hws[u]) { hws[u] = r.bufs[k].high_water; best_gi[u] = gi; }
                }
                n_any += r.n_bufs > 0;
            }
            graph_report_free(&r);
        }
        for (int u = 0; u < n_uid; u++) if (best_gi[u] >= 0) chosen[best_gi[u]] = 1;
        if (!n_any) {
            rc = tg_cli_err("mem: %s has no compute buffers planned by a graph allocator (trace a run that computes "
                            "graphs through a scheduler: generate, perplexity, or a program using tg_sched)", pos[0]);
            goto done;
        }
    }
    if (o.json) printf("{\"file\": "), tg_fx_json_str(stdout, pos[0]), printf(", \"buffers\": [");
    bool first = true;
    for (int gi = 0; gi < ng; gi++) {
        if (!chosen[gi]) continue;
        struct graph_report r;
        if (!analyse_graph(tr, gi, &r)) { graph_report_free(&r); continue; }
        for (int k = 0; k < r.n_bufs; k++) {
            print_buffer(tr, &r, &r.bufs[k], &o, first);
            first = false;
        }
        graph_report_free(&r);
    }
    if (o.json) printf("]");
    if (o.what_if) {
        int gi = -1;
        for (int k = 0; k < ng; k++) if (chosen[k]) { gi = k; break; }
        char why[256] = "";
        struct graph_report r;
        if (!analyse_graph(tr, gi, &r)) { graph_report_free(&r); rc = tg_cli_err("mem: graph unreadable"); goto done; }
        int64_t from = recorded_dim(tr, gi, ubatch, why, sizeof(why));
        uint64_t as_rec[TG_TRACE_MAX_BACKENDS * 4], now[TG_TRACE_MAX_BACKENDS * 4];
        int nb = tg_trace_n_buffers(tr, gi);
        if (nb > TG_TRACE_MAX_BACKENDS * 4) nb = TG_TRACE_MAX_BACKENDS * 4;
        struct resize rs = { from, wi_n };
        if (from < 0 || !replan(tr, gi, NULL, as_rec, nb, why, sizeof(why)) || !replan(tr, gi, &rs, now, nb, why, sizeof(why))) {
            graph_report_free(&r);
            if (o.json) printf("}\n");
            rc = tg_cli_err("mem: --what-if: %s", why);
            goto done;
        }
        if (o.json) printf(", \"what_if\": {\"key\": \"%s\", \"recorded\": %" PRId64 ", \"value\": %d, \"graph\": %u, \"buffers\": [",
                           ubatch ? "ubatch" : "ctx", from, wi_n, r.g.graph_id);
        else printf("what if %s = %d (recorded: %" PRId64 "), graph %u replanned offline by the graph allocator:\n",
                    ubatch ? "ubatch" : "ctx", wi_n, from, r.g.graph_id);
        for (int k = 0; k < r.n_bufs; k++) {
            const struct buf_report * br = &r.bufs[k];
            char b1[32], b2[32];
            if (o.json)
                printf("%s{\"buffer\": %" PRIu64 ", \"recorded_peak\": %" PRIu64 ", \"replanned_as_recorded\": %" PRIu64
                       ", \"peak\": %" PRIu64 "}", k ? ", " : "", br->b.uid, br->high_water, as_rec[br->bi], now[br->bi]);
            else
                printf("  buffer #%" PRIu64 " %s: peak %s (%" PRIu64 " B), was %s (%" PRIu64 " B)%s\n", br->b.uid, br->b.buft,
                       tg_fx_bytes(now[br->bi], b1, sizeof(b1)), now[br->bi], tg_fx_bytes(br->high_water, b2, sizeof(b2)),
                       br->high_water, as_rec[br->bi] == br->high_water ? ""
                       : " (note: replanning the recorded shape gives a different peak; the estimate is approximate)");
        }
        if (o.json) printf("]");
        // the resize is blind to meaning: a weight dimension of the same size makes it approximate
        bool clash = false;
        for (int ti = r.g.n_nodes; ti < r.g.n_nodes + r.g.n_leafs && !clash; ti++) {
            struct tg_trace_tensor t;
            struct tg_trace_alloc a;
            if (!tg_trace_get_tensor(tr, gi, ti, &t) || !tg_trace_get_alloc(tr, gi, ti, &a)) continue;
            if (!(a.flags & TG_TRACE_ALLOC_EXTERNAL) || (t.flags & TG_FLAG_INPUT)) continue;
            for (int d = 0; d < 4; d++) clash |= t.ne[d] == from && from > 1;
        }
        if (o.json) printf(", \"approximate\": %s}", clash || from == 1 ? "true" : "false");
        else if (clash || from == 1)
            printf("  approximate: every dimension equal to %" PRId64 " was resized, and some weight has a dimension of that "
                   "size (trace a run whose %s differs from the model's dimensions for an exact answer)\n", from,
                   ubatch ? "micro-batch" : "context");
        graph_report_free(&r);
    }
    if (o.json) printf("}\n");
done:
    free(chosen);
    tg_trace_close(tr);
    return rc;
}
