// bench_observer.c - cost of the scheduler and of the observer machinery on a
// llama-sized graph (n_embd 768, 12 layers, n_ff 2048, 12 heads): the same
// allocated graph computed directly with tg_cpu_graph_compute and through
// tg_sched_graph_compute with nothing attached (target: < 1% overhead), then,
// for information, with a begin/end observer, an eval callback asking for
// nothing, and an observer of node events (per-node hooks).
//
// Usage: bench_observer [f32|q8_0] [reps] [n_threads]   (default q8_0 7 2)
#include "tg/cpu.h"
#include "tg/observe.h"
#include "tg/sched.h"
#include "llama_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { E = 768, NL = 12, FF = 2048, NH = 12, HD = 64, NV = 1024 };

struct model {
    struct tg_context * ctx;
    struct tg_buffer *  buf;
    struct tg_tensor *  w[NL][7];
    struct tg_tensor *  norm[NL][2];
    struct tg_tensor *  out_norm, * out;
};

static void fill_weights(struct model * m) {
    uint32_t s = 1;
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx); t; t = tg_context_next_tensor(m->ctx, t)) {
        int64_t ne0 = t->ne[0], rows = tg_nrows(t);
        float * row = malloc((size_t) ne0 * sizeof(float));
        size_t rs = tg_row_size(t->type, ne0);
        char * q = malloc(rs);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t i = 0; i < ne0; i++) {
                s = s * 1664525u + 1013904223u;
                row[i] = t->ne[1] == 1 ? 1.0f : ((float) (s >> 9) / 8388608.0f - 1.0f) * 0.05f;
            }
            if (t->type == TG_TYPE_F32) memcpy(q, row, rs);
            else tg_type_traits(t->type)->from_float(row, q, ne0);
            tg_backend_tensor_set(t, q, (size_t) r * rs, rs);
        }
        free(row); free(q);
    }
}

static int model_make(struct model * m, struct tg_backend * cpu, enum tg_type wt) {
    struct tg_context_params p = { 1 << 20, NULL, true };
    m->ctx = tg_context_new(p);
    static const int shp[7][2] = { { E, E }, { E, E }, { E, E }, { E, E }, { E, FF }, { E, FF }, { FF, E } };
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < 7; i++) m->w[l][i] = tg_format_name(tg_new_tensor_2d(m->ctx, wt, shp[i][0], shp[i][1]), "blk.%d.w%d", l, i);
        for (int i = 0; i < 2; i++) m->norm[l][i] = tg_format_name(tg_new_tensor_1d(m->ctx, TG_TYPE_F32, E), "blk.%d.norm%d", l, i);
    }
    m->out_norm = tg_set_name(tg_new_tensor_1d(m->ctx, TG_TYPE_F32, E), "output_norm.weight");
    m->out = tg_set_name(tg_new_tensor_2d(m->ctx, wt, E, NV), "output.weight");
    m->buf = tg_backend_alloc_ctx_tensors(m->ctx, cpu);
    if (!m->buf) return 1;
    tg_buffer_set_usage(m->buf, TG_BUFFER_USAGE_WEIGHTS);
    fill_weights(m);
    return 0;
}

struct lgraph { struct tg_context * ctx; struct tg_graph * g; struct tg_tensor * inp, * pos, * mask, * logits; };

// Self-attention over the T tokens of the batch (no KV cache), llama layout.
static void build(struct lgraph * r, struct model * m, int T) {
    struct tg_context_params p = { 16 << 20, NULL, true };
    struct tg_context * c = r->ctx = tg_context_new(p);
    r->inp = tg_set_name(tg_new_tensor_2d(c, TG_TYPE_F32, E, T), "inp_embd");
    r->pos = tg_set_name(tg_new_tensor_1d(c, TG_TYPE_I32, T), "inp_pos");
    r->mask = tg_set_name(tg_new_tensor_2d(c, TG_TYPE_F32, T, T), "kq_mask");
    tg_set_input(r->inp); tg_set_input(r->pos); tg_set_input(r->mask);
    struct tg_tensor * x = tg_test_llama_layers(c, r->inp, r->pos, r->mask, m->w, m->norm, NL, E, NH, HD, T);
    r->logits = tg_set_name(tg_mul_mat(c, m->out, tg_mul(c, tg_rms_norm(c, x, 1e-5f), m->out_norm)), "result_output");
    tg_set_output(r->logits);
    r->g = tg_graph_new(c, 4096);
    tg_graph_build_forward(r->g, r->logits);
}

