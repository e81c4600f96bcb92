// test_mul_mat.c - MUL_MAT and OUT_PROD on the CPU against a float64
// reference: every weight type x activation type, odd shapes, broadcast over
// dims 2/3, non-contiguous activations (transposed, permuted) and weight rows
// (padded view), SIMD levels against the scalar path, bitwise determinism
// across 1..4 threads, tiles against the single dot products.
#include "check.h"
#include "cpu/vec-impl.h"
#include "tg/backend.h"
#include "tg/cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// ---- helpers ------------------------------------------------------------------

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static float frand(void) {  // uniform in [-1, 1)
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float) ((rng >> 40) * (1.0 / 8388608.0) - 1.0);
}

static bool is_quant(enum tg_type t) { return t == TG_TYPE_Q8_0 || t == TG_TYPE_Q4_0; }

static struct tg_context * new_ctx(void) {
    struct tg_context_params cp = { 64u << 20, NULL, false };
    return tg_context_new(cp);
}

// Writes v as an element of a float type at p.
static void put_elem(enum tg_type t, char * p, float v) {
    switch (t) {
    case TG_TYPE_F16:  *(tg_fp16_t *) p = tg_fp32_to_fp16(v); break;
    case TG_TYPE_BF16: *(tg_bf16_t *) p = tg_fp32_to_bf16(v); break;
    default:           *(float *) p = v; break;
    }
}
static float get_elem(enum tg_type t, const char * p) {
    switch (t) {
    case TG_TYPE_F16:  return tg_fp16_to_fp32(*(const tg_fp16_t *) p);
    case TG_TYPE_BF16: return tg_bf16_to_fp32(*(const tg_bf16_t *) p);
    default:           return *(const float *) p;
    }
}

enum { W_DENSE, W_PADDED, W_HEADS };
// Weights [k,m,p,q] of `type` filled with random rows; W_PADDED: the rows are
// a view into a wider tensor (nb1 > row size); W_HEADS: the p matrices are
// interleaved row by row, as attention's heads in a K cache view (nb2 < nb1).
// *ref gets the values the tensor holds (dequantized), as doubles [q][p][m][k].
static struct tg_tensor * make_weights(struct tg_context * ctx, enum tg_type type, int64_t k, int64_t m,
                                       int64_t p, int64_t q, int pad, double ** ref) {
    const int64_t padk = pad == W_PADDED ? (is_quant(type) ? 32 : 3) : 0;
    struct tg_tensor * base = pad == W_HEADS ? tg_new_tensor_4d(ctx, type, k, p, m, q)
                                             : tg_new_tensor_4d(ctx, type, k + padk, m, p, q);
    if (!base) return NULL;
    struct tg_tensor * a = pad == W_PADDED ? tg_view_4d(ctx, base, k, m, p, q, base->nb[1], base->nb[2], base->nb[3], 0)
                         : pad == W_HEADS  ? tg_permute(ctx, base, 0, 2, 1, 3) : base;
    if (!a) return NULL;
    const struct tg_type_traits * tr = tg_type_traits(type);
    float * row = malloc((size_t) k * sizeof(float));
    *ref = malloc((size_t) (k * m * p * q) * sizeof(double));
    for (int64_t r = 0; r < m * p * q; r++) {
        const int64_t i1 = r % m, i2 = (r / m) % p, i3 = r / (m * p);
        char * dst = (char *) a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
        for (int64_t l = 0; l < k; l++) row[l] = frand();
        if (type == TG_TYPE_F32) memcpy(dst, row, (size_t) k * sizeof(float));
        else tr->from_float(row, dst, k);
        tr->to_float(dst, row, k);
        for (int64_t l = 0; l < k; l++) (*ref)[r * k + l] = row[l];
    }
    free(row);
    return a;
}

enum { LAYOUT_CONTIG, LAYOUT_TRANSPOSED, LAYOUT_PERMUTED };
static const char * layout_name[] = { "contiguous", "transposed", "permuted" };

// Activations [k,n,r,s] of a float type in a layout. *ref gets the values as
// doubles [s][r][n][k].
static struct tg_tensor * make_acts(struct tg_context * ctx, enum tg_type type, int64_t k, int64_t n,
                                    int64_t r, int64_t s, int layout, double ** ref) {
    struct tg_tensor * b = NULL;
    if (layout == LAYOUT_TRANSPOSED) {
        b = tg_transpose(ctx, tg_new_tensor_4d(ctx, type, n, k, r, s));
    } else if (layout == LAYOUT_PERMUTED) {
        b = tg_permute(ctx, tg_new_tensor_4d(ctx, type, k, r, n, s), 0, 2, 1, 3);
    } else {
        b = tg_new_tensor_4d(ctx, type, k, n, r, s);
    }
    if (!b) return NULL;
    *ref = malloc((size_t) (k * n * r * s) * sizeof(double));
    for (int64_t t = 0; t < k * n * r * s; t++) {
        const int64_t l = t % k, j = (t / k) % n, i2 = (t / (k * n)) % r, i3 = t / (k * n * r);
        char * p = (char *) b->data + l * b->nb[0] + j * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
        put_elem(type, p, frand());
        (*ref)[t] = get_elem(type, p);
    }
    return b;
}

// Rounds reference activation rows the way the kernel's dot type holds them:
// f16 for f16 weights, Q8_0 for quantized weights (isolates kernel error).
static void round_acts(enum tg_type wtype, double * b, int64_t k, int64_t rows) {
    if (wtype != TG_TYPE_F16 && !is_quant(wtype)) return;
    float * row = malloc((size_t) k * sizeof(float));
    tg_block_q8_0 * qb = malloc((size_t) (k / TG_QK8_0 + 1) * sizeof(tg_block_q8_0));
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t l = 0; l < k; l++) row[l] = (float) b[r * k + l];
        if (wtype == TG_TYPE_F16) {
            for (int64_t l = 0; l < k; l++) row[l] = tg_fp16_to_fp32(tg_fp32_to_fp16(row[l]));
        } else {
            tg_quantize_row_q8_0(row, qb, k);
            tg_dequantize_row_q8_0(qb, row, k);
        }
        for (int64_t l = 0; l < k; l++) b[r * k + l] = row[l];
    }
    free(row);
    free(qb);
}

// Builds and computes a one-node graph; copies the F32 result into a new
// array (contiguous [ne0,ne1,ne2,ne3]) or returns NULL on failure.
static float * compute(struct tg_context * ctx, struct tg_tensor * node, int nth) {
    struct tg_graph * g = tg_graph_new(ctx, 16);
    if (!g || tg_graph_build_forward(g, node) != TG_OK) return NULL;
    enum tg_status st = tg_cpu_compute(g, nth);
    if (st != TG_OK) {
        printf("     compute failed: %s\n", tg_last_error());
        return NULL;
    }
    const int64_t ne = tg_nelements(node);
    float * out = malloc((size_t) ne * sizeof(float));
    for (int64_t t = 0; t < ne; t++) {
        const int64_t i0 = t % node->ne[0], i1 = (t / node->ne[0]) % node->ne[1];
        const int64_t i2 = (t / (node->ne[0] * node->ne[1])) % node->ne[2];
        const int64_t i3 = t / (node->ne[0] * node->ne[1] * node->ne[2]);
        out[t] = *(const float *) ((const char *) node->data + i0 * node->nb[0] + i1 * node->nb[1] +
                                   i2 * node->nb[2] + i3 * node->nb[3]);
    }
    return out;
}

static double nmse(const float * out, const double * ref, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double) out[i] - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
    }
    if (!isfinite(num)) return INFINITY;
    return den > 0 ? num / den : num;
}
static double nmse_f(const float * x, const float * y, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double) x[i] - y[i];
        num += e * e;
        den += (double) y[i] * y[i];
    }
    return den > 0 ? num / den : num;
}

// float64 reference of mul_mat: A [q][p][m][k], B [s][r][n][k] -> [s][r][n][m].
static double * ref_mul_mat(const double * A, const double * B, int64_t k, int64_t m, int64_t n,
                            int64_t p, int64_t q, int64_t r, int64_t s) {
    double * out = malloc((size_t) (m * n * r * s) * sizeof(double));
    for (int64_t i3 = 0; i3 < s; i3++)
    for (int64_t i2 = 0; i2 < r; i2++) {
        const double * am = A + ((i3 / (s / q)) * p + i2 / (r / p)) * m * k;
        const double * bm = B + (i3 * r + i2) * n * k;
        for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double acc = 0;
            for (int64_t l = 0; l < k; l++) acc += am[i * k + l] * bm[j * k + l];
            out[((i3 * r + i2) * n + j) * m + i] = acc;
        }
    }
    return out;
}

// ---- mul_mat against the reference -----------------------------------------------

struct mm_case {
    enum tg_type wt, bt;
    int64_t k, m, n, p, q, r, s;
    int layout;
    int pad;   // W_DENSE, W_PADDED, W_HEADS
};

