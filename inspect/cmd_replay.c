// cmd_replay.c - `tgdb replay FILE NODE [--backend B]`: recompute one recorded
// node from its recorded inputs on any backend and compare with the recorded
// output; `tgdb repro FILE NODE -o DIR`: write a self-contained reproduction
// (the op and its parameters, the inputs as .npy and in a GGUF, a C program on
// libtg with a Makefile and a CMakeLists using pkg-config tg, that recomputes
// the node and compares).
//
// Inputs come from CONTENTS records: nodes and (since the recorder stores
// them) leafs that matched TGDB_TRACE_DUMP; weights come from the model file
// (--model GGUF, tensors by name) because the recorder never stores them.
#include "cli.h"
#include "fx.h"
#include "tg/backend.h"
#include "tg/core.h"
#include "tg/gguf.h"
#include "tg/sched.h"
#include "tg/trace-read.h"
#include "tg/types.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

struct replay_opts {
    const char * backend;
    const char * model;
    const char * out;
    int          compute;
    float        rtol;
    bool         json;
};

static const struct tg_cli_opt replay_opts_table[] = {
    { "--backend", "-b", "B", "backend to recompute on (CPU, BLAS, ...: `tgdb generate --device` names; default CPU)",
      TG_CLI_STR, offsetof(struct replay_opts, backend), 0, 0, false, NULL, NULL },
    { "--model", "-m", "GGUF", "model file for inputs that are weights (the trace never stores weights)", TG_CLI_STR,
      offsetof(struct replay_opts, model), 0, 0, false, NULL, NULL },
    { "--compute", NULL, "N", "the computation whose recorded contents to use (default: the last)", TG_CLI_INT,
      offsetof(struct replay_opts, compute), 0, 2147483647.0, false, NULL, NULL },
    { "--rtol", NULL, "R", "relative L2 tolerance for agreement (default 1e-4)", TG_CLI_FLOAT,
      offsetof(struct replay_opts, rtol), 0, 1e6, false, NULL, NULL },
    { "--json", NULL, NULL, "the comparison as JSON", TG_CLI_FLAG, offsetof(struct replay_opts, json), 0, 0, false, NULL, NULL },
    { 0 },
};

static const struct tg_cli_opt repro_opts_table[] = {
    { "--output", "-o", "DIR", "directory to write (created; files in it are replaced)", TG_CLI_STR,
      offsetof(struct replay_opts, out), 0, 0, false, NULL, NULL },
    { "--model", "-m", "GGUF", "model file for inputs that are weights", TG_CLI_STR, offsetof(struct replay_opts, model),
      0, 0, false, NULL, NULL },
    { "--compute", NULL, "N", "the computation whose recorded contents to use (default: the last)", TG_CLI_INT,
      offsetof(struct replay_opts, compute), 0, 2147483647.0, false, NULL, NULL },
    { 0 },
};

static void replay_defaults(struct replay_opts * o) { *o = (struct replay_opts) { .compute = -1, .rtol = 1e-4f }; }

TG_CLI_COMMAND_OPTS(replay, "replay FILE NODE [--backend B] [--model GGUF] [--compute N] [--rtol R] [--json]",
    "recompute a recorded node from its recorded inputs on a backend and compare with the recorded output "
    "(record contents: TGDB_TRACE_DUMP='NODE,INPUTS...'); NODE: NAME, NAME@G or G:INDEX; exit 0 agrees, 1 differs",
    replay_opts_table, struct replay_opts, replay_defaults)
static void repro_defaults(struct replay_opts * o) { *o = (struct replay_opts) { .compute = -1 }; }

TG_CLI_COMMAND_OPTS(repro, "repro FILE NODE -o DIR [--model GGUF] [--compute N]",
    "write a self-contained reproduction of a recorded node: op and params, inputs as .npy and GGUF, a C program on "
    "libtg (Makefile and CMakeLists with pkg-config tg) that recomputes and compares", repro_opts_table, struct replay_opts, repro_defaults)

struct rnode {
    int      gi, ti;
    struct tg_trace_graph  g;
    struct tg_trace_tensor t;
    uint32_t compute;
    int      n_src;
    struct {
        int      slot;                // src slot in the node
        int      ti;
        struct tg_trace_tensor t;
        uint8_t * data;               // elements in logical order, own type
        size_t   nbytes;
        const char * from;            // "trace" or "model"
    } src[TG_TRACE_MAX_SRC];
    uint8_t * expected;
    size_t    exp_bytes;
    int       type, op;               // engine ids
};

static void rnode_free(struct rnode * n) {
    for (int k = 0; k < n->n_src; k++) free(n->src[k].data);
    free(n->expected);
    memset(n, 0, sizeof(*n));
}

