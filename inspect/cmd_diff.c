// cmd_diff.c - `tgdb diff A B`: node-by-node comparison of two traces, or of
// a trace with another engine's per-node TSV dump; first divergent node,
// the nodes that depend on it, per-node errors.
#include "cli.h"
#include "core/text.h"
#include "json.h"
#include "tg/trace-diff.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct diff_opts {
    struct tg_diff_options d;
    bool all, json;
};

#define DFO(f) offsetof(struct diff_opts, f)
static const struct tg_cli_opt diff_table[] = {
    { .name = "--rtol", .value = "R", .kind = TG_CLI_DOUBLE, .off = DFO(d.rtol), .lo = 0, .hi = 1e30,
      .help = "relative tolerance of a node's values" },
    { .name = "--atol", .value = "A", .kind = TG_CLI_DOUBLE, .off = DFO(d.atol), .lo = 0, .hi = 1e30,
      .help = "absolute tolerance of a node's values" },
    { .name = "--all", .kind = TG_CLI_FLAG, .off = DFO(all), .help = "list every compared node, not only the differing ones" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = DFO(json), .help = "print the comparison as JSON" },
    { 0 },
};

static void diff_defaults(struct diff_opts * o) { *o = (struct diff_opts) { .d = tg_diff_default_options() }; }

TG_CLI_COMMAND_OPTS(diff, "diff A.tgt B.tgt|B.tsv [--rtol R] [--atol A] [--all] [--json]",
               "compare two runs node by node (graphs by the ids `trace info` prints); exit 0 equivalent, "
               "1 a node differs beyond tolerance or the graphs differ, 2 usage or input error, "
               "3 inconclusive (some or all nodes had no hashes, summaries or contents to compare)",
               diff_table, struct diff_opts, diff_defaults)

// Usage and input errors exit 2 (1 means "the runs differ").
#define DIFF_ERR(...) (tg_cli_err(__VA_ARGS__), 2)

static bool is_tsv(const char * path) {
    const char * dot = strrchr(path, '.');
    return dot && (!strcmp(dot, ".tsv") || !strcmp(dot, ".txt"));
}

static void shape_str(const int64_t ne[4], char * buf, size_t n) {
    snprintf(buf, n, "[%lld,%lld,%lld,%lld]", (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3]);
}

static void json_str(const char * s) { tg_json_write_string(stdout, s, strlen(s)); }

static void json_num(double v) {
    if (isfinite(v)) printf("%.9g", v); else printf("null");
}

static void json_evidence_counts(const struct tg_diff_result * r) {
    printf("{");
    for (int k = 1; k < TG_DIFF_EV_COUNT; k++) printf("%s\"%s\": %d", k > 1 ? ", " : "", tg_diff_evidence_name(k), r->evidence[k]);
    printf(", \"none\": %d}", r->evidence[TG_DIFF_EV_NONE]);
}

// The relative difference of summaries or sums (NAN for other evidence).
static double stat_rel(const struct tg_diff_pair * p) {
    return p->evidence == TG_DIFF_EV_SUMMARY || p->evidence == TG_DIFF_EV_SUMS || p->evidence == TG_DIFF_EV_PADDED ? p->rel : NAN;
}

static void json_pair_numbers(const struct tg_diff_pair * p) {
    printf(", \"evidence\": ");
    if (p->evidence == TG_DIFF_EV_NONE) printf("null"); else json_str(tg_diff_evidence_name(p->evidence));
    printf(", \"rel_l2\": "); json_num(p->rel_l2);
    printf(", \"rel_l2_err\": "); json_num(p->rel_l2_err);
    printf(", \"introduced\": %s", p->introduced ? "true" : "false");
    printf(", \"max_abs\": "); json_num(p->max_abs);
    printf(", \"stat_rel\": "); json_num(stat_rel(p));
    if (p->padded)
        printf(", \"shape_b\": [%lld, %lld, %lld, %lld]", (long long) p->ne_b[0], (long long) p->ne_b[1], (long long) p->ne_b[2],
               (long long) p->ne_b[3]);
}

static const char * verdict(const struct tg_diff_result * r) {
    return r->differs ? "different" : r->inconclusive ? "inconclusive" : "equivalent";
}