static double mm_threshold(enum tg_type wt) { (void) wt; return 1e-9; }

// Runs one case with nth threads; returns the result (caller frees) and
// checks it against the reference.
static float * check_case(const struct mm_case * c, int nth, bool print) {
    struct tg_context * ctx = new_ctx();
    double * A = NULL, * B = NULL;
    struct tg_tensor * a = make_weights(ctx, c->wt, c->k, c->m, c->p, c->q, c->pad, &A);
    struct tg_tensor * b = make_acts(ctx, c->bt, c->k, c->n, c->r, c->s, c->layout, &B);
    struct tg_tensor * d = a && b ? tg_mul_mat(ctx, a, b) : NULL;
    float * out = NULL;
    if (d) {
        round_acts(c->wt, B, c->k, c->n * c->r * c->s);
        double * R = ref_mul_mat(A, B, c->k, c->m, c->n, c->p, c->q, c->r, c->s);
        out = compute(ctx, d, nth);
        const double e = out ? nmse(out, R, c->m * c->n * c->r * c->s) : INFINITY;
        const double thr = mm_threshold(c->wt);
        if (print || !(e <= thr)) {
            CHECK(e <= thr, "MUL_MAT w=%s b=%s a[%lld,%lld,%lld,%lld]%s b[%lld,%lld,%lld,%lld] %s nth=%d level=%d: nmse %.3g <= %.0e",
                  tg_type_name(c->wt), tg_type_name(c->bt), (long long) c->k, (long long) c->m,
                  (long long) c->p, (long long) c->q,
                  c->pad == W_PADDED ? " padded-rows" : c->pad == W_HEADS ? " heads-interleaved" : "", (long long) c->k,
                  (long long) c->n, (long long) c->r, (long long) c->s, layout_name[c->layout], nth,
                  tg_cpu_simd_level(), e, thr);
        }
        free(R);
    } else {
        CHECK(false, "MUL_MAT w=%s b=%s: building the node failed: %s", tg_type_name(c->wt),
              tg_type_name(c->bt), tg_last_error());
    }
    free(A);
    free(B);
    tg_context_free(ctx);
    return out;
}

static const enum tg_type wtypes[] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_BF16, TG_TYPE_Q8_0, TG_TYPE_Q4_0 };
static const enum tg_type btypes[] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_BF16 };

static void test_types_and_layouts(void) {
    for (int wi = 0; wi < 5; wi++)
    for (int bi = 0; bi < 3; bi++) {
        const enum tg_type wt = wtypes[wi];
        const int64_t k = is_quant(wt) ? 64 : 37;
        for (int layout = 0; layout < 3; layout++) {
            // broadcast: a has 2x2 matrices, b 4x6 (dims 2/3 repeat 2 and 3 times)
            struct mm_case c = { wt, btypes[bi], k, 13, 7, 2, 2, 4, 6, layout, layout == LAYOUT_TRANSPOSED ? W_PADDED : W_DENSE };
            free(check_case(&c, 2, true));
        }
        // larger tiles with edges, and generation (one column)
        struct mm_case big = { wt, btypes[bi], is_quant(wt) ? 160 : 101, 33, 29, 1, 1, 1, 1, LAYOUT_CONTIG, W_DENSE };
        free(check_case(&big, 2, true));
        struct mm_case gen = { wt, btypes[bi], is_quant(wt) ? 256 : 259, 67, 1, 1, 1, 1, 1, LAYOUT_CONTIG, W_PADDED };
        free(check_case(&gen, 2, true));
        if (!is_quant(wt)) {   // rows shorter than one vector: the tail alone
            struct mm_case tiny = { wt, btypes[bi], 5, 7, 3, 1, 1, 1, 1, LAYOUT_TRANSPOSED, W_DENSE };
            free(check_case(&tiny, 2, true));
        }
    }
}

// Random shapes, types, layouts, broadcasts and thread counts (quiet checks,
// one summary line).
static void test_random_sweep(void) {
    uint64_t pick = 0x9E3779B97F4A7C15ULL;
    int ok = 0, total = 0;
    for (int t = 0; t < 60; t++) {
        pick = pick * 6364136223846793005ULL + 1442695040888963407ULL;
        const uint32_t r = (uint32_t) (pick >> 32);
        struct mm_case c;
        c.wt = wtypes[r % 5];
        c.bt = btypes[(r / 5) % 3];
        c.k = is_quant(c.wt) ? 32 * (1 + (int64_t) ((r / 15) % 8)) : 1 + (int64_t) ((r / 15) % 200);
        c.m = 1 + (int64_t) ((r / 3000) % 40);
        c.n = 1 + (int64_t) ((r / 120000) % 30);
        c.p = 1 + (int64_t) ((r >> 20) & 1);
        c.q = 1;
        c.r = c.p * (1 + (int64_t) ((r >> 21) & 1));
        c.s = 1 + (int64_t) ((r >> 22) & 1);
        c.layout = (int) ((r >> 23) % 3);
        c.pad = (r >> 25) & 1;
        const int nth = 1 + (int) ((r >> 26) % 4);
        float * out = check_case(&c, nth, false);   // prints only on failure
        total++;
        ok += out != NULL && tg_check_failures() == 0;
        free(out);
    }
    CHECK(ok == total, "MUL_MAT random sweep: %d of %d cases (types, k 1..200, m, n, broadcast, layouts, 1..4 threads) within 1e-9",
          ok, total);
}

// Quantized weights against unrounded f32 activations: the activation
// quantization error stays small.
static void test_quant_end_to_end(void) {
    for (int wi = 3; wi < 5; wi++) {
        const enum tg_type wt = wtypes[wi];
        struct tg_context * ctx = new_ctx();
        double * A = NULL, * B = NULL;
        struct tg_tensor * a = make_weights(ctx, wt, 128, 20, 1, 1, false, &A);
        struct tg_tensor * b = make_acts(ctx, TG_TYPE_F32, 128, 9, 1, 1, LAYOUT_CONTIG, &B);
        struct tg_tensor * d = tg_mul_mat(ctx, a, b);
        double * R = ref_mul_mat(A, B, 128, 20, 9, 1, 1, 1, 1);
        float * out = d ? compute(ctx, d, 2) : NULL;
        const double e = out ? nmse(out, R, 20 * 9) : INFINITY;
        CHECK(e <= 1e-3, "MUL_MAT w=%s b=f32 [128,20]x[128,9] vs unquantized activations: nmse %.3g <= 1e-3",
              tg_type_name(wt), e);
        free(out); free(R); free(A); free(B);
        tg_context_free(ctx);
    }
}

// Batch invariance of float weights: a column computed alone (generation,
// the GEMV path) has the bits it has among 9 columns (8 in register tiles,
// the ninth by the GEMV path), at every SIMD level, for row lengths with and
// without a tail and a row half that is not a whole number of vectors.
static void test_f32_batch_invariance(void) {
    const int top = tg_cpu_simd_level();
    const int64_t ks[] = { 7, 259, 264, 768 };
    const int64_t rows[] = { 1, 2, 29 };
    int same = 0, n = 0;
    for (int lv = 0; lv <= top; lv++) {
        tg_cpu_set_simd_cap(lv);
        for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
        for (size_t ri = 0; ri < sizeof(rows) / sizeof(rows[0]); ri++) {
            struct mm_case many = { TG_TYPE_F32, TG_TYPE_F32, ks[ki], rows[ri], 9, 1, 1, 1, 1, LAYOUT_CONTIG, W_DENSE };
            struct mm_case one = many;
            one.n = 1;
            rng = 999;   // the same weights; the single column is the first of the nine
            float * r9 = check_case(&many, 2, false);
            rng = 999;
            float * r1 = check_case(&one, 2, false);
            bool ok = r9 && r1 && memcmp(r1, r9, (size_t) rows[ri] * sizeof(float)) == 0;
            if (!ok) fprintf(stderr, "  level %d k %lld rows %lld: the lone column differs\n", lv, (long long) ks[ki],
                             (long long) rows[ri]);
            same += ok;
            n++;
            free(r9);
            free(r1);
        }
    }
    tg_cpu_set_simd_cap(-1);
    CHECK(same == n, "MUL_MAT w=f32: a column alone has the bits it has among 9 columns (%d/%d cases, levels 0..%d)",
          same, n, top);
}

