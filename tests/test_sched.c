// test_sched.c - scheduler placement (causes), splits and copies, CPU+BLAS
// against CPU only, the eval callback protocol, observers, and reuse of one
// scheduler for two graphs.
#include "check.h"
#include "llama_layers.h"
#include "tg/cpu.h"
#include "tg/observe.h"
#include "tg/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 1;
static float rndf(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float) ((rng_state >> 33) % 20001) / 10000.0f - 1.0f;
}

static struct tg_context * new_ctx(size_t mb) {
    struct tg_context_params p = { mb << 20, NULL, true };
    return tg_context_new(p);
}

static enum tg_status fill(struct tg_tensor * t, float scale) {
    int64_t n = tg_nelements(t);
    float * v = malloc((size_t) n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = scale * rndf();
    enum tg_status st = tg_backend_tensor_set(t, v, 0, (size_t) n * sizeof(float));
    free(v);
    return st;
}

static bool fill_ok(struct tg_tensor * t) {
    return fill(t, 1.0f) == TG_OK;
}

static float * read_f32(const struct tg_tensor * t) {
    float * v = malloc(tg_nbytes(t));
    tg_backend_tensor_get(t, v, 0, tg_nbytes(t));
    return v;
}

static double nmse(const float * a, const float * b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) { num += (a[i] - b[i]) * (double) (a[i] - b[i]); den += (double) b[i] * b[i]; }
    return den > 0 ? num / den : num;
}

static const char * backend_of(struct tg_sched * s, const struct tg_tensor * t) {
    struct tg_backend * b = tg_sched_get_tensor_backend(s, t);
    return b ? tg_backend_name(b) : "-";
}

static enum tg_cause cause_of(struct tg_sched * s, const struct tg_tensor * t) {
    const struct tg_sched_placement * p = tg_sched_get_placement(s, t);
    return p ? p->cause : TG_CAUSE_NONE;
}

// ---- the sched-splits scenario -------------------------------------------------------

struct small {
    struct tg_context * wctx, * ctx;
    struct tg_buffer * wbuf;
    struct tg_tensor * W, * b1, * b2, * x, * h, * y, * z;
    struct tg_graph * g;
};

static void small_build(struct small * m, struct tg_backend * cpu, int n_cols, enum tg_buffer_usage usage) {
    rng_state = 11;
    m->wctx = new_ctx(1);
    m->W = tg_set_name(tg_new_tensor_2d(m->wctx, TG_TYPE_F32, 64, 48), "W");
    m->b1 = tg_set_name(tg_new_tensor_1d(m->wctx, TG_TYPE_F32, 48), "b1");
    m->b2 = tg_set_name(tg_new_tensor_1d(m->wctx, TG_TYPE_F32, 48), "b2");
    m->wbuf = tg_backend_alloc_ctx_tensors(m->wctx, cpu);
    tg_buffer_set_usage(m->wbuf, usage);
    fill(m->W, 0.3f); fill(m->b1, 1.0f); fill(m->b2, 1.0f);
    m->ctx = new_ctx(1);
    m->x = tg_set_name(tg_new_tensor_2d(m->ctx, TG_TYPE_F32, 64, n_cols), "x");
    tg_set_input(m->x);
    m->h = tg_set_name(tg_mul_mat(m->ctx, m->W, m->x), "h");
    m->y = tg_set_name(tg_add(m->ctx, m->h, m->b1), "y");
    m->z = tg_set_name(tg_add(m->ctx, m->y, m->b2), "z");
    tg_set_output(m->z);
    m->g = tg_graph_new(m->ctx, 64);
    tg_graph_build_forward(m->g, m->z);
}

static void small_free(struct small * m) {
    tg_context_free(m->ctx);
    tg_buffer_free(m->wbuf);
    tg_context_free(m->wctx);
}

static void test_splits_scenario(struct tg_backend * cpu, struct tg_backend * blas) {
    if (!blas) {
        printf("note: built without TG_HAVE_BLAS: sched-splits scenario runs CPU only\n");
        struct small m;
        small_build(&m, cpu, 16, TG_BUFFER_USAGE_ANY);
        struct tg_sched * s = tg_sched_new(&cpu, 1, 0);
        CHECK(tg_sched_alloc_graph(s, m.g) == TG_OK && tg_sched_get_n_splits(s) == 1, "CPU only: 1 split");
        tg_sched_free(s);
        small_free(&m);
        return;
    }
    struct tg_backend * bk[2] = { blas, cpu };
    struct { int n; enum tg_buffer_usage usage; int splits; const char * h_on; enum tg_cause h_cause; enum tg_cause y_cause; } cases[] = {
        { 16, TG_BUFFER_USAGE_ANY,     2, "BLAS", TG_CAUSE_SRC,           TG_CAUSE_UNSUPPORTED },
        { 16, TG_BUFFER_USAGE_WEIGHTS, 1, "CPU",  TG_CAUSE_WEIGHT_BUFFER, TG_CAUSE_WEIGHT_BUFFER },
        { 64, TG_BUFFER_USAGE_WEIGHTS, 2, "BLAS", TG_CAUSE_OFFLOAD,       TG_CAUSE_WEIGHT_BUFFER },
    };
    for (int c = 0; c < 3; c++) {
        struct small m;
        small_build(&m, cpu, cases[c].n, cases[c].usage);
        struct tg_sched * s = tg_sched_new(bk, 2, 64);
        const char * us = tg_buffer_usage_name(cases[c].usage);
        CHECK(tg_sched_alloc_graph(s, m.g) == TG_OK, "scenario n=%d usage %s: allocated", cases[c].n, us);
        CHECK(tg_sched_get_n_splits(s) == cases[c].splits, "scenario n=%d usage %s: %d split(s) (expected %d)",
              cases[c].n, us, tg_sched_get_n_splits(s), cases[c].splits);
        const struct tg_sched_placement * ph = tg_sched_get_placement(s, m.h);
        CHECK(strcmp(backend_of(s, m.h), cases[c].h_on) == 0 && ph->cause == cases[c].h_cause,
              "scenario n=%d usage %s: matmul on %s, cause %s (%s)", cases[c].n, us, backend_of(s, m.h),
              tg_cause_name(ph->cause), ph->detail);
        const struct tg_sched_placement * py = tg_sched_get_placement(s, m.y);
        CHECK(strcmp(backend_of(s, m.y), "CPU") == 0 && py->cause == cases[c].y_cause && strcmp(backend_of(s, m.z), "CPU") == 0,
              "scenario n=%d usage %s: adds on CPU, cause %s (%s)", cases[c].n, us, tg_cause_name(py->cause), py->detail);
        CHECK(tg_sched_get_n_copies(s) == 0, "scenario: BLAS shares host memory: no copies");
        if (cases[c].usage == TG_BUFFER_USAGE_WEIGHTS && cases[c].n == 16)
            CHECK(strstr(ph->detail, "weight W is in buffer CPU (usage weights)") != NULL, "weight cause detail: %s", ph->detail);
        if (c == 0)   // a note with numbers, written when read (%s and %d arguments kept until then)
            CHECK(!strcmp(ph->detail, "BLAS supports MUL_MAT and 1/2 of its inputs' buffers"), "src cause detail: %s", ph->detail);
        int unwritten = 0;
        for (int i = 0; i < tg_sched_n_node_placements(s); i++) {
            const struct tg_sched_placement * p = tg_sched_node_placement(s, i);
            unwritten += !p || !p->detail[0] || strchr(p->detail, '%') != NULL;
        }
        for (int l = 0; l < tg_sched_n_leaf_placements(s); l++) {
            const struct tg_sched_placement * p = tg_sched_leaf_placement(s, l);
            unwritten += !p || !p->detail[0] || strchr(p->detail, '%') != NULL;
        }
        CHECK(unwritten == 0, "scenario n=%d usage %s: every placement's detail reads as text (%d not)", cases[c].n, us, unwritten);
        const struct tg_sched_placement * pw = tg_sched_get_placement(s, m.W);
        CHECK(pw && pw->cause == TG_CAUSE_PREALLOCATED && strcmp(backend_of(s, m.W), "CPU") == 0, "weight leaf W preallocated on CPU");
        const struct tg_sched_placement * px = tg_sched_get_placement(s, m.x);
        CHECK(px && px->cause == TG_CAUSE_DST, "input x placed with its first consumer (%s)", px ? px->detail : "");
        if (cases[c].splits == 2) {
            const struct tg_sched_split * sp = tg_sched_get_split(s, 1);
            CHECK(sp && sp->i_start == 1 && sp->n_inputs == 1 && sp->inputs[0] == m.h && sp->copies[0] == NULL,
                  "split 1 reads h from split 0 in place");
        }
        // compute and compare with CPU only
        fill(m.x, 1.0f);
        CHECK(tg_sched_graph_compute(s, m.g) == TG_OK, "scenario n=%d usage %s: computed", cases[c].n, us);
        float * got = read_f32(m.z);
        struct tg_sched * sc = tg_sched_new(&cpu, 1, 64);
        tg_sched_reset(s);
        CHECK(tg_sched_graph_compute(sc, m.g) == TG_OK, "CPU-only scheduler computes the same graph");
        float * want = read_f32(m.z);
        double e = nmse(got, want, tg_nelements(m.z));
        CHECK(e < 1e-10, "scenario n=%d usage %s: matches CPU only (nmse %.2e)", cases[c].n, us, e);
        free(got); free(want);
        tg_sched_free(sc);
        tg_sched_free(s);
        small_free(&m);
    }
}

