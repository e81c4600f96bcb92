// bench_mul_mat.c - MUL_MAT on the CPU: time per call, GFLOP/s and, for
// generation (n=1), the weight bytes read per second next to this machine's
// read bandwidth measured here with the same threads (a streaming sum over a
// buffer the size of the weights, i.e. what the repeated calls read from,
// and over a 256 MiB buffer, i.e. DRAM).
//
// A call is one MUL_MAT node; graphs of 8 such nodes are timed (the thread
// pool wakes once per graph, as for a model's graph) and divided by 8.
//
// usage: bench_mul_mat [-t threads (2)] [-r repeats (scaled to ~0.2 s)]
//                      [-l scalar|avx|avx2|avx512 (cap the SIMD level)]
#include "cpu/vec-impl.h"
#include "tg/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void * x, const void * y) {
    double a = *(const double *) x, b = *(const double *) y;
    return a < b ? -1 : a > b;
}

// ---- read bandwidth: nth threads each sum their share of a buffer ----------------

struct bw_job {
    const uint64_t * p;
    size_t n;                // uint64 words
    int reps;
    pthread_barrier_t * bar;
    uint64_t sum;
    double * t0, * t1;       // per repeat: this thread's pass start and end
};

typedef uint64_t tg_v4u __attribute__((vector_size(32)));

static void * bw_worker(void * arg) {
    struct bw_job * j = arg;
    tg_v4u s0 = { 0 }, s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->bar);
        j->t0[r] = now_s();
        for (size_t i = 0; i + 16 <= j->n; i += 16) {   // 128 bytes per step, 4 independent sums
            tg_v4u v0, v1, v2, v3;
            memcpy(&v0, j->p + i, 32);
            memcpy(&v1, j->p + i + 4, 32);
            memcpy(&v2, j->p + i + 8, 32);
            memcpy(&v3, j->p + i + 12, 32);
            s0 += v0; s1 += v1; s2 += v2; s3 += v3;
        }
        j->t1[r] = now_s();
        pthread_barrier_wait(j->bar);
    }
    tg_v4u s = s0 + s1 + s2 + s3;
    j->sum = s[0] + s[1] + s[2] + s[3];
    return NULL;
}

// Median bytes/s of summing `bytes` with nth threads (one pass per repeat;
// 64-bit integer sums, vectorized).
static double read_bandwidth(size_t bytes, int nth, int reps) {
    size_t words = bytes / 8;
    uint64_t * buf = aligned_alloc(64, (words * 8 + 63) / 64 * 64);
    if (!buf) return 0;
    for (size_t i = 0; i < words; i++) buf[i] = i;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned) nth + 1);
    pthread_t th[64];
    struct bw_job jobs[64];
    size_t per = (words / (size_t) nth) & ~(size_t) 15;
    double * times = malloc(sizeof(double) * 2 * (size_t) (reps + 1) * (size_t) nth);
    for (int t = 0; t < nth; t++) {
        double * tt = times + 2 * (size_t) (reps + 1) * (size_t) t;
        jobs[t] = (struct bw_job) { buf + per * (size_t) t, per, reps + 1, &bar, 0, tt, tt + reps + 1 };
        pthread_create(&th[t], NULL, bw_worker, &jobs[t]);
    }
    for (int r = 0; r <= reps; r++) {   // the first pass warms up
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
    }
    // a pass lasts from the first thread's start to the last thread's end
    double * ts = malloc(sizeof(double) * (size_t) reps);
    for (int r = 1; r <= reps; r++) {
        double a = jobs[0].t0[r], b = jobs[0].t1[r];
        for (int t = 1; t < nth; t++) {
            if (jobs[t].t0[r] < a) a = jobs[t].t0[r];
            if (jobs[t].t1[r] > b) b = jobs[t].t1[r];
        }
        ts[r - 1] = b - a;
    }
    uint64_t sink = 0;
    for (int t = 0; t < nth; t++) { pthread_join(th[t], NULL); sink += jobs[t].sum; }
    pthread_barrier_destroy(&bar);
    qsort(ts, (size_t) reps, sizeof(double), cmp_double);
    double med = ts[reps / 2];
    free(ts);
    free(times);
    free(buf);
    if (sink == 42) printf(" ");   // keep the sums alive
    return (double) (per * (size_t) nth * 8) / med;
}

// ---- mul_mat ----------------------------------------------------------------------------

enum { BENCH_NODES = 8 };   // mul_mat nodes per graph

struct result { double t_med, t_min, gflops, wbytes_s; };