// Every SIMD level this CPU has against the scalar path; forcing scalar
// through the public switch gives the scalar bits; 1..4 threads give the
// same bits.
static void test_levels_and_threads(void) {
    const int top = tg_cpu_simd_level();
    printf("     cpu simd level %d (%s)\n", top, tg_cpu_simd_name());
    for (int wi = 0; wi < 5; wi++) {
        const enum tg_type wt = wtypes[wi];
        struct mm_case c = { wt, TG_TYPE_F32, is_quant(wt) ? 192 : 77, 29, 17, 1, 1, 2, 1, LAYOUT_CONTIG, W_DENSE };
        const int64_t nout = c.m * c.n * c.r * c.s;
        float * res[TG_SIMD_AVX512VNNI + 1] = { NULL };
        for (int lv = 0; lv <= top; lv++) {
            tg_cpu_set_simd_cap(lv);
            rng = 12345;   // same data for every level
            res[lv] = check_case(&c, 2, false);
        }
        tg_cpu_set_simd_cap(-1);
        for (int lv = 1; lv <= top; lv++) {
            const double e = res[lv] && res[0] ? nmse_f(res[lv], res[0], nout) : INFINITY;
            const bool bits = res[lv] && res[0] && memcmp(res[lv], res[0], (size_t) nout * sizeof(float)) == 0;
            if (is_quant(wt))   // exact block sums, one multiply-add per block in order: the same bits
                CHECK(bits, "MUL_MAT w=%s level %d: the scalar path's bits", tg_type_name(wt), lv);
            else
                CHECK(e <= 1e-10, "MUL_MAT w=%s level %d vs scalar: nmse %.3g <= 1e-10", tg_type_name(wt), lv, e);
        }
        tg_cpu_force_scalar(true);
        rng = 12345;
        float * forced = check_case(&c, 2, false);
        tg_cpu_force_scalar(false);
        CHECK(forced && res[0] && memcmp(forced, res[0], (size_t) nout * sizeof(float)) == 0,
              "MUL_MAT w=%s tg_cpu_force_scalar gives the scalar path's bits", tg_type_name(wt));
        free(forced);
        for (int lv = 0; lv <= top; lv++) free(res[lv]);

        // generation (one column: the GEMV kernels, 8, 4 and 1 rows at a time for 29 rows) at
        // every level against the scalar path
        struct mm_case gv = c;
        gv.n = 1; gv.r = 1;
        const int64_t ngv = gv.m * gv.s;
        float * gres[TG_SIMD_AVX512VNNI + 1] = { NULL };
        for (int lv = 0; lv <= top; lv++) {
            tg_cpu_set_simd_cap(lv);
            rng = 4242;
            gres[lv] = check_case(&gv, 2, false);
        }
        tg_cpu_set_simd_cap(-1);
        for (int lv = 1; lv <= top; lv++) {
            const double e = gres[lv] && gres[0] ? nmse_f(gres[lv], gres[0], ngv) : INFINITY;
            const bool bits = gres[lv] && gres[0] && memcmp(gres[lv], gres[0], (size_t) ngv * sizeof(float)) == 0;
            if (is_quant(wt))   // integer block sums, the same multiply-add chain per row: the same bits
                CHECK(bits, "MUL_MAT w=%s n=1 (29 rows) level %d: the scalar path's bits", tg_type_name(wt), lv);
            else
                CHECK(e <= 1e-10, "MUL_MAT w=%s n=1 (29 rows) level %d vs scalar: nmse %.3g <= 1e-10", tg_type_name(wt), lv, e);
        }
        for (int lv = 0; lv <= top; lv++) free(gres[lv]);

        // determinism over threads, prompt-like and generation shapes
        struct mm_case g1 = c, g2 = c;
        g2.n = 1; g2.r = 1;
        const struct mm_case * cs[2] = { &g1, &g2 };
        for (int ci = 0; ci < 2; ci++) {
            const int64_t no = cs[ci]->m * cs[ci]->n * cs[ci]->r * cs[ci]->s;
            rng = 777;
            float * one = check_case(cs[ci], 1, false);
            bool same = one != NULL;
            for (int nth = 2; nth <= 4; nth++) {
                rng = 777;
                float * o = check_case(cs[ci], nth, false);
                same = same && o && memcmp(o, one, (size_t) no * sizeof(float)) == 0;
                free(o);
            }
            CHECK(same, "MUL_MAT w=%s n=%lld: bitwise identical for 1..4 threads", tg_type_name(wt),
                  (long long) cs[ci]->n);
            free(one);
        }
    }
}

// Block kernels and the single dot products of cpu-impl.h give the same bits.
static void test_dots_match_tiles(void) {
    const int64_t k = 96, m = 11, n = 5;
    for (int wi = 0; wi < 5; wi++) {
        const enum tg_type wt = wtypes[wi];
        if (wt == TG_TYPE_BF16) continue;   // bf16 weights use f32 activations
        struct tg_context * ctx = new_ctx();
        double * A = NULL, * B = NULL;
        struct tg_tensor * a = make_weights(ctx, wt, k, m, 1, 1, false, &A);
        struct tg_tensor * b = make_acts(ctx, TG_TYPE_F32, k, n, 1, 1, LAYOUT_CONTIG, &B);
        float * out = compute(ctx, tg_mul_mat(ctx, a, b), 2);
        bool same = out != NULL;
        void * brow = malloc((size_t) k * sizeof(float));
        for (int64_t j = 0; j < n && same; j++) {
            const float * bj = (const float *) ((const char *) b->data + j * b->nb[1]);
            if (wt == TG_TYPE_F16) tg_fp32_to_fp16_row(bj, brow, k);
            if (is_quant(wt)) tg_quantize_row_q8_0(bj, brow, k);
            for (int64_t i = 0; i < m; i++) {
                const void * ai = (const char *) a->data + i * a->nb[1];
                float v;
                switch (wt) {
                case TG_TYPE_F32:  v = tg_vec_dot_f32(k, ai, bj); break;
                case TG_TYPE_F16:  v = tg_vec_dot_f16(k, ai, brow); break;
                case TG_TYPE_Q8_0: v = tg_vec_dot_q8_0_q8_0(k, ai, brow); break;
                default:           v = tg_vec_dot_q4_0_q8_0(k, ai, brow); break;
                }
                same = same && memcmp(&v, &out[j * m + i], sizeof v) == 0;
            }
        }
        CHECK(same, "MUL_MAT w=%s: every element equals tg_vec_dot_* of its rows bitwise", tg_type_name(wt));
        free(brow); free(out); free(A); free(B);
        tg_context_free(ctx);
    }
    // bf16 x bf16 single dot against float64
    tg_bf16_t x[37], y[37];
    double ref = 0;
    for (int i = 0; i < 37; i++) {
        x[i] = tg_fp32_to_bf16(frand()); y[i] = tg_fp32_to_bf16(frand());
        ref += (double) tg_bf16_to_fp32(x[i]) * tg_bf16_to_fp32(y[i]);
    }
    const float v = tg_vec_dot_bf16(37, x, y);
    CHECK(fabs(v - ref) <= 1e-5 * (1 + fabs(ref)), "tg_vec_dot_bf16 n=37: %.7g vs %.7g", v, ref);
}

