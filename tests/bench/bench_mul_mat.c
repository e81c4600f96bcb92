// bench_mul_mat.c - MUL_MAT on the CPU: time per call, GFLOP/s and, for
// generation (n=1), the weight bytes read per second next to this machine's
// read bandwidth measured here with the same threads (a streaming sum over a
// buffer the size of the weights, i.e. what the repeated calls read from,
// and over a 256 MiB buffer, i.e. DRAM; tg_cpu_read_bandwidth, median pass).
//
// A call is one MUL_MAT node; graphs of 8 such nodes are timed (the thread
// pool wakes once per graph, as for a model's graph) and divided by 8.
// Prompt shapes (n = 256) print GFLOP/s next to this machine's peak measured
// here with the same threads: f32 FMA throughput for the float types, int8
// multiply-accumulate throughput (AVX-512 VNNI vpdpbusd, else AVX2 maddubs)
// for the quantized ones. A last table runs generation (n = 1) over distinct
// weight matrices totalling 256 MiB, so the weights come from DRAM as in a
// model's token, next to the DRAM read bandwidth; then generation's
// attention at depths 256, 1024, 2048 and 4096 (bench_attn), cache bytes per second.
//
// usage: bench_mul_mat [-t threads (2)] [-r repeats (scaled to ~0.2 s)]
//                      [-l scalar|avx|avx2|avx512|avx512vnni (cap the SIMD level)]
//                      [-T type,type... (those types only)] [-g (the from-DRAM tables only)]
//                      [-M ROWS (rows of the from-DRAM table's matrices, default 3072: a
//                                model's small products, e.g. 256 for K and V, start more often)]
//                      [-A LAYERS (the attention table only, over that many layers; 1: the
//                                  caches stay in cache, which shows the kernels' compute;
//                                  0: every table but the attention one)]
#include "cpu/vec-impl.h"
#include "tg/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/mman.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void * x, const void * y) {
    double a = *(const double *) x, b = *(const double *) y;
    return a < b ? -1 : a > b;
}

// ---- peak arithmetic throughput: register-only loops on every thread -----------------

#if defined(__x86_64__)
#include <immintrin.h>
static volatile double g_sink;   // the loops' results land here (so they are computed)
__attribute__((target("avx512f"))) static double fma_loop_512(long iters) {
    __m512 a[16];
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps(1.0f + (float) i * 1e-3f);
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++)
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) { a[i] = _mm512_fmadd_ps(a[i], m, c); __asm__ volatile("" : : "v"(a[i])); }
    __m512 s = a[0];
    for (int i = 1; i < 16; i++) s = _mm512_add_ps(s, a[i]);
    g_sink = (double) _mm512_reduce_add_ps(s);
    return 2.0 * 16 * 16 * (double) iters;   // flops
}
__attribute__((target("avx2,fma"))) static double fma_loop_256(long iters) {
    __m256 a[16];
    for (int i = 0; i < 16; i++) a[i] = _mm256_set1_ps(1.0f + (float) i * 1e-3f);
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++)
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) { a[i] = _mm256_fmadd_ps(a[i], m, c); __asm__ volatile("" : : "v"(a[i])); }
    __m256 s = a[0];
    for (int i = 1; i < 16; i++) s = _mm256_add_ps(s, a[i]);
    float o[8];
    _mm256_storeu_ps(o, s);
    g_sink = (double) o[0];
    return 2.0 * 8 * 16 * (double) iters;
}
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double vnni_loop(long iters) {
    __m512i a[16];
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_epi32(i);
    const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
    for (long it = 0; it < iters; it++)
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) { a[i] = _mm512_dpbusd_epi32(a[i], x, y); __asm__ volatile("" : : "v"(a[i])); }
    __m512i s = a[0];
    for (int i = 1; i < 16; i++) s = _mm512_add_epi32(s, a[i]);
    g_sink = (double) _mm512_reduce_add_epi32(s);
    return 2.0 * 16 * 4 * 16 * (double) iters;   // int8 ops: 16 lanes x 4 products x 2
}
__attribute__((target("avx2"))) static double maddubs_loop(long iters) {
    __m256i a[16];
    for (int i = 0; i < 16; i++) a[i] = _mm256_set1_epi32(i);
    const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
    for (long it = 0; it < iters; it++)
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) {
            __m256i p = _mm256_maddubs_epi16(x, y);
            __asm__ volatile("" : "+v"(p));   // one maddubs per step, as a kernel does
            a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(p, one));
            __asm__ volatile("" : : "v"(a[i]));
        }
    __m256i s = a[0];
    for (int i = 1; i < 16; i++) s = _mm256_add_epi32(s, a[i]);
    g_sink = (double) _mm256_extract_epi32(s, 0);
    return 2.0 * 32 * 16 * (double) iters;
}
#endif