// ---- a test backend with its own buffer type: copies ---------------------------------------

static const char * alt_buft_name(struct tg_buffer_type * b) { (void) b; return "ALT_HOST"; }
static struct tg_buffer_type alt_buft;
static struct tg_buffer * alt_alloc(struct tg_buffer_type * b, size_t size) {
    struct tg_buffer * buf = tg_buft_alloc_buffer(tg_cpu_buffer_type(), size);
    if (buf) buf->buft = b;
    return buf;
}
static bool alt_is_host(struct tg_buffer_type * b) { (void) b; return true; }
static struct tg_buffer_type alt_buft = {
    .iface = { .get_name = alt_buft_name, .alloc_buffer = alt_alloc, .is_host = alt_is_host },
};
static const char * alt_name(struct tg_backend * b) { (void) b; return "ALT"; }
static struct tg_buffer_type * alt_default(struct tg_backend * b) { (void) b; return &alt_buft; }
static int alt_computes;
static enum tg_status alt_compute(struct tg_backend * b, struct tg_graph * g) {
    alt_computes++;
    return tg_backend_graph_compute(b->context, g);   // delegate to the CPU
}
static bool alt_supports_op(struct tg_backend * b, const struct tg_tensor * op) {
    (void) b;
    return op->op == TG_OP_ADD || op->op == TG_OP_MUL || op->op == TG_OP_NONE || tg_op_is_view(op->op);
}
static bool alt_supports_buft(struct tg_backend * b, struct tg_buffer_type * buft) { (void) b; return buft == &alt_buft; }

static void test_copies(struct tg_backend * cpu) {
    struct tg_backend alt = {
        .iface = { .get_name = alt_name, .get_default_buffer_type = alt_default, .graph_compute = alt_compute,
                   .supports_op = alt_supports_op, .supports_buft = alt_supports_buft },
        .context = cpu,
    };
    struct small m;
    small_build(&m, cpu, 16, TG_BUFFER_USAGE_WEIGHTS);
    struct tg_tensor * zz = tg_set_name(tg_mul(m.ctx, m.y, m.y), "yy");
    struct tg_tensor * out = tg_set_name(tg_add(m.ctx, zz, m.b2), "out");
    tg_set_output(out);
    struct tg_graph * g = tg_graph_new(m.ctx, 64);
    tg_graph_build_forward(g, out);
    struct tg_backend * bk[2] = { &alt, cpu };
    struct tg_sched * s = tg_sched_new(bk, 2, 64);
    CHECK(tg_sched_set_tensor_backend(s, m.h, &alt) == TG_OK && tg_sched_alloc_graph(s, g) == TG_ERR_UNSUPPORTED
          && strstr(tg_last_error(), "ALT does not support"), "pinning MUL_MAT to ALT is refused: %s", tg_last_error());
    tg_sched_reset(s);
    CHECK(tg_sched_set_tensor_backend(s, m.y, &alt) == TG_OK, "pin y to ALT");
    CHECK(tg_sched_alloc_graph(s, g) == TG_OK, "copies: allocated (%s)", tg_last_error());
    CHECK(cause_of(s, m.y) == TG_CAUSE_USER && strcmp(backend_of(s, m.y), "ALT") == 0, "y on ALT (user)");
    CHECK(cause_of(s, zz) == TG_CAUSE_EXPAND_DOWN && strcmp(backend_of(s, zz), "ALT") == 0,
          "yy follows y on ALT (expand down: %s)", tg_sched_get_placement(s, zz)->detail);
    CHECK(cause_of(s, out) == TG_CAUSE_WEIGHT_BUFFER && strcmp(backend_of(s, out), "CPU") == 0, "out on CPU (weight b2)");
    CHECK(tg_sched_get_n_splits(s) == 3, "copies: 3 splits (%d)", tg_sched_get_n_splits(s));
    CHECK(tg_sched_get_n_copies(s) == 2, "copies: h and b1 are copied into ALT_HOST (%d)", tg_sched_get_n_copies(s));
    const struct tg_sched_split * sp = tg_sched_get_split(s, 1);
    CHECK(sp && sp->n_inputs == 2 && sp->n_copies == 2 && sp->copies[0] && strstr(sp->copies[0]->name, "ALT#"),
          "split 1 inputs copied (%s)", sp && sp->copies[0] ? sp->copies[0]->name : "-");
    CHECK(m.y->src[0] == sp->copies[0] || m.y->src[1] == sp->copies[0], "y reads the copy");
    const struct tg_sched_split * sp2 = tg_sched_get_split(s, 2);
    CHECK(sp2 && sp2->n_inputs == 1 && sp2->copies[0] == NULL, "CPU reads ALT's host memory in place");
    fill(m.x, 1.0f);
    alt_computes = 0;
    CHECK(tg_sched_graph_compute(s, g) == TG_OK && alt_computes == 1, "copies: computed, ALT ran once");
    CHECK(sp->copy_bytes == tg_nbytes(m.h) + tg_nbytes(m.b1) && sp->copy_ns > 0,
          "copies: split 1 moved %zu bytes in %llu ns", sp->copy_bytes, (unsigned long long) sp->copy_ns);
    float * got = read_f32(out);
    tg_sched_reset(s);
    CHECK(m.y->src[0] == m.h && m.y->src[1] == m.b1, "reset restores the sources");
    struct tg_sched * sc = tg_sched_new(&cpu, 1, 64);
    CHECK(tg_sched_graph_compute(sc, g) == TG_OK, "CPU-only recompute");
    float * want = read_f32(out);
    CHECK(nmse(got, want, tg_nelements(out)) == 0.0, "copies: result equals CPU only");
    free(got); free(want);
    tg_sched_free(sc);
    tg_sched_free(s);
    small_free(&m);
}