static void print_json(const struct tg_diff_result * r, const char * a, const char * b, const struct tg_diff_options * o, bool all) {
    printf("{\"a\": "); json_str(a); printf(", \"b\": "); json_str(b);
    printf(", \"rtol\": %g, \"atol\": %g, \"graphs\": %d, \"pairs\": %d, \"counts\": {", o->rtol, o->atol, r->n_graphs, r->n_pairs);
    for (int k = 0; k < TG_DIFF_KIND_COUNT; k++) printf("%s\"%s\": %d", k ? ", " : "", tg_diff_kind_name(k), r->counts[k]);
    printf("}, \"aligned\": %d, \"compared\": %d, \"views_skipped\": %d, \"introduced\": %d, \"evidence\": ",
           r->n_aligned, r->n_compared, r->n_views_skipped, r->n_introduced);
    json_evidence_counts(r);
    printf(", \"result\": \"%s\", \"differs\": %s, \"inconclusive\": %s", verdict(r), r->differs ? "true" : "false",
           r->inconclusive ? "true" : "false");
    printf(", \"decodes\": [%d, %d], \"tokens_differ\": ", r->n_decodes_a, r->n_decodes_b);
    if (r->token_mismatch >= 0)
        printf("{\"decode\": %d, \"pos\": %d, \"a\": %d, \"b\": %d}", r->token_mismatch, r->token_pos, r->token_a, r->token_b);
    else
        printf("null");
    printf(", \"first\": ");
    if (r->first >= 0) {
        const struct tg_diff_pair * p = &r->pairs[r->first];
        printf("{\"graph\": %u, \"node_a\": %d, \"node_b\": %d, \"name\": ", p->graph_id, p->node_a, p->node_b);
        json_str(p->name);
        printf(", \"op\": "); json_str(p->op);
        json_pair_numbers(p);
        printf(", \"mean_abs\": "); json_num(p->mean_abs);
        printf(", \"from_contents\": %s, \"dependents\": %d}", p->from_contents ? "true" : "false", r->n_dependents);
    } else {
        printf("null");
    }
    if (all) {
        printf(", \"nodes\": [");
        for (int k = 0; k < r->n_pairs; k++) {
            const struct tg_diff_pair * p = &r->pairs[k];
            printf("%s{\"graph\": %u, \"a\": %d, \"b\": %d, \"name\": ", k ? ", " : "", p->graph_id, p->node_a, p->node_b);
            json_str(p->name);
            printf(", \"op\": "); json_str(p->op);
            printf(", \"kind\": \"%s\"", tg_diff_kind_name(p->kind));
            json_pair_numbers(p);
            printf("}");
        }
        printf("]");
    }
    printf("}\n");
}

// "1.5e-03" or "-" for an unknown figure, right-aligned in w columns.
static void print_num(double v, int w) {
    if (isnan(v)) printf(" %*s", w, "-"); else printf(" %*.3g", w, v);
}

static void side_has(char * buf, size_t n, bool h, bool s, bool c) {
    if (!h && !s && !c) { snprintf(buf, n, "nothing"); return; }
    snprintf(buf, n, "%s%s%s%s%s", h ? "hashes" : "", h && (s || c) ? ", " : "", s ? "summaries" : "", s && c ? ", " : "",
             c ? "contents" : "");
}

// Why the comparison is incomplete, and how to record a comparable run.
static void explain_coverage(const struct tg_diff_result * r) {
    printf("compared %d of %d aligned nodes", r->n_compared, r->n_aligned);
    if (r->n_compared) {
        printf(" (");
        bool any = false;
        for (int k = 1; k < TG_DIFF_EV_COUNT; k++)
            if (r->evidence[k]) { printf("%s%d by %s", any ? ", " : "", r->evidence[k], tg_diff_evidence_name(k)); any = true; }
        printf(")");
    }
    if (r->n_compared + (r->n_compared ? r->n_views_skipped : 0) == r->n_aligned) {
        if (r->n_compared && r->n_views_skipped)
            printf("; %d views, reshapes and permutes recorded without data (--trace-hash computed) not compared: "
                   "their bytes are the nodes' they view", r->n_views_skipped);
        printf("\n");
        return;
    }
    bool a_any = r->a_hashes || r->a_summaries || r->a_contents, b_any = r->b_hashes || r->b_summaries || r->b_contents;
    if (!a_any && !b_any) printf(": neither trace has hashes, summaries or contents; record with --trace-hash all\n");
    else if (!a_any || !b_any) printf(": %s has no hashes, summaries or contents; record it with --trace-hash all\n", !a_any ? "A" : "B");
    else {
        char ha[64], hb[64];
        side_has(ha, sizeof(ha), r->a_hashes, r->a_summaries, r->a_contents);
        side_has(hb, sizeof(hb), r->b_hashes, r->b_summaries, r->b_contents);
        printf(": %d without data on both sides (A has %s, B has %s; record both with --trace-hash all)\n",
               r->evidence[TG_DIFF_EV_NONE], ha, hb);
    }
    if (r->n_hash_differs)
        printf("  %d of them have different hashes but no summaries or contents to measure the difference\n", r->n_hash_differs);
}

