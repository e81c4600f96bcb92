// matmul.c - MUL_MAT and OUT_PROD on the CPU: work sizes, support checks and
// the two-phase drivers (convert activations, barrier, blocks of output).
//
// MUL_MAT: dst F32 [m,n,r,s] = a [k,m,p,q] x b [k,n,r,s]; dst[i,j] = dot(a row
// i, b row j), a's matrix broadcast over dims 2/3 (i2 / (r/p), i3 / (s/q)).
// Phase 1 converts b's rows into wdata as dense rows of the dot type: f32
// for f32/bf16 weights, Q8_0 blocks for quantized weights, and for f16
// weights the f16 values (the f16 dot product's rounding) held as f32 so that
// the kernels convert only the weights; b's rows are used in place when they
// already are that. Phase 2 cuts every dst matrix into blocks of RB rows x CB
// columns, which the threads take in runs as they come free (tg_cpu_claim),
// and runs the block kernel of the SIMD level. Each element is one dot
// product with a fixed order (vec-impl.h), whatever the cut and whichever
// thread computes it: results do not depend on the thread count.
#include "vec-impl.h"

#include <string.h>

enum { TG_MM_RB = 24, TG_MM_CB = 64 };  // rows of a, columns of b per block
enum { TG_MM_RB_PACKED = 32 };          // rows per block of a packed weight (whole groups of 16)
// b with at most this many rows (generation) is converted by every thread
// into its own area: a few microseconds of duplicated work instead of a barrier.
enum { TG_MM_PRIVATE_ROWS = 4 };
// Generation: the percentage of a product's units split evenly between the
// threads before the rest is claimed as they come free (tg_cpu_mul_mat).
enum { TG_MM_GEN_FIXED = 90 };

// ---- MUL_MAT -------------------------------------------------------------------

struct mm_plan {
    enum tg_mm_kind kind;
    enum tg_type    vec_type;   // type of the activation rows the kernel reads
    bool            convert;    // b must be converted into wdata first
    bool            priv;       // small b: every thread converts all of it (no barrier)
    size_t          row_bytes;  // bytes of one converted b row
    size_t          rows_bytes; // bytes of all converted rows (64-aligned), and their packed sums
    size_t          sums_off;   // a packed weight: where the rows' sums start (tg_mm_pack_ysums), else 0
    const char *    packed;     // a's packed copy (tg_mm_packed), or NULL
    size_t          gstride;    // its bytes per group of 16 rows
    enum tg_type    a_type;
    int64_t         k;
};

static bool mm_float_src(enum tg_type t) {
    return t == TG_TYPE_F32 || t == TG_TYPE_F16 || t == TG_TYPE_BF16;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t) 63; }

