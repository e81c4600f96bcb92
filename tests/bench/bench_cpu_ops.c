// bench_cpu_ops.c - throughput of the CPU row/elementwise kernels at each SIMD
// level (one thread), and of the thread pool on one op, next to memcpy's
// bandwidth on the same buffers (the figure a memory-bound kernel compares to).
// Usage: bench_cpu_ops [rows] (default 256 rows of 4096 floats).
#include "cpu/cpu-impl.h"
#include "tg/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NE0 = 4096 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

struct bench {
    const char * name;
    struct tg_tensor * out;
    struct tg_graph * g;
    double bytes;   // bytes read + written per run
};

static double time_graph(struct tg_cpu_pool * pool, struct tg_graph * g) {
    tg_cpu_graph_compute(pool, g, NULL);   // warm-up
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        tg_cpu_graph_compute(pool, g, NULL);
        double t = now() - t0;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char ** argv) {
    int64_t rows = argc > 1 ? atoll(argv[1]) : 256;
    if (rows < 1) rows = 256;
    struct tg_context_params cp = { .mem_size = (size_t) (rows * NE0 * 4) * 20 + (8u << 20), .mem_buffer = NULL, .no_alloc = false };
    struct tg_context * ctx = tg_context_new(cp);
    if (!ctx) { fprintf(stderr, "context: %s\n", tg_last_error()); return 1; }
    struct tg_tensor * a = tg_new_tensor_2d(ctx, TG_TYPE_F32, NE0, rows);
    struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F32, NE0, rows);
    struct tg_tensor * w = tg_new_tensor_1d(ctx, TG_TYPE_F32, NE0);
    struct tg_tensor * mask = tg_new_tensor_2d(ctx, TG_TYPE_F16, NE0, rows);
    struct tg_tensor * pos = tg_new_tensor_1d(ctx, TG_TYPE_I32, rows);
    for (int64_t i = 0; i < rows * NE0; i++) {
        ((float *) a->data)[i] = (float) ((i * 7919) % 2001) / 1000.0f - 1.0f;
        ((float *) b->data)[i] = (float) ((i * 104729) % 2001) / 1000.0f - 1.0f;
        ((tg_fp16_t *) mask->data)[i] = tg_fp32_to_fp16(0.0f);
    }
    for (int64_t i = 0; i < NE0; i++) ((float *) w->data)[i] = 1.0f;
    for (int64_t i = 0; i < rows; i++) ((int32_t *) pos->data)[i] = (int32_t) i;
    struct tg_tensor * a3 = tg_reshape_3d(ctx, a, 128, NE0 / 128, rows);
    const double n = (double) rows * NE0 * 4;
    struct bench benches[] = {
        { "add",           tg_add(ctx, a, b),            NULL, 3 * n },
        { "mul (row bcast)", tg_mul(ctx, a, w),          NULL, 2 * n },
        { "scale",         tg_scale(ctx, a, 0.5f),       NULL, 2 * n },
        { "silu",          tg_silu(ctx, a),              NULL, 2 * n },
        { "gelu",          tg_gelu(ctx, a),              NULL, 2 * n },
        { "swiglu",        tg_swiglu(ctx, a),            NULL, 1.5 * n },
        { "rms_norm",      tg_rms_norm(ctx, a, 1e-5f),   NULL, 2 * n },
        { "norm",          tg_norm(ctx, a, 1e-5f),       NULL, 2 * n },
        { "soft_max",      tg_soft_max(ctx, a),          NULL, 2 * n },
        { "soft_max+mask f16", tg_soft_max_ext(ctx, a, mask, 0.125f, 0.0f), NULL, 2.5 * n },
        { "rope normal",   tg_rope(ctx, a3, pos, 128, TG_ROPE_NORMAL, 10000.0f, 1.0f), NULL, 2 * n },
        { "rope neox",     tg_rope(ctx, a3, pos, 128, TG_ROPE_NEOX, 10000.0f, 1.0f),   NULL, 2 * n },
        { "cpy f32->f16",  tg_cpy(ctx, a, mask),         NULL, 1.5 * n },
        { "sum",           tg_sum(ctx, a),               NULL, n },
    };
    const int nb = (int) (sizeof(benches) / sizeof(benches[0]));
    for (int i = 0; i < nb; i++) {
        benches[i].g = tg_graph_new(ctx, 16);
        if (!benches[i].out || !benches[i].g || tg_graph_build_forward(benches[i].g, benches[i].out) != TG_OK) {
            fprintf(stderr, "%s: %s\n", benches[i].name, tg_last_error());
            return 1;
        }
    }
    // memcpy bandwidth on the same sizes (read + write counted).
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        memcpy(b->data, a->data, (size_t) n);
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("cpu: %s, %lld rows x %d f32 (%.1f MiB per tensor); memcpy %.2f GB/s (read+write)\n",
           tg_cpu_simd_name(), (long long) rows, NE0, n / 1048576.0, 2 * n / best / 1e9);

    static const int levels[] = { TG_SIMD_AVX512, TG_SIMD_AVX, TG_SIMD_SCALAR };
    static const char * lnames[] = { "avx512", "avx", "scalar" };
    struct tg_cpu_pool * p1 = tg_cpu_pool_new(1);
    int n_threads = argc > 2 ? atoi(argv[2]) : 2;
    struct tg_cpu_pool * pn = tg_cpu_pool_new(n_threads > 0 ? n_threads : 2);
    if (!p1 || !pn) { fprintf(stderr, "pool: %s\n", tg_last_error()); return 1; }
    printf("%-20s %12s %12s %12s %14s\n", "op (1 thread, GB/s)", lnames[0], lnames[1], lnames[2], "pool threads");
    for (int i = 0; i < nb; i++) {
        printf("%-20s", benches[i].name);
        for (int l = 0; l < 3; l++) {
            if (levels[l] > tg_cpu_simd_level() && levels[l] != TG_SIMD_SCALAR) { printf(" %12s", "n/a"); continue; }
            if (levels[l] == TG_SIMD_SCALAR) tg_cpu_force_scalar(true); else tg_cpu_set_simd_cap(levels[l]);
            double t = time_graph(p1, benches[i].g);
            printf(" %12.2f", benches[i].bytes / t / 1e9);
            tg_cpu_force_scalar(false);
            tg_cpu_set_simd_cap(-1);
        }
        double t = time_graph(pn, benches[i].g);
        printf(" %8.2f (%dt)\n", benches[i].bytes / t / 1e9, tg_cpu_pool_n_threads(pn));
    }
    // Per-node overhead of the compute loop: a chain of 500 tiny nodes.
    struct tg_tensor * x = tg_new_tensor_1d(ctx, TG_TYPE_F32, 64);
    memset(x->data, 0, tg_nbytes(x));
    struct tg_graph * chain = tg_graph_new(ctx, 1024);
    struct tg_tensor * y = x;
    for (int i = 0; i < 500; i++) y = tg_scale(ctx, y, 1.0f);
    if (!chain || tg_graph_build_forward(chain, y) != TG_OK) { fprintf(stderr, "chain: %s\n", tg_last_error()); return 1; }
    printf("compute loop overhead (500 nodes of [64] scale): %.2f us/node with 1 thread, %.2f us/node with %d\n",
           time_graph(p1, chain) / 500 * 1e6, time_graph(pn, chain) / 500 * 1e6, tg_cpu_pool_n_threads(pn));
    tg_cpu_set_task_grain(1);   // every node split across all threads: one barrier per node
    printf("same chain split across %d threads (a barrier per node): %.2f us/node\n",
           tg_cpu_pool_n_threads(pn), time_graph(pn, chain) / 500 * 1e6);
    tg_cpu_set_task_grain(0);
    tg_cpu_pool_free(p1);
    tg_cpu_pool_free(pn);
    tg_context_free(ctx);
    return 0;
}
