// test_determinism.c - a transformer-like graph (get_rows, rms_norm, mul_mat
// with F32 and Q8_0 weights, rope, soft_max with a mask, silu/swiglu, add,
// sum, and generation's fused attention over KV-cache views) computed with
// 1, 2, 3 and 4 threads gives bitwise identical outputs,
// and so do two runs with the same thread count. Checked at the detected SIMD
// level and with the scalar paths.
#include "check.h"
#include "cpu/cpu-impl.h"
#include "tg/cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D = 128, NH = 4, HD = D / NH, T = 7, V = 50, FF = 192 };

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static float frand(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (float) ((double) (g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill_f32(struct tg_tensor * t, float scale) {
    float * p = t->data;
    for (int64_t i = 0; i < tg_nelements(t); i++) p[i] = frand() * scale;
}

static void fill_q8(struct tg_tensor * t, float scale) {
    float row[1024];
    for (int64_t r = 0; r < tg_nrows(t); r++) {
        for (int64_t i = 0; i < t->ne[0]; i++) row[i] = frand() * scale;
        tg_quantize_row_q8_0(row, (tg_block_q8_0 *) ((char *) t->data + r * t->nb[1]), t->ne[0]);
    }
}

static void fill_f16(struct tg_tensor * t, float scale) {
    tg_fp16_t * p = t->data;
    for (int64_t i = 0; i < tg_nelements(t); i++) p[i] = tg_fp32_to_fp16(frand() * scale);
}

#define N_OUT 6
struct model {
    struct tg_context * ctx;
    struct tg_graph * g;
    struct tg_tensor * out[N_OUT];
};

// Builds the graph once; weights and inputs are random but fixed.
static bool build(struct model * m) {
    struct tg_context_params p = { .mem_size = 8u << 20, .mem_buffer = NULL, .no_alloc = false };
    struct tg_context * ctx = m->ctx = tg_context_new(p);
    if (!ctx) return false;
    struct tg_tensor * emb = tg_new_tensor_2d(ctx, TG_TYPE_F32, D, V);
    struct tg_tensor * ids = tg_new_tensor_1d(ctx, TG_TYPE_I32, T);
    struct tg_tensor * pos = tg_new_tensor_1d(ctx, TG_TYPE_I32, T);
    struct tg_tensor * nw = tg_new_tensor_1d(ctx, TG_TYPE_F32, D);
    struct tg_tensor * wq = tg_new_tensor_2d(ctx, TG_TYPE_F32, D, D);
    struct tg_tensor * wk = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, D, D);
    struct tg_tensor * wv = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, D, D);
    struct tg_tensor * wup = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, D, 2 * FF);
    struct tg_tensor * wdown = tg_new_tensor_2d(ctx, TG_TYPE_F32, FF, D);
    struct tg_tensor * mask = tg_new_tensor_2d(ctx, TG_TYPE_F16, T, T);
    fill_f32(emb, 1.0f); fill_f32(nw, 1.0f); fill_f32(wq, 0.2f); fill_f32(wdown, 0.1f);
    fill_q8(wk, 0.2f); fill_q8(wv, 0.2f); fill_q8(wup, 0.2f);
    for (int i = 0; i < T; i++) {
        ((int32_t *) ids->data)[i] = (i * 17 + 3) % V;
        ((int32_t *) pos->data)[i] = i + 5;
        for (int j = 0; j < T; j++) ((tg_fp16_t *) mask->data)[i * T + j] = tg_fp32_to_fp16(j <= i ? 0.0f : -INFINITY);
    }
    struct tg_tensor * x = tg_get_rows(ctx, emb, ids);                        // [D, T]
    struct tg_tensor * xn = tg_mul(ctx, tg_rms_norm(ctx, x, 1e-5f), nw);      // [D, T]
    struct tg_tensor * q = tg_reshape_3d(ctx, tg_mul_mat(ctx, wq, xn), HD, NH, T);
    struct tg_tensor * k = tg_reshape_3d(ctx, tg_mul_mat(ctx, wk, xn), HD, NH, T);
    q = tg_rope(ctx, q, pos, HD, TG_ROPE_NEOX, 10000.0f, 1.0f);
    k = tg_rope(ctx, k, pos, HD, TG_ROPE_NORMAL, 10000.0f, 1.0f);
    struct tg_tensor * qp = tg_permute(ctx, q, 0, 2, 1, 3);                  // [HD, T, NH]
    struct tg_tensor * kp = tg_permute(ctx, k, 0, 2, 1, 3);                  // [HD, T, NH]
    struct tg_tensor * kq = tg_soft_max_ext(ctx, tg_mul_mat(ctx, kp, qp), mask, 1.0f / sqrtf((float) HD), 0.0f); // [T, T, NH]
    struct tg_tensor * v = tg_reshape_3d(ctx, tg_mul_mat(ctx, wv, xn), HD, NH, T);
    struct tg_tensor * vt = tg_cont(ctx, tg_permute(ctx, v, 1, 2, 0, 3));      // [T, HD, NH]
    struct tg_tensor * att = tg_mul_mat(ctx, vt, kq);                          // [HD, T, NH]
    struct tg_tensor * att2 = tg_cont_4d(ctx, tg_permute(ctx, att, 0, 2, 1, 3), D, T, 1, 1);
    struct tg_tensor * h = tg_add(ctx, x, att2);                              // [D, T]
    struct tg_tensor * up = tg_mul_mat(ctx, wup, tg_rms_norm(ctx, h, 1e-5f)); // [2FF, T]
    struct tg_tensor * act = tg_swiglu(ctx, up);                               // [FF, T]
    struct tg_tensor * act2 = tg_silu(ctx, act);
    struct tg_tensor * y = tg_add(ctx, h, tg_mul_mat(ctx, wdown, act2));      // [D, T]
    struct tg_tensor * s = tg_sum(ctx, y);
    // one token's fused attention over 1100 cells of F16 caches laid out as the
    // llama KV cache (2 K/V heads side by side in a K row, V transposed):
    // its scores are split across threads by cells, the rest by heads
    struct tg_tensor * kc = tg_new_tensor_2d(ctx, TG_TYPE_F16, 2 * HD, 1200);
    struct tg_tensor * vc = tg_new_tensor_2d(ctx, TG_TYPE_F16, 1200, 2 * HD);
    struct tg_tensor * q1 = tg_new_tensor_3d(ctx, TG_TYPE_F32, HD, 1, NH);
    fill_f16(kc, 1.0f); fill_f16(vc, 1.0f); fill_f32(q1, 1.0f);
    struct tg_tensor * kv = tg_view_3d(ctx, kc, HD, 1100, 2, kc->nb[1], HD * sizeof(tg_fp16_t), 0);
    struct tg_tensor * vv = tg_view_3d(ctx, vc, 1100, HD, 2, vc->nb[1], HD * vc->nb[1], 0);
    struct tg_tensor * fa = tg_flash_attn_ext(ctx, q1, kv, vv, NULL, 0.2f);
    m->out[0] = kq; m->out[1] = att2; m->out[2] = act; m->out[3] = y; m->out[4] = s; m->out[5] = fa;
    for (int i = 0; i < N_OUT; i++) {
        if (!m->out[i]) { fprintf(stderr, "build: %s\n", tg_last_error()); return false; }
    }
    m->g = tg_graph_new(ctx, 256);
    if (!m->g) return false;
    for (int i = 0; i < N_OUT; i++) {
        if (tg_graph_build_forward(m->g, m->out[i]) != TG_OK) return false;
    }
    return true;
}