struct peak_job { int kind; long iters; double ops; pthread_barrier_t * bar; };
static void * peak_worker(void * arg) {
    struct peak_job * j = arg;
    pthread_barrier_wait(j->bar);
#if defined(__x86_64__)
    switch (j->kind) {
    case 0: j->ops = fma_loop_512(j->iters); break;
    case 1: j->ops = fma_loop_256(j->iters); break;
    case 2: j->ops = vnni_loop(j->iters); break;
    default: j->ops = maddubs_loop(j->iters); break;
    }
#endif
    pthread_barrier_wait(j->bar);
    return NULL;
}

// Operations per second of loop `kind` on nth threads (best of 3).
static double peak_ops(int kind, int nth) {
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned) nth + 1);
        pthread_t th[64];
        struct peak_job jobs[64];
        for (int t = 0; t < nth; t++) {
            jobs[t] = (struct peak_job) { kind, 20000000, 0, &bar };
            pthread_create(&th[t], NULL, peak_worker, &jobs[t]);
        }
        pthread_barrier_wait(&bar);
        double t0 = now_s();
        pthread_barrier_wait(&bar);
        double dt = now_s() - t0, ops = 0;
        for (int t = 0; t < nth; t++) { pthread_join(th[t], NULL); ops += jobs[t].ops; }
        pthread_barrier_destroy(&bar);
        if (dt > 0 && ops / dt > best) best = ops / dt;
    }
    return best;
}

// ---- mul_mat ----------------------------------------------------------------------------

enum { BENCH_NODES = 8 };   // mul_mat nodes per graph

struct result { double t_med, t_min, gflops, wbytes_s; };