static int engine_id_of_op(const char * name) {
    for (int i = 0; i < TG_OP_COUNT; i++) if (!strcmp(tg_op_name((enum tg_op) i), name)) return i;
    return -1;
}

static int engine_id_of_type(const char * name) {
    for (int i = 0; i < TG_TYPE_COUNT; i++) {
        const char * e = tg_type_supported(i) ? tg_type_name((enum tg_type) i) : NULL;
        if (e && !strcmp(e, name)) return i;
    }
    return -1;
}

// NODE: G:INDEX, NAME@G, or NAME (the latest graph holding it with contents recorded).
static bool resolve(struct tg_trace * tr, const char * spec, uint32_t compute, int * gi, int * ti, char * why, size_t cap) {
    char name[TG_TRACE_NAME + 16];
    snprintf(name, sizeof(name), "%s", spec);
    char * at = strrchr(name, '@');
    const char * colon = strchr(spec, ':');
    if (colon && !at) {
        char * end;
        long g = strtol(spec, &end, 10), i = end == colon ? strtol(colon + 1, &end, 10) : -1;
        if (*end == 0 && g >= 0 && i >= 0 && (*gi = tg_trace_find_graph(tr, (uint32_t) g)) >= 0) {
            struct tg_trace_graph gr;
            tg_trace_get_graph(tr, *gi, &gr);
            if (i < gr.n_nodes + gr.n_leafs) { *ti = (int) i; return true; }
        }
    }
    if (at) {
        *at = 0;
        char * end;
        long g = strtol(at + 1, &end, 10);
        if (*end || g < 0 || (*gi = tg_trace_find_graph(tr, (uint32_t) g)) < 0) {
            snprintf(why, cap, "no graph '%s' (see `tgdb trace info`)", at + 1);
            return false;
        }
        if ((*ti = tg_trace_find_tensor(tr, *gi, name)) < 0) {
            snprintf(why, cap, "no tensor '%s' in graph %ld", name, g);
            return false;
        }
        return true;
    }
    int fallback_g = -1, fallback_t = -1;
    for (int g = tg_trace_n_graphs(tr) - 1; g >= 0; g--) {
        int t = tg_trace_find_tensor(tr, g, name);
        if (t < 0) continue;
        struct tg_trace_graph gr;
        tg_trace_get_graph(tr, g, &gr);
        if (tg_trace_find_contents(tr, gr.graph_id, t, compute) >= 0) { *gi = g; *ti = t; return true; }
        if (fallback_g < 0) { fallback_g = g; fallback_t = t; }
    }
    if (fallback_g >= 0) { *gi = fallback_g; *ti = fallback_t; return true; }
    snprintf(why, cap, "no tensor named '%s' (see `tgdb trace nodes`)", name);
    return false;
}

static uint8_t * read_contents(struct tg_trace * tr, int ci, size_t * n) {
    struct tg_trace_contents c;
    if (!tg_trace_get_contents(tr, ci, &c)) return NULL;
    uint8_t * p = malloc(c.raw_size ? (size_t) c.raw_size : 1);
    if (p && tg_trace_read_contents(tr, ci, p, (size_t) c.raw_size) != TG_OK) { free(p); return NULL; }
    *n = (size_t) c.raw_size;
    return p;
}