// Computes with a pool of n threads; copies the outputs into buf (concatenated).
static bool run(struct model * m, struct tg_cpu_pool * pool, char * buf, size_t * len) {
    for (int i = 0; i < N_OUT; i++) memset(m->out[i]->data, 0xAB, tg_nbytes(m->out[i]));
    enum tg_status st = tg_cpu_graph_compute(pool, m->g, NULL);
    if (st != TG_OK) { fprintf(stderr, "compute: %s\n", tg_last_error()); return false; }
    size_t off = 0;
    for (int i = 0; i < N_OUT; i++) {
        memcpy(buf + off, m->out[i]->data, tg_nbytes(m->out[i]));
        off += tg_nbytes(m->out[i]);
    }
    *len = off;
    return true;
}

static void check_level(struct model * m, const char * level) {
    static char ref[1 << 20], got[1 << 20];
    size_t ref_len = 0, len = 0;
    for (int n = 1; n <= 4; n++) {
        struct tg_cpu_pool * pool = tg_cpu_pool_new(n);
        if (!CHECK(pool != NULL, "[%s] pool of %d threads", level, n)) continue;
        if (n == 1) {
            CHECK(run(m, pool, ref, &ref_len), "[%s] graph of %d nodes computes with 1 thread", level, m->g->n_nodes);
            bool finite = true;
            for (size_t i = 0; i < ref_len / 4; i++) finite &= isfinite(((float *) ref)[i]) || ((float *) ref)[i] == 0;
            CHECK(finite, "[%s] outputs are finite (sum = %g)", level, (double) *(float *) m->out[4]->data);
        } else {
            bool ok = run(m, pool, got, &len);
            CHECK(ok && len == ref_len && memcmp(ref, got, len) == 0,
                  "[%s] %d threads: outputs bitwise identical to 1 thread (%zu bytes)", level, n, len);
        }
        bool ok = run(m, pool, got, &len);
        CHECK(ok && len == ref_len && memcmp(ref, got, len) == 0,
              "[%s] %d threads, second run on the same pool: bitwise identical", level, n);
        tg_cpu_pool_free(pool);
    }
}