// The activation quantizer of every level gives tg_quantize_row_q8_0's bytes
// (random rows, exact ties, zeros, NaN, Inf, subnormals).
static void test_quantize_q8(void) {
    enum { NB = 8, N = NB * TG_QK8_0 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = frand() * 10.0f;
    for (int i = 0; i < 32; i++) x[32 + i] = (float) (i - 16) + 0.5f;  // amax 127 below: d = 1, ties
    x[63] = 127.0f;
    for (int i = 0; i < 32; i++) x[64 + i] = 0.0f;
    x[96 + 3] = NAN;
    x[128 + 5] = INFINITY;
    for (int i = 0; i < 32; i++) x[160 + i] = (float) i * 1e-40f;      // subnormal
    x[192 + 7] = -1e30f;
    tg_block_q8_0 ref[NB], got[NB];
    tg_quantize_row_q8_0(x, ref, N);
    enum { NR = 256 };   // blocks of random magnitude 1e-45 .. 1e44, some of half-integers
    float * xr = malloc(NR * TG_QK8_0 * sizeof(float));
    tg_block_q8_0 * rr = malloc(NR * sizeof(tg_block_q8_0)), * gr = malloc(NR * sizeof(tg_block_q8_0));
    for (int b = 0; b < NR; b++) {
        const float sc = powf(10.0f, (float) (b % 90 - 45));
        for (int j = 0; j < TG_QK8_0; j++) {
            xr[b * TG_QK8_0 + j] = b % 3 == 0 ? (float) ((int) (frand() * 254.0f)) * 0.5f : frand() * sc;
        }
    }
    tg_quantize_row_q8_0(xr, rr, NR * TG_QK8_0);
    for (int lv = 0; lv <= tg_cpu_simd_level(); lv++) {
        memset(got, 0x55, sizeof got);
        tg_mm_quantize_row_q8_0(lv, x, got, N);
        tg_mm_quantize_row_q8_0(lv, xr, gr, NR * TG_QK8_0);
        CHECK(memcmp(got, ref, sizeof ref) == 0 && memcmp(gr, rr, NR * sizeof(tg_block_q8_0)) == 0,
              "q8_0 activation quantizer level %d: same bytes as tg_quantize_row_q8_0 (%d blocks)", lv, NB + NR);
    }
    free(xr); free(rr); free(gr);

    // Q8_K (the K-quants' activations): edge blocks then random magnitudes
    enum { KB = 8, KN = KB * TG_QK_K, KR = 96 };
    float * xk = malloc((size_t) (KN + KR * TG_QK_K) * sizeof(float));
    for (int i = 0; i < KN; i++) xk[i] = frand() * 10.0f;
    for (int i = 0; i < 256; i++) xk[256 + i] = (float) (i % 200 - 100) + 0.5f;   // ties
    xk[256 + 17] = -127.0f;                                                        // iscale = 1
    for (int i = 0; i < 256; i++) xk[512 + i] = 0.0f;                              // zero block
    xk[768 + 3] = NAN; xk[768 + 200] = -55.0f;                                     // NaN skipped
    xk[1024 + 5] = INFINITY;                                                       // iscale = -0
    for (int i = 0; i < 256; i++) xk[1280 + i] = (float) (i - 128) * 1e-40f;       // subnormal: iscale overflows
    xk[1536 + 9] = 60.0f; xk[1536 + 90] = -60.0f;                                   // +-amax: the first wins
    xk[1792 + 250] = -1e30f;
    for (int b = 0; b < KR; b++) {
        const float sc = powf(10.0f, (float) (b % 80 - 40));
        for (int j = 0; j < TG_QK_K; j++) xk[KN + b * TG_QK_K + j] = frand() * sc;
    }
    const int kn = KB + KR;
    tg_block_q8_K * kr = malloc((size_t) kn * sizeof(tg_block_q8_K)), * kg = malloc((size_t) kn * sizeof(tg_block_q8_K));
    tg_quantize_row_q8_K(xk, kr, (int64_t) kn * TG_QK_K);
    for (int lv = 0; lv <= tg_cpu_simd_level(); lv++) {
        memset(kg, 0x55, (size_t) kn * sizeof(tg_block_q8_K));
        tg_mm_quantize_row_q8_K(lv, xk, kg, (int64_t) kn * TG_QK_K);
        int bad = -1;
        for (int b = 0; b < kn && bad < 0; b++) if (memcmp(&kg[b], &kr[b], sizeof(tg_block_q8_K)) != 0) bad = b;
        CHECK(bad < 0, "q8_K activation quantizer level %d: same bytes as tg_quantize_row_q8_K (%d blocks; first differing %d)",
              lv, kn, bad);
    }
    free(xk); free(kr); free(kg);
}

// ---- out_prod ------------------------------------------------------------------------

static void test_out_prod(void) {
    const enum tg_type types[] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_BF16, TG_TYPE_Q8_0, TG_TYPE_Q4_0 };
    const int top = tg_cpu_simd_level();
    for (int lv = 0; lv <= top; lv++)
    for (int ti = 0; ti < 5; ti++)
    for (int transposed = 0; transposed < 2; transposed++) {
        tg_cpu_set_simd_cap(lv);
        const enum tg_type at = types[ti];
        const int64_t m = is_quant(at) ? 64 : 37, k = 9, n = transposed ? 6 : 7, p = 2, r = 4, s = 2;
        struct tg_context * ctx = new_ctx();
        double * A = NULL, * B = NULL;
        // a [m,k,p,1] (rows of length m): make_weights gives [m][k] per matrix
        struct tg_tensor * a = make_weights(ctx, at, m, k, p, 1, transposed, &A);
        // b [n,k,r,s]: make_acts lays it out [k'=n, n'=k]
        struct tg_tensor * b = make_acts(ctx, TG_TYPE_F32, n, k, r, s,
                                         transposed ? LAYOUT_TRANSPOSED : LAYOUT_CONTIG, &B);
        struct tg_tensor * d = tg_out_prod(ctx, a, b);
        double * R = malloc((size_t) (m * n * r * s) * sizeof(double));
        for (int64_t i3 = 0; i3 < s; i3++)
        for (int64_t i2 = 0; i2 < r; i2++)
        for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double acc = 0;
            for (int64_t l = 0; l < k; l++) {
                acc += A[((i2 / (r / p)) * k + l) * m + i] * B[((i3 * r + i2) * k + l) * n + j];
            }
            R[((i3 * r + i2) * n + j) * m + i] = acc;
        }
        float * out1 = d ? compute(ctx, d, 1) : NULL;
        const double e = out1 ? nmse(out1, R, m * n * r * s) : INFINITY;
        CHECK(e <= 1e-10, "OUT_PROD a=%s[%lld,%lld,%lld,1]%s b=f32[%lld,%lld,%lld,%lld]%s level=%d: nmse %.3g <= 1e-10",
              tg_type_name(at), (long long) m, (long long) k, (long long) p, transposed ? " padded-rows" : "",
              (long long) n, (long long) k, (long long) r, (long long) s, transposed ? " transposed" : "", lv, e);
        bool same = out1 != NULL;
        for (int nth = 2; nth <= 4 && same; nth++) {
            float * o = compute(ctx, d, nth);
            same = o && memcmp(o, out1, (size_t) (m * n * r * s) * sizeof(float)) == 0;
            free(o);
        }
        CHECK(same, "OUT_PROD a=%s level=%d: bitwise identical for 1..4 threads", tg_type_name(at), lv);
        free(out1); free(R); free(A); free(B);
        tg_context_free(ctx);
    }
    tg_cpu_set_simd_cap(-1);
}

// ---- support checks -------------------------------------------------------------------

static void test_supported(void) {
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * a = tg_new_tensor_2d(ctx, TG_TYPE_F32, 32, 4);
    struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F32, 32, 3);
    struct tg_tensor * d = tg_mul_mat(ctx, a, b);
    CHECK(d && tg_cpu_mul_mat_supported(d), "mul_mat f32 x f32 is supported");
    CHECK(d && tg_cpu_mul_mat_work_size(d, 4) == 0, "mul_mat f32 x contiguous f32 needs no work buffer");
    // hand-made nodes the constructors would reject: never crash, say no
    struct tg_tensor fa = *a, fd = *d;
    fa.type = TG_TYPE_I32;
    fd.src[0] = &fa;
    CHECK(!tg_cpu_mul_mat_supported(&fd), "mul_mat with i32 weights is not supported");
    CHECK(tg_cpu_mul_mat_work_size(&fd, 2) == 0, "unsupported mul_mat needs no work buffer");
    fd = *d;
    fd.ne[1] = 5;   // result shape does not match b
    CHECK(!tg_cpu_mul_mat_supported(&fd), "mul_mat with a wrong result shape is not supported");
    fd = *d;
    fd.src[1] = NULL;
    CHECK(!tg_cpu_mul_mat_supported(&fd), "mul_mat without src[1] is not supported");
    struct tg_tensor * o = tg_out_prod(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 8, 32),
                                       tg_new_tensor_2d(ctx, TG_TYPE_F32, 6, 32));
    CHECK(o && tg_cpu_out_prod_supported(o), "out_prod f32 x f32 is supported");
    if (o) {
        struct tg_tensor fo = *o, fb = *o->src[1];
        fb.type = TG_TYPE_I32;
        fo.src[1] = &fb;
        CHECK(!tg_cpu_out_prod_supported(&fo), "out_prod with i32 b is not supported");
    }
    tg_context_free(ctx);
}

