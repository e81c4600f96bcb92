// test_cpu_errors.c - the CPU compute loop's error contract: a tensor with no
// memory (TG_ERR_NO_BUFFER, named), an op/type combination without a kernel
// (TG_ERR_UNSUPPORTED, op and types named), a hook stopping the graph
// (TG_ERR_ABORTED), a kernel rejecting bad row ids; hooks run on the calling
// thread in node order.
#include "check.h"
#include "cpu/cpu-impl.h"
#include "tg/cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct tg_context * ctx_new(bool no_alloc) {
    struct tg_context_params p = { .mem_size = 1u << 20, .mem_buffer = NULL, .no_alloc = no_alloc };
    return tg_context_new(p);
}

static struct tg_graph * graph_of(struct tg_context * ctx, struct tg_tensor * t) {
    struct tg_graph * g = tg_graph_new(ctx, 64);
    if (g && tg_graph_build_forward(g, t) != TG_OK) return NULL;
    return g;
}

static void test_no_buffer(void) {
    struct tg_context * nctx = ctx_new(true);
    struct tg_tensor * w = tg_set_name(tg_new_tensor_1d(nctx, TG_TYPE_F32, 8), "weights");
    struct tg_tensor * y = tg_silu(nctx, w);
    struct tg_graph * g = graph_of(nctx, y);
    enum tg_status st = tg_cpu_compute(g, 2);
    CHECK(st == TG_ERR_NO_BUFFER, "source without data: TG_ERR_NO_BUFFER (got %s)", tg_status_str(st));
    CHECK(strstr(tg_last_error(), "'weights'") && strstr(tg_last_error(), "no memory"),
          "message names the tensor and says it has no memory: %s", tg_last_error());
    tg_context_free(nctx);

    // Source has data, the result lives in a no_alloc context.
    struct tg_context * dctx = ctx_new(false);
    nctx = ctx_new(true);
    struct tg_tensor * a = tg_new_tensor_1d(dctx, TG_TYPE_F32, 8);
    memset(a->data, 0, tg_nbytes(a));
    struct tg_tensor * r = tg_set_name(tg_relu(nctx, a), "activations");
    g = graph_of(nctx, r);
    st = tg_cpu_compute(g, 1);
    CHECK(st == TG_ERR_NO_BUFFER && strstr(tg_last_error(), "'activations'") && strstr(tg_last_error(), "RELU"),
          "node without data: TG_ERR_NO_BUFFER naming it and its op: %s", tg_last_error());
    CHECK(strstr(tg_last_error(), "graph allocator") != NULL, "message says how to give it memory");
    tg_context_free(nctx);
    tg_context_free(dctx);
}

static void test_unsupported(void) {
    struct tg_context * ctx = ctx_new(false);
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 8);
    memset(a->data, 0, tg_nbytes(a));
    struct tg_tensor * ok = tg_silu(ctx, a);
    CHECK(tg_cpu_supports_op(ok), "tg_cpu_supports_op(SILU f32) is true");
    // A hand-built node: SILU into an i8 tensor has no kernel.
    struct tg_tensor * bad = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_I8, 8), "bad_silu");
    bad->op = TG_OP_SILU;
    bad->src[0] = a;
    CHECK(!tg_cpu_supports_op(bad), "tg_cpu_supports_op(SILU f32 -> i8) is false");
    struct tg_graph * g = graph_of(ctx, bad);
    enum tg_status st = tg_cpu_compute(g, 2);
    CHECK(st == TG_ERR_UNSUPPORTED, "unsupported type combination: TG_ERR_UNSUPPORTED (got %s)", tg_status_str(st));
    CHECK(strstr(tg_last_error(), "SILU") && strstr(tg_last_error(), "i8") && strstr(tg_last_error(), "f32") &&
          strstr(tg_last_error(), "bad_silu"), "message names op, node and types: %s", tg_last_error());

    // A q8_0 view whose blocks are not dense along dim 0 (made by hand: the
    // constructors refuse to build one) has no copy kernel.
    struct tg_tensor * q = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 64, 4);
    memset(q->data, 0, tg_nbytes(q));
    struct tg_tensor * qv = tg_view_2d(ctx, q, 64, 2, q->nb[1] * 2, 0);
    struct tg_tensor * qc = qv ? tg_cont(ctx, qv) : NULL;
    if (CHECK(qc != NULL, "cont of a q8_0 view built: %s", qc ? "" : tg_last_error())) {
        qv->nb[0] = q->nb[1];
        CHECK(!tg_cpu_supports_op(qc), "tg_cpu_supports_op(cont of q8_0 with strided blocks) is false");
        g = graph_of(ctx, qc);
        st = tg_cpu_compute(g, 1);
        CHECK(st == TG_ERR_UNSUPPORTED, "computing it: TG_ERR_UNSUPPORTED: %s", tg_last_error());
    }
    tg_context_free(ctx);
}