static bool load_node(struct tg_trace * tr, const char * spec, const struct replay_opts * o, struct rnode * n,
                      char * why, size_t cap) {
    memset(n, 0, sizeof(*n));
    uint32_t want = o->compute >= 0 ? (uint32_t) o->compute : UINT32_MAX;
    if (!resolve(tr, spec, want, &n->gi, &n->ti, why, cap)) return false;
    tg_trace_get_graph(tr, n->gi, &n->g);
    tg_trace_get_tensor(tr, n->gi, n->ti, &n->t);
    const char * op = tg_trace_op_name(tr, n->t.op);
    n->op = engine_id_of_op(op);
    n->type = engine_id_of_type(tg_trace_type_name(tr, n->t.type));
    if (n->ti >= n->g.n_nodes || n->op <= 0) {
        snprintf(why, cap, "'%s' is a leaf (no op): nothing to recompute", n->t.name);
        return false;
    }
    if (tg_op_is_view((enum tg_op) n->op)) {
        snprintf(why, cap, "'%s' is a view (%s): it computes nothing (replay the node that wrote its source)", n->t.name, op);
        return false;
    }
    if (n->type < 0) { snprintf(why, cap, "'%s': type %s unknown to this engine", n->t.name, tg_trace_type_name(tr, n->t.type)); return false; }
    // the pattern that records what replay needs
    char hint[512];
    int hl = snprintf(hint, sizeof(hint), "%s", n->t.name);
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
        char nm[TG_TRACE_NAME];
        if (n->t.src[k] >= 0 && hl < (int) sizeof(hint))
            hl += snprintf(hint + hl, sizeof(hint) - (size_t) hl, ",%s", tg_trace_tensor_name(tr, n->gi, n->t.src[k], nm));
    }
    int ci = tg_trace_find_contents(tr, n->g.graph_id, n->ti, want);
    struct tg_trace_contents oc;
    if (ci < 0 || !tg_trace_get_contents(tr, ci, &oc)) {
        snprintf(why, cap, "no contents recorded for '%s'%s (record them: TGDB_TRACE_DUMP='%s')", n->t.name,
                 o->compute >= 0 ? " in that computation" : "", hint);
        return false;
    }
    n->compute = oc.compute_seq;
    if (!(n->expected = read_contents(tr, ci, &n->exp_bytes))) { snprintf(why, cap, "%s", tg_last_error()); return false; }
    struct tg_gguf * model = NULL;
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
        if (n->t.src[k] < 0) continue;
        int s = n->n_src++;
        n->src[s].slot = k;
        n->src[s].ti = n->t.src[k];
        tg_trace_get_tensor(tr, n->gi, n->t.src[k], &n->src[s].t);
        int sci = tg_trace_find_contents(tr, n->g.graph_id, n->t.src[k], n->compute);
        if (sci >= 0) {
            n->src[s].data = read_contents(tr, sci, &n->src[s].nbytes);
            n->src[s].from = "trace";
            if (!n->src[s].data) { snprintf(why, cap, "contents of '%s': %s", n->src[s].t.name, tg_last_error()); goto fail; }
            continue;
        }
        if (o->model && !model && !(model = tg_gguf_open(o->model))) { snprintf(why, cap, "%s", tg_last_error()); goto fail; }
        int64_t gti = model ? tg_gguf_find_tensor(model, n->src[s].t.name) : -1;
        const struct tg_gguf_tensor_info * info = gti >= 0 ? tg_gguf_tensor(model, gti) : NULL;
        const void * d = info ? tg_gguf_tensor_data(model, gti) : NULL;
        bool same = info && d && (int) info->type == engine_id_of_type(tg_trace_type_name(tr, n->src[s].t.type));
        for (int dd = 0; same && dd < 4; dd++) same = info->ne[dd] == n->src[s].t.ne[dd];
        if (!same) {
            snprintf(why, cap, "input '%s' of '%s' was not recorded in computation %u%s (record it: TGDB_TRACE_DUMP='%s'%s)",
                     n->src[s].t.name, n->t.name, n->compute,
                     model ? " and the model has no tensor of that name, type and shape" : "", hint,
                     model ? "" : "; weights: --model GGUF");
            goto fail;
        }
        n->src[s].nbytes = info->size;
        n->src[s].data = malloc(info->size ? info->size : 1);
        if (!n->src[s].data) { snprintf(why, cap, "out of memory"); goto fail; }
        memcpy(n->src[s].data, d, info->size);
        n->src[s].from = "model";
    }
    tg_gguf_close(model);
    return true;
fail:
    tg_gguf_close(model);
    return false;
}