static void print_text(const struct tg_diff_result * r, const char * a, const char * b, const struct tg_diff_options * o, bool all) {
    printf("A: %s (%d graph%s)\nB: %s (%d graph%s)\n", a, r->n_graphs_a, r->n_graphs_a == 1 ? "" : "s", b, r->n_graphs_b, r->n_graphs_b == 1 ? "" : "s");
    printf("compared %d graph%s, %d node pairs: %d same, %d near, %d DIFF, %d only in A, %d only in B, %d without data\n",
           r->n_graphs, r->n_graphs == 1 ? "" : "s", r->n_pairs, r->counts[TG_DIFF_SAME], r->counts[TG_DIFF_NEAR],
           r->counts[TG_DIFF_DIFF], r->counts[TG_DIFF_ONLY_A], r->counts[TG_DIFF_ONLY_B], r->counts[TG_DIFF_UNKNOWN]);
    explain_coverage(r);
    if (r->token_mismatch >= 0) {
        printf("note: the runs were fed different tokens: decode call %d", r->token_mismatch);
        if (r->token_a >= 0 || r->token_b >= 0) printf(", position %d: A token %d, B token %d\n", r->token_pos, r->token_a, r->token_b);
        else printf(" (position %d): different positions or token counts\n", r->token_pos);
    } else if (r->n_decodes_a != r->n_decodes_b) {
        printf("note: A has %d decode calls, B has %d\n", r->n_decodes_a, r->n_decodes_b);
    }
    if (all) {
        printf("\n%5s %6s %6s  %-28s %-12s %-18s %-7s %-8s %10s %10s %10s\n", "graph", "A#", "B#", "name", "op", "shape", "result",
               "evidence", "rel_l2", "max_abs", "stat_rel");
        for (int k = 0; k < r->n_pairs; k++) {
            const struct tg_diff_pair * p = &r->pairs[k];
            char sh[64];
            shape_str(p->ne, sh, sizeof(sh));
            char nm[29];   // cut between characters, never inside one
            tg_escape(nm, sizeof nm, p->name, strlen(p->name));
            printf("%5u %6d %6d  %-28s %-12s %-18s %-7s %-8s", p->graph_id, p->node_a, p->node_b, nm, tg_escape_str(p->op), sh,
                   tg_diff_kind_name(p->kind), tg_diff_evidence_name(p->evidence));
            print_num(p->rel_l2, 10);
            print_num(p->max_abs, 10);
            print_num(stat_rel(p), 10);
            if (p->evidence == TG_DIFF_EV_SKETCH) printf(" +-%.2g", p->rel_l2_err);
            if (p->padded) { shape_str(p->ne_b, sh, sizeof(sh)); printf("  (B %s: padded)", sh); }
            printf("%s%s\n", p->introduced ? "  introduced" : "", k == r->first ? "  <- first divergence" : "");
        }
        printf("  (rel_l2 = ||A-B|| / ||B|| from contents, or estimated from sketches +- one standard deviation; max_abs "
               "from contents; stat_rel = relative difference of the summaries or sums; padded = B's node is larger in one "
               "dimension (its KV padding), its sums compared with the extra cells taken as zeros; introduced = the "
               "difference grows here faster than in any input; - = unknown)\n\n");
    }
    if (r->first >= 0) {
        const struct tg_diff_pair * p = &r->pairs[r->first];
        char sh[64];
        shape_str(p->ne, sh, sizeof(sh));
        printf("first divergent node: graph %u, node %d (B: %d) %s (%s %s)\n", p->graph_id, p->node_a, p->node_b, tg_escape_str(p->name), tg_escape_str(p->op), sh);
        if (p->evidence == TG_DIFF_EV_CONTENTS)
            printf("  errors (contents): max abs %.4g, mean abs %.4g, relative L2 %.4g, max rel %.4g (rtol %g, atol %g)\n",
                   p->max_abs, p->mean_abs, p->rel_l2, p->max_rel, o->rtol, o->atol);
        else if (p->evidence == TG_DIFF_EV_SKETCH)
            printf("  relative L2 difference estimated from the sketches: %.4g +- %.2g (rtol %g); element errors unknown "
                   "(no contents recorded)\n", p->rel_l2, p->rel_l2_err, o->rtol);
        else
            printf("  relative difference of the %s %.4g (rtol %g); element errors unknown (no contents recorded)\n",
                   p->evidence == TG_DIFF_EV_SUMS ? "sums (sum, sum of squares)" :
                   p->evidence == TG_DIFF_EV_PADDED ? "sums (sum, sum of squares; B's padded cells taken as zeros)" :
                   "summaries (mean, rms, min, max)", p->rel, o->rtol);
        printf("  %d node%s of A depend on it", r->n_dependents, r->n_dependents == 1 ? "" : "s");
        for (int k = 0; k < r->n_dependents && k < 8; k++) printf("%s#%d", k ? ", " : ": ", r->dependents[k]);
        printf("%s\n", r->n_dependents > 8 ? ", ..." : "");
        if (r->n_introduced) {   // where the difference grows, not just passes on
            printf("  divergence introduced (grows faster than in the inputs) at %d node%s", r->n_introduced,
                   r->n_introduced == 1 ? "" : "s");
            int shown = 0;
            for (int k = 0; k < r->n_pairs && shown < 6; k++) {
                const struct tg_diff_pair * q = &r->pairs[k];
                if (!q->introduced) continue;
                printf("%s%s (%s, graph %u #%d, %s %.3g)", shown++ ? ", " : ": ", q->name, q->op, q->graph_id, q->node_a,
                       isnan(q->rel_l2) ? "stat_rel" : "rel_l2", isnan(q->rel_l2) ? q->rel : q->rel_l2);
            }
            printf("%s\n", r->n_introduced > shown ? ", ..." : "");
        }
    } else if (r->differs) {
        for (int k = 0; k < r->n_pairs; k++) {
            const struct tg_diff_pair * p = &r->pairs[k];
            if (p->kind != TG_DIFF_ONLY_A && p->kind != TG_DIFF_ONLY_B) continue;
            // "values agree" only where some were compared (a side without data compares none)
            if (r->n_compared > 0)
                printf("the %d compared node%s agree, but the graphs differ", r->n_compared, r->n_compared == 1 ? "" : "s");
            else
                printf("no values compared, and the graphs differ");
            printf(": first structural difference in graph %u: %s %s only in %s (node %d)\n",
                   p->graph_id, tg_escape_str(p->name), tg_escape_str(p->op), p->kind == TG_DIFF_ONLY_A ? "A" : "B", p->kind == TG_DIFF_ONLY_A ? p->node_a : p->node_b);
            break;
        }
        if (r->n_graphs_a != r->n_graphs_b) printf("A has %d graphs, B has %d\n", r->n_graphs_a, r->n_graphs_b);
    } else if (r->n_compared > 0) {
        double worst = 0;
        for (int k = 0; k < r->n_pairs; k++) if (r->pairs[k].kind == TG_DIFF_NEAR && r->pairs[k].rel > worst) worst = r->pairs[k].rel;
        printf("no compared node differs beyond tolerance (rtol %g, atol %g); largest relative difference %.3g\n", o->rtol, o->atol, worst);
    }
    if (r->inconclusive)
        printf("result: INCONCLUSIVE (%d of %d aligned nodes compared; nothing differs among them)\n", r->n_compared, r->n_aligned);
    else
        printf("result: %s\n", r->differs ? "DIFFERENT" : "equivalent");
}