// Fills *pl for dst; false when the combination is not supported.
static bool mm_make_plan(const struct tg_tensor * dst, int nth, struct mm_plan * pl) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    if (!a || !b || dst->type != TG_TYPE_F32 || !mm_float_src(b->type)) return false;
    switch (a->type) {
    case TG_TYPE_F32:  pl->kind = TG_MM_F32_F32;  pl->vec_type = TG_TYPE_F32;  break;
    case TG_TYPE_F16:  pl->kind = TG_MM_F16_F32;  pl->vec_type = TG_TYPE_F32;  break;
    case TG_TYPE_BF16: pl->kind = TG_MM_BF16_F32; pl->vec_type = TG_TYPE_F32;  break;
    case TG_TYPE_Q8_0: pl->kind = TG_MM_Q8_Q8;    pl->vec_type = TG_TYPE_Q8_0; break;
    case TG_TYPE_Q4_0: pl->kind = TG_MM_Q4_Q8;    pl->vec_type = TG_TYPE_Q8_0; break;
    case TG_TYPE_IQ4_NL: pl->kind = TG_MM_IQ4NL_Q8; pl->vec_type = TG_TYPE_Q8_0; break;
    case TG_TYPE_Q5_0: pl->kind = TG_MM_Q5_0_Q8; pl->vec_type = TG_TYPE_Q8_0; break;
    default:
        if (tg_mm_kquant_supported(a->type)) {
            pl->kind = TG_MM_KQUANT;
            pl->vec_type = TG_TYPE_Q8_K;
            break;
        }
        if (tg_mm_legacy_supported(a->type)) {
            pl->kind = TG_MM_LEGACY;
            pl->vec_type = tg_type_vec_dot_type(a->type);
            break;
        }
        if (!tg_vec_dot_generic_supported(a->type)) return false;
        pl->kind = TG_MM_GENERIC;
        pl->vec_type = tg_type_vec_dot_type(a->type);
        break;
    }
    const int64_t k = a->ne[0];
    if (k != b->ne[0] || k <= 0 || k % tg_blck_size(a->type) != 0 || k % tg_blck_size(pl->vec_type) != 0) return false;
    if (dst->ne[0] != a->ne[1] || dst->ne[1] != b->ne[1] ||
        dst->ne[2] != b->ne[2] || dst->ne[3] != b->ne[3]) return false;
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) return false;
    if (a->nb[0] != tg_type_size(a->type) || dst->nb[0] != sizeof(float) ||
        dst->nb[1] % sizeof(float) != 0) return false;
    pl->k = k;
    pl->a_type = a->type;
    pl->convert = !(b->type == pl->vec_type && b->nb[0] == tg_type_size(b->type)) ||
                  (a->type == TG_TYPE_F16 && b->type == TG_TYPE_F32);
    pl->row_bytes = tg_row_size(pl->vec_type, k);
    const int64_t nrows = b->ne[1] * b->ne[2] * b->ne[3];
    pl->rows_bytes = pl->convert ? align64(pl->row_bytes * (size_t) nrows) : 0;
    // a packed weight (pack.c): the converted rows carry their per-block sums
    // after them (read only when the level has the packed kernels)
    pl->packed = pl->convert && (pl->vec_type == TG_TYPE_Q8_0 || pl->vec_type == TG_TYPE_Q8_1 || pl->vec_type == TG_TYPE_Q8_K)
               ? tg_mm_packed(a, &pl->gstride) : NULL;
    pl->sums_off = 0;
    if (pl->packed && pl->vec_type == TG_TYPE_Q8_0) {
        pl->sums_off = pl->rows_bytes;
        pl->rows_bytes += align64((size_t) nrows * (size_t) (k / TG_QK8_0) * 8);
    }
    pl->priv = pl->convert && nth > 1 && nrows <= TG_MM_PRIVATE_ROWS;
    return true;
}

bool tg_cpu_mul_mat_supported(const struct tg_tensor * dst) {
    struct mm_plan pl;
    return dst && dst->op == TG_OP_MUL_MAT && mm_make_plan(dst, 1, &pl);
}

size_t tg_cpu_mul_mat_work_size(const struct tg_tensor * dst, int nth) {
    struct mm_plan pl;
    if (nth < 1) nth = 1;
    if (!dst || !mm_make_plan(dst, nth, &pl) || !pl.convert) return 0;
    size_t tmp = align64((size_t) pl.k * sizeof(float));
    return (pl.priv ? (size_t) nth : 1) * pl.rows_bytes + (size_t) nth * tmp;
}

// Element i of a row of a float type with element stride st, as f32.
static inline float mm_load(enum tg_type t, const char * row, size_t st, int64_t i) {
    const char * p = row + i * st;
    switch (t) {
    case TG_TYPE_F16:  return tg_fp16_to_fp32(*(const tg_fp16_t *) p);
    case TG_TYPE_BF16: return tg_bf16_to_fp32(*(const tg_bf16_t *) p);
    default:           return *(const float *) p;
    }
}