// Random square graphs on ALT + CPU with random pins: results equal CPU only
// bitwise, splits tile the graph, inputs ALT cannot read are copied.
struct rg { struct tg_context * ctx; struct tg_graph * g; struct tg_tensor * in[3], * out[8]; int n_out; struct tg_tensor * nodes[64]; int n; };

static void rg_build(struct rg * r, uint64_t seed, int n_ops) {
    rng_state = seed;
    r->ctx = new_ctx(2);
    struct tg_tensor * pool[80];
    int np = 0;
    for (int i = 0; i < 3; i++) {
        r->in[i] = tg_format_name(tg_new_tensor_2d(r->ctx, TG_TYPE_F32, 16, 16), "in%d", i);
        tg_set_input(r->in[i]);
        pool[np++] = r->in[i];
    }
    r->n_out = 0; r->n = 0;
    struct tg_tensor * t = NULL;
    for (int k = 0; k < n_ops; k++) {
        uint32_t u = (uint32_t) (rndf() * 1e6f + 1e6f);
        struct tg_tensor * a = pool[np - 1 - (int) (u % (np < 3 ? np : 3))], * b = pool[(u / 7) % np];
        switch ((u / 131) % 6) {
            case 0: t = tg_add(r->ctx, a, b); break;
            case 1: t = tg_mul(r->ctx, a, b); break;
            case 2: t = tg_silu(r->ctx, a); break;
            case 3: t = tg_scale(r->ctx, a, 0.75f); break;
            case 4: t = tg_cont(r->ctx, tg_transpose(r->ctx, a)); break;
            default: t = tg_add(r->ctx, tg_view_tensor(r->ctx, a), b); break;
        }
        tg_format_name(t, "op%d", k);
        pool[np++] = t;
        r->nodes[r->n++] = t;
        if ((u / 1009) % 6 == 0 && r->n_out < 7) { tg_set_output(t); r->out[r->n_out++] = t; }
    }
    tg_set_output(t);
    r->out[r->n_out++] = t;
    r->g = tg_graph_new(r->ctx, 256);
    for (int i = 0; i < r->n_out; i++) tg_graph_build_forward(r->g, r->out[i]);
}

// Live overlaps in the scheduler's allocation: two owned ranges of a buffer
// that share bytes while both are live must be an in-place handoff at one step.
static int live_overlaps(const struct tg_gallocr * ga) {
    int bad = 0, n = tg_gallocr_n_tensors(ga);
    for (int i = 0; i < n; i++) {
        const struct tg_alloc_tensor_info * a = tg_gallocr_tensor_info(ga, i);
        if (a->kind != TG_ALLOC_PLANNED && a->kind != TG_ALLOC_INPLACE) continue;
        for (int j = i + 1; j < n; j++) {
            const struct tg_alloc_tensor_info * b = tg_gallocr_tensor_info(ga, j);
            if ((b->kind != TG_ALLOC_PLANNED && b->kind != TG_ALLOC_INPLACE) || b->buffer != a->buffer) continue;
            if (!(a->offset < b->offset + b->size && b->offset < a->offset + a->size)) continue;
            if (!(a->first_step <= b->last_step && b->first_step <= a->last_step)) continue;
            bool handoff = (a->last_step == b->first_step && b->kind == TG_ALLOC_INPLACE)
                        || (b->last_step == a->first_step && a->kind == TG_ALLOC_INPLACE);
            bad += !CHECKQ(handoff, "overlap: %s steps %d..%d and %s steps %d..%d", a->tensor->name, a->first_step,
                           a->last_step, b->tensor->name, b->first_step, b->last_step);
        }
    }
    return bad;
}

static void test_random_graphs(struct tg_backend * cpu) {
    struct tg_backend alt = {
        .iface = { .get_name = alt_name, .get_default_buffer_type = alt_default, .graph_compute = alt_compute,
                   .supports_op = alt_supports_op, .supports_buft = alt_supports_buft },
        .context = cpu,
    };
    struct tg_backend * bk[2] = { &alt, cpu };
    int bad = 0, total_copies = 0, total_splits = 0;
    for (int it = 0; it < 30; it++) {
        uint64_t seed = 500 + (uint64_t) it;
        struct rg r, ref;
        rg_build(&r, seed, 12 + it);
        rg_build(&ref, seed, 12 + it);
        struct tg_sched * s = tg_sched_new(bk, 2, 256);
        for (int i = 0; i < r.n; i++)
            if ((i * 7 + it) % 5 == 0 && alt_supports_op(&alt, r.nodes[i])) tg_sched_set_tensor_backend(s, r.nodes[i], &alt);
        struct tg_sched * sc = tg_sched_new(&cpu, 1, 256);
        if (!CHECKQ(tg_sched_alloc_graph(s, r.g) == TG_OK && tg_sched_alloc_graph(sc, ref.g) == TG_OK,
                    "random %d: allocated (%s)", it, tg_last_error())) { bad++; goto next; }
        // splits tile the nodes; each non-view node is on its split's backend
        int expect_start = 0;
        for (int k = 0; k < tg_sched_get_n_splits(s); k++) {
            const struct tg_sched_split * sp = tg_sched_get_split(s, k);
            bad += !CHECKQ(sp->i_start == expect_start && sp->i_end > sp->i_start, "random %d: split %d contiguous", it, k);
            expect_start = sp->i_end;
            for (int i = sp->i_start; i < sp->i_end; i++) {
                struct tg_tensor * n = r.g->nodes[i];
                if (tg_op_is_view(n->op)) continue;
                bad += !CHECKQ(tg_sched_node_placement(s, i)->backend == sp->backend, "random %d: node %d on its split's backend", it, i);
                bad += !CHECKQ(tg_backend_supports_op(bk[sp->backend], n), "random %d: node %d supported by its backend", it, i);
                for (int j = 0; j < TG_MAX_SRC; j++) {
                    struct tg_tensor * src = n->src[j];
                    struct tg_buffer * sb = src ? tg_tensor_buffer(src) : NULL;
                    if (sb) bad += !CHECKQ(tg_backend_supports_buft(bk[sp->backend], sb->buft),
                                           "random %d: node %d reads %s from a buffer its backend supports", it, i, src->name);
                }
            }
        }
        bad += !CHECKQ(expect_start == r.g->n_nodes, "random %d: splits cover every node", it);
        bad += live_overlaps(tg_sched_get_gallocr(s));
        total_copies += tg_sched_get_n_copies(s);
        total_splits += tg_sched_get_n_splits(s);
        bool ok = true;
        for (int pass = 0; pass < 2; pass++) {
            rng_state = seed * 3;
            for (int i = 0; i < 3; i++)
                if (tg_sched_get_placement(s, r.in[i])) ok = ok && fill_ok(pass ? ref.in[i] : r.in[i]);
        }
        ok = ok && tg_sched_graph_compute(s, r.g) == TG_OK && tg_sched_graph_compute(sc, ref.g) == TG_OK;
        bad += !CHECKQ(ok, "random %d: computed (%s)", it, tg_last_error());
        for (int o = 0; ok && o < r.n_out; o++) {
            float * a = read_f32(r.out[o]), * b = read_f32(ref.out[o]);
            bad += !CHECKQ(memcmp(a, b, tg_nbytes(r.out[o])) == 0, "random %d: output %s equals CPU only bitwise", it, r.out[o]->name);
            free(a); free(b);
        }
    next:
        tg_sched_free(s); tg_sched_free(sc);
        tg_context_free(r.ctx); tg_context_free(ref.ctx);
    }
    CHECK(bad == 0, "30 random graphs on ALT+CPU with pins: splits tile the graph, buffers readable, results equal CPU only");
    CHECK(total_copies > 0 && total_splits > 30, "random graphs exercised copies (%d) and splits (%d)", total_copies, total_splits);
}