// Q4_1, Q5_0, Q5_1, the K-quants, IQ4_NL and IQ4_XS: MUL_MAT (broadcast over
// dims 2/3, prompt-sized and one-column b) against float64 of the
// dequantized weights times the activations quantized to the type's
// activation type, at every SIMD level and 1..3 threads (bitwise the same
// results), and GET_ROWS of each type equal to its dequantized rows.
static void test_other_quant_types(void) {
    static const enum tg_type types[] = { TG_TYPE_Q4_1, TG_TYPE_Q5_0, TG_TYPE_Q5_1, TG_TYPE_Q2_K, TG_TYPE_Q3_K,
                                          TG_TYPE_Q4_K, TG_TYPE_Q5_K, TG_TYPE_Q6_K, TG_TYPE_IQ4_NL, TG_TYPE_IQ4_XS };
    const int top = tg_cpu_simd_level();
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        const enum tg_type wt = types[ti], vt = tg_type_vec_dot_type(wt);
        const int64_t k = 512, m = 13;
        for (int cols = 0; cols < 2; cols++) {
            const int64_t n = cols ? 1 : 7, r = cols ? 1 : 4;
            struct tg_context * ctx = new_ctx();
            double * A = NULL, * B = NULL;
            struct tg_tensor * a = make_weights(ctx, wt, k, m, cols ? 1 : 2, 1, false, &A);
            struct tg_tensor * b = make_acts(ctx, TG_TYPE_F32, k, n, r, 1, LAYOUT_CONTIG, &B);
            // the reference: activations through the activation type, in float64
            const struct tg_type_traits * tv = tg_type_traits(vt);
            void * qb = malloc(tg_row_size(vt, k));
            float * fb = malloc((size_t) k * sizeof(float));
            double * R = malloc((size_t) (m * n * r) * sizeof(double));
            const int64_t p = a->ne[2];
            for (int64_t i2 = 0; i2 < r; i2++) for (int64_t j = 0; j < n; j++) {
                const float * bj = (const float *) ((const char *) b->data + j * b->nb[1] + i2 * b->nb[2]);
                tv->from_float(bj, qb, k);
                tv->to_float(qb, fb, k);
                for (int64_t i = 0; i < m; i++) {
                    double acc = 0;
                    for (int64_t l = 0; l < k; l++) acc += A[((i2 / (r / p)) * m + i) * k + l] * fb[l];
                    R[(i2 * n + j) * m + i] = acc;
                }
            }
            // IQ4_NL (its VNNI tile), Q4_1 and Q5_1 (f32 lane accumulators;
            // the scalar path rounds where SIMD fuses): bitwise the same for
            // any thread count within a level, levels within float rounding;
            // Q5_0 (the exact block sums of Q4_0), the K-quants and IQ4_XS are
            // bitwise the same at every level too.
            const bool per_level = wt == TG_TYPE_IQ4_NL || wt == TG_TYPE_Q4_1 || wt == TG_TYPE_Q5_1;
            float * first = NULL, * level_first = NULL;
            bool same = true;
            double level_err = 0;
            for (int lv = 0; lv <= top; lv++) for (int nth = 1; nth <= 3; nth++) {
                tg_cpu_set_simd_cap(lv);
                float * out = compute(ctx, tg_mul_mat(ctx, a, b), nth);
                if (!out) { same = false; continue; }
                if (per_level && first && nth == 1) {
                    const double e = nmse_f(out, first, m * n * r);
                    if (e > level_err) level_err = e;
                    free(level_first);
                    level_first = out;
                    continue;
                }
                if (per_level && first && level_first) {
                    same = same && memcmp(level_first, out, sizeof(float) * (size_t) (m * n * r)) == 0;
                    free(out);
                    continue;
                }
                if (!first) {
                    const double e = nmse(out, R, m * n * r);
                    // Q8_1's offset term s is stored in f16 (as the reference runtime
                    // has it): the float64 product of dequantized rows differs by that
                    const double thr = vt == TG_TYPE_Q8_1 ? 1e-6 : 1e-9;
                    CHECK(e <= thr, "MUL_MAT w=%s (activations %s) a[%lld,%lld,%lld] b[%lld,%lld,%lld]: nmse %.3g <= %.0e",
                          tg_type_name(wt), tg_type_name(vt), (long long) k, (long long) m, (long long) p, (long long) k,
                          (long long) n, (long long) r, e, thr);
                    first = out;
                } else {
                    same = same && memcmp(first, out, sizeof(float) * (size_t) (m * n * r)) == 0;
                    free(out);
                }
            }
            tg_cpu_set_simd_cap(top);
            free(level_first);
            if (per_level) {
                CHECK(same, "MUL_MAT w=%s n=%lld: bitwise the same for 1..3 threads at each SIMD level 0..%d",
                      tg_type_name(wt), (long long) n, top);
                CHECK(level_err <= 1e-10, "MUL_MAT w=%s n=%lld: levels 1..%d vs scalar: nmse %.3g <= 1e-10",
                      tg_type_name(wt), (long long) n, top, level_err);
            } else {
                CHECK(same, "MUL_MAT w=%s n=%lld: bitwise the same at SIMD levels 0..%d and 1..3 threads",
                      tg_type_name(wt), (long long) n, top);
            }
            if (cols == 0) {   // GET_ROWS: rows 3, 0, 12 of the first matrix
                struct tg_tensor * ids = tg_new_tensor_1d(ctx, TG_TYPE_I32, 3);
                ((int32_t *) ids->data)[0] = 3; ((int32_t *) ids->data)[1] = 0; ((int32_t *) ids->data)[2] = 12;
                struct tg_tensor * a0 = tg_view_2d(ctx, a, k, m, a->nb[1], 0);
                float * rows = compute(ctx, tg_get_rows(ctx, a0, ids), 2);
                bool ok = rows != NULL;
                for (int t = 0; ok && t < 3; t++) {
                    const int32_t id = ((int32_t *) ids->data)[t];
                    for (int64_t l = 0; l < k; l++) ok = ok && rows[t * k + l] == (float) A[id * k + l];
                }
                CHECK(ok, "GET_ROWS of %s: the dequantized rows", tg_type_name(wt));
                free(rows);
            }
            free(first); free(qb); free(fb); free(R); free(A); free(B);
            tg_context_free(ctx);
        }
    }
}

// Batch invariance: a column of a prompt-sized product (panels, 4 columns at
// a time, k in chunks) is bitwise the column computed alone (generation
// kernels), for every weight type with its own kernels, at every SIMD level.
static void test_batch_invariance(void) {
    static const enum tg_type types[] = { TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_Q8_0, TG_TYPE_Q4_0, TG_TYPE_IQ4_NL,
                                          TG_TYPE_Q5_0, TG_TYPE_Q4_1, TG_TYPE_Q5_1, TG_TYPE_Q2_K, TG_TYPE_Q3_K, TG_TYPE_Q4_K,
                                          TG_TYPE_Q5_K, TG_TYPE_Q6_K, TG_TYPE_IQ4_XS };
    const int64_t k = 2304, m = 19, n = 70;   // 72 blocks of 32: past one panel's k chunk
    const int top = tg_cpu_simd_level();
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        const enum tg_type wt = types[ti];
        struct tg_context * ctx = new_ctx();
        double * A = NULL, * B = NULL;
        struct tg_tensor * a = make_weights(ctx, wt, k, m, 1, 1, false, &A);
        struct tg_tensor * b = make_acts(ctx, TG_TYPE_F32, k, n, 1, 1, LAYOUT_CONTIG, &B);
        bool same = a && b;
        int bad_level = -1;
        for (int lv = 0; lv <= top && same; lv++) {
            tg_cpu_set_simd_cap(lv);
            float * all = compute(ctx, tg_mul_mat(ctx, a, b), 2);
            static const int64_t cols[] = { 0, 3, 5, 63, 64, 69 };
            for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]) && all && same; c++) {
                struct tg_tensor * bj = tg_view_2d(ctx, b, k, 1, b->nb[1], (size_t) cols[c] * b->nb[1]);
                float * one = compute(ctx, tg_mul_mat(ctx, a, bj), 2);
                same = one && memcmp(one, all + cols[c] * m, (size_t) m * sizeof(float)) == 0;
                if (!same) bad_level = lv;
                free(one);
            }
            same = same && all;
            free(all);
        }
        tg_cpu_set_simd_cap(-1);
        CHECK(same, "MUL_MAT w=%s k=%lld m=%lld: columns of n=%lld bitwise equal to n=1 at SIMD levels 0..%d%s",
              tg_type_name(wt), (long long) k, (long long) m, (long long) n, top, bad_level >= 0 ? " (differs at a level)" : "");
        if (bad_level >= 0) printf("     first differing level: %d\n", bad_level);
        free(A); free(B);
        tg_context_free(ctx);
    }
}

// Weights whose matrices interleave row by row (attention's kq over a K
// cache view: a head's row is a slice of a cache row), shared by 3 columns'
// matrices each (grouped-query attention), short rows (the several-row
// generation tiles) and long ones, one column and several: against the
// reference, 1 and 3 threads bitwise (the matrices are numbered first then,
// so threads take other units), every level against the scalar path. Also
// with a fourth dimension: 2 sets of heads (the kernel's matrices per unit are
// one set's), and one set broadcast over 2 of b's.
static void test_heads_interleaved(void) {
    const int top = tg_cpu_simd_level();
    for (int wi = 0; wi < 5; wi++)
    for (int ki = 0; ki < 2; ki++)
    for (int ni = 0; ni < 2; ni++)
    for (int di = 0; di < (ni == 0 ? 3 : 1); di++) {   // the fourth dimension in generation (one column)
        const enum tg_type wt = wtypes[wi];
        const int64_t k = ki == 0 ? 64 : (is_quant(wt) ? 320 : 259), n = ni == 0 ? 1 : 3;
        const int64_t q = di == 1 ? 2 : 1, s4 = di == 0 ? 1 : 2;
        struct mm_case c = { wt, TG_TYPE_F32, k, 29, n, 4, q, 12, s4, LAYOUT_CONTIG, W_HEADS };
        const char * dim3 = di == 0 ? "" : di == 1 ? ", 2 head sets" : ", one head set for 2";
        const int64_t nout = c.m * c.n * c.r * c.s;
        rng = 99;
        float * one = check_case(&c, 1, ki == 0 && ni == 0);
        rng = 99;
        float * three = check_case(&c, 3, false);
        CHECK(one && three && memcmp(one, three, (size_t) nout * sizeof(float)) == 0,
              "MUL_MAT w=%s k=%lld n=%lld heads interleaved%s: 1 and 3 threads give the same bits",
              tg_type_name(wt), (long long) k, (long long) n, dim3);
        float * res[TG_SIMD_AVX512VNNI + 1] = { NULL };
        for (int lv = 0; lv <= top; lv++) {
            tg_cpu_set_simd_cap(lv);
            rng = 99;
            res[lv] = check_case(&c, 2, false);
        }
        tg_cpu_set_simd_cap(-1);
        for (int lv = 1; lv <= top; lv++) {
            const bool bits = res[lv] && res[0] && memcmp(res[lv], res[0], (size_t) nout * sizeof(float)) == 0;
            const double e = res[lv] && res[0] ? nmse_f(res[lv], res[0], nout) : INFINITY;
            if (is_quant(wt))
                CHECK(bits, "MUL_MAT w=%s k=%lld n=%lld heads interleaved%s, level %d: the scalar path's bits",
                      tg_type_name(wt), (long long) k, (long long) n, dim3, lv);
            else
                CHECK(e <= 1e-10, "MUL_MAT w=%s k=%lld n=%lld heads interleaved%s, level %d vs scalar: nmse %.3g <= 1e-10",
                      tg_type_name(wt), (long long) k, (long long) n, dim3, lv, e);
        }
        for (int lv = 0; lv <= top; lv++) free(res[lv]);
        free(one);
        free(three);
    }
}