// Row of b (k elements, element stride st) as f32 into out.
static void mm_row_to_f32(const struct tg_tensor * b, const char * row, int64_t k, float * out) {
    const size_t st = b->nb[0];
    if (st == tg_type_size(b->type)) {
        switch (b->type) {
        case TG_TYPE_F32:  memcpy(out, row, (size_t) k * sizeof(float)); return;
        case TG_TYPE_F16:  tg_fp16_to_fp32_row((const tg_fp16_t *) row, out, k); return;
        case TG_TYPE_BF16: tg_bf16_to_fp32_row((const tg_bf16_t *) row, out, k); return;
        default: break;
        }
    }
    for (int64_t i = 0; i < k; i++) out[i] = mm_load(b->type, row, st, i);
}

// Phase 1: b's rows [t0, t1) converted into rows (dense, row_bytes apart),
// through the f32 scratch row tmp.
static void mm_convert_b(const struct tg_tensor * b, const struct mm_plan * pl, int64_t t0, int64_t t1,
                         char * rows, float * tmp) {
    const int level = tg_cpu_simd_level();
    const int64_t n = b->ne[1], r = b->ne[2], k = pl->k;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t j = t % n, i2 = (t / n) % r, i3 = t / (n * r);
        const char * src = (const char *) b->data + j * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
        char * out = rows + (size_t) t * pl->row_bytes;
        switch (pl->vec_type) {
        case TG_TYPE_F32:
            mm_row_to_f32(b, src, k, (float *) out);
            if (pl->kind == TG_MM_F16_F32 && b->type != TG_TYPE_F16) {  // round to f16
                tg_fp32_to_fp16_row((const float *) out, (tg_fp16_t *) tmp, k);
                tg_fp16_to_fp32_row((const tg_fp16_t *) tmp, (float *) out, k);
            }
            break;
        case TG_TYPE_Q8_1:
            mm_row_to_f32(b, src, k, tmp);
            tg_quantize_row_q8_1(tmp, (tg_block_q8_1 *) out, k);
            break;
        case TG_TYPE_Q8_K:
            mm_row_to_f32(b, src, k, tmp);
            tg_mm_quantize_row_q8_K(level, tmp, (tg_block_q8_K *) out, k);
            break;
        default:  // Q8_0
            mm_row_to_f32(b, src, k, tmp);
            tg_mm_quantize_row_q8_0(level, tmp, (tg_block_q8_0 *) out, k);
            if (pl->sums_off) {
                const int64_t nb = k / TG_QK8_0;
                int32_t * ys = (int32_t *) (rows + pl->sums_off) + t * 2 * nb;
                tg_mm_pack_ysums(pl->a_type, (const tg_block_q8_0 *) out, nb,
                                 ys, (float *) (ys + nb));
            }
            break;
        }
    }
}

// Phase 2's work units: blocks of TG_MM_RB rows x TG_MM_CB columns of every
// dst matrix, numbered rows first.
struct mm_units {
    const struct tg_tensor * dst;
    const struct mm_plan *   pl;
    tg_mm_block_fn           fn;
    const char *             rows;   // the converted b rows
    int64_t                  nrb, ncb;
    bool                     mat_inner;  // matrices numbered fastest (see below)
    bool                     group;      // generation's shared matrices as one unit's columns (see below)
    size_t                   pf_row;     // mat_inner generation: bytes of a row over every matrix (0: no prefetch)
    int64_t                  rb;         // rows per block: TG_MM_RB, or TG_MM_RB_PACKED when packed
    bool                     packed;     // fn reads a's packed copy (pl->packed)
    bool                     multi;      // group && mat_inner: a unit is a row block of every matrix (no pf_row)
};