// n_w distinct weight matrices (1: every node reads the same one, from
// cache when it fits; more: each node its own, as a model's layers), nodes
// mul_mat nodes per graph.
static bool bench_one_w(struct tg_cpu_pool * pool, enum tg_type wt, int64_t k, int64_t m, int64_t n, int n_w, int nodes,
                        int reps_arg, bool pack, struct result * res, size_t * wbytes) {
    const size_t wsz = tg_row_size(wt, k) * (size_t) m;
    struct tg_context_params cp = { wsz * (size_t) n_w + (size_t) (k * n * 4 + nodes * m * n * 4) + (8u << 20), NULL, false };
    struct tg_context * ctx = tg_context_new(cp);
    if (!ctx) return false;
    struct tg_tensor * w[4096];
    bool ok = n_w >= 1 && n_w <= 4096;
    for (int i = 0; ok && i < n_w; i++) ok = (w[i] = tg_new_tensor_2d(ctx, wt, k, m)) != NULL;
    struct tg_tensor * a = ok ? w[0] : NULL;
    struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F32, k, n);
    // independent products in one graph, as in a model: the pool's wake-up
    // per graph is shared, the time per call is graph / nodes
    struct tg_graph * g = a && b ? tg_graph_new(ctx, 2 * nodes + n_w + 8) : NULL;
    for (int i = 0; g && i < nodes; i++) {
        struct tg_tensor * d = tg_mul_mat(ctx, w[i % n_w], b);
        if (!d || tg_graph_build_forward(g, d) != TG_OK) g = NULL;
    }
    if (!g) { tg_context_free(ctx); return false; }
    // random weights (via f32 rows; the other matrices copy the first), random activations
    float * row = malloc((size_t) k * sizeof(float));
    uint32_t x = 12345;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t l = 0; l < k; l++) { x = x * 1664525u + 1013904223u; row[l] = (float) (x >> 8) / 16777216.0f - 0.5f; }
        char * dst = (char *) a->data + i * a->nb[1];
        if (wt == TG_TYPE_F32) memcpy(dst, row, (size_t) k * sizeof(float));
        else tg_type_traits(wt)->from_float(row, dst, k);
    }
    for (int i = 1; i < n_w; i++) memcpy(w[i]->data, a->data, wsz);
    // packed copies (tg_cpu_pack), as a model's loader makes them
    void * pmem[4096] = { 0 };
    for (int i = 0; pack && i < n_w; i++) {
        const size_t psz = tg_cpu_pack_size(w[i]);
        if (!psz || posix_memalign(&pmem[i], 64, psz) != 0 || tg_cpu_pack(w[i], pmem[i], psz) != TG_OK) {
            for (int j = 0; j <= i; j++) free(pmem[j]);
            free(row);
            tg_context_free(ctx);
            return false;
        }
    }
    for (int64_t t = 0; t < k * n; t++) { x = x * 1664525u + 1013904223u; ((float *) b->data)[t] = (float) (x >> 8) / 16777216.0f - 0.5f; }
    free(row);
    *wbytes = tg_nbytes(a);

    // repeats: ~0.2 s in total unless given
    double t0 = now_s();
    if (tg_cpu_graph_compute(pool, g, NULL) != TG_OK) { tg_context_free(ctx); return false; }
    double one = (now_s() - t0) / nodes;
    int reps = reps_arg > 0 ? reps_arg : (int) (0.2 / nodes / (one > 1e-6 ? one : 1e-6));
    if (reps < 5) reps = 5;
    if (reps > 5000) reps = 5000;
    double * ts = malloc(sizeof(double) * (size_t) reps);
    for (int r = 0; r < reps; r++) {
        t0 = now_s();
        tg_cpu_graph_compute(pool, g, NULL);
        ts[r] = (now_s() - t0) / nodes;
    }
    qsort(ts, (size_t) reps, sizeof(double), cmp_double);
    res->t_med = ts[reps / 2];
    res->t_min = ts[0];
    res->gflops = 2.0 * (double) k * (double) m * (double) n / res->t_med * 1e-9;
    res->wbytes_s = (double) *wbytes / res->t_med;
    free(ts);
    tg_context_free(ctx);
    for (int i = 0; i < n_w; i++) free(pmem[i]);
    return true;
}

