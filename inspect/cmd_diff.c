// cmd_diff.c - `tgdb diff A B`: node-by-node comparison of two traces, or of
// a trace with another engine's per-node TSV dump; first divergent node,
// the nodes that depend on it, per-node errors.
#include "cli.h"
#include "tg/trace-diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TG_CLI_COMMAND(diff, "diff A.tgt B.tgt|B.tsv [--rtol R] [--atol A] [--all] [--json]",
               "compare two runs node by node; exit 1 if a node differs beyond tolerance")

static bool is_tsv(const char * path) {
    const char * dot = strrchr(path, '.');
    return dot && (!strcmp(dot, ".tsv") || !strcmp(dot, ".txt"));
}

static void shape_str(const int64_t ne[4], char * buf, size_t n) {
    snprintf(buf, n, "[%lld,%lld,%lld,%lld]", (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3]);
}

static void json_str(const char * s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void json_num(double v) {
    if (isfinite(v)) printf("%.9g", v); else printf("null");
}

static void print_json(const struct tg_diff_result * r, const char * a, const char * b, const struct tg_diff_options * o, bool all) {
    printf("{\"a\": "); json_str(a); printf(", \"b\": "); json_str(b);
    printf(", \"rtol\": %g, \"atol\": %g, \"graphs\": %d, \"pairs\": %d, \"counts\": {", o->rtol, o->atol, r->n_graphs, r->n_pairs);
    for (int k = 0; k < TG_DIFF_KIND_COUNT; k++) printf("%s\"%s\": %d", k ? ", " : "", tg_diff_kind_name(k), r->counts[k]);
    printf("}, \"differs\": %s, \"first\": ", r->differs ? "true" : "false");
    if (r->first >= 0) {
        const struct tg_diff_pair * p = &r->pairs[r->first];
        printf("{\"graph\": %d, \"node_a\": %d, \"node_b\": %d, \"name\": ", p->graph, p->node_a, p->node_b);
        json_str(p->name);
        printf(", \"op\": "); json_str(p->op);
        printf(", \"rel\": "); json_num(p->rel);
        printf(", \"max_abs\": "); json_num(p->max_abs);
        printf(", \"mean_abs\": "); json_num(p->mean_abs);
        printf(", \"from_contents\": %s, \"dependents\": %d}", p->from_contents ? "true" : "false", r->n_dependents);
    } else {
        printf("null");
    }
    if (all) {
        printf(", \"nodes\": [");
        for (int k = 0; k < r->n_pairs; k++) {
            const struct tg_diff_pair * p = &r->pairs[k];
            printf("%s{\"graph\": %d, \"a\": %d, \"b\": %d, \"name\": ", k ? ", " : "", p->graph, p->node_a, p->node_b);
            json_str(p->name);
            printf(", \"op\": "); json_str(p->op);
            printf(", \"kind\": \"%s\", \"rel\": ", tg_diff_kind_name(p->kind));
            json_num(p->rel);
            printf(", \"max_abs\": "); json_num(p->max_abs);
            printf("}");
        }
        printf("]");
    }
    printf("}\n");
}

static void print_text(const struct tg_diff_result * r, const char * a, const char * b, const struct tg_diff_options * o, bool all) {
    printf("A: %s (%d graph%s)\nB: %s (%d graph%s)\n", a, r->n_graphs_a, r->n_graphs_a == 1 ? "" : "s", b, r->n_graphs_b, r->n_graphs_b == 1 ? "" : "s");
    printf("compared %d graph%s, %d node pairs: %d same, %d near, %d DIFF, %d only in A, %d only in B, %d without data\n",
           r->n_graphs, r->n_graphs == 1 ? "" : "s", r->n_pairs, r->counts[TG_DIFF_SAME], r->counts[TG_DIFF_NEAR],
           r->counts[TG_DIFF_DIFF], r->counts[TG_DIFF_ONLY_A], r->counts[TG_DIFF_ONLY_B], r->counts[TG_DIFF_UNKNOWN]);
    if (all) {
        printf("\n%5s %6s %6s  %-28s %-12s %-18s %-7s %10s %10s\n", "graph", "A#", "B#", "name", "op", "shape", "result", "rel", "max_abs");
        for (int k = 0; k < r->n_pairs; k++) {
            const struct tg_diff_pair * p = &r->pairs[k];
            char sh[64];
            shape_str(p->ne, sh, sizeof(sh));
            printf("%5d %6d %6d  %-28.28s %-12s %-18s %-7s %10.3g %10.3g%s\n", p->graph, p->node_a, p->node_b, p->name, p->op, sh,
                   tg_diff_kind_name(p->kind), p->rel, p->max_abs, k == r->first ? "  <- first divergence" : "");
        }
        printf("\n");
    }
    if (r->first >= 0) {
        const struct tg_diff_pair * p = &r->pairs[r->first];
        char sh[64];
        shape_str(p->ne, sh, sizeof(sh));
        printf("first divergent node: graph %d, node %d (B: %d) %s (%s %s)\n", p->graph, p->node_a, p->node_b, p->name, p->op, sh);
        if (p->from_contents)
            printf("  errors (contents): max abs %.4g, mean abs %.4g, max rel %.4g (rtol %g, atol %g)\n",
                   p->max_abs, p->mean_abs, p->max_rel, o->rtol, o->atol);
        else
            printf("  relative difference %.4g (%s; rtol %g)\n", p->rel, "from numeric summaries", o->rtol);
        printf("  %d node%s of A depend on it", r->n_dependents, r->n_dependents == 1 ? "" : "s");
        for (int k = 0; k < r->n_dependents && k < 8; k++) printf("%s#%d", k ? ", " : ": ", r->dependents[k]);
        printf("%s\n", r->n_dependents > 8 ? ", ..." : "");
    } else if (r->differs) {
        for (int k = 0; k < r->n_pairs; k++) {
            const struct tg_diff_pair * p = &r->pairs[k];
            if (p->kind != TG_DIFF_ONLY_A && p->kind != TG_DIFF_ONLY_B) continue;
            printf("values agree, but the graphs differ: first structural difference in graph %d: %s %s only in %s (node %d)\n",
                   p->graph, p->name, p->op, p->kind == TG_DIFF_ONLY_A ? "A" : "B", p->kind == TG_DIFF_ONLY_A ? p->node_a : p->node_b);
            break;
        }
        if (r->n_graphs_a != r->n_graphs_b) printf("A has %d graphs, B has %d\n", r->n_graphs_a, r->n_graphs_b);
    } else {
        double worst = 0;
        for (int k = 0; k < r->n_pairs; k++) if (r->pairs[k].kind == TG_DIFF_NEAR && r->pairs[k].rel > worst) worst = r->pairs[k].rel;
        printf("no node differs beyond tolerance (rtol %g, atol %g); largest relative difference %.3g\n", o->rtol, o->atol, worst);
    }
    printf("result: %s\n", r->differs ? "DIFFERENT" : "equivalent");
}

static bool parse_double(const char * s, double * out) {
    char * end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && *out >= 0;
}

static int cmd_diff(int argc, char ** argv) {
    const char * pa = NULL, * pb = NULL;
    bool all = false, json = false;
    struct tg_diff_options o = tg_diff_default_options();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all")) all = true;
        else if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--rtol") || !strcmp(argv[i], "--atol")) {
            double v;
            if (i + 1 >= argc || !parse_double(argv[i + 1], &v)) return tg_cli_err("diff: %s needs a number >= 0", argv[i]);
            if (argv[i][2] == 'r') o.rtol = v; else o.atol = v;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) return tg_cli_err("diff: unknown option '%s' (see 'tgdb help diff')", argv[i]);
        else if (!pa) pa = argv[i];
        else if (!pb) pb = argv[i];
        else return tg_cli_err("diff: unexpected argument '%s'", argv[i]);
    }
    if (!pa || !pb) return tg_cli_usage("diff");
    struct tg_trace * ta = tg_trace_open(pa);
    if (!ta) return tg_cli_err("%s", tg_last_error());
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
            tg_cli_err("diff: %s", tg_last_error());
        } else {
            if (json) print_json(&r, pa, pb, &o, all); else print_text(&r, pa, pb, &o, all);
            rc = r.differs ? 1 : 0;
            tg_diff_result_free(&r);
        }
    }
    tg_diff_side_free(sa);
    tg_diff_side_free(sb);
    tg_trace_close(ta);
    tg_trace_close(tb);
    return rc;
}