struct hook_log {
    int n_before, n_after, stop_at, last_index;
    bool in_order, on_caller;
    pthread_t caller;
};

static bool before(struct tg_tensor * node, int index, void * user) {
    struct hook_log * h = user;
    h->on_caller &= pthread_equal(pthread_self(), h->caller) != 0;
    h->in_order &= index > h->last_index;
    h->last_index = index;
    h->n_before++;
    return index != h->stop_at;
}

static void after(struct tg_tensor * node, int index, void * user) {
    struct hook_log * h = user;
    h->on_caller &= pthread_equal(pthread_self(), h->caller) != 0;
    h->n_after++;
}

static void test_hooks(void) {
    struct tg_context * ctx = ctx_new(false);
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 1000);
    for (int i = 0; i < 1000; i++) ((float *) a->data)[i] = (float) i / 100.0f;
    struct tg_tensor * b = tg_sqr(ctx, a);
    struct tg_tensor * c = tg_silu(ctx, b);
    struct tg_tensor * d = tg_neg(ctx, c);
    struct tg_graph * g = graph_of(ctx, d);
    struct tg_cpu_pool * pool = tg_cpu_pool_new(3);
    tg_cpu_set_task_grain(1);
    struct hook_log h = { .stop_at = -1, .last_index = -1, .in_order = true, .on_caller = true, .caller = pthread_self() };
    struct tg_cpu_hooks hooks = { .before = before, .after = after, .user = &h };
    enum tg_status st = tg_cpu_graph_compute(pool, g, &hooks);
    CHECK(st == TG_OK && h.n_before == 3 && h.n_after == 3, "hooks called once per node (%d before, %d after)", h.n_before, h.n_after);
    CHECK(h.in_order && h.on_caller, "hooks run in node order on the calling thread");
    CHECK(((float *) d->data)[999] < -99.0f, "graph computed with hooks (d[999] = %g)", (double) ((float *) d->data)[999]);

    memset(d->data, 0, tg_nbytes(d));
    h = (struct hook_log) { .stop_at = 2, .last_index = -1, .in_order = true, .on_caller = true, .caller = pthread_self() };
    st = tg_cpu_graph_compute(pool, g, &hooks);
    CHECK(st == TG_ERR_ABORTED, "before hook returning false: TG_ERR_ABORTED (got %s)", tg_status_str(st));
    CHECK(h.n_before == 3 && h.n_after == 2, "stopped at node 2 (%d before, %d after)", h.n_before, h.n_after);
    CHECK(((float *) d->data)[999] == 0.0f, "the stopped node was not computed");
    CHECK(strstr(tg_last_error(), "node 2") != NULL, "message names the node: %s", tg_last_error());

    st = tg_cpu_graph_compute(pool, g, NULL);
    CHECK(st == TG_OK && ((float *) d->data)[999] < -99.0f, "the pool computes again after an abort");
    tg_cpu_set_task_grain(0);
    tg_cpu_pool_free(pool);
    tg_context_free(ctx);
}