// ---- llama-ish graph: CPU+BLAS vs CPU -------------------------------------------------------

enum { E = 64, NH = 4, HD = 16, FF = 128, NL = 2 };

struct model { struct tg_context * ctx; struct tg_buffer * buf; struct tg_tensor * w[NL][7], * norm[NL][2], * out; };

static void model_make(struct model * md, struct tg_backend * cpu, enum tg_type wtype) {
    rng_state = 3;
    md->ctx = new_ctx(1);
    static const int shape[7][2] = { { E, E }, { E, E }, { E, E }, { E, E }, { E, FF }, { E, FF }, { FF, E } };
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < 7; i++) md->w[l][i] = tg_format_name(tg_new_tensor_2d(md->ctx, wtype, shape[i][0], shape[i][1]), "blk.%d.w%d", l, i);
        for (int i = 0; i < 2; i++) md->norm[l][i] = tg_format_name(tg_new_tensor_1d(md->ctx, TG_TYPE_F32, E), "blk.%d.norm%d", l, i);
    }
    md->out = tg_set_name(tg_new_tensor_2d(md->ctx, wtype, E, 40), "output.weight");
    md->buf = tg_backend_alloc_ctx_tensors(md->ctx, cpu);
    tg_buffer_set_usage(md->buf, TG_BUFFER_USAGE_WEIGHTS);
    for (struct tg_tensor * t = tg_context_first_tensor(md->ctx); t; t = tg_context_next_tensor(md->ctx, t)) {
        int64_t n = tg_nelements(t);
        float * v = malloc((size_t) n * sizeof(float));
        for (int64_t i = 0; i < n; i++) v[i] = t->ne[1] == 1 ? 1.0f + 0.1f * rndf() : 0.2f * rndf();
        if (t->type == TG_TYPE_F32) tg_backend_tensor_set(t, v, 0, (size_t) n * sizeof(float));
        else {
            size_t rs = tg_row_size(t->type, t->ne[0]);
            char * q = malloc(rs * (size_t) t->ne[1]);
            for (int64_t r = 0; r < t->ne[1]; r++) tg_type_traits(t->type)->from_float(v + r * t->ne[0], q + r * rs, t->ne[0]);
            tg_backend_tensor_set(t, q, 0, rs * (size_t) t->ne[1]);
            free(q);
        }
        free(v);
    }
}

struct lg { struct tg_context * ctx; struct tg_graph * g; struct tg_tensor * inp, * pos, * mask, * logits; };

static void lg_build(struct lg * r, struct model * md, int T) {
    struct tg_context * c = r->ctx = new_ctx(4);
    r->inp = tg_set_name(tg_new_tensor_2d(c, TG_TYPE_F32, E, T), "inp_embd");
    r->pos = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_I32, T), "inp_pos");
    r->mask = tg_set_name(tg_new_tensor_2d(c, TG_TYPE_F32, T, T), "kq_mask");
    tg_set_input(r->inp); tg_set_input(r->pos); tg_set_input(r->mask);
    struct tg_tensor * x = tg_test_llama_layers(c, r->inp, r->pos, r->mask, md->w, md->norm, NL, E, NH, HD, T);
    r->logits = tg_set_name(tg_mul_mat(c, md->out, x), "result_output");
    tg_set_output(r->logits);
    r->g = tg_graph_new(c, 1024);
    tg_graph_build_forward(r->g, r->logits);
}

static void lg_inputs(struct lg * r, int T) {
    rng_state = 99;
    fill(r->inp, 1.0f);
    int32_t * p = malloc((size_t) T * sizeof(int32_t));
    float * m = malloc((size_t) T * T * sizeof(float));
    for (int i = 0; i < T; i++) { p[i] = i; for (int j = 0; j < T; j++) m[i * T + j] = j <= i ? 0.0f : -INFINITY; }
    tg_backend_tensor_set(r->pos, p, 0, (size_t) T * sizeof(int32_t));
    tg_backend_tensor_set(r->mask, m, 0, (size_t) T * T * sizeof(float));
    free(p); free(m);
}

static int count_transitions(struct tg_sched * s, struct tg_graph * g) {
    int n = 0, cur = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (tg_op_is_view(g->nodes[i]->op) && cur >= 0) continue;
        int b = tg_sched_get_placement(s, g->nodes[i])->backend;
        if (b != cur) { n++; cur = b; }
    }
    return n;
}

static void test_blas_vs_cpu(struct tg_backend * cpu, struct tg_backend * blas, enum tg_type wtype) {
    struct model md;
    model_make(&md, cpu, wtype);
    const char * tn = tg_type_name(wtype);
    for (int T = 1; T <= 32; T += 31) {
        struct lg r;
        lg_build(&r, &md, T);
        struct tg_sched * sc = tg_sched_new(&cpu, 1, 1024);
        CHECK(tg_sched_alloc_graph(sc, r.g) == TG_OK, "%s T=%d: CPU only allocated", tn, T);
        lg_inputs(&r, T);
        CHECK(tg_sched_graph_compute(sc, r.g) == TG_OK && tg_sched_get_n_splits(sc) == 1, "%s T=%d: CPU only, 1 split", tn, T);
        float * want = read_f32(r.logits);
        tg_sched_free(sc);
        tg_context_free(r.ctx);   // its tensors point into sc's (freed) buffers
        if (!blas) { free(want); continue; }
        lg_build(&r, &md, T);
        struct tg_backend * bk[2] = { blas, cpu };
        struct tg_sched * s = tg_sched_new(bk, 2, 1024);
        CHECK(tg_sched_alloc_graph(s, r.g) == TG_OK, "%s T=%d: CPU+BLAS allocated", tn, T);
        int bad = 0, n_mm = 0;
        for (int i = 0; i < r.g->n_nodes; i++) {
            struct tg_tensor * n = r.g->nodes[i];
            if (tg_op_is_view(n->op)) continue;
            const char * want_b = (n->op == TG_OP_MUL_MAT && T >= 8) ? "BLAS" : "CPU";
            n_mm += n->op == TG_OP_MUL_MAT;
            bad += !CHECKQ(strcmp(backend_of(s, n), want_b) == 0, "%s T=%d: node %d %s on %s (expected %s; %s)", tn, T, i,
                           tg_op_name(n->op), backend_of(s, n), want_b, tg_sched_get_placement(s, n)->detail);
        }
        CHECK(bad == 0, "%s T=%d: all %d MUL_MATs on %s, every other op on CPU", tn, T, n_mm, T >= 8 ? "BLAS" : "CPU");
        int expect = T >= 8 ? count_transitions(s, r.g) : 1;
        CHECK(tg_sched_get_n_splits(s) == expect && (T < 8 || expect == 17 * NL),
              "%s T=%d: %d splits (expected %d)", tn, T, tg_sched_get_n_splits(s), expect);
        lg_inputs(&r, T);
        CHECK(tg_sched_graph_compute(s, r.g) == TG_OK, "%s T=%d: CPU+BLAS computed", tn, T);
        float * got = read_f32(r.logits);
        double e = nmse(got, want, tg_nelements(r.logits));
        double thr = wtype == TG_TYPE_F32 ? 1e-9 : 5e-3;   // CPU quantizes activations to Q8_0 for quantized weights
        CHECK(e < thr, "%s T=%d: logits match CPU only (nmse %.2e < %.0e)", tn, T, e, thr);
        free(got); free(want);
        tg_sched_free(s);
        tg_context_free(r.ctx);
    }
    tg_buffer_free(md.buf);
    tg_context_free(md.ctx);
}