// Generation's attention as the llama graph builds it (12 query heads of 64
// sharing 4 K/V heads, like make-model's presets): unfused, per layer kq =
// K^T q over a K cache view (head_dim x n_kv x heads, a head's row a slice of
// a cache row) and kqv = V q' over the transposed V cache (n_kv x head_dim x
// heads, rows kv_size apart); fused, one FLASH_ATTN_EXT over both. `layers`
// caches, each node its own, so the caches come from DRAM as in a model
// (where the weights stream through the last-level cache between layers).
// Times per node (median, min over the repeats) of the kq, kqv and fused graphs.
static bool bench_attn(struct tg_cpu_pool * pool, enum tg_type ct, int64_t n_kv, int layers, int reps_arg,
                       double tm[3][2], size_t * bytes) {
    const int64_t hd = 64, heads = 12, heads_kv = 4, embd = hd * heads_kv, kv_size = n_kv;
    const size_t cache = tg_row_size(ct, embd) * (size_t) kv_size;
    struct tg_context_params cp = { 2 * cache * (size_t) layers + (size_t) layers * 4 * (size_t) (n_kv + hd) * heads * 4 + (16u << 20),
                                    NULL, false };
    // on 2 MiB pages, as a model's KV cache is (the CPU backend's large buffers)
    cp.mem_size = (cp.mem_size + ((size_t) 2 << 20) - 1) & ~(((size_t) 2 << 20) - 1);
    if (posix_memalign(&cp.mem_buffer, (size_t) 2 << 20, cp.mem_size) != 0) return false;
#ifdef MADV_HUGEPAGE
    (void) madvise(cp.mem_buffer, cp.mem_size, MADV_HUGEPAGE);
#endif
    struct tg_context * ctx = tg_context_new(cp);
    if (!ctx) { free(cp.mem_buffer); return false; }
    struct tg_tensor * q = tg_new_tensor_3d(ctx, TG_TYPE_F32, hd, 1, heads);
    struct tg_tensor * p = tg_new_tensor_3d(ctx, TG_TYPE_F32, n_kv, 1, heads);
    struct tg_graph * gs[3] = { tg_graph_new(ctx, 4 * layers + 8), tg_graph_new(ctx, 4 * layers + 8),
                                tg_graph_new(ctx, 4 * layers + 8) };
    bool ok = q && p && gs[0] && gs[1] && gs[2];
    const size_t es = tg_type_size(ct);
    for (int l = 0; ok && l < layers; l++) {
        struct tg_tensor * kc = tg_new_tensor_2d(ctx, ct, embd, kv_size);
        struct tg_tensor * vc = tg_new_tensor_2d(ctx, ct, kv_size, embd);
        ok = kc && vc;
        if (!ok) break;
        memset(kc->data, 0x11, tg_nbytes(kc));  // f16 0x1111: a small normal number
        memset(vc->data, 0x11, tg_nbytes(vc));
        struct tg_tensor * k = tg_view_3d(ctx, kc, hd, n_kv, heads_kv, kc->nb[1], hd * es, 0);
        struct tg_tensor * v = tg_view_3d(ctx, vc, n_kv, hd, heads_kv, vc->nb[1], hd * vc->nb[1], 0);
        struct tg_tensor * kq = k ? tg_mul_mat(ctx, k, q) : NULL;
        struct tg_tensor * kqv = v ? tg_mul_mat(ctx, v, p) : NULL;
        struct tg_tensor * fa = k && v ? tg_flash_attn_ext(ctx, q, k, v, NULL, 0.125f) : NULL;
        ok = kq && kqv && fa && tg_graph_build_forward(gs[0], kq) == TG_OK &&
             tg_graph_build_forward(gs[1], kqv) == TG_OK && tg_graph_build_forward(gs[2], fa) == TG_OK;
    }
    if (!ok) { tg_context_free(ctx); free(cp.mem_buffer); return false; }
    for (int64_t t = 0; t < hd * heads; t++) ((float *) q->data)[t] = 0.01f * (float) (t % 7);
    for (int64_t t = 0; t < n_kv * heads; t++) ((float *) p->data)[t] = 1.0f / (float) n_kv;
    *bytes = cache;
    for (int w = 0; w < 3; w++) {
        struct tg_graph * g = gs[w];
        double * out = tm[w];
        const int reps = reps_arg > 0 ? reps_arg : 50;
        double * ts = malloc(sizeof(double) * (size_t) reps);
        if (!ts || tg_cpu_graph_compute(pool, g, NULL) != TG_OK) { free(ts); tg_context_free(ctx); free(cp.mem_buffer); return false; }
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            tg_cpu_graph_compute(pool, g, NULL);
            ts[r] = (now_s() - t0) / layers;
        }
        qsort(ts, (size_t) reps, sizeof(double), cmp_double);
        out[0] = ts[reps / 2];
        out[1] = ts[0];
        free(ts);
    }
    tg_context_free(ctx); free(cp.mem_buffer);
    return true;
}

static bool bench_one(struct tg_cpu_pool * pool, enum tg_type wt, int64_t k, int64_t m, int64_t n,
                      int reps_arg, bool pack, struct result * res, size_t * wbytes) {
    return bench_one_w(pool, wt, k, m, n, 1, BENCH_NODES, reps_arg, pack, res, wbytes);
}

// Whether weights of type t get packed copies at this SIMD level (tg_cpu_pack).
static bool packable(enum tg_type t) {
    struct tg_context_params cp = { 1u << 20, NULL, false };
    struct tg_context * ctx = tg_context_new(cp);
    struct tg_tensor * w = ctx ? tg_new_tensor_2d(ctx, t, 256, 16) : NULL;
    const bool ok = w && tg_cpu_pack_size(w) > 0;
    tg_context_free(ctx);
    return ok;
}