// A hook computing another graph on the same pool is refused (no deadlock).
struct reenter { struct tg_cpu_pool * pool; struct tg_graph * g; enum tg_status st; };
static bool reenter_before(struct tg_tensor * node, int index, void * user) {
    struct reenter * r = user;
    if (index == 0) r->st = tg_cpu_graph_compute(r->pool, r->g, NULL);
    return true;
}

static void test_reentry(void) {
    struct tg_context * ctx = ctx_new(false);
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 16);
    memset(a->data, 0, tg_nbytes(a));
    struct tg_graph * g = graph_of(ctx, tg_neg(ctx, tg_abs(ctx, a)));
    struct reenter r = { tg_cpu_pool_new(2), g, TG_OK };
    struct tg_cpu_hooks hooks = { .before = reenter_before, .user = &r };
    enum tg_status st = tg_cpu_graph_compute(r.pool, g, &hooks);
    CHECK(st == TG_OK && r.st == TG_ERR_INVALID_ARG, "re-entrant compute from a hook refused (%s): %s",
          tg_status_str(r.st), tg_last_error());
    tg_cpu_pool_free(r.pool);
    tg_context_free(ctx);
}

static void test_bad_rows(void) {
    struct tg_context * ctx = ctx_new(false);
    struct tg_tensor * emb = tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 10);
    memset(emb->data, 0, tg_nbytes(emb));
    struct tg_tensor * ids = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_I32, 3), "token_ids");
    int32_t v[3] = { 1, 12, 2 };
    memcpy(ids->data, v, sizeof(v));
    struct tg_tensor * r = tg_get_rows(ctx, emb, ids);
    struct tg_graph * g = graph_of(ctx, r);
    enum tg_status st = tg_cpu_compute(g, 2);
    CHECK(st == TG_ERR_INVALID_ARG && strstr(tg_last_error(), "12") && strstr(tg_last_error(), "token_ids"),
          "GET_ROWS with id 12 of 10 rows: TG_ERR_INVALID_ARG: %s", tg_last_error());
    tg_context_free(ctx);
}

// Stops at every node of a graph mixing single-thread and multi-thread nodes,
// with 1..4 threads, by a hook or by a kernel error: no deadlock, right counts.
static void test_stop_schedule(void) {
    struct tg_context_params cp = { .mem_size = 8u << 20, .mem_buffer = NULL, .no_alloc = false };
    struct tg_context * ctx = tg_context_new(cp);
    struct tg_tensor * big = tg_new_tensor_2d(ctx, TG_TYPE_F32, 256, 256);     // 64k elements: several threads
    struct tg_tensor * emb = tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 10);
    struct tg_tensor * ids = tg_new_tensor_1d(ctx, TG_TYPE_I32, 2);
    memset(big->data, 0, tg_nbytes(big));
    memset(emb->data, 0, tg_nbytes(emb));
    struct tg_tensor * x = tg_abs(ctx, big);
    struct tg_tensor * r = tg_get_rows(ctx, emb, ids);                          // small; may fail
    struct tg_tensor * y = tg_neg(ctx, tg_scale(ctx, x, 2.0f));
    struct tg_tensor * z = tg_add(ctx, tg_sqr(ctx, r), r);
    struct tg_tensor * w = tg_silu(ctx, y);
    struct tg_graph * g = tg_graph_new(ctx, 64);
    bool built = w && z && tg_graph_build_forward(g, w) == TG_OK && tg_graph_build_forward(g, z) == TG_OK;
    const int n = g->n_nodes;
    if (!CHECK(built && n == 7, "mixed graph of %d nodes built", n)) { tg_context_free(ctx); return; }
    bool all_ok = true;
    for (int nt = 1; nt <= 4; nt++) {
        struct tg_cpu_pool * pool = tg_cpu_pool_new(nt);
        for (int stop = -1; stop < n; stop++) {
            ((int32_t *) ids->data)[0] = 1;
            ((int32_t *) ids->data)[1] = 3;
            struct hook_log h = { .stop_at = stop, .last_index = -1, .in_order = true, .on_caller = true, .caller = pthread_self() };
            struct tg_cpu_hooks hooks = { .before = before, .after = after, .user = &h };
            enum tg_status st = tg_cpu_graph_compute(pool, g, &hooks);
            bool ok = stop < 0 ? st == TG_OK && h.n_before == n && h.n_after == n
                               : st == TG_ERR_ABORTED && h.n_before == stop + 1 && h.n_after == stop;
            // The same graph with a bad row id: the kernel error stops it, with and without hooks.
            ((int32_t *) ids->data)[1] = 99;
            struct hook_log h2 = { .stop_at = -1, .last_index = -1, .in_order = true, .on_caller = true, .caller = pthread_self() };
            struct tg_cpu_hooks hooks2 = { .before = before, .after = after, .user = &h2 };
            st = tg_cpu_graph_compute(pool, g, stop < 0 ? NULL : &hooks2);
            ok &= st == TG_ERR_INVALID_ARG && (stop < 0 || h2.n_before == h2.n_after + 1);
            if (!ok) printf("  threads %d stop at %d: %s (before %d, after %d)\n", nt, stop, tg_status_str(st), h.n_before, h.n_after);
            all_ok &= ok;
        }
        tg_cpu_pool_free(pool);
    }
    CHECK(all_ok, "stops at each of %d nodes (hook or kernel error) with 1..4 threads: right status and hook counts", n);
    tg_context_free(ctx);
}