// Reserve a worst case (then free it), allocate smaller and equal graphs of
// the same shape without re-planning or growing the buffer.
static void test_reserve(struct tg_backend * cpu) {
    struct model md;
    model_make(&md, cpu, TG_TYPE_F32);
    struct tg_sched * s = tg_sched_new(&cpu, 1, 1024);
    struct lg worst;
    lg_build(&worst, &md, 32);
    CHECK(tg_sched_reserve(s, worst.g) == TG_OK, "reserve: worst case (32 tokens) planned");
    size_t size = tg_sched_get_buffer_size(s, 0);
    CHECK(size > 0 && worst.inp->data == NULL, "reserve: %zu-byte compute buffer, the graph's tensors are not placed", size);
    CHECK(tg_sched_get_graph(s) == NULL && tg_sched_get_n_splits(s) == 0, "reserve: no 'last graph' afterwards");
    tg_context_free(worst.ctx);
    int plans = tg_gallocr_n_plans(tg_sched_get_gallocr(s));
    int Ts[3] = { 1, 7, 32 };
    for (int i = 0; i < 3; i++) {
        struct lg r;
        lg_build(&r, &md, Ts[i]);
        bool ok = tg_sched_alloc_graph(s, r.g) == TG_OK;
        CHECK(ok && tg_gallocr_n_plans(tg_sched_get_gallocr(s)) == plans && tg_sched_get_buffer_size(s, 0) == size,
              "reserve: %d-token graph placed with the reserved plan (plans %d, buffer %zu)", Ts[i],
              tg_gallocr_n_plans(tg_sched_get_gallocr(s)), tg_sched_get_buffer_size(s, 0));
        lg_inputs(&r, Ts[i]);
        CHECK(ok && tg_sched_graph_compute(s, r.g) == TG_OK, "reserve: %d-token graph computed", Ts[i]);
        tg_sched_reset(s);
        tg_context_free(r.ctx);
    }
    tg_sched_free(s);
    tg_buffer_free(md.buf);
    tg_context_free(md.ctx);
}

// BLAS op coverage: broadcast MUL_MAT (grouped heads), F16/Q4_0 weights, OUT_PROD.
static void test_blas_ops(struct tg_backend * cpu, struct tg_backend * blas) {
    if (!blas) { printf("note: built without TG_HAVE_BLAS: BLAS op checks skipped\n"); return; }
    struct { const char * what; enum tg_op op; enum tg_type ta; int64_t a[4], b[4]; } cases[] = {
        { "mul_mat f32 broadcast 2->4", TG_OP_MUL_MAT, TG_TYPE_F32, { 64, 24, 2, 1 }, { 64, 40, 4, 1 } },
        { "mul_mat f16 weights",        TG_OP_MUL_MAT, TG_TYPE_F16, { 64, 24, 1, 1 }, { 64, 40, 1, 1 } },
        { "mul_mat q4_0 weights",       TG_OP_MUL_MAT, TG_TYPE_Q4_0, { 64, 24, 1, 1 }, { 64, 40, 1, 1 } },
        { "out_prod f32",               TG_OP_OUT_PROD, TG_TYPE_F32, { 24, 40, 1, 1 }, { 32, 40, 1, 1 } },
    };
    for (int c = 0; c < 4; c++) {
        struct tg_context * ctx = new_ctx(1);
        struct tg_tensor * a = tg_set_name(tg_new_tensor(ctx, cases[c].ta, 4, cases[c].a), "a");
        struct tg_tensor * b = tg_set_name(tg_new_tensor(ctx, TG_TYPE_F32, 4, cases[c].b), "b");
        tg_set_input(a); tg_set_input(b);
        struct tg_tensor * d = cases[c].op == TG_OP_MUL_MAT ? tg_mul_mat(ctx, a, b) : tg_out_prod(ctx, a, b);
        if (!CHECK(d != NULL, "%s: built", cases[c].what)) { printf("  %s\n", tg_last_error()); tg_context_free(ctx); continue; }
        tg_set_output(d);
        struct tg_graph * g = tg_graph_new(ctx, 8);
        tg_graph_build_forward(g, d);
        if (!tg_cpu_supports_op(d)) {
            printf("note: %s: the CPU lacks this op, BLAS result not compared\n", cases[c].what);
            tg_context_free(ctx);
            continue;
        }
        struct tg_backend * bk[2] = { blas, cpu };
        struct tg_sched * s = tg_sched_new(bk, 2, 8);
        enum tg_status ast = tg_sched_alloc_graph(s, g);
        const struct tg_sched_placement * pd = tg_sched_get_placement(s, d);
        CHECK(ast == TG_OK && strcmp(backend_of(s, d), "BLAS") == 0, "%s: placed on BLAS (%s)",
              cases[c].what, pd ? pd->detail : tg_last_error());
        rng_state = 41;
        int64_t na = tg_nelements(a);
        float * av = malloc((size_t) na * sizeof(float));
        for (int64_t i = 0; i < na; i++) av[i] = rndf();
        size_t rs = tg_row_size(a->type, a->ne[0]);
        char * q = malloc(rs * (size_t) tg_nrows(a));
        for (int64_t r = 0; r < tg_nrows(a); r++)
            if (a->type == TG_TYPE_F32) memcpy(q + r * rs, av + r * a->ne[0], rs);
            else tg_type_traits(a->type)->from_float(av + r * a->ne[0], q + r * rs, a->ne[0]);
        tg_backend_tensor_set(a, q, 0, rs * (size_t) tg_nrows(a));
        fill(b, 1.0f);
        CHECK(tg_sched_graph_compute(s, g) == TG_OK, "%s: BLAS computed", cases[c].what);
        float * got = read_f32(d);
        struct tg_graph one = tg_graph_view(g, 0, g->n_nodes);
        CHECK(tg_backend_graph_compute(cpu, &one) == TG_OK, "%s: CPU computed", cases[c].what);
        float * want = read_f32(d);
        double e = nmse(got, want, tg_nelements(d));
        double thr = a->type == TG_TYPE_F32 ? 1e-10 : 5e-3;   // CPU rounds activations for quantized/half weights
        CHECK(e < thr, "%s: BLAS equals CPU (nmse %.2e < %.0e)", cases[c].what, e, thr);
        free(av); free(q); free(got); free(want);
        tg_sched_free(s);
        tg_context_free(ctx);
    }
}