// Recomputes n on backend `bname` (CPU as the fallback for ops it lacks) into
// a malloc'd buffer of the node's bytes; *ran_on names the backend that ran it.
static uint8_t * recompute(struct tg_trace * tr, const struct rnode * n, const char * bname, char * ran_on, size_t rcap,
                           char * why, size_t cap) {
    struct tg_backend * be[2] = { NULL, NULL };
    int nbe = 0;
    uint8_t * out = NULL;
    struct tg_sched * s = NULL;
    struct tg_context * ctx = NULL;
    bool cpu_only = !bname || !strcasecmp(bname, "CPU");
    if (!cpu_only && !(be[nbe++] = tg_backend_init_by_name(bname, NULL))) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    if (!(be[nbe++] = tg_backend_cpu_init())) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    struct tg_context_params cp = { .mem_size = 32 * tg_tensor_overhead() + tg_graph_overhead(16) + 4096, .no_alloc = true };
    if (!(ctx = tg_context_new(cp))) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    struct tg_tensor * x = tg_new_tensor(ctx, (enum tg_type) n->type, 4, n->t.ne);
    if (!x) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    tg_set_name(x, n->t.name);
    x->op = (enum tg_op) n->op;
    memcpy(x->op_params, n->t.op_params, sizeof(x->op_params));
    struct tg_tensor * srcs[TG_TRACE_MAX_SRC] = { 0 };
    for (int k = 0; k < n->n_src; k++) {
        int ty = engine_id_of_type(tg_trace_type_name(tr, n->src[k].t.type));
        if (ty < 0) { snprintf(why, cap, "'%s': unknown type", n->src[k].t.name); goto done; }
        srcs[k] = tg_new_tensor(ctx, (enum tg_type) ty, 4, n->src[k].t.ne);
        if (!srcs[k]) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
        tg_set_name(srcs[k], n->src[k].t.name);
        tg_set_input(srcs[k]);
        if (tg_nbytes(srcs[k]) != n->src[k].nbytes) {
            snprintf(why, cap, "'%s': %zu bytes recorded, %zu expected", n->src[k].t.name, n->src[k].nbytes, tg_nbytes(srcs[k]));
            goto done;
        }
        x->src[n->src[k].slot] = srcs[k];
    }
    tg_set_output(x);
    struct tg_graph * g = tg_graph_new(ctx, 16);
    if (!g || tg_graph_build_forward(g, x) != TG_OK || !(s = tg_sched_new(be, nbe, 16))) {
        snprintf(why, cap, "%s", tg_last_error());
        goto done;
    }
    if (!cpu_only) tg_sched_set_tensor_backend(s, x, be[0]);
    if (tg_sched_alloc_graph(s, g) != TG_OK) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    for (int k = 0; k < n->n_src; k++)
        if (tg_backend_tensor_set(srcs[k], n->src[k].data, 0, n->src[k].nbytes) != TG_OK) {
            snprintf(why, cap, "%s", tg_last_error());
            goto done;
        }
    if (tg_sched_graph_compute(s, g) != TG_OK) { snprintf(why, cap, "%s", tg_last_error()); goto done; }
    struct tg_backend * ran = tg_sched_get_tensor_backend(s, x);
    snprintf(ran_on, rcap, "%s", ran ? tg_backend_name(ran) : "?");
    out = malloc(tg_nbytes(x));
    if (!out || tg_backend_tensor_get(x, out, 0, tg_nbytes(x)) != TG_OK) {
        free(out);
        out = NULL;
        snprintf(why, cap, "reading the result: %s", tg_last_error());
    }
done:
    tg_sched_free(s);
    tg_context_free(ctx);
    for (int k = 0; k < nbe; k++) if (be[k]) tg_backend_free(be[k]);
    return out;
}

// Elements of a tensor of `type` as floats (integer types converted), NULL if none.
static float * as_floats(int type, const uint8_t * p, int64_t n) {
    float * v = malloc((size_t) (n > 0 ? n : 1) * sizeof(float));
    if (!v) return NULL;
    const struct tg_type_traits * tt = tg_type_traits((enum tg_type) type);
    if (tt && tt->to_float) tt->to_float(p, v, n);
    else if (type == TG_TYPE_I32) for (int64_t i = 0; i < n; i++) { int32_t x; memcpy(&x, p + 4 * i, 4); v[i] = (float) x; }
    else { free(v); return NULL; }
    return v;
}

struct cmp {
    int64_t n, n_nan_a, n_nan_b, n_nan_mismatch, n_diff;
    double  max_abs, rel_l2;
    bool    bitwise;
};

static bool compare(int type, const uint8_t * a, const uint8_t * b, size_t bytes, int64_t n, struct cmp * c) {
    memset(c, 0, sizeof(*c));
    c->n = n;
    c->bitwise = memcmp(a, b, bytes) == 0;
    float * x = as_floats(type, a, n), * y = as_floats(type, b, n);
    if (!x || !y) { free(x); free(y); return false; }
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        bool nx = isnan(x[i]), ny = isnan(y[i]);
        c->n_nan_a += nx;
        c->n_nan_b += ny;
        if (nx != ny) { c->n_nan_mismatch++; continue; }
        if (nx) continue;
        if (isinf(x[i]) || isinf(y[i])) { if (x[i] != y[i]) c->n_nan_mismatch++; continue; }
        double d = fabs((double) x[i] - (double) y[i]);
        if (d > 0) c->n_diff++;
        if (d > c->max_abs) c->max_abs = d;
        num += d * d;
        den += (double) x[i] * (double) x[i];
    }
    c->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    free(x);
    free(y);
    return true;
}

static int64_t n_elem(const int64_t ne[4]) { return ne[0] * ne[1] * ne[2] * ne[3]; }