// tg_cpu_pool_parallel from hooks: every task runs exactly once before the
// call returns; the threads waiting between nodes take some of them; outside
// a graph the caller runs them in order.
struct par_log {
    struct tg_cpu_pool * pool;
    pthread_t caller;
    atomic_int runs[16];
    atomic_int on_others;
    int calls, complete;
};

static void par_task(int i, void * arg) {
    struct par_log * l = arg;
    double t0 = (double) clock() / CLOCKS_PER_SEC;   // ~50 us of work: long enough to be shared
    while ((double) clock() / CLOCKS_PER_SEC - t0 < 50e-6) continue;   // clock() is the work
    atomic_fetch_add(&l->runs[i], 1);
    if (!pthread_equal(pthread_self(), l->caller)) atomic_fetch_add(&l->on_others, 1);
}

static void par_after(struct tg_tensor * node, int index, void * user) {
    (void) node; (void) index;
    struct par_log * l = user;
    for (int i = 0; i < 16; i++) atomic_store(&l->runs[i], 0);
    tg_cpu_pool_parallel(l->pool, 16, par_task, l);
    int once = 0;
    for (int i = 0; i < 16; i++) once += atomic_load(&l->runs[i]) == 1;
    l->calls++;
    l->complete += once == 16;
}

static void test_pool_parallel(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 4u << 20, .mem_buffer = NULL, .no_alloc = false });
    struct tg_tensor * a = tg_new_tensor_2d(ctx, TG_TYPE_F32, 256, 256);   // big enough for several threads
    memset(a->data, 0, tg_nbytes(a));
    struct tg_tensor * y = a;
    for (int k = 0; k < 6; k++) y = k % 2 ? tg_neg(ctx, y) : tg_abs(ctx, y);
    struct tg_graph * g = graph_of(ctx, y);
    if (!CHECK(g && g->n_nodes == 6, "graph of 6 nodes for the parallel hooks")) { tg_context_free(ctx); return; }
    for (int nt = 1; nt <= 3; nt++) {
        struct tg_cpu_pool * pool = tg_cpu_pool_new(nt);
        struct par_log l = { .pool = pool, .caller = pthread_self() };
        struct tg_cpu_hooks hooks = { .after = par_after, .user = &l };
        enum tg_status st = tg_cpu_graph_compute(pool, g, &hooks);
        CHECK(st == TG_OK && l.calls == g->n_nodes && l.complete == l.calls,
              "%d thread(s): after every node, all 16 tasks ran exactly once before the call returned (%d/%d)", nt,
              l.complete, l.calls);
        if (nt > 1) {
            // On a loaded machine the waiting threads may be descheduled for a
            // whole run: try again (up to 50 runs) before calling it a failure.
            int runs = 1;
            while (atomic_load(&l.on_others) == 0 && runs < 50 && tg_cpu_graph_compute(pool, g, &hooks) == TG_OK) runs++;
            CHECK(atomic_load(&l.on_others) > 0, "%d threads: the waiting threads took %d tasks (%d run%s)", nt,
                  atomic_load(&l.on_others), runs, runs == 1 ? "" : "s");
        }
        // outside a graph: in order, on the caller
        struct par_log o = { .pool = pool, .caller = pthread_self() };
        tg_cpu_pool_parallel(pool, 16, par_task, &o);
        int once = 0;
        for (int i = 0; i < 16; i++) once += atomic_load(&o.runs[i]) == 1;
        CHECK(once == 16 && atomic_load(&o.on_others) == 0, "%d thread(s), no graph running: the caller runs all 16", nt);
        tg_cpu_pool_free(pool);
    }
    tg_context_free(ctx);
}

