// cmd_stability.c - `tgdb stability A.tgt B.tgt [C.tgt ...]`: the nondeterminism
// map of repeated runs (same program, other thread counts, other builds):
// which evaluated nodes are bitwise identical (same content hash) in every
// run, which are not, and for each run the first node (in evaluation order)
// whose result differs from the first run's. Nodes are matched by
// computation number, node index and name, so the runs must compute the same
// graphs (runs with other batch sizes split work into other graphs: compare
// those with `tgdb diff`).
#include "cli.h"
#include "fx.h"
#include "tg/trace-read.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define STAB_MAX_RUNS 32

struct stab_opts { bool json; int list; };

static const struct tg_cli_opt stab_opts_table[] = {
    { "--list", NULL, "N", "variant nodes to list (default 10)", TG_CLI_INT, offsetof(struct stab_opts, list), 0, 1000000, false, NULL, NULL },
    { "--json", NULL, NULL, "the same as JSON", TG_CLI_FLAG, offsetof(struct stab_opts, json), 0, 0, false, NULL, NULL },
    { 0 },
};

static void stability_defaults(struct stab_opts * o) { *o = (struct stab_opts) { .list = 10 }; }

TG_CLI_COMMAND_OPTS(stability, "stability A.tgt B.tgt [C.tgt ...] [--list N] [--json]",
    "nondeterminism map: nodes bitwise stable across repeated runs (threads, builds), the first variant node per run; "
    "exit 0 all stable, 1 some node varies, 2 usage or input error", stab_opts_table, struct stab_opts, stability_defaults)

static int cmd_stability(int argc, char ** argv) {
    struct stab_opts o;
    stability_defaults(&o);
    const char * pos[STAB_MAX_RUNS + 1];
    int n = 0;
    if (tg_cli_parse_opts("stability", stab_opts_table, &o, argc, argv, pos, STAB_MAX_RUNS + 1, &n) != TG_CLI_OK)
        return TG_CLI_ERROR;
    if (n < 2) return tg_cli_err("stability: give at least two traces of the same program (A.tgt B.tgt ...)");
    if (n > STAB_MAX_RUNS) return tg_cli_err("stability: at most %d traces", STAB_MAX_RUNS);
    struct tg_trace * tr[STAB_MAX_RUNS] = { 0 };
    int rc = TG_CLI_OK;
    for (int r = 0; r < n; r++)
        if (!(tr[r] = tg_fx_open(pos[r]))) { rc = TG_CLI_ERROR; goto done; }
    int ne = tg_trace_n_evals(tr[0]), n_hashed = 0, n_stable = 0, n_variant = 0, n_unmatched = 0;
    int first_var[STAB_MAX_RUNS];
    for (int r = 0; r < n; r++) first_var[r] = -1;
    for (int r = 1; r < n; r++)
        if (tg_trace_n_evals(tr[r]) != ne)
            fprintf(stderr, "tgdb: warning: %s has %d evaluated nodes, %s has %d: comparing the common ones\n", pos[r],
                    tg_trace_n_evals(tr[r]), pos[0], ne);
    if (o.json) { printf("{\"runs\": ["); for (int r = 0; r < n; r++) { if (r) printf(", "); tg_fx_json_str(stdout, pos[r]); } printf("], \"variant\": ["); }
    else printf("%-6s %-6s %-5s %-28s %-10s  %s\n", "eval", "graph", "node", "name", "op", "runs differing from the first");
    int listed = 0;
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e0;
        if (!tg_trace_get_eval(tr[0], i, &e0) || !(e0.flags & TG_TRACE_EVAL_HASH)) continue;
        int gi0 = tg_trace_find_graph(tr[0], e0.graph_id);
        char name0[TG_TRACE_NAME], name[TG_TRACE_NAME];
        tg_trace_tensor_name(tr[0], gi0, e0.node, name0);
        bool all = true, varies = false;
        uint32_t mask = 0;
        for (int r = 1; r < n; r++) {
            struct tg_trace_eval e;
            int gi;
            if (!tg_trace_get_eval(tr[r], i, &e) || !(e.flags & TG_TRACE_EVAL_HASH) || e.node != e0.node ||
                e.compute_seq != e0.compute_seq || (gi = tg_trace_find_graph(tr[r], e.graph_id)) < 0 ||
                strcmp(tg_trace_tensor_name(tr[r], gi, e.node, name), name0)) { all = false; break; }
            if (e.hash != e0.hash) {
                varies = true;
                mask |= 1u << r;
                if (first_var[r] < 0) first_var[r] = i;
            }
        }
        if (!all) { n_unmatched++; continue; }
        n_hashed++;
        if (!varies) { n_stable++; continue; }
        n_variant++;
        if (listed >= o.list) continue;
        struct tg_trace_tensor t;
        tg_trace_get_tensor(tr[0], gi0, e0.node, &t);
        if (o.json) {
            printf("%s{\"eval\": %d, \"graph\": %u, \"node\": %d, \"compute\": %u, \"name\": ", listed ? ", " : "", i,
                   e0.graph_id, e0.node, e0.compute_seq);
            tg_fx_json_str(stdout, name0);
            printf(", \"op\": ");
            tg_fx_json_str(stdout, tg_trace_op_name(tr[0], t.op));
            printf(", \"runs\": [");
            for (int r = 1, k = 0; r < n; r++) if (mask & (1u << r)) printf("%s%d", k++ ? ", " : "", r);
            printf("]}");
        } else {
            printf("%-6d %-6u %-5d %-28.28s %-10s ", i, e0.graph_id, e0.node, name0, tg_trace_op_name(tr[0], t.op));
            for (int r = 1; r < n; r++) if (mask & (1u << r)) printf(" %d", r);
            printf("\n");
        }
        listed++;
    }
    if (o.json) {
        printf("], \"compared\": %d, \"stable\": %d, \"variant\": %d, \"unmatched\": %d, \"first_variant\": [",
               n_hashed, n_stable, n_variant, n_unmatched);
        for (int r = 1; r < n; r++) printf("%s%d", r > 1 ? ", " : "", first_var[r]);
        printf("]}\n");
    } else {
        if (n_variant > listed) printf("... %d more variant nodes (--list N)\n", n_variant - listed);
        printf("%d nodes compared over %d runs: %d bitwise stable, %d variant%s\n", n_hashed, n, n_stable, n_variant,
               n_unmatched ? "" : "");
        if (n_unmatched) printf("%d nodes not compared (no hash, or the runs computed other graphs there)\n", n_unmatched);
        for (int r = 1; r < n; r++) {
            if (first_var[r] < 0) { printf("run %d (%s): identical to run 0\n", r, pos[r]); continue; }
            struct tg_trace_eval e;
            tg_trace_get_eval(tr[0], first_var[r], &e);
            char nm[TG_TRACE_NAME];
            printf("run %d (%s): first variant node: eval %d, '%s' (graph %u node %d, computation %u)\n", r, pos[r],
                   first_var[r], tg_trace_tensor_name(tr[0], tg_trace_find_graph(tr[0], e.graph_id), e.node, nm), e.graph_id,
                   e.node, e.compute_seq);
        }
    }
    if (n_hashed == 0) rc = tg_cli_err("stability: no node with a hash in common (record hashes: TGDB_TRACE_HASH=all, the default)");
    else rc = n_variant ? TG_CLI_FOUND : TG_CLI_OK;
done:
    for (int r = 0; r < n && r < STAB_MAX_RUNS; r++) if (tr[r]) tg_trace_close(tr[r]);
    return rc;
}