static int cmd_replay(int argc, char ** argv) {
    struct replay_opts o;
    replay_defaults(&o);
    const char * pos[3];
    int np = 0;
    if (tg_cli_parse_opts("replay", replay_opts_table, &o, argc, argv, pos, 3, &np) != TG_CLI_OK) return TG_CLI_ERROR;
    if (np != 2) return tg_cli_usage("replay");
    struct tg_trace * tr = tg_fx_open(pos[0]);
    if (!tr) return TG_CLI_ERROR;
    struct rnode n;
    char why[1024] = "", ran[64] = "?";
    int rc = TG_CLI_OK;
    uint8_t * out = NULL;
    if (!load_node(tr, pos[1], &o, &n, why, sizeof(why))) { rc = tg_cli_err("replay: %s in %s", why, pos[0]); goto done; }
    const char * bname = o.backend ? o.backend : "CPU";
    if (!(out = recompute(tr, &n, bname, ran, sizeof(ran), why, sizeof(why)))) {
        rc = tg_cli_err("replay: recomputing '%s' on %s: %s", n.t.name, bname, why);
        goto done;
    }
    struct cmp c;
    if (!compare(n.type, n.expected, out, n.exp_bytes, n_elem(n.t.ne), &c)) {
        rc = tg_cli_err("replay: cannot compare values of type %s", tg_type_name((enum tg_type) n.type));
        goto done;
    }
    struct tg_trace_placement pl = { .backend = -1 };
    tg_trace_get_placement(tr, n.gi, n.ti, &pl);
    const char * rec_be = tg_trace_backend_name(tr, n.g.sched_id, pl.backend);
    bool agree = c.n_nan_mismatch == 0 && c.rel_l2 <= o.rtol;
    if (o.json) {
        printf("{\"node\": ");
        tg_fx_json_str(stdout, n.t.name);
        printf(", \"graph\": %u, \"index\": %d, \"compute\": %u, \"op\": ", n.g.graph_id, n.ti, n.compute);
        tg_fx_json_str(stdout, tg_op_name((enum tg_op) n.op));
        printf(", \"recorded_backend\": ");
        tg_fx_json_str(stdout, rec_be);
        printf(", \"backend\": ");
        tg_fx_json_str(stdout, ran);
        printf(", \"elements\": %" PRId64 ", \"bitwise\": %s, \"rel_l2\": %.9g, \"max_abs\": %.9g, \"differing\": %" PRId64
               ", \"nan_recorded\": %" PRId64 ", \"nan_recomputed\": %" PRId64 ", \"nan_mismatch\": %" PRId64
               ", \"rtol\": %g, \"agrees\": %s, \"inputs\": [", c.n, c.bitwise ? "true" : "false", c.rel_l2, c.max_abs,
               c.n_diff, c.n_nan_a, c.n_nan_b, c.n_nan_mismatch, (double) o.rtol, agree ? "true" : "false");
        for (int k = 0; k < n.n_src; k++) {
            printf("%s{\"name\": ", k ? ", " : "");
            tg_fx_json_str(stdout, n.src[k].t.name);
            printf(", \"from\": \"%s\"}", n.src[k].from);
        }
        printf("]}\n");
    } else {
        printf("'%s' (graph %u node %d, computation %u): %s %s, recorded on %s\n", n.t.name, n.g.graph_id, n.ti, n.compute,
               tg_op_name((enum tg_op) n.op), tg_type_name((enum tg_type) n.type), rec_be);
        for (int k = 0; k < n.n_src; k++)
            printf("  src%d '%s' from the %s\n", n.src[k].slot, n.src[k].t.name, n.src[k].from);
        printf("recomputed on %s: %s; rel L2 %.3g, max |diff| %.3g, %" PRId64 " of %" PRId64 " elements differ, NaN %" PRId64
               " recorded / %" PRId64 " recomputed%s\n", ran, c.bitwise ? "bitwise identical" : agree ? "agrees within --rtol"
               : "DIFFERS", c.rel_l2, c.max_abs, c.n_diff, c.n, c.n_nan_a, c.n_nan_b,
               c.n_nan_mismatch ? " (at other positions)" : "");
    }
    rc = agree ? TG_CLI_OK : TG_CLI_FOUND;
done:
    free(out);
    rnode_free(&n);
    tg_trace_close(tr);
    return rc;
}

// ---- repro ----------------------------------------------------------------------