// Generation over matrices shared by several columns (grouped-query
// attention's kq: 2..8 query heads per K head) goes through the narrow
// kernels, a tile of rows against up to 4 columns with their sums reduced
// together; each column computed alone goes through the streaming kernels.
// Both must give the same bits, at every SIMD level, for any row count (the
// narrow kernels' last rows take smaller tiles) and with a tail (k % 16).
// The matrices interleave row by row (a K cache's heads), so the kernel
// takes every matrix (2 heads; 4 with br2 1 and 3) a tile of rows at a
// time; with one column a matrix too (br2 = 1: no grouped heads).
static void test_group_columns(void) {
    const int top = tg_cpu_simd_level();
    const enum tg_type wts[2] = { TG_TYPE_F32, TG_TYPE_F16 };
    const int64_t ks[3] = { 64, 100, 512 }, ms[5] = { 1, 7, 24, 29, 53 }, brs[6] = { 1, 2, 3, 4, 5, 8 };
    for (int lv = 0; lv <= top; lv++) {
        tg_cpu_set_simd_cap(lv);
        int n = 0, same = 0;
        for (int wi = 0; wi < 2; wi++)
        for (int ki = 0; ki < 3; ki++)
        for (int mi = 0; mi < 5; mi++)
        for (int bi = 0; bi < 6; bi++)
        for (int hi = 0; hi < (brs[bi] == 1 || brs[bi] == 3 ? 2 : 1); hi++) {   // 4 heads: br2 1 and 3
            const int64_t k = ks[ki], m = ms[mi], br2 = brs[bi], heads = hi ? 4 : 2;
            struct tg_context * ctx = new_ctx();
            double * A = NULL, * B = NULL;
            rng = 4242 + (uint64_t) (k * 131 + m * 7 + br2);
            struct tg_tensor * a = make_weights(ctx, wts[wi], k, m, heads, 1, W_HEADS, &A);
            struct tg_tensor * b = make_acts(ctx, TG_TYPE_F32, k, 1, heads * br2, 1, LAYOUT_CONTIG, &B);
            float * grouped = a && b ? compute(ctx, tg_mul_mat(ctx, a, b), 2) : NULL;
            bool ok = grouped != NULL;
            for (int64_t col = 0; ok && col < heads * br2; col++) {
                struct tg_tensor * ah = tg_view_2d(ctx, a, k, m, a->nb[1], (size_t) (col / br2) * a->nb[2]);
                struct tg_tensor * bc = tg_view_2d(ctx, b, k, 1, b->nb[1], (size_t) col * b->nb[2]);
                float * alone = ah && bc ? compute(ctx, tg_mul_mat(ctx, ah, bc), 1) : NULL;
                ok = alone && memcmp(alone, grouped + col * m, (size_t) m * sizeof(float)) == 0;
                free(alone);
            }
            n++;
            same += ok;
            if (!ok && n - same <= 5) printf("     differs: w=%s k=%lld m=%lld br2=%lld heads %lld level %d\n", tg_type_name(wts[wi]),
                            (long long) k, (long long) m, (long long) br2, (long long) heads, lv);
            free(grouped); free(A); free(B);
            tg_context_free(ctx);
        }
        CHECK(same == n, "MUL_MAT generation, 1..8 columns sharing a matrix, 2 or 4 matrices, level %d: the bits of each column "
              "computed alone (%d/%d cases)", lv, same, n);
    }
    tg_cpu_set_simd_cap(-1);
}

// The first SIMD-level query of a process comes from several threads at once
// (a pool's workers reaching their first kernel together, as in CI's TSan run):
// detection must happen once and every thread must see the same level and
// features. Under ThreadSanitizer a racy detection fails this test.
static pthread_barrier_t g_first_barrier;
static void * first_query(void * arg) {
    int * out = arg;
    pthread_barrier_wait(&g_first_barrier);
    out[0] = tg_cpu_simd_level();
    struct tg_cpu_features f = tg_cpu_features();
    out[1] = f.avx + 2 * f.avx2 + 4 * f.avx512f + 8 * f.avx512vnni;
    return NULL;
}

static bool first_detection_once(void) {
    enum { N = 16 };
    pthread_t th[N];
    int got[N][2];
    pthread_barrier_init(&g_first_barrier, NULL, N);
    for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, first_query, got[i]);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_first_barrier);
    bool same = true;
    for (int i = 1; i < N; i++) same = same && got[i][0] == got[0][0] && got[i][1] == got[0][1];
    return same;
}

// Detection happens once per process, so each try runs in a fresh child (a race
// shows in some tries, not all; ThreadSanitizer's exit code 66 fails the child).
static void test_first_detection(void) {
    enum { TRIES = 6 };
    int ok = 0, codes[TRIES];
    for (int t = 0; t < TRIES; t++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) _exit(first_detection_once() ? 0 : 1);
        int st = 0;
        codes[t] = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        ok += codes[t] == 0;
    }
    CHECK(ok == TRIES, "first SIMD detection from 16 threads at once, in %d fresh processes: one level and one "
          "feature set, no race (%d of %d clean; exit codes %d %d %d ...)", TRIES, ok, TRIES, codes[0], codes[1],
          codes[2]);
}

// ---- packed weights (tg_cpu_pack) -------------------------------------------
// Results with a packed copy: the same bits as from the weight itself for
// every shape, column count and thread count; the copy is what is read (a
// damaged copy changes the result); writes through the CPU buffer make it
// again; a weight moved elsewhere is read directly; bad calls are named
// errors. AVX-512 VNNI packs every type, AVX2 and AVX-512 Q4_0, the other
// levels nothing (they read the weight).
static bool packs_at(enum tg_type t, int lvl) {
    return lvl >= TG_SIMD_AVX512VNNI || (lvl >= TG_SIMD_AVX2 && t == TG_TYPE_Q4_0);
}