int main(int argc, char ** argv) {
    int nth = 2, reps = 0, cap = -1;
    const char * only = NULL;   // -T: comma-separated type names
    bool dram_only = false;     // -g: the generation-from-DRAM table alone
    int64_t gen_rows = 3072;    // -M ROWS: the from-DRAM table's matrices are ROWS x 768
    int attn_layers = 0;        // -A N: the attention table alone, over N layers (1: its caches in cache); 0: none
    bool no_attn = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "-g")) dram_only = true;
        else if (!strcmp(argv[i], "-M") && i + 1 < argc) {
            gen_rows = atoll(argv[++i]);
            if (gen_rows < 1 || gen_rows > 65536) { fprintf(stderr, "bench_mul_mat: -M takes 1..65536 rows\n"); return 1; }
        }
        else if (!strcmp(argv[i], "-A") && i + 1 < argc) {
            attn_layers = atoi(argv[++i]);
            if (attn_layers < 0 || attn_layers > 4096) { fprintf(stderr, "bench_mul_mat: -A takes 0..4096 layers\n"); return 1; }
            no_attn = attn_layers == 0;
        }
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-l") && i + 1 < argc) {
            const char * l = argv[++i];
            cap = !strcmp(l, "scalar") ? TG_SIMD_SCALAR : !strcmp(l, "avx") ? TG_SIMD_AVX
                : !strcmp(l, "avx2") ? TG_SIMD_AVX2 : !strcmp(l, "avx512") ? TG_SIMD_AVX512
                : !strcmp(l, "avx512vnni") ? TG_SIMD_AVX512VNNI : -2;
            if (cap == -2) { fprintf(stderr, "bench_mul_mat: unknown level '%s'\n", l); return 1; }
        } else {
            fprintf(stderr, "usage: bench_mul_mat [-t threads] [-r repeats] [-l scalar|avx|avx2|avx512|avx512vnni] "
                            "[-T type,type...] [-g (the from-DRAM tables only)]\n"
                            "                     [-M ROWS (the from-DRAM table's matrices: ROWS x 768; default 3072)]\n"
                            "                     [-A LAYERS (the attention table only, over that many layers: 1 = from cache; 0 = no attention table)]\n");
            return 1;
        }
    }
    if (nth < 1 || nth > 64) { fprintf(stderr, "bench_mul_mat: threads must be 1..64\n"); return 1; }
    const enum tg_type all_types[] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_BF16, TG_TYPE_Q8_0, TG_TYPE_Q4_0, TG_TYPE_IQ4_NL,
                                       TG_TYPE_Q4_K, TG_TYPE_Q5_K, TG_TYPE_Q6_K, TG_TYPE_IQ4_XS,
                                       TG_TYPE_Q2_K, TG_TYPE_Q3_K, TG_TYPE_Q4_1, TG_TYPE_Q5_0, TG_TYPE_Q5_1 };
    enum tg_type types[sizeof(all_types) / sizeof(all_types[0])];
    int n_types = 0;
    for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]); k++) {
        const char * nm = tg_type_name(all_types[k]);
        bool want = !only;
        for (const char * o = only; o && *o && !want; o += strcspn(o, ",") + (o[strcspn(o, ",")] == ',')) {
            size_t len = strcspn(o, ",");
            want = len == strlen(nm) && !strncasecmp(o, nm, len);
        }
        if (want) types[n_types++] = all_types[k];
    }
    if (n_types == 0) { fprintf(stderr, "bench_mul_mat: no type of '%s' is benchmarked here\n", only); return 1; }
    tg_cpu_set_simd_cap(cap);
    static const char * level_names[] = { "scalar", "avx", "avx2", "avx512", "avx512vnni" };
    struct tg_cpu_pool * pool = tg_cpu_pool_new(nth);
    if (!pool) { fprintf(stderr, "bench_mul_mat: cannot create a pool of %d threads\n", nth); return 1; }

    const struct tg_cpu_features f = tg_cpu_features();
    const int lvl = tg_cpu_simd_level();
    double peak_f = 0, peak_q = 0;
    const char * peak_f_name = "none", * peak_q_name = "none";