// ---- eval callback ------------------------------------------------------------------------

struct evlog { int n_ask, n_seen, stop_after; struct tg_tensor * asked[256], * seen[256]; };

static bool eval_cb(struct tg_tensor * t, bool ask, void * user) {
    struct evlog * l = user;
    if (ask) {
        l->asked[l->n_ask++] = t;
        return strncmp(t->name, "a", 1) == 0;   // observe the nodes named a*
    }
    l->seen[l->n_seen++] = t;
    return l->stop_after == 0 || l->n_seen < l->stop_after;
}

static int cpu_calls;
static enum tg_status (*cpu_compute_fn)(struct tg_backend *, struct tg_graph *);
static enum tg_status counting_compute(struct tg_backend * b, struct tg_graph * g) {
    cpu_calls++;
    return cpu_compute_fn(b, g);
}

static void test_eval_callback(struct tg_backend * cpu) {
    struct tg_backend counted = *cpu;
    cpu_compute_fn = cpu->iface.graph_compute;
    counted.iface.graph_compute = counting_compute;
    counted.iface.graph_compute_hooks = NULL;
    struct tg_backend * bk = &counted;
    struct tg_context * c = new_ctx(1);
    struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_F32, 32), "x");
    tg_set_input(x);
    const char * names[] = { "n0", "a1", "n2", "n3", "a4", "a5", "n6", "n7" };
    struct tg_tensor * t = x;
    for (int i = 0; i < 8; i++) t = tg_set_name(i % 2 ? tg_sqr(c, t) : tg_scale(c, t, 0.9f), names[i]);
    tg_set_output(t);
    struct tg_graph * g = tg_graph_new(c, 64);
    tg_graph_build_forward(g, t);
    struct tg_sched * s = tg_sched_new(&bk, 1, 64);
    struct evlog log = { 0 };
    tg_sched_set_eval_callback(s, eval_cb, &log);
    CHECK(tg_sched_alloc_graph(s, g) == TG_OK, "eval: allocated");
    fill(x, 1.0f);
    cpu_calls = 0;
    CHECK(tg_sched_graph_compute(s, g) == TG_OK, "eval: computed");
    bool asked_all = log.n_ask == 8;
    for (int i = 0; asked_all && i < 8; i++) asked_all = log.asked[i] == g->nodes[i];
    CHECK(asked_all, "eval: every node asked once, in order (%d asks)", log.n_ask);
    CHECK(log.n_seen == 3 && log.seen[0]->name[1] == '1' && log.seen[1]->name[1] == '4' && log.seen[2]->name[1] == '5',
          "eval: exactly a1, a4, a5 observed, in order (%d)", log.n_seen);
    // runs: [n0 a1] [n2 n3 a4] [a5] [n6 n7] = 4 compute calls
    CHECK(cpu_calls == 4, "eval: unobserved nodes computed together (%d compute calls, expected 4)", cpu_calls);
    float * full = read_f32(t);

    memset(&log, 0, sizeof log);
    log.stop_after = 2;
    CHECK(tg_sched_graph_compute(s, g) == TG_ERR_ABORTED, "eval: returning false stops the run (TG_ERR_ABORTED): %s", tg_last_error());
    CHECK(log.n_seen == 2 && log.n_ask == 5, "eval: nothing asked after the stop (%d asks, %d seen)", log.n_ask, log.n_seen);

    tg_sched_set_eval_callback(s, NULL, NULL);
    cpu_calls = 0;
    CHECK(tg_sched_graph_compute(s, g) == TG_OK && cpu_calls == 1, "no callback: one compute call (%d)", cpu_calls);
    float * again = read_f32(t);
    CHECK(memcmp(full, again, tg_nbytes(t)) == 0, "eval: observed run equals the plain run bitwise");
    free(full); free(again);
    tg_sched_free(s);
    tg_context_free(c);
}

// ---- observers ------------------------------------------------------------------------------

struct obslog {
    int n_sched_new, n_sched_free, n_split, n_alloc, n_begin, n_end, n_node_b, n_node_e, last_index;
    int split_nodes, alloc_tensors;
    bool monotonic;
    uint64_t last_t;
};

static void o_sched(const struct tg_obs_sched_event * ev, void * u) {
    struct obslog * l = u;
    if (ev->what == TG_OBS_SCHED_NEW) l->n_sched_new++; else l->n_sched_free++;
}
static void o_split(const struct tg_obs_split_event * ev, void * u) {
    struct obslog * l = u;
    l->n_split++;
    l->split_nodes = ev->graph->n_nodes;
}
static void o_alloc(const struct tg_obs_alloc_event * ev, void * u) {
    struct obslog * l = u;
    l->n_alloc++;
    l->alloc_tensors = ev->n_tensors;
}
static void o_begin(const struct tg_obs_compute_event * ev, void * u) { ((struct obslog *) u)->n_begin++; (void) ev; }
static void o_end(const struct tg_obs_compute_event * ev, void * u) { ((struct obslog *) u)->n_end++; (void) ev; }
static void o_node_b(const struct tg_obs_node_event * ev, void * u) {
    struct obslog * l = u;
    if (ev->t_ns < l->last_t || ev->index != l->n_node_b) l->monotonic = false;
    l->last_t = ev->t_ns;
    l->n_node_b++;
}
static void o_node_e(const struct tg_obs_node_event * ev, void * u) {
    struct obslog * l = u;
    if (ev->t_ns < l->last_t) l->monotonic = false;
    l->last_t = ev->t_ns;
    l->n_node_e++;
}

static void test_observers(struct tg_backend * cpu) {
    struct obslog gl = { .monotonic = true }, sl = { .monotonic = true };
    struct tg_observer glob = { .user = &gl, .on_sched = o_sched, .on_graph_split = o_split, .on_graph_alloc = o_alloc };
    tg_observe_attach_global(&glob);
    struct small m;
    small_build(&m, cpu, 8, TG_BUFFER_USAGE_WEIGHTS);
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct tg_observer per = { .user = &sl, .on_compute_begin = o_begin, .on_compute_end = o_end,
                               .on_node_begin = o_node_b, .on_node_end = o_node_e };
    CHECK(tg_sched_add_observer(s, &per) == TG_OK, "observer added to the scheduler");
    CHECK(tg_sched_alloc_graph(s, m.g) == TG_OK, "observed graph allocated");
    fill(m.x, 1.0f);
    CHECK(tg_sched_graph_compute(s, m.g) == TG_OK, "observed compute");
    CHECK(gl.n_sched_new == 1 && gl.n_split == 1 && gl.n_alloc == 1 && gl.split_nodes == m.g->n_nodes,
          "global observer: sched new, split, alloc events (%d %d %d)", gl.n_sched_new, gl.n_split, gl.n_alloc);
    CHECK(gl.alloc_tensors == m.g->n_nodes + m.g->n_leafs, "alloc event lists every tensor (%d)", gl.alloc_tensors);
    CHECK(sl.n_begin == 1 && sl.n_end == 1, "compute begin/end");
    CHECK(sl.n_node_b == m.g->n_nodes && sl.n_node_e == m.g->n_nodes && sl.monotonic,
          "node begin/end for each node, in order, monotonic time (%d)", sl.n_node_b);
    tg_sched_remove_observer(s, &per);
    sl.n_node_b = 0;
    CHECK(tg_sched_graph_compute(s, m.g) == TG_OK && sl.n_node_b == 0, "removed observer gets no node events");
    tg_sched_free(s);
    CHECK(gl.n_sched_free == 1, "sched free event");
    tg_observe_detach_global(&glob);
    small_free(&m);
}

