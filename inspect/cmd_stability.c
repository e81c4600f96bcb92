// cmd_stability.c - `tgdb stability A.tgt B.tgt [C.tgt ...]`, or the runner form
// `tgdb stability -m MODEL -p PROMPT [--threads 1,2,3] [--ubatch 1,8,32]`: the
// nondeterminism map of repeated runs (same program, other thread counts,
// other builds, other micro-batch sizes):
// which evaluated nodes are bitwise identical (same content hash) in every
// run, which are not, and for each run the first node (in evaluation order)
// whose result differs from the first run's. Nodes are matched by
// computation number, node index and name, so the runs must compute the same
// graphs. The runner form runs `tgdb generate` once per variant (greedy,
// traced with hashes): repeated runs and thread counts are compared node by
// node as above; micro-batch sizes split the tokens into other graphs, so
// those runs record the contents of every node and are compared per token:
// the row of each per-token node (ne1 = the micro-batch's tokens) for each
// position, against the same row of the first run.
#include "cli.h"
#include "fx.h"
#include "tg/trace-read.h"

#include "tg/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char ** environ;

#define STAB_MAX_RUNS 32

struct stab_opts {
    bool json;
    int list;
    const char * model, * prompt, * keep, * devices;
    int n_gen, repeat;
    struct tg_cli_ints threads, ubatch;
};

#define STO(f) offsetof(struct stab_opts, f)
static const struct tg_cli_opt stab_opts_table[] = {
    { .name = "--list", .value = "N", .help = "variant nodes to list (default 10)", .kind = TG_CLI_INT, .off = STO(list), .lo = 0, .hi = 1000000 },
    { .name = "--json", .help = "the same as JSON", .kind = TG_CLI_FLAG, .off = STO(json) },
    { .name = "--model", .short_name = "-m", .value = "FILE", .kind = TG_CLI_STR, .off = STO(model),
      .help = "runner form: run this model once per variant (instead of comparing given traces)" },
    { .name = "--prompt", .short_name = "-p", .value = "TEXT", .kind = TG_CLI_STR, .off = STO(prompt),
      .help = "runner form: the prompt (default \"Once upon a time\")" },
    { .name = "--n-predict", .short_name = "-n", .value = "N", .kind = TG_CLI_INT, .off = STO(n_gen), .lo = 0, .hi = 4096,
      .help = "runner form: tokens generated after the prompt (greedy; default 4)" },
    { .name = "--threads", .short_name = "-t", .value = "N[,N..]", .kind = TG_CLI_INTS, .off = STO(threads), .lo = 1, .hi = 512,
      .help = "runner form: thread counts (the first is the baseline; default 1,2)" },
    { .name = "--ubatch", .short_name = "-ub", .value = "N[,N..]", .kind = TG_CLI_INTS, .off = STO(ubatch), .lo = 1, .hi = 65536,
      .help = "runner form: micro-batch sizes (the first is the baseline; more than one adds the batch-size axis, "
              "compared per token from recorded contents)" },
    { .name = "--repeat", .value = "N", .kind = TG_CLI_INT, .off = STO(repeat), .lo = 0, .hi = 16,
      .help = "runner form: extra runs identical to the baseline (default 1)" },
    { .name = "--device", .short_name = "-dev", .value = "LIST", .kind = TG_CLI_STR, .off = STO(devices),
      .help = "runner form: backends for every run (as generate's -dev, e.g. BLAS,CPU)" },
    { .name = "--keep", .value = "DIR", .kind = TG_CLI_STR, .off = STO(keep),
      .help = "runner form: write the traces into DIR and keep them (default: a temporary directory, removed)" },
    { 0 },
};

static void stability_defaults(struct stab_opts * o) {
    *o = (struct stab_opts) { .list = 10, .n_gen = 4, .repeat = 1, .threads = { .n = 2, .v = { 1, 2 } },
                              .ubatch = { .n = 1, .v = { 512 } } };
}