static int cmd_diff(int argc, char ** argv) {
    struct diff_opts opts;
    diff_defaults(&opts);
    const char * pos[2];
    int np = 0;
    if (tg_cli_parse_opts("diff", diff_table, &opts, argc, argv, pos, 2, &np)) return TG_CLI_ERROR;
    const char * pa = np > 0 ? pos[0] : NULL, * pb = np > 1 ? pos[1] : NULL;
    bool all = opts.all, json = opts.json;
    struct tg_diff_options o = opts.d;
    if (!pa || !pb) return (tg_cli_usage("diff"), 2);
    struct tg_trace * ta = tg_trace_open(pa);
    if (!ta) return DIFF_ERR("%s", tg_last_error());
    tg_cli_trace_warning(ta);
    struct tg_trace * tb = NULL;
    struct tg_diff_side * sa = tg_diff_side_trace(ta), * sb = NULL;
    if (is_tsv(pb)) sb = tg_diff_side_tsv(pb);
    else if ((tb = tg_trace_open(pb))) { tg_cli_trace_warning(tb); sb = tg_diff_side_trace(tb); }
    int rc = 2;
    if (!sa || !sb) {
        rc = tg_cli_err("%s", tg_last_error());
        rc = 2;
    } else {
        struct tg_diff_result r;
        if (tg_diff_run(sa, sb, &o, &r) != TG_OK) {
            rc = DIFF_ERR("diff: %s", tg_last_error());
        } else {
            if (json) print_json(&r, pa, pb, &o, all); else print_text(&r, pa, pb, &o, all);
            rc = r.differs ? 1 : r.inconclusive ? 3 : 0;
            tg_diff_result_free(&r);
        }
    }
    tg_diff_side_free(sa);
    tg_diff_side_free(sb);
    tg_trace_close(ta);
    tg_trace_close(tb);
    return rc;
}