static void mm_run_units(const struct mm_units * U, int64_t u0, int64_t u1) {
    const struct tg_tensor * dst = U->dst, * a = dst->src[0], * b = dst->src[1];
    const int64_t m = dst->ne[0], n = dst->ne[1], r = dst->ne[2], s = dst->ne[3];
    const int64_t br2 = r / a->ne[2], br3 = s / a->ne[3], nrb = U->nrb, ncb = U->ncb;
    // U->group: r / br2 matrices of a (times s), each with its br2 columns
    const int64_t nm = U->multi ? s : U->group ? (r / br2) * s : r * s;
    for (int64_t u = u0; u < u1; u++) {
        int64_t mat, jb, ib;
        if (U->multi) {   // row block ib of matrix set i3: the first matrix, the kernel takes the others
            mat = (u / nrb) * (r / br2); ib = u % nrb; jb = 0;
        } else if (U->mat_inner) {
            mat = u % nm; ib = (u / nm) % nrb; jb = u / (nm * nrb);
        } else {
            mat = u / (nrb * ncb); jb = (u / nrb) % ncb; ib = u % nrb;
        }
        if (U->pf_row) {   // a share of the next row block's rows, whole, into L2 (see tg_cpu_mul_mat)
            const int64_t x0 = (ib + 1) * TG_MM_RB + mat * TG_MM_RB / nm, x1 = (ib + 1) * TG_MM_RB + (mat + 1) * TG_MM_RB / nm;
            for (int64_t x = x0; x < x1 && x < m; x++)
                for (size_t o = 0; o < U->pf_row; o += 64) __builtin_prefetch((const char *) a->data + x * a->nb[1] + o, 0, 2);
        }
        if (U->group) {   // the first of the br2 matrices of b that share a's matrix
            const int64_t ia = mat % (r / br2);
            mat = (mat / (r / br2)) * r + ia * br2;
        }
        const int64_t i2 = mat % r, i3 = mat / r;
        const int64_t i0 = ib * U->rb, j0 = jb * TG_MM_CB;
        struct tg_mm_args g;
        g.type = a->type;
        g.k = U->pl->k;
        if (U->packed) {   // a 2-D packed weight: groups of 16 rows, the columns' sums
            const size_t lys = (size_t) (g.k / TG_QK8_0) * 8;
            g.a = U->pl->packed + (size_t) (i0 / 16) * U->pl->gstride;
            g.lda = U->pl->gstride;
            g.ys = U->pl->sums_off ? U->rows + U->pl->sums_off + (size_t) ((i3 * r + i2) * n + j0) * lys : NULL;
            g.ldys = lys;
        } else {
            g.a = (const char *) a->data + i0 * a->nb[1] + (i2 / br2) * a->nb[2] + (i3 / br3) * a->nb[3];
            g.lda = a->nb[1];
            g.ys = NULL;
            g.ldys = 0;
        }
        if (U->pl->convert) {
            g.b = U->rows + (size_t) ((i3 * r + i2) * n + j0) * U->pl->row_bytes;
            g.ldb = U->pl->row_bytes;
        } else {
            g.b = (const char *) b->data + j0 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
            g.ldb = b->nb[1];
        }
        g.c = (float *) ((char *) dst->data + j0 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]) + i0;
        g.ldc = dst->nb[1] / sizeof(float);
        g.ni = m - i0 < U->rb ? m - i0 : U->rb;
        g.nj = n - j0 < TG_MM_CB ? n - j0 : TG_MM_CB;
        if (U->group) {   // n == 1: column c is matrix i2 + c
            g.ldb = U->pl->convert ? U->pl->row_bytes : b->nb[2];
            g.ldc = dst->nb[2] / sizeof(float);
            g.nj = br2;
        }
        g.nmat = 0;
        if (U->multi) {   // the a->ne[2] matrices of a, each with its br2 columns
            g.nmat = a->ne[2];
            g.mat_a = a->nb[2];
            g.mat_b = (size_t) br2 * g.ldb;
            g.mat_c = (size_t) br2 * g.ldc;
        }
        U->fn(&g);
    }
}