static bool bench_one(struct tg_cpu_pool * pool, enum tg_type wt, int64_t k, int64_t m, int64_t n,
                      int reps_arg, struct result * res, size_t * wbytes) {
    struct tg_context_params cp = { (size_t) (k * m * 4 + k * n * 4 + BENCH_NODES * m * n * 4) + (8u << 20), NULL, false };
    struct tg_context * ctx = tg_context_new(cp);
    if (!ctx) return false;
    struct tg_tensor * a = tg_new_tensor_2d(ctx, wt, k, m);
    struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F32, k, n);
    // BENCH_NODES independent products in one graph, as in a model: the
    // pool's wake-up per graph is shared, the time per call is graph / nodes
    struct tg_graph * g = a && b ? tg_graph_new(ctx, 2 * BENCH_NODES + 8) : NULL;
    for (int i = 0; g && i < BENCH_NODES; i++) {
        struct tg_tensor * d = tg_mul_mat(ctx, a, b);
        if (!d || tg_graph_build_forward(g, d) != TG_OK) g = NULL;
    }
    if (!g) { tg_context_free(ctx); return false; }
    // random weights (via f32 rows), random activations
    float * row = malloc((size_t) k * sizeof(float));
    uint32_t x = 12345;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t l = 0; l < k; l++) { x = x * 1664525u + 1013904223u; row[l] = (float) (x >> 8) / 16777216.0f - 0.5f; }
        char * dst = (char *) a->data + i * a->nb[1];
        if (wt == TG_TYPE_F32) memcpy(dst, row, (size_t) k * sizeof(float));
        else tg_type_traits(wt)->from_float(row, dst, k);
    }
    for (int64_t t = 0; t < k * n; t++) { x = x * 1664525u + 1013904223u; ((float *) b->data)[t] = (float) (x >> 8) / 16777216.0f - 0.5f; }
    free(row);
    *wbytes = tg_nbytes(a);

    // repeats: ~0.2 s in total unless given
    double t0 = now_s();
    if (tg_cpu_graph_compute(pool, g, NULL) != TG_OK) { tg_context_free(ctx); return false; }
    double one = (now_s() - t0) / BENCH_NODES;
    int reps = reps_arg > 0 ? reps_arg : (int) (0.2 / BENCH_NODES / (one > 1e-6 ? one : 1e-6));
    if (reps < 5) reps = 5;
    if (reps > 5000) reps = 5000;
    double * ts = malloc(sizeof(double) * (size_t) reps);
    for (int r = 0; r < reps; r++) {
        t0 = now_s();
        tg_cpu_graph_compute(pool, g, NULL);
        ts[r] = (now_s() - t0) / BENCH_NODES;
    }
    qsort(ts, (size_t) reps, sizeof(double), cmp_double);
    res->t_med = ts[reps / 2];
    res->t_min = ts[0];
    res->gflops = 2.0 * (double) k * (double) m * (double) n / res->t_med * 1e-9;
    res->wbytes_s = (double) *wbytes / res->t_med;
    free(ts);
    tg_context_free(ctx);
    return true;
}

int main(int argc, char ** argv) {
    int nth = 2, reps = 0, cap = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-l") && i + 1 < argc) {
            const char * l = argv[++i];
            cap = !strcmp(l, "scalar") ? TG_SIMD_SCALAR : !strcmp(l, "avx") ? TG_SIMD_AVX
                : !strcmp(l, "avx2") ? TG_SIMD_AVX2 : !strcmp(l, "avx512") ? TG_SIMD_AVX512
                : !strcmp(l, "avx512vnni") ? TG_SIMD_AVX512VNNI : -2;
            if (cap == -2) { fprintf(stderr, "bench_mul_mat: unknown level '%s'\n", l); return 1; }
        } else {
            fprintf(stderr, "usage: bench_mul_mat [-t threads] [-r repeats] [-l scalar|avx|avx2|avx512]\n");
            return 1;
        }
    }
    if (nth < 1 || nth > 64) { fprintf(stderr, "bench_mul_mat: threads must be 1..64\n"); return 1; }
    tg_cpu_set_simd_cap(cap);
    static const char * level_names[] = { "scalar", "avx", "avx2", "avx512" };
    struct tg_cpu_pool * pool = tg_cpu_pool_new(nth);
    if (!pool) { fprintf(stderr, "bench_mul_mat: cannot create a pool of %d threads\n", nth); return 1; }

    const double bw_dram = read_bandwidth(256u << 20, nth, 5);
    printf("MUL_MAT benchmark: %d thread(s), SIMD level %s (cpu: %s), k = 768\n",
           nth, level_names[tg_cpu_simd_level()], tg_cpu_simd_name());
    printf("read bandwidth, %d thread(s): %.1f GB/s (256 MiB buffer)\n\n", nth, bw_dram * 1e-9);
    printf("%-5s %-10s %4s %11s %11s %9s %11s %14s %6s\n", "type", "weights", "n", "time/call", "(min)", "GFLOP/s",
           "weights/s", "read bw (same", "ratio");
    printf("%-5s %-10s %4s %11s %11s %9s %11s %14s %6s\n", "", "m x k", "", "(median)", "", "(median)", "(n=1)", "size buffer)", "");
    const enum tg_type types[] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_Q8_0, TG_TYPE_Q4_0 };
    const int64_t ms[] = { 768, 2048 }, ns[] = { 1, 256 };
    for (int ti = 0; ti < 4; ti++)
    for (int mi = 0; mi < 2; mi++)
    for (int ni = 0; ni < 2; ni++) {
        struct result r;
        size_t wbytes = 0;
        char shape[32];
        snprintf(shape, sizeof shape, "%lldx768", (long long) ms[mi]);
        if (!bench_one(pool, types[ti], 768, ms[mi], ns[ni], reps, &r, &wbytes)) {
            printf("%-5s %-10s %4lld   failed: %s\n", tg_type_name(types[ti]), shape, (long long) ns[ni], tg_last_error());
            continue;
        }
        if (ns[ni] == 1) {
            const double bw = read_bandwidth(wbytes, nth, 200);
            printf("%-5s %-10s %4lld %8.1f us %8.1f us %9.1f %6.1f GB/s %9.1f GB/s %5.0f%%\n", tg_type_name(types[ti]), shape,
                   (long long) ns[ni], r.t_med * 1e6, r.t_min * 1e6, r.gflops, r.wbytes_s * 1e-9, bw * 1e-9,
                   100.0 * r.wbytes_s / bw);
        } else {
            printf("%-5s %-10s %4lld %8.1f us %8.1f us %9.1f\n", tg_type_name(types[ti]), shape, (long long) ns[ni],
                   r.t_med * 1e6, r.t_min * 1e6, r.gflops);
        }
        fflush(stdout);
    }
    tg_cpu_pool_free(pool);
    return 0;
}