TG_CLI_COMMAND_OPTS(stability, "stability A.tgt B.tgt [C.tgt ...] | -m MODEL [-p TEXT] [--threads 1,2,3] [--ubatch 1,8,32] [--repeat N] [--list N] [--json]",
    "nondeterminism map: nodes bitwise stable across repeated runs, thread counts, builds and micro-batch sizes, and "
    "the first variant node per run; exit 0 all stable, 1 some node varies, 2 usage or input error",
    stab_opts_table, struct stab_opts, stability_defaults)

// Node-by-node hash comparison of runs 1..n-1 against run 0 (the same
// graphs). Prints the table and summary (or, with JSON, one object without a
// newline). Returns TG_CLI_OK (all stable), TG_CLI_FOUND or TG_CLI_ERROR.
static int compare_hashes(struct tg_trace ** tr, const char * const * pos, int n, const struct stab_opts * op) {
    const struct stab_opts o = *op;
    int rc = TG_CLI_OK;
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
        printf("]}");
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
    return rc;
}

// ---- the batch-size axis: per-token rows from recorded contents --------------------------

struct row_key {
    char     name[TG_TRACE_NAME];
    int32_t  pos;        // token position
    int32_t  order;      // first-seen order in its trace (evaluation order)
    uint64_t len;        // row bytes (rows of other lengths, e.g. over other cell counts, are not compared)
    uint64_t hash;       // of the row's bytes
};

static int by_name_pos(const void * a, const void * b) {
    const struct row_key * x = a, * y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->pos != y->pos) return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->len > y->len) - (x->len < y->len);
}

// Every per-token row of tr: contents of nodes whose last dimension is the
// tokens of their computation's micro-batch ([d, T] or [d, heads, T]), one
// key per (name, position). *out malloc'd; returns the count, -1 on failure.
static int token_rows(struct tg_trace * tr, struct row_key ** out) {
    int cap = 256, n = 0;
    struct row_key * k = malloc((size_t) cap * sizeof(*k));
    uint8_t * buf = NULL;
    size_t buf_cap = 0;
    if (!k) return -1;
    for (int i = 0; i < tg_trace_n_contents(tr); i++) {
        struct tg_trace_contents c;
        if (!tg_trace_get_contents(tr, i, &c)) continue;
        int pos0 = -1, T = 0;   // the micro-batch: the decode marker before the computation began
        for (int ci = 0; ci < tg_trace_n_computes(tr); ci++) {
            struct tg_trace_compute cc;
            if (!tg_trace_get_compute(tr, ci, &cc) || cc.compute_seq != c.compute_seq || cc.phase != TG_TRACE_BEGIN) continue;
            const int mi = tg_trace_marker_before(tr, cc.record);
            struct tg_trace_marker m;
            if (mi >= 0 && tg_trace_get_marker(tr, mi, &m) && m.kind == TG_TRACE_MARK_DECODE) { pos0 = m.pos; T = m.n_tokens; }
            break;
        }
        // the token dimension: 2 for [d, heads, tokens] nodes, 1 for [d, tokens] ones
        const bool tok2 = c.ne[3] == 1 && c.ne[2] == T, tok1 = c.ne[3] == 1 && c.ne[2] == 1 && c.ne[1] == T;
        if (pos0 < 0 || T < 1 || !(tok1 || tok2) || c.raw_size % (uint64_t) T) continue;
        const int gi = tg_trace_find_graph(tr, c.graph_id);
        char name[TG_TRACE_NAME];
        struct tg_trace_graph g;
        struct tg_trace_tensor tt;
        if (gi < 0 || !tg_trace_get_graph(tr, gi, &g) || c.node >= g.n_nodes || !tg_trace_get_tensor(tr, gi, c.node, &tt) ||
            !tg_trace_tensor_name(tr, gi, c.node, name))
            continue;   // computed nodes only (inputs such as kq_mask are set by the program)
        if (c.raw_size > buf_cap) {
            uint8_t * nb = realloc(buf, (size_t) c.raw_size);
            if (!nb) { free(k); free(buf); return -1; }
            buf = nb;
            buf_cap = (size_t) c.raw_size;
        }
        if (tg_trace_read_contents(tr, i, buf, buf_cap) != TG_OK) continue;
        const size_t row = (size_t) (c.raw_size / (uint64_t) T);
        for (int r = 0; r < T; r++) {
            if (n == cap) {
                struct row_key * nk = realloc(k, (size_t) (cap *= 2) * sizeof(*k));
                if (!nk) { free(k); free(buf); return -1; }
                k = nk;
            }
            snprintf(k[n].name, sizeof(k[n].name), "%s", name);
            k[n].pos = pos0 + r;
            k[n].order = n;
            k[n].len = row;
            const int64_t ne[4] = { c.ne[0], tok2 ? c.ne[1] : 1, 1, 1 };
            const size_t es = row / (size_t) (c.ne[0] * ne[1]);
            const size_t nbs[4] = { es, es * (size_t) c.ne[0], row, row };
            k[n].hash = tg_trace_hash_data(buf + (size_t) r * row, c.type, ne, nbs);
            n++;
        }
    }
    free(buf);
    qsort(k, (size_t) n, sizeof(*k), by_name_pos);
    *out = k;
    return n;
}