static void test_packed(int lvl) {
    tg_cpu_set_simd_cap(lvl);   // the level this run was started at (TG_SIMD), which the tests above reset
    const enum tg_type pt[] = { TG_TYPE_Q8_0, TG_TYPE_Q4_0, TG_TYPE_Q4_1, TG_TYPE_Q5_0, TG_TYPE_Q5_1, TG_TYPE_IQ4_NL, TG_TYPE_Q2_K, TG_TYPE_Q3_K, TG_TYPE_Q4_K,
                                TG_TYPE_Q5_K, TG_TYPE_Q6_K, TG_TYPE_IQ4_XS };
    const int n_pt = (int) (sizeof pt / sizeof pt[0]);
    // k, m, n, ne2 of the activations (broadcast over one weight matrix)
    static const int64_t shapes[][4] = { { 32, 16, 1, 1 }, { 64, 48, 1, 1 }, { 768, 96, 1, 1 }, { 256, 32, 5, 1 },
                                         { 96, 64, 67, 1 }, { 4128, 32, 3, 1 }, { 128, 16, 2, 3 }, { 160, 80, 4, 2 },
                                         { 512, 48, 2, 2 }, { 1024, 16, 9, 1 }, { 2816, 32, 1, 1 } };
    int cases = 0, same = 0, packed_here = 0, cases_q4 = 0, same_q4 = 0;
    for (int ti = 0; ti < n_pt; ti++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t k = shapes[si][0], m = shapes[si][1], n = shapes[si][2], r = shapes[si][3];
        if (k % tg_blck_size(pt[ti])) continue;
        struct tg_context * ctx = new_ctx();
        double * wref = NULL;
        struct tg_tensor * w = make_weights(ctx, pt[ti], k, m, 1, 1, W_DENSE, &wref);
        struct tg_tensor * b = tg_new_tensor_3d(ctx, TG_TYPE_F32, k, n, r);
        for (int64_t t = 0; b && t < k * n * r; t++) ((float *) b->data)[t] = frand();
        struct tg_tensor * d = w && b ? tg_mul_mat(ctx, w, b) : NULL;
        float * plain = d ? compute(ctx, d, 1) : NULL;
        const size_t psz = w ? tg_cpu_pack_size(w) : 0;
        if (!packs_at(pt[ti], lvl) || !plain) {
            CHECKQ(plain && psz == 0, "pack: w=%s %lldx%lld: no packed copy at level %d",
                   tg_type_name(pt[ti]), (long long) m, (long long) k, lvl);
            free(plain); free(wref); tg_context_free(ctx);
            continue;
        }
        void * mem = NULL;
        bool ok = psz > 0 && posix_memalign(&mem, 64, psz) == 0 && tg_cpu_pack(w, mem, psz) == TG_OK && tg_cpu_is_packed(w);
        packed_here += ok;
        for (int nth = 1; ok && nth <= 3; nth++) {
            float * got = compute(ctx, d, nth);
            cases++;
            cases_q4 += pt[ti] == TG_TYPE_Q4_0;
            if (got && memcmp(got, plain, (size_t) (m * n * r) * sizeof(float)) == 0) { same++; same_q4 += pt[ti] == TG_TYPE_Q4_0; }
            else printf("     pack: w=%s k=%lld m=%lld n=%lld r=%lld nth=%d: differs from the unpacked weight\n",
                        tg_type_name(pt[ti]), (long long) k, (long long) m, (long long) n, (long long) r, nth);
            free(got);
        }
        if (ok && si == 9) {   // a lower level reads the weight itself (same bits), and packs nothing new
            const int below = pt[ti] == TG_TYPE_Q4_0 ? TG_SIMD_AVX : TG_SIMD_AVX512;
            tg_cpu_set_simd_cap(below);
            float * low = compute(ctx, d, 2);
            CHECK(low && memcmp(low, plain, (size_t) (m * n) * sizeof(float)) == 0 && tg_cpu_pack_size(w) == 0,
                  "pack: w=%s at %s (below its packed kernels' level): the weight's own bits, no new copies",
                  tg_type_name(pt[ti]), tg_cpu_simd_name());
            tg_cpu_set_simd_cap(lvl);
            free(low);
        }
        if (ok && si == 8) {   // the copy is what is read: one damaged byte of it changes the result
            unsigned char * q = (unsigned char *) mem + psz - 1;
            *q ^= 0x11;
            float * got = compute(ctx, d, 2);
            CHECK(got && memcmp(got, plain, (size_t) (m * n) * sizeof(float)) != 0,
                  "pack: w=%s: the kernels read the packed copy (one byte of it changed, the result changed)",
                  tg_type_name(pt[ti]));
            *q ^= 0x11;
            free(got);
            // a weight moved elsewhere is read where it is now (the copy describes the old place)
            void * old = w->data;
            char * moved = malloc(tg_nbytes(w));
            memcpy(moved, old, tg_nbytes(w));
            moved[tg_nbytes(w) - 1] ^= 0x11;   // the last row differs
            w->data = moved;
            float * mv = compute(ctx, d, 2);
            CHECK(!tg_cpu_is_packed(w) && mv && memcmp(mv, plain, (size_t) (m * n) * sizeof(float)) != 0 &&
                  memcmp(mv, plain, (size_t) (m - 1) * sizeof(float)) == 0,
                  "pack: w=%s moved: not read packed, the result follows the moved bytes", tg_type_name(pt[ti]));
            w->data = old;
            free(mv);
            free(moved);
        }
        tg_cpu_unpack(w);
        CHECKQ(!tg_cpu_is_packed(w), "pack: tg_cpu_unpack detaches the copy");
        free(mem); free(plain); free(wref);
        tg_context_free(ctx);
    }
    if (lvl >= TG_SIMD_AVX2 && lvl < TG_SIMD_AVX512VNNI)
        CHECK(cases_q4 > 0 && same_q4 == cases_q4 && cases == cases_q4,
              "pack: at %s only Q4_0 packs, and gives the unpacked bits: %d of %d cases (16..96 rows, k 32..4128, "
              "1..67 columns, broadcast, 1..3 threads; %d weights packed)", tg_cpu_simd_name(), same_q4, cases_q4,
              packed_here);
    else if (lvl >= TG_SIMD_AVX512VNNI)
        CHECK(cases > 0 && same == cases, "pack: packed Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/IQ4_NL/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_XS weights give the unpacked bits: %d of %d cases "
              "(16..96 rows, k 32..4128, 1..67 columns, broadcast, 1..3 threads; %d weights packed)", same, cases, packed_here);
    else
        CHECK(true, "pack: level %d has no packed kernels: nothing packs", lvl);

    // writes through the CPU buffer make the copy again
    if (packs_at(TG_TYPE_Q4_0, lvl)) {
        struct tg_context_params cp = { 1u << 20, NULL, true };
        struct tg_context * mc = tg_context_new(cp);
        struct tg_tensor * w = tg_new_tensor_2d(mc, TG_TYPE_Q4_0, 64, 32);
        struct tg_buffer * buf = w ? tg_buft_alloc_buffer(tg_cpu_buffer_type(), tg_nbytes(w)) : NULL;
        bool ok = buf && tg_buffer_alloc_tensor(buf, w, tg_buffer_get_base(buf)) == TG_OK;
        struct tg_context * ctx = new_ctx();
        struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 2);
        for (int64_t t = 0; t < 128; t++) ((float *) b->data)[t] = frand();
        float row[64];
        char q[64 / 32 * sizeof(tg_block_q4_0)];
        for (int64_t i = 0; ok && i < 32; i++) {
            for (int l = 0; l < 64; l++) row[l] = frand();
            tg_type_traits(TG_TYPE_Q4_0)->from_float(row, q, 64);
            tg_backend_tensor_set(w, q, (size_t) i * sizeof q, sizeof q);
        }
        const size_t psz = ok ? tg_cpu_pack_size(w) : 0;
        void * mem = NULL;
        ok = ok && psz && posix_memalign(&mem, 64, psz) == 0 && tg_cpu_pack(w, mem, psz) == TG_OK;
        struct tg_tensor * d = ok ? tg_mul_mat(ctx, w, b) : NULL;
        for (int l = 0; l < 64; l++) row[l] = frand();
        tg_type_traits(TG_TYPE_Q4_0)->from_float(row, q, 64);
        if (ok) tg_backend_tensor_set(w, q, 7 * sizeof q, sizeof q);    // row 7 changes
        float * after = d ? compute(ctx, d, 2) : NULL;
        tg_cpu_unpack(w);
        float * direct = d ? compute(ctx, d, 2) : NULL;
        CHECK(ok && after && direct && memcmp(after, direct, 64 * sizeof(float)) == 0,
              "pack: tg_backend_tensor_set on a packed weight makes its copy again (row 7 rewritten: same bits as the weight)");
        free(after); free(direct); free(mem);
        tg_buffer_free(buf);
        tg_context_free(ctx);
        tg_context_free(mc);
    }

    // bad calls: named errors, nothing attached
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * f = tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 32);
    struct tg_tensor * odd = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 64, 24);
    tg_set_name(f, "wf32");
    tg_set_name(odd, "w24");
    char * mem = aligned_alloc(64, 1 << 16);
    CHECK(tg_cpu_pack(f, mem, 1 << 16) == TG_ERR_UNSUPPORTED && strstr(tg_last_error(), "'wf32'") &&
          strstr(tg_last_error(), "cannot be packed") && !f->extra,
          "pack: an f32 weight: \"%s\"", tg_last_error());
    CHECK(tg_cpu_pack(odd, mem, 1 << 16) == TG_ERR_UNSUPPORTED && strstr(tg_last_error(), "'w24'"),
          "pack: 24 rows (not a multiple of 16): \"%s\"", tg_last_error());
    CHECK(tg_cpu_pack(NULL, mem, 1) == TG_ERR_INVALID_ARG, "pack: a NULL weight: \"%s\"", tg_last_error());
    if (packs_at(TG_TYPE_Q4_0, lvl)) {
        struct tg_tensor * w = tg_new_tensor_2d(ctx, lvl >= TG_SIMD_AVX512VNNI ? TG_TYPE_Q8_0 : TG_TYPE_Q4_0, 64, 32);
        tg_set_name(w, "wq");
        CHECK(tg_cpu_pack(w, mem, 100) == TG_ERR_INVALID_ARG && strstr(tg_last_error(), "needs") && !w->extra,
              "pack: too little memory: \"%s\"", tg_last_error());
        CHECK(tg_cpu_pack(w, mem + 8, 1 << 15) == TG_ERR_INVALID_ARG && strstr(tg_last_error(), "aligned") && !w->extra,
              "pack: unaligned memory: \"%s\"", tg_last_error());
    }
    free(mem);
    tg_context_free(ctx);
}