#if defined(__x86_64__)
    if (lvl >= TG_SIMD_AVX512) { peak_f = peak_ops(0, nth); peak_f_name = "AVX-512 FMA"; }
    else if (lvl >= TG_SIMD_AVX2 && f.fma) { peak_f = peak_ops(1, nth); peak_f_name = "AVX2 FMA"; }
    if (lvl >= TG_SIMD_AVX512VNNI && f.avx512vnni) { peak_q = peak_ops(2, nth); peak_q_name = "AVX-512 VNNI vpdpbusd"; }
    else if (lvl >= TG_SIMD_AVX2) { peak_q = peak_ops(3, nth); peak_q_name = "AVX2 maddubs+madd"; }
#endif
    const double bw_dram = tg_cpu_read_bandwidth(nth, 256u << 20, 5) * 1e9;
    printf("MUL_MAT benchmark: %d thread(s), SIMD level %s (cpu: %s), k = 768\n",
           nth, level_names[lvl], tg_cpu_simd_name());
    printf("peak, %d thread(s): f32 %.1f GFLOP/s (%s), int8 %.1f GOP/s (%s); DRAM read bandwidth %.1f GB/s (256 MiB buffer)\n\n",
           nth, peak_f * 1e-9, peak_f_name, peak_q * 1e-9, peak_q_name, bw_dram * 1e-9);
    printf("%-8s %-10s %4s %11s %11s %9s %7s %11s %14s %6s\n", "type", "weights", "n", "time/call", "(min)", "GFLOP/s",
           "of peak", "weights/s", "read bw (same", "ratio");
    printf("%-8s %-10s %4s %11s %11s %9s %7s %11s %14s %6s\n", "", "m x k", "", "(median)", "", "(median)", "", "(n=1)",
           "size buffer)", "");
    const int64_t ms[] = { 768, 3072 }, ns[] = { 1, 256 };
    // packed weights (tg_cpu_pack, what a model's loader makes when it pays) in rows of their own: "q4_0+p"
    for (int ti = 0; ti < (dram_only || attn_layers ? 0 : n_types); ti++)
    for (int pk = 0; pk < (packable(types[ti]) ? 2 : 1); pk++)
    for (int mi = 0; mi < 2; mi++)
    for (int ni = 0; ni < 2; ni++) {
        struct result r;
        size_t wbytes = 0;
        char shape[32], tname[16];
        snprintf(shape, sizeof shape, "%lldx768", (long long) ms[mi]);
        snprintf(tname, sizeof tname, "%s%s", tg_type_name(types[ti]), pk ? "+p" : "");
        if (!bench_one(pool, types[ti], 768, ms[mi], ns[ni], reps, pk, &r, &wbytes)) {
            printf("%-8s %-10s %4lld   failed: %s\n", tname, shape, (long long) ns[ni], tg_last_error());
            continue;
        }
        const bool quant = tg_type_traits(types[ti])->is_quantized;
        const double peak = quant ? peak_q : peak_f;
        if (ns[ni] == 1) {
            const double bw = tg_cpu_read_bandwidth(nth, wbytes, 200) * 1e9;
            printf("%-8s %-10s %4lld %8.1f us %8.1f us %9.1f %7s %6.1f GB/s %9.1f GB/s %5.0f%%\n", tname, shape,
                   (long long) ns[ni], r.t_med * 1e6, r.t_min * 1e6, r.gflops, "", r.wbytes_s * 1e-9, bw * 1e-9,
                   100.0 * r.wbytes_s / bw);
        } else {
            printf("%-8s %-10s %4lld %8.1f us %8.1f us %9.1f %6.0f%%\n", tname, shape, (long long) ns[ni],
                   r.t_med * 1e6, r.t_min * 1e6, r.gflops, peak > 0 ? 100.0 * r.gflops * 1e9 / peak : 0.0);
        }
        fflush(stdout);
    }
    // generation from DRAM: distinct ROWSx768 matrices, 256 MiB of weights in all per graph
    if (!attn_layers)
        printf("\ngeneration (n = 1) over distinct %lldx768 weight matrices, 256 MiB per graph (from DRAM), "
               "next to the DRAM read bandwidth %.1f GB/s:\n", (long long) gen_rows, bw_dram * 1e-9);
    if (!attn_layers) printf("%-8s %9s %11s %11s %6s\n", "type", "matrices", "time/call", "weights/s", "of bw");
    for (int ti = 0; ti < (attn_layers ? 0 : n_types); ti++)
    for (int pk = 0; pk < (packable(types[ti]) ? 2 : 1); pk++) {
        const size_t one = tg_row_size(types[ti], 768) * (size_t) gen_rows;
        char tname[16];
        snprintf(tname, sizeof tname, "%s%s", tg_type_name(types[ti]), pk ? "+p" : "");
        int nw = (int) ((256u << 20) / one);
        if (nw > 4096) nw = 4096;
        if (nw < 2) nw = 2;
        struct result r;
        size_t wbytes = 0;
        if (!bench_one_w(pool, types[ti], 768, gen_rows, 1, nw, nw, reps > 0 ? reps : 20, pk, &r, &wbytes)) {
            printf("%-8s   failed: %s\n", tname, tg_last_error());
            continue;
        }
        printf("%-8s %9d %8.1f us %6.1f GB/s %5.0f%%\n", tname, nw, r.t_med * 1e6, r.wbytes_s * 1e-9,
               100.0 * r.wbytes_s / bw_dram);
        fflush(stdout);
    }
    if (no_attn) { tg_cpu_pool_free(pool); return 0; }
    // generation's attention at depth (unfused: kq and kqv nodes over F16 caches)
    // as many layers as make one node kind's caches (K alone for kq) span 256 MiB, at least
    // 12: 12 layers' K at 4096 cells (24 MiB) fit a 32 MiB L3, and kq then read
    // its caches at 113% of the DRAM bandwidth
    if (attn_layers)
        printf("\ngeneration's attention per layer (12 query heads of 64 over 4 K/V heads, F16 cache; each kind of node over "
               "%d layer(s)%s): unfused kq and kqv, fused FLASH_ATTN_EXT (K and V), GFLOP/s next to the FMA peak %.1f, "
               "cache bytes/s next to the DRAM read bandwidth %.1f GB/s:\n", attn_layers,
               attn_layers == 1 ? ", its caches in cache" : "", peak_f * 1e-9, bw_dram * 1e-9);
    else
        printf("\ngeneration's attention per layer (12 query heads of 64 over 4 K/V heads, F16 cache; each kind of node over "
               "layers whose K caches, or V, span 256 MiB, so they come from DRAM): unfused kq and kqv, fused FLASH_ATTN_EXT "
               "(K and V), next to the DRAM read bandwidth %.1f GB/s:\n", bw_dram * 1e-9);
    printf("%-6s %6s %11s %11s %11s %6s %9s\n", "node", "n_kv", "time/node", "(min)", "cache/s", "of bw", "GFLOP/s");
    const int64_t depths[] = { 256, 1024, 2048, 4096 };
    for (int di = 0; di < (int) (sizeof(depths) / sizeof(depths[0])); di++) {
        double ta[3][2];
        size_t cb = 0;
        const size_t per_layer = tg_row_size(TG_TYPE_F16, 256) * (size_t) depths[di];
        const int layers = attn_layers ? attn_layers
                         : (int) (((size_t) 256 << 20) / per_layer) > 12 ? (int) (((size_t) 256 << 20) / per_layer) : 12;
        if (!bench_attn(pool, TG_TYPE_F16, depths[di], layers, reps, ta, &cb)) {
            printf("n_kv %lld   failed: %s\n", (long long) depths[di], tg_last_error());
            continue;
        }
        static const char * nm[3] = { "kq", "kqv", "fused" };
        for (int w = 0; w < 3; w++) {
            const double * t = ta[w], bytes = (double) cb * (w == 2 ? 2 : 1);   // fused: K and V
            // kq, kqv: 12 heads x 64 x n_kv multiply-adds; fused: both (the softmax not counted)
            const double flop = 2.0 * 12 * 64 * (double) depths[di] * (w == 2 ? 2 : 1);
            printf("%-6s %6lld %8.1f us %8.1f us %6.1f GB/s %5.0f%% %9.1f\n", nm[w], (long long) depths[di],
                   t[0] * 1e6, t[1] * 1e6, bytes / t[0] * 1e-9, 100.0 * bytes / t[0] / bw_dram, flop / t[0] * 1e-9);
        }
        fflush(stdout);
    }
    tg_cpu_pool_free(pool);
    return 0;
}