struct row_cmp { int compared, variant, first_order; struct row_key first; };

// Rows of the variant against the baseline's (both sorted by name, position).
static void compare_rows(const struct row_key * a, int na, const struct row_key * b, int nb, struct row_cmp * r) {
    memset(r, 0, sizeof(*r));
    r->first_order = -1;
    for (int i = 0, j = 0; i < na && j < nb;) {
        const int c = by_name_pos(&a[i], &b[j]);
        if (c < 0) { i++; continue; }
        if (c > 0) { j++; continue; }
        r->compared++;
        if (a[i].hash != b[j].hash) {
            r->variant++;
            if (r->first_order < 0 || a[i].order < r->first_order) { r->first_order = a[i].order; r->first = a[i]; }
        }
        i++; j++;
    }
}

// ---- the runner ------------------------------------------------------------------------------

struct variant { int threads, ubatch; const char * axis; char path[640]; };

// Runs `tgdb generate` for one variant, output to log. 0 on success.
static int run_variant(const struct stab_opts * o, const struct variant * v, bool contents, const char * log) {
    char t[16], ub[16], n[16];
    snprintf(t, sizeof t, "%d", v->threads);
    snprintf(ub, sizeof ub, "%d", v->ubatch);
    snprintf(n, sizeof n, "%d", o->n_gen);
    const char * argv[32];
    int a = 0;
    argv[a++] = "tgdb"; argv[a++] = "generate"; argv[a++] = "-m"; argv[a++] = o->model;
    argv[a++] = "-p"; argv[a++] = o->prompt ? o->prompt : "Once upon a time"; argv[a++] = "-n"; argv[a++] = n;
    argv[a++] = "--temp"; argv[a++] = "0"; argv[a++] = "-t"; argv[a++] = t; argv[a++] = "-ub"; argv[a++] = ub;
    argv[a++] = "--trace"; argv[a++] = v->path;
    if (contents) { argv[a++] = "--trace-dump"; argv[a++] = "*"; }
    if (o->devices) { argv[a++] = "-dev"; argv[a++] = o->devices; }
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, (char * const *) argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) return tg_cli_err("stability: cannot run tgdb generate: %s", strerror(err)), -1;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        FILE * f = fopen(log, "r");
        char line[512] = "", last[512] = "";
        while (f && fgets(line, sizeof line, f)) if (line[0] != '\n') snprintf(last, sizeof last, "%s", line);
        if (f) fclose(f);
        last[strcspn(last, "\n")] = 0;
        return tg_cli_err("stability: the run with %d thread%s and micro-batch %d failed: %s", v->threads,
                          v->threads == 1 ? "" : "s", v->ubatch, last[0] ? last : "(no output)"), -1;
    }
    return 0;
}

static void rm_dir(const char * dir, const struct variant * v, int n) {
    char p[600];
    for (int i = 0; i < n; i++) {
        unlink(v[i].path);
        snprintf(p, sizeof p, "%s/run%d.log", dir, i);
        unlink(p);
    }
    rmdir(dir);
}