// Phase 2's units of dst (a's blocks against the converted b rows at
// `rows`, or b itself) into *U; returns their number.
static int64_t mm_setup_units(const struct tg_tensor * dst, const struct mm_plan * plp, const char * rows,
                              struct mm_units * U) {
    const struct tg_tensor * a = dst->src[0];
    const struct mm_plan pl = *plp;
    const int level = tg_cpu_simd_level();
    // a packed copy of a (pack.c) at a level with its kernels: whole groups of 16 rows a block
    const tg_mm_block_fn pfn = pl.packed ? tg_mm_packed_block(a->type, level) : NULL;
    const tg_mm_block_fn fn = pfn ? pfn : pl.kind == TG_MM_GENERIC ? tg_mm_block_generic
                            : pl.kind == TG_MM_KQUANT ? tg_mm_kquant_block(a->type, level)
                            : pl.kind == TG_MM_LEGACY ? tg_mm_legacy_block(a->type, level)
                            : pl.kind >= TG_MM_Q8_Q8 ? tg_mm_quant_block(pl.kind, level)
                                                     : tg_mm_float_block(pl.kind, level);
    const int64_t m = dst->ne[0], n = dst->ne[1], r = dst->ne[2], s = dst->ne[3];
    const int64_t rb = pfn ? TG_MM_RB_PACKED : TG_MM_RB;
    const int64_t nrb = (m + rb - 1) / rb, ncb = (n + TG_MM_CB - 1) / TG_MM_CB;

    // a's matrices interleaved row by row (attention's heads in a K/V cache
    // view: a head's row is a slice of a cache row): the same row block of
    // every matrix in turn, so a run of units reads whole cache rows, not a
    // slice of each of them per pass. The bits do not depend on the order.
    const bool mat_inner = a->ne[2] * a->ne[3] > 1 && a->nb[2] < a->nb[1];
    // Generation with a's matrices shared by several of b's (grouped-query
    // attention: 3 query heads per K/V head): those columns in one unit,
    // through the narrow kernels (a's rows read once for all of them, not
    // once per query head). Float kinds; every element the same bits.
    const int64_t br2 = r / a->ne[2];
    const bool narrow_ok = n == 1 && br2 <= 8 && s == a->ne[3] &&
                           (pl.kind == TG_MM_F32_F32 || pl.kind == TG_MM_F16_F32) && dst->nb[2] % sizeof(float) == 0;
    // And where a's matrices interleave row by row (a K cache's heads), a
    // unit is a row block of every matrix, the narrow kernel taking a tile of
    // rows of each matrix in turn: it reads whole cache rows, front to back,
    // where one matrix at a time read a head's slice of each row, 512 bytes
    // apart, and waited on memory (bench_mul_mat -g, kq per layer from DRAM,
    // 30 alternating graphs in one process, medians: at 1024 cells 72.4 ->
    // 51.4 us, at 4096 252 -> 176; 100m Q4_0 at depth 1024, fa off, 300
    // alternating tokens: 4.53 -> 4.32 ms a token, at 4096 8.00 -> 7.50). The
    // units' own prefetch of the next row block did not pay there (1.2-1.7%
    // slower) and is off. Also without grouped heads (br2 = 1).
    const bool multi = narrow_ok && mat_inner;
    const bool group = narrow_ok && (br2 > 1 || multi);
    const int64_t nu = (multi ? s : group ? (r / br2) * s : r * s) * nrb * ncb;
    *U = (struct mm_units) { dst, plp, group ? tg_mm_float_block_narrow(pl.kind, level) : fn, rows, nrb, ncb,
                             mat_inner, group, 0, rb, pfn != NULL, multi };
    // Generation's kq over a K cache the narrow kernels do not take (a
    // quantized one; a's matrices side by side in its rows): each unit
    // prefetches a share of the next row block's rows, every matrix's bytes
    // of them, into L2; the strided reads of a head's slices
    // otherwise waited on memory (bench_mul_mat -g, kq over 4096 cells, 4
    // alternating rounds, medians: 229 -> 100 us a layer; 100m Q4_0 tg128 at
    // depth 1900, -fa off: 223 -> 274 tok/s).
    if (mat_inner && n == 1 && s == 1 && pl.kind != TG_MM_GENERIC) {
        const size_t row = (size_t) (a->ne[2] - 1) * a->nb[2] + (size_t) tg_row_size(a->type, a->ne[0]);
        if (row <= a->nb[1] && !multi) U->pf_row = row;
    }
    return nu;
}