static bool write_npy_file(const char * path, int type, const uint8_t * data, const int64_t ne[4]) {
    int64_t n = n_elem(ne);
    bool is_i32 = type == TG_TYPE_I32;
    float * v = is_i32 ? NULL : as_floats(type, data, n);
    if (!is_i32 && !v) return false;
    int nd = 1;
    for (int d = 0; d < 4; d++) if (ne[d] > 1) nd = d + 1;
    char shape[128] = "", hdr[256];
    for (int d = nd - 1; d >= 0; d--) {
        char one[32];
        snprintf(one, sizeof(one), "%lld,%s", (long long) ne[d], nd == 1 || d == 0 ? "" : " ");
        strcat(shape, one);
    }
    int hl = snprintf(hdr, sizeof(hdr), "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", is_i32 ? "<i4" : "<f4", shape);
    int pad = (64 - (10 + hl + 1) % 64) % 64;
    FILE * f = fopen(path, "wb");
    if (!f) { free(v); return false; }
    uint16_t hlen = (uint16_t) (hl + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hlen & 0xFF, f);
    fputc(hlen >> 8, f);
    fwrite(hdr, 1, (size_t) hl, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    bool ok = fwrite(is_i32 ? (const void *) data : (const void *) v, 4, (size_t) n, f) == (size_t) n;
    ok = fclose(f) == 0 && ok;
    free(v);
    return ok;
}

static const char repro_c[] =
"// repro.c - recomputes one node recorded by tgdb and compares it with the\n"
"// recorded result. Written by `tgdb repro`; build with `make` (pkg-config tg)\n"
"// or CMake. Inputs and the expected output are in repro.gguf (src<slot>,\n"
"// expected) and, for reading with NumPy, in *.npy.\n"
"// Exit status: 0 the result matches the recorded one (NaN where it had NaN,\n"
"// relative L2 <= RTOL elsewhere): the problem reproduces; 1 it does not; 2 error.\n"
"#include \"tg/backend.h\"\n#include \"tg/core.h\"\n#include \"tg/gguf.h\"\n#include \"tg/sched.h\"\n#include \"tg/types.h\"\n\n"
"#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
"#include \"repro.h\"\n\n"
"static float * floats(const struct tg_tensor * t, const void * p) {\n"
"    int64_t n = tg_nelements(t);\n"
"    float * v = malloc((size_t) n * sizeof(float));\n"
"    const struct tg_type_traits * tt = tg_type_traits(t->type);\n"
"    if (!v) return NULL;\n"
"    if (tt && tt->to_float) tt->to_float(p, v, n);\n"
"    else for (int64_t i = 0; i < n; i++) { int32_t x; memcpy(&x, (const char *) p + 4 * i, 4); v[i] = (float) x; }\n"
"    return v;\n"
"}\n\n"
"int main(int argc, char ** argv) {\n"
"    const char * path = argc > 1 ? argv[1] : \"repro.gguf\";\n"
"    struct tg_gguf * gg = tg_gguf_open(path);\n"
"    if (!gg) { fprintf(stderr, \"repro: %s\\n\", tg_last_error()); return 2; }\n"
"    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 1 << 20, .no_alloc = true });\n"
"    struct tg_tensor * srcs[TG_MAX_SRC] = { 0 };\n"
"    struct tg_tensor * x = tg_new_tensor(ctx, REPRO_TYPE, 4, (const int64_t[4]) REPRO_NE);\n"
"    x->op = REPRO_OP;\n"
"    memcpy(x->op_params, (const int32_t[TG_MAX_OP_PARAMS]) REPRO_OP_PARAMS, sizeof(x->op_params));\n"
"    tg_set_name(x, REPRO_NAME);\n"
"    for (int s = 0; s < TG_MAX_SRC; s++) {\n"
"        char name[16];\n"
"        snprintf(name, sizeof(name), \"src%d\", s);\n"
"        int64_t i = tg_gguf_find_tensor(gg, name);\n"
"        if (i < 0) continue;\n"
"        const struct tg_gguf_tensor_info * in = tg_gguf_tensor(gg, i);\n"
"        srcs[s] = tg_new_tensor(ctx, in->type, 4, in->ne);\n"
"        tg_set_input(srcs[s]);\n"
"        x->src[s] = srcs[s];\n"
"    }\n"
"    tg_set_output(x);\n"
"    struct tg_graph * g = tg_graph_new(ctx, 16);\n"
"    struct tg_backend * cpu = tg_backend_cpu_init();\n"
"    struct tg_sched * sc = cpu ? tg_sched_new(&cpu, 1, 16) : NULL;\n"
"    if (!g || !sc || tg_graph_build_forward(g, x) != TG_OK || tg_sched_alloc_graph(sc, g) != TG_OK) {\n"
"        fprintf(stderr, \"repro: %s\\n\", tg_last_error());\n"
"        return 2;\n"
"    }\n"
"    for (int s = 0; s < TG_MAX_SRC; s++) {\n"
"        char name[16];\n"
"        snprintf(name, sizeof(name), \"src%d\", s);\n"
"        int64_t i = tg_gguf_find_tensor(gg, name);\n"
"        if (i >= 0 && tg_backend_tensor_set(srcs[s], tg_gguf_tensor_data(gg, i), 0, tg_nbytes(srcs[s])) != TG_OK) {\n"
"            fprintf(stderr, \"repro: %s\\n\", tg_last_error());\n"
"            return 2;\n"
"        }\n"
"    }\n"
"    if (tg_sched_graph_compute(sc, g) != TG_OK) { fprintf(stderr, \"repro: %s\\n\", tg_last_error()); return 2; }\n"
"    void * got = malloc(tg_nbytes(x));\n"
"    int64_t ei = tg_gguf_find_tensor(gg, \"expected\");\n"
"    if (!got || ei < 0 || tg_backend_tensor_get(x, got, 0, tg_nbytes(x)) != TG_OK) { fprintf(stderr, \"repro: no result\\n\"); return 2; }\n"
"    float * a = floats(x, tg_gguf_tensor_data(gg, ei)), * b = floats(x, got);\n"
"    int64_t n = tg_nelements(x), nan_a = 0, nan_b = 0, mismatch = 0;\n"
"    double num = 0, den = 0;\n"
"    for (int64_t i = 0; i < n; i++) {\n"
"        nan_a += isnan(a[i]);\n"
"        nan_b += isnan(b[i]);\n"
"        if (isnan(a[i]) != isnan(b[i])) { mismatch++; continue; }\n"
"        if (isnan(a[i]) || isinf(a[i]) || isinf(b[i])) { mismatch += !isnan(a[i]) && a[i] != b[i]; continue; }\n"
"        num += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);\n"
"        den += (double) a[i] * a[i];\n"
"    }\n"
"    double rel = den > 0 ? sqrt(num / den) : sqrt(num);\n"
"    printf(\"%s (%s): %lld elements, NaN %lld recorded / %lld recomputed, rel L2 %.3g\\n\", REPRO_NAME,\n"
"           tg_op_name(REPRO_OP), (long long) n, (long long) nan_a, (long long) nan_b, rel);\n"
"    bool same = mismatch == 0 && rel <= REPRO_RTOL;\n"
"    printf(\"%s\\n\", same ? \"REPRODUCED: the recomputed result matches the recorded one\" : \"NOT reproduced\");\n"
"    free(a); free(b); free(got);\n"
"    tg_sched_free(sc); tg_backend_free(cpu); tg_context_free(ctx); tg_gguf_close(gg);\n"
"    return same ? 0 : 1;\n"
"}\n";

static bool write_text(const char * dir, const char * name, const char * text) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE * f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static int cmd_repro(int argc, char ** argv) {
    struct replay_opts o;
    repro_defaults(&o);
    const char * pos[3];
    int np = 0;
    if (tg_cli_parse_opts("repro", repro_opts_table, &o, argc, argv, pos, 3, &np) != TG_CLI_OK) return TG_CLI_ERROR;
    if (np != 2 || !o.out) return tg_cli_usage("repro");
    if (mkdir(o.out, 0777) != 0 && errno != EEXIST) return tg_cli_err("repro: cannot create '%s': %s", o.out, strerror(errno));
    struct tg_trace * tr = tg_fx_open(pos[0]);
    if (!tr) return TG_CLI_ERROR;
    struct rnode n;
    char why[1024] = "", path[4096];
    int rc = TG_CLI_OK;
    struct tg_gguf_writer * w = NULL;
    if (!load_node(tr, pos[1], &o, &n, why, sizeof(why))) { rc = tg_cli_err("repro: %s in %s", why, pos[0]); goto done; }
    // the GGUF: inputs (src<slot>) and the expected output, in their own types
    w = tg_gguf_writer_new();
    if (!w) { rc = tg_cli_err("repro: out of memory"); goto done; }
    tg_gguf_set_str(w, "repro.node", n.t.name);
    tg_gguf_set_str(w, "repro.op", tg_op_name((enum tg_op) n.op));
    tg_gguf_set_str(w, "repro.trace", pos[0]);
    tg_gguf_set_u32(w, "repro.graph", n.g.graph_id);
    tg_gguf_set_u32(w, "repro.compute", n.compute);
    tg_gguf_set_arr(w, "repro.op_params", TG_GGUF_INT32, n.t.op_params, TG_TRACE_MAX_OP_PARAMS);
    for (int k = 0; k < n.n_src; k++) {
        char nm[16];
        snprintf(nm, sizeof(nm), "src%d", n.src[k].slot);
        int ty = engine_id_of_type(tg_trace_type_name(tr, n.src[k].t.type));
        if (tg_gguf_add_tensor(w, nm, (enum tg_type) ty, 4, n.src[k].t.ne, n.src[k].data) != TG_OK) {
            rc = tg_cli_err("repro: %s", tg_last_error());
            goto done;
        }
        snprintf(path, sizeof(path), "%s/src%d.npy", o.out, n.src[k].slot);
        if (!write_npy_file(path, ty, n.src[k].data, n.src[k].t.ne))
            fprintf(stderr, "tgdb: warning: repro: no .npy for '%s' (type %s)\n", n.src[k].t.name, tg_type_name((enum tg_type) ty));
    }
    if (tg_gguf_add_tensor(w, "expected", (enum tg_type) n.type, 4, n.t.ne, n.expected) != TG_OK) {
        rc = tg_cli_err("repro: %s", tg_last_error());
        goto done;
    }
    snprintf(path, sizeof(path), "%s/expected.npy", o.out);
    write_npy_file(path, n.type, n.expected, n.t.ne);
    snprintf(path, sizeof(path), "%s/repro.gguf", o.out);
    if (tg_gguf_write(w, path) != TG_OK) { rc = tg_cli_err("repro: %s", tg_last_error()); goto done; }
    // repro.h: the node as constants
    char h[4096];
    int hl = snprintf(h, sizeof(h),
        "// repro.h - the node `tgdb repro` extracted from %s (graph %u, node %d, computation %u).\n"
        "#define REPRO_NAME \"%s\"\n#define REPRO_OP TG_OP_%s\n#define REPRO_TYPE TG_TYPE_%s\n"
        "#define REPRO_NE { %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 " }\n#define REPRO_RTOL 1e-4\n#define REPRO_OP_PARAMS {",
        pos[0], n.g.graph_id, n.ti, n.compute, n.t.name, tg_op_name((enum tg_op) n.op), "F32",
        n.t.ne[0], n.t.ne[1], n.t.ne[2], n.t.ne[3]);
    for (int k = 0; k < TG_TRACE_MAX_OP_PARAMS; k++) hl += snprintf(h + hl, sizeof(h) - (size_t) hl, "%s %d", k ? "," : "", n.t.op_params[k]);
    snprintf(h + hl, sizeof(h) - (size_t) hl, " }\n");
    // the type: its enum spelling is the upper-case name ("f16" -> F16, "q8_0" -> Q8_0)
    char tyname[32];
    snprintf(tyname, sizeof(tyname), "%s", tg_type_name((enum tg_type) n.type));
    for (char * c = tyname; *c; c++) if (*c >= 'a' && *c <= 'z') *c = (char) (*c - 'a' + 'A');
    char * tpos = strstr(h, "TG_TYPE_F32");
    if (tpos) {
        char rest[4096];
        snprintf(rest, sizeof(rest), "%s", tpos + strlen("TG_TYPE_F32"));
        snprintf(tpos, sizeof(h) - (size_t) (tpos - h), "TG_TYPE_%s%s", tyname, rest);
    }
    static const char makefile[] =
        "# Builds the reproduction against an installed (or build-tree) libtg: PKG_CONFIG_PATH must find tg.pc.\n"
        "CFLAGS ?= -O2 -g\n"
        "repro: repro.c repro.h\n"
        "\t$(CC) -std=gnu11 $(CFLAGS) -o $@ repro.c $$(pkg-config --cflags --libs --static tg) -lm\n"
        "run: repro\n\t./repro repro.gguf\n";
    static const char cmake[] =
        "cmake_minimum_required(VERSION 3.16)\nproject(tg_repro C)\nfind_package(PkgConfig REQUIRED)\n"
        "pkg_check_modules(TG REQUIRED IMPORTED_TARGET tg)\nadd_executable(repro repro.c)\n"
        "target_link_libraries(repro PRIVATE PkgConfig::TG m)\nset_property(TARGET repro PROPERTY C_STANDARD 11)\n";
    char readme[2048];
    snprintf(readme, sizeof(readme),
             "Reproduction of node '%s' (%s) from trace %s, graph %u, node %d, computation %u.\n"
             "repro.gguf holds the inputs (src<slot>, in the node's source slots) and the recorded result (expected);\n"
             "src*.npy and expected.npy hold the same values as float32 (int32 for integer tensors) for NumPy.\n"
             "Build and run:  make run   (or: cmake -S . -B build && cmake --build build && build/repro repro.gguf)\n"
             "The program recomputes the node on the CPU backend and says REPRODUCED when the result matches the\n"
             "recorded one (NaN at the same places, relative L2 <= 1e-4 elsewhere).\n",
             n.t.name, tg_op_name((enum tg_op) n.op), pos[0], n.g.graph_id, n.ti, n.compute);
    if (!write_text(o.out, "repro.h", h) || !write_text(o.out, "repro.c", repro_c) || !write_text(o.out, "Makefile", makefile) ||
        !write_text(o.out, "CMakeLists.txt", cmake) || !write_text(o.out, "README.txt", readme)) {
        rc = tg_cli_err("repro: cannot write into '%s': %s", o.out, strerror(errno));
        goto done;
    }
    printf("wrote %s: repro.gguf (%d input%s + expected), *.npy, repro.c, repro.h, Makefile, CMakeLists.txt, README.txt\n",
           o.out, n.n_src, n.n_src == 1 ? "" : "s");
    printf("node '%s' (%s), graph %u node %d, computation %u; build: make -C %s run\n", n.t.name, tg_op_name((enum tg_op) n.op),
           n.g.graph_id, n.ti, n.compute, o.out);
done:
    tg_gguf_writer_free(w);
    rnode_free(&n);
    tg_trace_close(tr);
    return rc;
}