static void test_pool_args(void) {
    struct tg_cpu_pool * p = tg_cpu_pool_new(0);
    CHECK(p == NULL && tg_last_status() == TG_ERR_INVALID_ARG, "tg_cpu_pool_new(0) fails: %s", tg_last_error());
    p = tg_cpu_pool_new(4);
    CHECK(p && tg_cpu_pool_n_threads(p) == 4, "tg_cpu_pool_n_threads = 4");
    tg_cpu_pool_free(p);
    tg_cpu_pool_free(NULL);
    CHECK(tg_cpu_graph_compute(NULL, NULL, NULL) == TG_ERR_INVALID_ARG, "NULL pool/graph: TG_ERR_INVALID_ARG");
    const char * name = tg_cpu_simd_name();
    struct tg_cpu_features f = tg_cpu_features();
    CHECK(strcmp(name, "avx512vnni") == 0 || strcmp(name, "avx512") == 0 || strcmp(name, "avx2") == 0 || strcmp(name, "avx") == 0 || strcmp(name, "scalar") == 0,
          "simd level '%s' (sse3 %d avx %d avx2 %d fma %d f16c %d avx512f %d bw %d vl %d dq %d vnni %d)", name,
          f.sse3, f.avx, f.avx2, f.fma, f.f16c, f.avx512f, f.avx512bw, f.avx512vl, f.avx512dq, f.avx512vnni);
    CHECK(strcmp(name, "avx512vnni") != 0 || f.avx512vnni, "the avx512vnni level only where the CPU has VNNI");
    tg_cpu_force_scalar(true);
    CHECK(strcmp(tg_cpu_simd_name(), "scalar") == 0, "tg_cpu_force_scalar(true) selects scalar");
    tg_cpu_force_scalar(false);
    CHECK(strcmp(tg_cpu_simd_name(), name) == 0, "tg_cpu_force_scalar(false) restores '%s'", name);
}