// Phase 1 for dst's plan: b's rows converted where the kernels read them
// (the returned pointer; each thread its own copy for a small b), or wdata
// untouched when b is read in place.
static char * mm_convert(const struct tg_cpu_params * p, const struct tg_tensor * dst, const struct mm_plan * pl) {
    const struct tg_tensor * b = dst->src[1];
    char * rows = (char *) p->wdata;
    if (!pl->convert) return rows;
    const int64_t nrows = b->ne[1] * b->ne[2] * b->ne[3];
    float * tmp = (float *) (rows + (pl->priv ? (size_t) p->nth : 1) * pl->rows_bytes +
                             (size_t) p->ith * align64((size_t) pl->k * sizeof(float)));
    if (pl->priv) {
        rows += (size_t) p->ith * pl->rows_bytes;
        mm_convert_b(b, pl, 0, nrows, rows, tmp);
    } else {
        int64_t t0, t1;
        tg_cpu_range(nrows, p->ith, p->nth, &t0, &t1);
        mm_convert_b(b, pl, t0, t1, rows, tmp);
        tg_cpu_barrier(p);
    }
    return rows;
}

// The units of one or more products, run as one list (each product's in turn).
struct mm_set {
    struct mm_units U[TG_CPU_MM_GROUP_MAX];
    int64_t         nu[TG_CPU_MM_GROUP_MAX];
    int             n;
    int64_t         total;
};

static void mm_run_set(const struct mm_set * S, int64_t u0, int64_t u1) {
    int64_t base = 0;
    for (int i = 0; i < S->n && u0 < u1; base += S->nu[i], i++) {
        const int64_t end = base + S->nu[i];
        if (u0 >= end) continue;
        const int64_t hi = u1 < end ? u1 : end;
        mm_run_units(&S->U[i], u0 - base, hi - base);
        u0 = hi;
    }
}

// Phase 2: the units split between the threads (gen: one column of b).
static void mm_schedule(const struct tg_cpu_params * p, const struct mm_set * S, bool gen) {
    const int64_t nu = S->total;
    if (p->nth > 1 && gen) {
        // generation: each thread first takes its own contiguous share of
        // the first 90% of the units (one stream of a's rows, no shared
        // counter), then the rest in runs as threads come free, so a thread
        // slowed down (another process, a busy core) does less of it. 100m
        // models, 2 threads, 300-400 alternating tokens in one process,
        // against runs of nu / 4 claimed from the start: Q4_0 +1.2-3.2%
        // (depth 64 and 1024), Q4_K_M +1.6% (depth 1024, fa on), Q8_0 +4.6%,
        // F32 +5.4%; runs of nu / 16 from the start were 8.6% slower, the
        // tail in 1-unit claims 2.6-3.9% slower, static halves +0.2-4.0%.
        const int64_t fixed = nu * TG_MM_GEN_FIXED / 100 / p->nth * p->nth;
        int64_t f0, f1;
        tg_cpu_range(fixed, p->ith, p->nth, &f0, &f1);
        mm_run_set(S, f0, f1);
        const int64_t rest = nu - fixed, step = rest / (2 * p->nth) > 1 ? rest / (2 * p->nth) : 1;
        for (int64_t u0 = fixed + tg_cpu_claim(p, step); u0 < nu; u0 = fixed + tg_cpu_claim(p, step))
            mm_run_set(S, u0, u0 + step < nu ? u0 + step : nu);
    } else if (p->nth > 1) {
        // taken in runs of units as threads come free (about eight claims a
        // thread): a thread slowed down does less of the work.
        const int64_t runs = 8 * (int64_t) p->nth;
        const int64_t step = nu / runs > 1 ? nu / runs : 1;
        for (int64_t u0 = tg_cpu_claim(p, step); u0 < nu; u0 = tg_cpu_claim(p, step))
            mm_run_set(S, u0, u0 + step < nu ? u0 + step : nu);
    } else {
        mm_run_set(S, 0, nu);
    }
}