static void set_inputs(struct lgraph * r, int T) {
    float * x = malloc((size_t) E * T * sizeof(float)), * mk = malloc((size_t) T * T * sizeof(float));
    int32_t * p = malloc((size_t) T * sizeof(int32_t));
    for (int i = 0; i < E * T; i++) x[i] = sinf((float) i * 0.01f);
    for (int i = 0; i < T; i++) { p[i] = i; for (int j = 0; j < T; j++) mk[i * T + j] = j <= i ? 0.0f : -INFINITY; }
    tg_backend_tensor_set(r->inp, x, 0, (size_t) E * T * sizeof(float));
    tg_backend_tensor_set(r->pos, p, 0, (size_t) T * sizeof(int32_t));
    tg_backend_tensor_set(r->mask, mk, 0, (size_t) T * T * sizeof(float));
    free(x); free(mk); free(p);
}

static int cmp_d(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static bool ask_nothing(struct tg_tensor * t, bool ask, void * u) { (void) t; (void) ask; (void) u; return false; }
static void on_ce(const struct tg_obs_compute_event * ev, void * u) { (void) ev; ++*(int *) u; }
static void on_node(const struct tg_obs_node_event * ev, void * u) { (void) ev; ++*(int *) u; }

// ---- the scheduler's own cost, free of machine noise: a backend whose
// graph_compute returns at once, timed through the scheduler vs called directly.
static enum tg_status null_compute(struct tg_backend * b, struct tg_graph * g) { (void) b; return g ? TG_OK : TG_ERR_INTERNAL; }
static bool null_supports(struct tg_backend * b, const struct tg_tensor * t) { (void) b; (void) t; return true; }
static bool null_buft(struct tg_backend * b, struct tg_buffer_type * bt) { (void) b; return tg_buft_is_host(bt); }
static const char * null_name(struct tg_backend * b) { (void) b; return "NULL"; }
static struct tg_buffer_type * null_default(struct tg_backend * b) { (void) b; return tg_cpu_buffer_type(); }

static double sched_path_ns(struct tg_graph * g) {
    struct tg_backend nb = { .iface = { .get_name = null_name, .get_default_buffer_type = null_default,
                                        .graph_compute = null_compute, .supports_op = null_supports,
                                        .supports_buft = null_buft } };
    struct tg_backend * b = &nb;
    struct tg_sched * s = tg_sched_new(&b, 1, 4096);
    if (!s || tg_sched_alloc_graph(s, g) != TG_OK) return -1;
    enum { N = 200000 };
    double best = 1e30;
    for (int round = 0; round < 5; round++) {   // whole call: checks, split loop, null backend call
        uint64_t t0 = tg_observe_now_ns();
        for (int i = 0; i < N; i++) tg_sched_graph_compute(s, g);
        double d = (double) (tg_observe_now_ns() - t0) / N;
        if (d < best) best = d;
    }
    tg_sched_free(s);
    return best;
}

enum { M_DIRECT, M_SCHED, M_OBS_CE, M_EVAL, M_OBS_NODE, M_COUNT };
static const char * const mode_names[M_COUNT] = {
    "tg_cpu_graph_compute (direct, same pool)", "tg_sched_graph_compute, nothing attached",
    "  + observer (compute begin/end)", "  + eval callback asking for nothing", "  + observer of node events",
};

static double run_mode(int mode, struct tg_sched * s, struct tg_backend * cpu, struct lgraph * r) {
    static int counter;
    struct tg_observer ce = { .user = &counter, .on_compute_begin = on_ce, .on_compute_end = on_ce };
    struct tg_observer nd = { .user = &counter, .on_node_begin = on_node, .on_node_end = on_node };
    if (mode == M_OBS_CE) tg_sched_add_observer(s, &ce);
    if (mode == M_OBS_NODE) tg_sched_add_observer(s, &nd);
    if (mode == M_EVAL) tg_sched_set_eval_callback(s, ask_nothing, NULL);
    uint64_t t0 = tg_observe_now_ns();
    // direct: the CPU backend's graph_compute is tg_cpu_graph_compute on the backend's own pool
    // (the same pool the scheduler uses, so both paths see the same warm threads)
    enum tg_status st = mode == M_DIRECT ? cpu->iface.graph_compute(cpu, r->g) : tg_sched_graph_compute(s, r->g);
    uint64_t t1 = tg_observe_now_ns();
    if (mode == M_OBS_CE) tg_sched_remove_observer(s, &ce);
    if (mode == M_OBS_NODE) tg_sched_remove_observer(s, &nd);
    if (mode == M_EVAL) tg_sched_set_eval_callback(s, NULL, NULL);
    if (st != TG_OK) { fprintf(stderr, "bench_observer: %s\n", tg_last_error()); exit(1); }
    return (double) (t1 - t0) / 1e6;
}

int main(int argc, char ** argv) {
    enum tg_type wt = argc > 1 && strcmp(argv[1], "f32") == 0 ? TG_TYPE_F32 : TG_TYPE_Q8_0;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    int nth = argc > 3 ? atoi(argv[3]) : 2;
    if (reps < 1 || nth < 1) { fprintf(stderr, "usage: bench_observer [f32|q8_0] [reps>=1] [n_threads>=1]\n"); return 1; }
    struct tg_backend * cpu = tg_backend_cpu_init();
    if (!cpu || tg_backend_cpu_set_n_threads(cpu, nth) != TG_OK) { fprintf(stderr, "bench_observer: %s\n", tg_last_error()); return 1; }
    struct model m;
    if (model_make(&m, cpu, wt)) { fprintf(stderr, "bench_observer: %s\n", tg_last_error()); return 1; }
    printf("bench_observer: n_embd %d, %d layers, n_ff %d, %d heads, %s weights (%.0f MiB), %d threads, %d reps (interleaved), %s\n",
           E, NL, FF, NH, tg_type_name(wt), (double) tg_buffer_get_size(m.buf) / (1 << 20), nth, reps, tg_cpu_simd_name());
    int Ts[2] = { 32, 1 };
    for (int ti = 0; ti < 2; ti++) {
        int T = Ts[ti];
        struct lgraph r;
        build(&r, &m, T);
        struct tg_sched * s = tg_sched_new(&cpu, 1, 4096);
        if (!s || tg_sched_alloc_graph(s, r.g) != TG_OK) { fprintf(stderr, "bench_observer: %s\n", tg_last_error()); return 1; }
        set_inputs(&r, T);
        double * t[M_COUNT];
        for (int k = 0; k < M_COUNT; k++) { t[k] = malloc((size_t) reps * sizeof(double)); run_mode(k, s, cpu, &r); }
        for (int i = 0; i < reps; i++)          // interleaved, order rotated per rep
            for (int j = 0; j < M_COUNT; j++) {
                int k = (i + j) % M_COUNT;
                t[k][i] = run_mode(k, s, cpu, &r);
            }
        printf("\nT = %d tokens (%d nodes, %d split(s))\n", T, r.g->n_nodes, tg_sched_get_n_splits(s));
        printf("  %-42s %10s %10s %12s\n", "mode", "min ms", "median ms", "min vs direct");
        double base_min = 0;
        for (int k = 0; k < M_COUNT; k++) {
            qsort(t[k], (size_t) reps, sizeof(double), cmp_d);
            double mn = t[k][0], md = t[k][reps / 2];
            if (k == M_DIRECT) base_min = mn;
            printf("  %-42s %10.3f %10.3f %+11.2f%%\n", mode_names[k], mn, md, k == M_DIRECT ? 0.0 : 100.0 * (mn - base_min) / base_min);
            free(t[k]);
        }
        double alloc_us = 1e30;
        for (int i = 0; i < 20; i++) {   // placement passes, splits, plan check and placement of every tensor
            tg_sched_reset(s);
            uint64_t t0 = tg_observe_now_ns();
            if (tg_sched_alloc_graph(s, r.g) != TG_OK) { fprintf(stderr, "bench_observer: %s\n", tg_last_error()); return 1; }
            double d = (double) (tg_observe_now_ns() - t0) / 1e3;
            if (d < alloc_us) alloc_us = d;
        }
        printf("  tg_sched_alloc_graph (placement, splits, plan reuse): %.1f us = %.3f%% of direct compute (min)\n",
               alloc_us, 100.0 * alloc_us / (base_min * 1e3));
        double ns = sched_path_ns(r.g);
        printf("  scheduler path itself (null backend, same graph): %.1f ns per compute call = %.5f%% of direct (min)\n",
               ns, 100.0 * ns / (base_min * 1e6));
        tg_sched_free(s);
        tg_context_free(r.ctx);
    }
    printf("\n(target: tg_sched_graph_compute with nothing attached within 1%% of direct; machine noise on a shared host is often larger)\n");
    tg_buffer_free(m.buf);
    tg_context_free(m.ctx);
    tg_backend_free(cpu);
    return 0;
}