// ---- one scheduler, two graphs ------------------------------------------------------------

static void test_reuse(struct tg_backend * cpu) {
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct tg_context * c = new_ctx(1);
    struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_F32, 256), "x");
    tg_set_input(x);
    struct tg_tensor * mid = tg_set_name(tg_sqr(c, tg_scale(c, x, 2.0f)), "g1.mid");
    struct tg_tensor * o1 = tg_set_name(tg_add(c, tg_silu(c, mid), mid), "g1.out");
    tg_set_output(o1);
    struct tg_graph * g1 = tg_graph_new(c, 64);
    tg_graph_build_forward(g1, o1);
    struct tg_context * c2 = new_ctx(1);
    struct tg_tensor * y = tg_set_name(tg_new_tensor_1d(c2, TG_TYPE_F32, 256), "y");
    tg_set_input(y);
    struct tg_tensor * o2 = tg_set_name(tg_neg(c2, tg_sqr(c2, tg_scale(c2, y, 3.0f))), "g2.out");
    tg_set_output(o2);
    struct tg_graph * g2 = tg_graph_new(c2, 64);
    tg_graph_build_forward(g2, o2);

    CHECK(tg_sched_alloc_graph(s, g1) == TG_OK && fill_ok(x), "graph 1 allocated, input set");
    CHECK(tg_sched_graph_compute(s, g1) == TG_OK && tg_sched_graph_seq(s) == 1, "graph 1 computed (seq 1)");
    float m1[256], xin[256];
    tg_backend_tensor_get(mid, m1, 0, sizeof m1);
    tg_backend_tensor_get(x, xin, 0, sizeof xin);
    tg_sched_reset(s);
    CHECK(tg_sched_alloc_graph(s, g2) == TG_OK && fill_ok(y), "graph 2 allocated, input set");
    CHECK(tg_sched_graph_compute(s, g2) == TG_OK && tg_sched_graph_seq(s) == 2, "graph 2 computed on the same scheduler (seq 2)");
    struct tg_gallocr * ga = tg_sched_get_gallocr(s);
    CHECK(tg_gallocr_find(ga, mid) == NULL, "graph 1's intermediate is not in the current allocation data");
    size_t off = (size_t) ((char *) mid->data - (char *) tg_buffer_get_base(mid->buffer));
    const struct tg_alloc_tensor_info * own[4];
    int n = tg_gallocr_find_overlapping(ga, mid->buffer, off, tg_nbytes(mid), own, 4);
    CHECK(n >= 1, "its bytes now belong to graph 2 (%d tensor(s), first %s)", n, n ? own[0]->tensor->name : "-");
    float m2[256];
    tg_backend_tensor_get(mid, m2, 0, sizeof m2);
    CHECK(memcmp(m1, m2, sizeof m1) != 0, "reading it after graph 2 gives different bytes (stale)");
    float o[256], yy[256];
    tg_backend_tensor_get(o2, o, 0, sizeof o);
    tg_backend_tensor_get(y, yy, 0, sizeof yy);
    bool ok = true;
    for (int i = 0; i < 256; i++) ok &= fabsf(o[i] + 9.0f * yy[i] * yy[i]) <= 1e-5f * (1 + 9 * yy[i] * yy[i]);
    CHECK(ok, "graph 2's result is right");
    tg_sched_reset(s);
    CHECK(tg_sched_alloc_graph(s, g1) == TG_OK && tg_backend_tensor_set(x, xin, 0, sizeof xin) == TG_OK, "graph 1 re-placed, input set again");
    CHECK(tg_sched_graph_compute(s, g1) == TG_OK && tg_sched_graph_seq(s) == 3, "graph 1 computed again");
    float m3[256];
    tg_backend_tensor_get(mid, m3, 0, sizeof m3);
    CHECK(tg_gallocr_find(ga, mid) != NULL && memcmp(m1, m3, sizeof m1) == 0, "graph 1 recomputed: its intermediate is valid again");
    tg_sched_free(s);
    tg_context_free(c);
    tg_context_free(c2);
}

// ---- poison mode ------------------------------------------------------------------------------

static void test_poison(struct tg_backend * cpu) {
    for (int on = 0; on < 2; on++) {
        struct tg_context * c = new_ctx(1);
        struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_F32, 64), "x");
        tg_set_input(x);
        struct tg_tensor * mid = tg_set_name(tg_sqr(c, tg_scale(c, x, 2.0f)), "mid");   // read twice: released, not taken
        struct tg_tensor * out = tg_set_name(tg_add(c, tg_silu(c, mid), tg_neg(c, mid)), "out");
        tg_set_output(out);
        struct tg_graph * g = tg_graph_new(c, 16);
        tg_graph_build_forward(g, out);
        struct tg_sched * s = tg_sched_new(&cpu, 1, 16);
        tg_sched_set_poison(s, on != 0);
        CHECK(tg_sched_alloc_graph(s, g) == TG_OK && fill_ok(x), "poison %s: allocated", on ? "on" : "off");
        const struct tg_alloc_tensor_info * mi = tg_gallocr_find(tg_sched_get_gallocr(s), mid);
        const struct tg_alloc_tensor_info * ni = tg_gallocr_find(tg_sched_get_gallocr(s), out->src[1]);
        CHECK(mi && !mi->released && ni && ni->inplace_of == mid && ni->released,
              "mid's last reader (neg) took its range in place; neg's range is released after the add");
        CHECK(tg_sched_graph_compute(s, g) == TG_OK, "poison %s: computed", on ? "on" : "off");
        float v[64], o[64], xv[64];
        tg_backend_tensor_get(mid, v, 0, sizeof v);
        tg_backend_tensor_get(out, o, 0, sizeof o);
        tg_backend_tensor_get(x, xv, 0, sizeof xv);
        int n_nan = 0, n_out_ok = 0;
        for (int i = 0; i < 64; i++) {
            float m = 4.0f * xv[i] * xv[i];
            n_nan += isnan(v[i]);
            n_out_ok += fabsf(o[i] - (m / (1.0f + expf(-m)) - m)) <= 1e-5f * (1.0f + m);
        }
        if (on) CHECK(n_nan == 64, "poison on: the stale read of mid gives NaN everywhere (%d/64)", n_nan);
        else    CHECK(n_nan == 0, "poison off: the stale read of mid looks plausible (%d NaN)", n_nan);
        CHECK(n_out_ok == 64, "poison %s: the output is right (%d/64)", on ? "on" : "off", n_out_ok);
        tg_sched_free(s);
        tg_context_free(c);
    }
}