// Two pools computing two copies of the graph at the same time, from two host
// threads: both give the single-threaded bytes (no shared state between pools).
struct concurrent { struct model * m; int n_threads; bool ok; char * buf; size_t len; };

static void * concurrent_main(void * arg) {
    struct concurrent * c = arg;
    struct tg_cpu_pool * pool = tg_cpu_pool_new(c->n_threads);
    c->ok = pool != NULL;
    for (int rep = 0; rep < 5 && c->ok; rep++) c->ok = run(c->m, pool, c->buf, &c->len);
    tg_cpu_pool_free(pool);
    return NULL;
}

static void check_concurrent(struct model * m1, struct model * m2) {
    static char ref[1 << 20], b1[1 << 20], b2[1 << 20];
    size_t ref_len = 0;
    struct tg_cpu_pool * p1 = tg_cpu_pool_new(1);
    bool ok = p1 && run(m1, p1, ref, &ref_len);
    tg_cpu_pool_free(p1);
    struct concurrent c1 = { m1, 3, false, b1, 0 }, c2 = { m2, 2, false, b2, 0 };
    pthread_t t1, t2;
    pthread_create(&t1, NULL, concurrent_main, &c1);
    pthread_create(&t2, NULL, concurrent_main, &c2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(ok && c1.ok && c2.ok && c1.len == ref_len && c2.len == ref_len && memcmp(ref, b1, ref_len) == 0 &&
          memcmp(ref, b2, ref_len) == 0, "two pools (3 and 2 threads) computing concurrently: bitwise identical to 1 thread");
}

int main(void) {
    struct model m;
    memset(&m, 0, sizeof(m));
    if (!CHECK(build(&m), "graph built: %s", tg_last_error())) return tg_check_finish("test_determinism");
    tg_cpu_set_task_grain(1);   // split every node across all threads
    check_level(&m, tg_cpu_simd_name());
    tg_cpu_force_scalar(true);
    check_level(&m, "scalar");
    tg_cpu_force_scalar(false);
    tg_cpu_set_task_grain(0);
    check_level(&m, "default grain");
    struct model m1, m2;
    memset(&m1, 0, sizeof(m1));
    memset(&m2, 0, sizeof(m2));
    g_rng = 0x2545F4914F6CDD1Dull;   // same seed: same weights in both copies
    bool built = build(&m1);
    g_rng = 0x2545F4914F6CDD1Dull;
    built = build(&m2) && built;
    if (CHECK(built, "two copies of the graph built")) {
        tg_cpu_set_task_grain(1);
        check_concurrent(&m1, &m2);
        tg_cpu_set_task_grain(0);
    }
    tg_context_free(m1.ctx);
    tg_context_free(m2.ctx);
    tg_context_free(m.ctx);
    return tg_check_finish("test_determinism");
}