// Generation products of the same activations next to each other in a
// graph (Q, K and V; gate and up) run as one list of row blocks
// (tg_cpu_mul_mat_group): every result the same bits as one product at a
// time, for any thread count, types mixed as a model mixes them, packed and
// file-layout weights side by side; products that cannot share the
// converted activations are not grouped.
static void test_grouped(int lvl) {
    tg_cpu_set_simd_cap(lvl);
    static const enum tg_type sets[][3] = {
        { TG_TYPE_Q4_0, TG_TYPE_Q4_0, TG_TYPE_Q4_0 }, { TG_TYPE_Q8_0, TG_TYPE_Q4_0, TG_TYPE_Q8_0 },
        { TG_TYPE_Q4_K, TG_TYPE_Q6_K, TG_TYPE_Q4_K }, { TG_TYPE_F32, TG_TYPE_F32, TG_TYPE_BF16 },
        { TG_TYPE_F16, TG_TYPE_F32, TG_TYPE_F16 }, { TG_TYPE_Q4_0, TG_TYPE_F32, TG_TYPE_Q4_0 },
    };
    const int64_t k = 256, rows[3] = { 96, 32, 48 };
    int cases = 0, same = 0, grouped_pairs = 0;
    for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
        struct tg_context * ctx = new_ctx();
        struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F32, k, 1);
        for (int64_t t = 0; b && t < k; t++) ((float *) b->data)[t] = frand();
        struct tg_tensor * d[3] = { NULL, NULL, NULL };
        void * mem = NULL;
        for (int i = 0; i < 3 && b; i++) {
            double * wref = NULL;
            struct tg_tensor * w = make_weights(ctx, sets[si][i], k, rows[i], 1, 1, W_DENSE, &wref);
            free(wref);
            // the first weight of a Q4_0 set packed where this level packs Q4_0
            const size_t psz = i == 0 && w ? tg_cpu_pack_size(w) : 0;
            if (psz && posix_memalign(&mem, 64, psz) == 0 && tg_cpu_pack(w, mem, psz) != TG_OK) { free(mem); mem = NULL; }
            d[i] = w ? tg_mul_mat(ctx, w, b) : NULL;
        }
        struct tg_graph * g = d[0] && d[1] && d[2] ? tg_graph_new(ctx, 16) : NULL;
        for (int i = 0; g && i < 3; i++) if (tg_graph_build_forward(g, d[i]) != TG_OK) g = NULL;
        for (int i = 0; g && i < 2; i++) grouped_pairs += tg_cpu_mul_mat_groupable(d[i], d[i + 1]);
        float * ref[3] = { NULL, NULL, NULL };
        tg_cpu_set_mm_grouping(false);
        bool ok = g && tg_cpu_compute(g, 2) == TG_OK;
        for (int i = 0; ok && i < 3; i++) {
            ref[i] = malloc((size_t) rows[i] * sizeof(float));
            memcpy(ref[i], d[i]->data, (size_t) rows[i] * sizeof(float));
        }
        tg_cpu_set_mm_grouping(true);
        for (int nth = 1; ok && nth <= 3; nth++) {
            for (int i = 0; i < 3; i++) memset(d[i]->data, 0xff, (size_t) rows[i] * sizeof(float));
            bool eq = tg_cpu_compute(g, nth) == TG_OK;
            for (int i = 0; eq && i < 3; i++) eq = memcmp(ref[i], d[i]->data, (size_t) rows[i] * sizeof(float)) == 0;
            cases++;
            same += eq;
            if (!eq) printf("     grouped: %s,%s,%s nth=%d: differs from one product at a time\n", tg_type_name(sets[si][0]),
                            tg_type_name(sets[si][1]), tg_type_name(sets[si][2]), nth);
        }
        for (int i = 0; i < 3; i++) free(ref[i]);
        tg_context_free(ctx);
        free(mem);
    }
    // Q4_0,Q4_0,Q4_0 / Q8_0,Q4_0,Q8_0 / Q4_K,Q6_K,Q4_K / F32,F32,BF16: 2 pairs each; F16,F32 and Q4_0,F32 none
    CHECK(cases == 18 && same == cases && grouped_pairs == 8,
          "grouped generation products (Q4_0 x3, Q8_0+Q4_0, Q4_K+Q6_K, F32+BF16, a packed weight first where %s packs): "
          "the bits of one product at a time for 1..3 threads (%d of %d), %d of 8 neighbours groupable "
          "(not F16 beside F32, nor Q4_0 beside F32)", tg_cpu_simd_name(), same, cases, grouped_pairs);
    // Q, a rope-like node on Q's result, then K: K joins Q across it; a node
    // between that writes the activations K reads keeps K where it is
    for (int hazard = 0; hazard < 2; hazard++) {
        struct tg_context * c2 = new_ctx();
        double * wref = NULL;
        struct tg_tensor * w0 = make_weights(c2, TG_TYPE_Q4_0, k, 64, 1, 1, W_DENSE, &wref);
        free(wref); wref = NULL;
        struct tg_tensor * w1 = make_weights(c2, TG_TYPE_Q4_0, k, 32, 1, 1, W_DENSE, &wref);
        free(wref);
        struct tg_tensor * b = tg_new_tensor_2d(c2, TG_TYPE_F32, k, 1), * c = tg_new_tensor_2d(c2, TG_TYPE_F32, k, 1);
        for (int64_t t = 0; b && c && t < k; t++) { ((float *) b->data)[t] = frand(); ((float *) c->data)[t] = frand(); }
        struct tg_tensor * d0 = tg_mul_mat(c2, w0, b);
        struct tg_tensor * x = hazard ? tg_cpy(c2, c, b) : tg_scale(c2, d0, 0.5f);
        struct tg_tensor * d1 = tg_mul_mat(c2, w1, b);
        struct tg_graph * g = tg_graph_new(c2, 16);
        bool ok = g && d0 && x && d1 && tg_graph_build_forward(g, d0) == TG_OK && tg_graph_build_forward(g, x) == TG_OK &&
                  tg_graph_build_forward(g, d1) == TG_OK;
        float ref[32], got[32];
        const float * bsave = NULL;
        float b0[256];
        if (ok) { memcpy(b0, b->data, sizeof b0); bsave = b0; }
        tg_cpu_set_mm_grouping(false);
        ok = ok && tg_cpu_compute(g, 2) == TG_OK;
        if (ok) memcpy(ref, d1->data, sizeof ref);
        if (ok) memcpy(b->data, bsave, sizeof b0);   // the hazard's copy wrote over b
        tg_cpu_set_mm_grouping(true);
        const uint64_t before = tg_cpu_mm_grouped_count();
        ok = ok && tg_cpu_compute(g, 2) == TG_OK;
        const uint64_t grouped = tg_cpu_mm_grouped_count() - before;
        if (ok) memcpy(got, d1->data, sizeof got);
        CHECK(ok && memcmp(ref, got, sizeof ref) == 0 && grouped == (hazard ? 0u : 2u),
              "grouped: %s between two products of the same activations: %s (%llu products grouped), "
              "the second's bits as one at a time", hazard ? "a copy into the activations" : "a node on the first's result",
              hazard ? "not grouped across it" : "grouped across it", (unsigned long long) grouped);
        tg_context_free(c2);
    }
    struct tg_context * ctx = new_ctx();
    struct tg_tensor * w = tg_new_tensor_2d(ctx, TG_TYPE_Q4_0, 64, 32);
    struct tg_tensor * b1 = tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 1), * b2 = tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 1);
    struct tg_tensor * b4 = tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 4);
    CHECK(!tg_cpu_mul_mat_groupable(tg_mul_mat(ctx, w, b1), tg_mul_mat(ctx, w, b2)) &&
          !tg_cpu_mul_mat_groupable(tg_mul_mat(ctx, w, b4), tg_mul_mat(ctx, w, b4)) &&
          tg_cpu_mul_mat_groupable(tg_mul_mat(ctx, w, b1), tg_mul_mat(ctx, w, b1)),
          "grouped: not products of different activations, nor of several columns (prompts)");
    tg_context_free(ctx);
}

int main(void) {
    const int start_level = tg_cpu_simd_level();
    test_first_detection();
    tg_cpu_set_task_grain(1);   // small shapes still use every thread asked for
    test_supported();
    test_types_and_layouts();
    test_random_sweep();
    test_quant_end_to_end();
    test_levels_and_threads();
    test_heads_interleaved();
    test_group_columns();
    test_f32_batch_invariance();
    test_dots_match_tiles();
    test_batch_invariance();
    test_quantize_q8();
    test_out_prod();
    test_other_quant_types();
    test_packed(start_level);
    test_grouped(start_level);
    tg_cpu_set_simd_cap(-1);
    return tg_check_finish("test_mul_mat");
}