// tg_sched_graph_moved: a store view into a preallocated cache moved by the
// caller; the graph computes at the new place without being allocated
// again, observers get split and alloc events with the view's new offset.
struct moved_obs { int n_split, n_alloc; size_t view_offset; const struct tg_tensor * view; int moved_split, moved_alloc; };
static void mo_split(const struct tg_obs_split_event * ev, void * u) {
    struct moved_obs * o = u;
    o->n_split++;
    o->moved_split = ev->moved && ev->n_moved == 2 && ev->moved[0] == o->view ? 2 : ev->moved ? -1 : ev->n_moved;
}
static void mo_alloc(const struct tg_obs_alloc_event * ev, void * u) {
    struct moved_obs * o = u;
    o->n_alloc++;
    o->moved_alloc = ev->moved && ev->n_moved == 2 && ev->moved[0] == o->view ? 2 : ev->moved ? -1 : ev->n_moved;
    for (int i = 0; i < ev->n_tensors; i++)
        if (ev->tensors[i].tensor == o->view) o->view_offset = ev->tensors[i].offset;
}

static void test_graph_moved(struct tg_backend * cpu) {
    struct tg_context_params cp = { 1 << 20, NULL, true };
    struct tg_context * cctx = tg_context_new(cp);
    struct tg_tensor * cache = tg_new_tensor_2d(cctx, TG_TYPE_F32, 8, 16);   // 16 rows of 8: the "cache"
    struct tg_buffer * cbuf = tg_backend_alloc_ctx_tensors(cctx, cpu);
    struct tg_context * gctx = tg_context_new(cp);
    struct tg_tensor * x = tg_new_tensor_1d(gctx, TG_TYPE_F32, 8);
    tg_set_input(x);
    struct tg_tensor * y = tg_scale(gctx, x, 2.0f);
    struct tg_tensor * row = tg_view_1d(gctx, cache, 8, 3 * cache->nb[1]);   // row 3
    struct tg_tensor * st = tg_cpy(gctx, y, row);
    tg_set_output(st);
    struct tg_graph * g = tg_graph_new(gctx, 16);
    struct tg_sched * s = tg_sched_new(&cpu, 1, 16);
    struct moved_obs o = { .view = row };
    struct tg_observer ob = { .user = &o, .on_graph_split = mo_split, .on_graph_alloc = mo_alloc };
    bool ok = cbuf && g && s && tg_graph_build_forward(g, st) == TG_OK && tg_sched_add_observer(s, &ob) == TG_OK &&
              tg_sched_alloc_graph(s, g) == TG_OK;
    float xv[8], cv[16 * 8];
    for (int i = 0; i < 8; i++) xv[i] = (float) i + 1;
    memset(cv, 0, sizeof cv);
    ok = ok && tg_backend_tensor_set(cache, cv, 0, sizeof cv) == TG_OK && tg_backend_tensor_set(x, xv, 0, sizeof xv) == TG_OK &&
         tg_sched_graph_compute(s, g) == TG_OK;
    const size_t off0 = o.view_offset;
    CHECK(o.moved_split == 0 && o.moved_alloc == 0, "an allocated graph's events list no moved tensors (%d, %d)",
          o.moved_split, o.moved_alloc);
    // the caller moves the store view (and the copy's view of it) to row 5
    const size_t by = 2 * cache->nb[1];
    row->data = (char *) row->data + by; row->view_offs += by;
    st->data = (char *) st->data + by; st->view_offs += by;
    struct tg_tensor * moved[2] = { row, st };
    ok = ok && tg_sched_graph_moved(s, g, moved, 2) == TG_OK && tg_backend_tensor_set(x, xv, 0, sizeof xv) == TG_OK &&
         tg_sched_graph_compute(s, g) == TG_OK && tg_backend_tensor_get(cache, cv, 0, sizeof cv) == TG_OK;
    CHECK(ok, "a graph storing into a cache row: allocated, computed, moved, computed (%s)", ok ? "ok" : tg_last_error());
    CHECK(ok && cv[3 * 8 + 7] == 16.0f && cv[5 * 8 + 7] == 16.0f && cv[4 * 8] == 0.0f,
          "the store wrote row 3, then row 5 after the move (row 3: %g, row 5: %g, row 4: %g)", cv[3 * 8 + 7], cv[5 * 8 + 7], cv[4 * 8]);
    CHECK(o.n_split == 2 && o.n_alloc == 2 && o.view_offset == off0 + by,
          "observers saw 2 splits and 2 allocations (%d, %d), the view's offset %zu then %zu", o.n_split, o.n_alloc, off0,
          o.view_offset);
    CHECK(o.moved_split == 2 && o.moved_alloc == 2, "the moved graph's split and alloc events list the 2 moved tensors (%d, %d)",
          o.moved_split, o.moved_alloc);
    struct tg_context * g2ctx = tg_context_new(cp);   // another graph allocated in between: moved allocates g again
    struct tg_tensor * z = tg_scale(g2ctx, tg_new_tensor_1d(g2ctx, TG_TYPE_F32, 4), 1.0f);
    struct tg_graph * g2 = tg_graph_new(g2ctx, 8);
    ok = g2 && tg_graph_build_forward(g2, z) == TG_OK && tg_sched_alloc_graph(s, g2) == TG_OK && tg_sched_graph_moved(s, g, NULL, 0) == TG_OK;
    CHECK(ok && o.n_alloc == 4, "graph_moved after another graph was allocated: g allocated again (%d allocations)", o.n_alloc);
    CHECK(tg_sched_graph_moved(s, NULL, NULL, 0) == TG_ERR_INVALID_ARG, "graph_moved(NULL graph): %s", tg_last_error());
    CHECK(tg_sched_graph_moved(s, g, NULL, 2) == TG_ERR_INVALID_ARG, "graph_moved(2 moved, no list): %s", tg_last_error());
    tg_sched_free(s);
    tg_context_free(g2ctx);
    tg_context_free(gctx);
    tg_buffer_free(cbuf);
    tg_context_free(cctx);
}

int main(void) {
    struct tg_backend * cpu = tg_backend_cpu_init();
    tg_backend_cpu_set_n_threads(cpu, 2);
    struct tg_backend * blas = tg_backend_blas_init();
#ifdef TG_HAVE_BLAS
    CHECK(blas != NULL, "BLAS backend available");
    tg_backend_blas_set_n_threads(blas, 2);
#else
    printf("note: built without TG_HAVE_BLAS: BLAS tests check CPU-only behaviour\n");
#endif
    test_splits_scenario(cpu, blas);
    test_copies(cpu);
    test_random_graphs(cpu);
    test_blas_vs_cpu(cpu, blas, TG_TYPE_F32);
    test_blas_vs_cpu(cpu, blas, TG_TYPE_Q8_0);
    test_blas_ops(cpu, blas);
    test_reserve(cpu);
    test_eval_callback(cpu);
    test_observers(cpu);
    test_reuse(cpu);
    test_poison(cpu);
    test_graph_moved(cpu);
    tg_backend_free(blas);
    tg_backend_free(cpu);
    return tg_check_finish("test_sched");
}