// tg_cpu_read_bandwidth: bad arguments give 0 and the last error; a small
// buffer (the caches) gives a positive figure.
static void test_read_bandwidth(void) {
    tg_clear_error();
    double bw = tg_cpu_read_bandwidth(0, 1 << 20, 3);
    CHECK(bw == 0 && tg_last_status() == TG_ERR_INVALID_ARG, "read bandwidth with 0 threads: 0, %s", tg_last_error());
    tg_clear_error();
    bw = tg_cpu_read_bandwidth(2, 1 << 20, 0);
    CHECK(bw == 0 && tg_last_status() == TG_ERR_INVALID_ARG, "read bandwidth with 0 passes: 0, %s", tg_last_error());
    tg_clear_error();
    bw = tg_cpu_read_bandwidth(2, 200, 3);
    CHECK(bw == 0 && tg_last_status() == TG_ERR_INVALID_ARG, "read bandwidth of 200 bytes on 2 threads: 0, %s", tg_last_error());
    tg_clear_error();
    bw = tg_cpu_read_bandwidth(1, SIZE_MAX, 3);
    CHECK(bw == 0 && tg_last_status() == TG_ERR_NOMEM, "read bandwidth of SIZE_MAX bytes: 0, %s", tg_last_error());
    tg_clear_error();
    bw = tg_cpu_read_bandwidth(2, 1 << 20, 3);
    CHECK(bw > 0 && tg_last_status() == TG_OK, "read bandwidth over 1 MiB, 2 threads: %.1f GB/s", bw);
}

// Every level above avx512 runs the avx512 elementwise kernels (the VNNI
// level only adds quantized dot products): exp/silu/softmax bits equal the
// avx512 level's, and differ from the scalar path's somewhere (so a level
// that fell back to scalar would show).
static void test_levels_keep_elementwise(void) {
    const int top = tg_cpu_simd_level();
    if (top <= TG_SIMD_AVX512) { printf("     skipped: no level above avx512 on this CPU\n"); return; }
    enum { N = 1000 };
    float x[N], y0[N], y1[N], y2[N], s0[N], s1[N];
    uint32_t r = 7;
    for (int i = 0; i < N; i++) { r = r * 1664525u + 1013904223u; x[i] = (float) (r >> 8) / 16777216.0f * 20.0f - 10.0f; }
    tg_cpu_set_simd_cap(TG_SIMD_AVX512);
    double a = tg_cpu_vexp_sum(N, y0, x, 10.0f);
    tg_cpu_vsilu(N, s0, x);
    tg_cpu_set_simd_cap(top);
    double b = tg_cpu_vexp_sum(N, y1, x, 10.0f);
    tg_cpu_vsilu(N, s1, x);
    tg_cpu_set_simd_cap(TG_SIMD_SCALAR);
    double c = tg_cpu_vexp_sum(N, y2, x, 10.0f);
    tg_cpu_set_simd_cap(-1);
    CHECK(a == b && memcmp(y0, y1, sizeof y0) == 0 && memcmp(s0, s1, sizeof s0) == 0,
          "level %s: exp and silu give the avx512 level's bits", tg_cpu_simd_name());
    CHECK(a != c || memcmp(y0, y2, sizeof y0) != 0, "the avx512 exp differs from the scalar one somewhere (the check above can fail)");
}

// TG_NO_SIMD=1 is read when the CPU is first probed.
static void test_env_no_simd(void) {
    setenv("TG_NO_SIMD", "1", 1);
    CHECK(strcmp(tg_cpu_simd_name(), "scalar") == 0, "TG_NO_SIMD=1 selects the scalar paths ('%s')", tg_cpu_simd_name());
    unsetenv("TG_NO_SIMD");
    tg_cpu_force_scalar(false);
    struct tg_cpu_features f = tg_cpu_features();
    bool simd = f.avx && f.fma && f.f16c;
    CHECK(simd == (strcmp(tg_cpu_simd_name(), "scalar") != 0), "tg_cpu_force_scalar(false) restores detection ('%s')", tg_cpu_simd_name());
}

int main(void) {
    unsetenv("TG_SIMD");  // the levels here are set by the test (a cap from outside skews "detection")
    test_env_no_simd();   // first: before anything probes the CPU
    test_no_buffer();
    test_unsupported();
    test_hooks();
    test_reentry();
    test_bad_rows();
    test_stop_schedule();
    test_pool_args();
    test_levels_keep_elementwise();
    test_pool_parallel();
    test_read_bandwidth();
    return tg_check_finish("test_cpu_errors");
}