static int run_stability(const struct stab_opts * o) {
    if (o->threads.n < 1 || o->ubatch.n < 1) return tg_cli_err("stability: --threads and --ubatch need at least one value");
    struct variant v[STAB_MAX_RUNS];
    int nv = 0;
    v[nv++] = (struct variant) { .threads = o->threads.v[0], .ubatch = o->ubatch.v[0], .axis = "baseline" };
    for (int r = 0; r < o->repeat && nv < STAB_MAX_RUNS; r++) v[nv++] = (struct variant) { .threads = o->threads.v[0], .ubatch = o->ubatch.v[0], .axis = "repeat" };
    for (int i = 1; i < o->threads.n && nv < STAB_MAX_RUNS; i++) v[nv++] = (struct variant) { .threads = o->threads.v[i], .ubatch = o->ubatch.v[0], .axis = "threads" };
    const int first_ub = nv;
    for (int i = 1; i < o->ubatch.n && nv < STAB_MAX_RUNS; i++) v[nv++] = (struct variant) { .threads = o->threads.v[0], .ubatch = o->ubatch.v[i], .axis = "ubatch" };
    if (nv < 2) return tg_cli_err("stability: nothing to compare (give --repeat 1, several --threads or several --ubatch)");
    const bool contents = nv > first_ub;
    char dir[512];
    if (o->keep) {
        snprintf(dir, sizeof dir, "%s", o->keep);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return tg_cli_err("stability: --keep %s: %s", dir, strerror(errno));
    } else {
        const char * tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/tgdb-stability-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) return tg_cli_err("stability: cannot make a temporary directory: %s", strerror(errno));
    }
    int rc = TG_CLI_OK;
    for (int i = 0; i < nv; i++) {
        snprintf(v[i].path, sizeof v[i].path, "%s/run%d-t%d-ub%d.tgt", dir, i, v[i].threads, v[i].ubatch);
        char log[600];
        snprintf(log, sizeof log, "%s/run%d.log", dir, i);
        fprintf(stderr, "stability: run %d/%d (%s): %d thread%s, micro-batch %d\n", i + 1, nv, v[i].axis, v[i].threads,
                v[i].threads == 1 ? "" : "s", v[i].ubatch);
        if (run_variant(o, &v[i], contents, log)) { rc = TG_CLI_ERROR; goto done; }
    }
    // repeats and thread counts: node by node
    struct tg_trace * tr[STAB_MAX_RUNS] = { 0 };
    const char * names[STAB_MAX_RUNS];
    int nh = 0;
    for (int i = 0; i < first_ub; i++) {
        names[nh] = v[i].path;
        if (!(tr[nh++] = tg_fx_open(v[i].path))) { rc = TG_CLI_ERROR; break; }
    }
    if (o->json) {
        printf("{\"model\": ");
        tg_fx_json_str(stdout, o->model);
        printf(", \"variants\": [");
        for (int i = 0; i < nv; i++) {
            printf("%s{\"axis\": \"%s\", \"threads\": %d, \"ubatch\": %d, \"trace\": ", i ? ", " : "", v[i].axis, v[i].threads, v[i].ubatch);
            tg_fx_json_str(stdout, o->keep ? v[i].path : "");
            printf("}");
        }
        printf("], \"runs\": ");
    } else {
        printf("runs of %s: baseline %d thread%s, micro-batch %d; %d repeat%s, %d other thread count%s, %d other micro-batch size%s\n",
               o->model, v[0].threads, v[0].threads == 1 ? "" : "s", v[0].ubatch, o->repeat, o->repeat == 1 ? "" : "s",
               o->threads.n - 1, o->threads.n == 2 ? "" : "s", o->ubatch.n - 1, o->ubatch.n == 2 ? "" : "s");
        printf("== repeated runs and thread counts (node by node; run N = variant N above)\n");
    }
    int hr = rc == TG_CLI_OK && nh >= 2 ? compare_hashes(tr, names, nh, o) : rc == TG_CLI_OK ? TG_CLI_OK : TG_CLI_ERROR;
    if (nh < 2 && o->json) printf("null");
    for (int i = 0; i < nh; i++) if (tr[i]) tg_trace_close(tr[i]);
    if (hr == TG_CLI_ERROR) { rc = TG_CLI_ERROR; if (o->json) printf("}\n"); goto done; }
    bool variant = hr == TG_CLI_FOUND;
    // micro-batch sizes: per token
    if (o->json) printf(", \"ubatch\": [");
    else if (contents) printf("== micro-batch sizes (per token: each per-token node's row at each position, against micro-batch %d)\n", v[0].ubatch);
    struct row_key * base = NULL;
    int nbase = 0;
    if (contents) {
        struct tg_trace * t0 = tg_fx_open(v[0].path);
        nbase = t0 ? token_rows(t0, &base) : -1;
        if (t0) tg_trace_close(t0);
        if (nbase <= 0) { rc = tg_cli_err("stability: no per-token contents in %s", v[0].path); free(base); goto done; }
    }
    for (int i = first_ub; i < nv; i++) {
        struct tg_trace * t = tg_fx_open(v[i].path);
        struct row_key * rows = NULL;
        const int nr = t ? token_rows(t, &rows) : -1;
        if (t) tg_trace_close(t);
        if (nr < 0) { free(base); rc = tg_cli_err("stability: cannot read %s", v[i].path); goto done; }
        struct row_cmp rcmp;
        compare_rows(base, nbase, rows, nr, &rcmp);
        free(rows);
        variant |= rcmp.variant > 0;
        if (o->json) {
            printf("%s{\"ubatch\": %d, \"rows_compared\": %d, \"rows_variant\": %d, \"first_variant\": ", i > first_ub ? ", " : "",
                   v[i].ubatch, rcmp.compared, rcmp.variant);
            if (rcmp.variant) {
                printf("{\"name\": ");
                tg_fx_json_str(stdout, rcmp.first.name);
                printf(", \"pos\": %d}}", rcmp.first.pos);
            } else printf("null}");
        } else if (!rcmp.variant) {
            printf("micro-batch %d: %d token rows compared, all bitwise identical to micro-batch %d\n", v[i].ubatch, rcmp.compared,
                   v[0].ubatch);
        } else {
            printf("micro-batch %d: %d token rows compared, %d differ; first variant node: '%s' at position %d\n", v[i].ubatch,
                   rcmp.compared, rcmp.variant, rcmp.first.name, rcmp.first.pos);
        }
    }
    free(base);
    if (o->json) printf("]}\n");
    rc = variant ? TG_CLI_FOUND : TG_CLI_OK;