void tg_cpu_mul_mat(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    struct mm_plan pl;
    if (!mm_make_plan(dst, p->nth, &pl)) return;  // the dispatcher checks support first
    const char * rows = mm_convert(p, dst, &pl);
    struct mm_set S = { .n = 1 };
    S.total = S.nu[0] = mm_setup_units(dst, &pl, rows, &S.U[0]);
    mm_schedule(p, &S, dst->ne[1] == 1);
}

// Products of one column of the same activations (generation's Q, K and V
// projections; the FFN's gate and up) whose weights' kernels read the same
// converted rows: see tg_cpu_mul_mat_group.
bool tg_cpu_mul_mat_groupable(const struct tg_tensor * d0, const struct tg_tensor * d1) {
    struct mm_plan p0, p1;
    if (!d0 || !d1 || d0->op != TG_OP_MUL_MAT || d1->op != TG_OP_MUL_MAT || d0->src[1] != d1->src[1]) return false;
    for (int i = 0; i < 2; i++) {
        const struct tg_tensor * d = i ? d1 : d0;
        if (d->ne[1] != 1 || d->ne[2] != 1 || d->ne[3] != 1 || d->src[0]->ne[2] != 1 || d->src[0]->ne[3] != 1) return false;
        if (d == d0->src[0] || d == d1->src[0]) return false;   // one reads the other
    }
    if (!mm_make_plan(d0, 2, &p0) || !mm_make_plan(d1, 2, &p1)) return false;
    // the same converted rows: the same conversion (f16 weights round b to f16)
    return p0.kind != TG_MM_GENERIC && p1.kind != TG_MM_GENERIC && p0.convert == p1.convert &&
           p0.vec_type == p1.vec_type && p0.k == p1.k && (p0.kind == TG_MM_F16_F32) == (p1.kind == TG_MM_F16_F32);
}

// n (2..TG_CPU_MM_GROUP_MAX) groupable products as one node's work: b converted
// once, the products' row blocks one list that the threads split as one
// product's (a longer stream of weights a thread, one barrier). Every
// element is the same dot product as tg_cpu_mul_mat computes (the same
// kernels, the same rows): the same bits.
void tg_cpu_mul_mat_group(const struct tg_cpu_params * p, struct tg_tensor * const * dsts, int n) {
    struct mm_plan pl[TG_CPU_MM_GROUP_MAX];
    if (n < 1 || n > TG_CPU_MM_GROUP_MAX) return;
    int conv = 0;   // the plan whose conversion serves all: one with packed sums, if any
    for (int i = 0; i < n; i++) {
        if (!mm_make_plan(dsts[i], p->nth, &pl[i])) return;
        if (pl[i].rows_bytes > pl[conv].rows_bytes) conv = i;
    }
    const char * rows = mm_convert(p, dsts[conv], &pl[conv]);
    struct mm_set S = { .n = n };
    for (int i = 0; i < n; i++) S.total += S.nu[i] = mm_setup_units(dsts[i], &pl[i], rows, &S.U[i]);
    mm_schedule(p, &S, true);
}

// ---- OUT_PROD --------------------------------------------------------------------
// dst F32 [m,n,r,s] = a [m,k,p,q] (f32, f16, bf16, q8_0, q4_0) x b [n,k,r,s] (f32):
// dst[i,j] = sum over l = 0..k-1, in that order, of a[i,l] * b[j,l]. Phase 1
// converts a's rows (length m) to dense f32 rows in wdata unless they already
// are; phase 2 gives each thread whole groups of 4 dst columns (per matrix),
// whose b values it gathers into its own scratch first.