done:
    if (!o->keep) rm_dir(dir, v, nv);
    else if (!o->json) printf("traces kept in %s\n", dir);
    return rc;
}

static int cmd_stability(int argc, char ** argv) {
    struct stab_opts o;
    stability_defaults(&o);
    const char * pos[STAB_MAX_RUNS + 1];
    int n = 0;
    if (tg_cli_parse_opts("stability", stab_opts_table, &o, argc, argv, pos, STAB_MAX_RUNS + 1, &n) != TG_CLI_OK)
        return TG_CLI_ERROR;
    if (o.model) {
        if (n) return tg_cli_err("stability: give either traces or -m MODEL, not both");
        return run_stability(&o);
    }
    if (o.prompt || o.keep || o.devices) return tg_cli_err("stability: -p, -dev and --keep belong to the runner form (-m MODEL)");
    if (n < 2) return tg_cli_err("stability: give at least two traces of the same program (A.tgt B.tgt ...), or -m MODEL");
    if (n > STAB_MAX_RUNS) return tg_cli_err("stability: at most %d traces", STAB_MAX_RUNS);
    struct tg_trace * tr[STAB_MAX_RUNS] = { 0 };
    int rc = TG_CLI_OK;
    for (int r = 0; r < n; r++)
        if (!(tr[r] = tg_fx_open(pos[r]))) { rc = TG_CLI_ERROR; break; }
    if (rc == TG_CLI_OK) {
        rc = compare_hashes(tr, pos, n, &o);
        if (o.json) printf("\n");
    }
    for (int r = 0; r < n; r++) if (tr[r]) tg_trace_close(tr[r]);
    return rc;
}