static bool op_a_dense(const struct tg_tensor * a) {
    return a->type == TG_TYPE_F32 && a->nb[0] == sizeof(float) && a->nb[1] % sizeof(float) == 0;
}

static bool op_check(const struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    if (!a || !b || dst->type != TG_TYPE_F32 || b->type != TG_TYPE_F32) return false;
    if (!tg_type_traits(a->type) || !tg_type_traits(a->type)->to_float) return false;
    if (a->nb[0] != tg_type_size(a->type)) return false;
    if (a->ne[1] != b->ne[1] || dst->ne[0] != a->ne[0] || dst->ne[1] != b->ne[0] ||
        dst->ne[2] != b->ne[2] || dst->ne[3] != b->ne[3]) return false;
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) return false;
    return dst->nb[0] == sizeof(float);
}

bool tg_cpu_out_prod_supported(const struct tg_tensor * dst) {
    return dst && dst->op == TG_OP_OUT_PROD && op_check(dst);
}

// Bytes of the converted a (0 when a is used in place).
static size_t op_a_bytes(const struct tg_tensor * a) {
    return op_a_dense(a) ? 0 : align64((size_t) tg_nelements(a) * sizeof(float));
}

size_t tg_cpu_out_prod_work_size(const struct tg_tensor * dst, int nth) {
    if (!dst || !op_check(dst)) return 0;
    if (nth < 1) nth = 1;
    const struct tg_tensor * a = dst->src[0];
    return op_a_bytes(a) + (size_t) nth * align64((size_t) a->ne[1] * 4 * sizeof(float));
}

void tg_cpu_out_prod(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const struct tg_tensor * b = dst->src[1];
    if (!op_check(dst)) return;
    const int64_t m = a->ne[0], k = a->ne[1], pa = a->ne[2], qa = a->ne[3];
    const bool dense = op_a_dense(a);
    if (!dense) {
        tg_to_float_fn to_float = tg_type_traits(a->type)->to_float;
        int64_t t0, t1;
        tg_cpu_range(k * pa * qa, p->ith, p->nth, &t0, &t1);
        for (int64_t t = t0; t < t1; t++) {
            const int64_t l = t % k, i2 = (t / k) % pa, i3 = t / (k * pa);
            to_float((const char *) a->data + l * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3],
                     (float *) p->wdata + t * m, m);
        }
        tg_cpu_barrier(p);
    }
    float * bv = (float *) ((char *) p->wdata + op_a_bytes(a) +
                            (size_t) p->ith * align64((size_t) k * 4 * sizeof(float)));
    const int level = tg_cpu_simd_level();
    const int64_t n = dst->ne[1], r = dst->ne[2], s = dst->ne[3], ng = (n + 3) / 4;
    const int64_t br2 = r / pa, br3 = s / qa;
    const size_t lda = dense ? a->nb[1] / sizeof(float) : (size_t) m;
    int64_t u0, u1;
    tg_cpu_range(ng * r * s, p->ith, p->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t j0 = (u % ng) * 4, i2 = (u / ng) % r, i3 = u / (ng * r);
        const int nj = n - j0 < 4 ? (int) (n - j0) : 4;
        const int64_t a2 = i2 / br2, a3 = i3 / br3;
        const float * am = dense ? (const float *) ((const char *) a->data + a2 * a->nb[2] + a3 * a->nb[3])
                                 : (const float *) p->wdata + (a3 * pa + a2) * k * m;
        float * out[4];
        for (int jj = 0; jj < nj; jj++) {
            const char * brow = (const char *) b->data + (j0 + jj) * b->nb[0] + i2 * b->nb[2] + i3 * b->nb[3];
            for (int64_t l = 0; l < k; l++) bv[4 * l + jj] = *(const float *) (brow + l * b->nb[1]);
            out[jj] = (float *) ((char *) dst->data + (j0 + jj) * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]);
        }
        tg_mm_outer_f32(level, m, k, am, lda, bv, nj, out);
    }
}
