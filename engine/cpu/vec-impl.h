// vec-impl.h - private interface between the matrix driver (matmul.c) and the
// SIMD dot-product kernels (vec-f32.c: float types, vec-quant.c: Q8_0/Q4_0).
//
// Reduction contract: within one SIMD level, every output element of every
// kernel below (any tile shape, the single dot products of cpu-impl.h
// included) is computed with the same sequence of floating-point operations,
// so results never depend on how the output was cut into tiles, threads or
// batches. Float types: one vector accumulator per element over k in chunks
// of the level's width, a fixed horizontal-sum tree, then the scalar tail in
// order. Q8_0 / Q4_0 / IQ4_NL weights (vec-quant.c): each block's exact
// integer sum, scaled and multiply-added block after block (the same bits at
// the scalar, avx, avx2 and avx512 levels); K-quants: vec-kquant.c.
#ifndef TG_VEC_IMPL_H
#define TG_VEC_IMPL_H

#include "cpu-impl.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TG_X86 1
#endif

// Full unrolling of the small constant loops of the tiles (the accumulators
// must become registers).
#if defined(__clang__)
#define TG_UNROLL _Pragma("clang loop unroll(full)")
#define TG_UNROLL16 _Pragma("clang loop unroll(full)")
#else
#define TG_UNROLL _Pragma("GCC unroll 8")
#define TG_UNROLL16 _Pragma("GCC unroll 16")   // loops of up to 16 (vec-f32.c's narrow tiles)
#endif

// The 8-lane horizontal sum every level ends with: ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
static inline float tree8(const float * s) {
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// What a block kernel computes: for i < ni, j < nj
//   c[j*ldc + i] = dot(row i of a, row j of b)   (k elements per row)
// Row i of a starts at a + i*lda, row j of b at b + j*ldb (bytes).
struct tg_mm_args {
    int64_t      k;
    const char * a; size_t lda;
    const char * b; size_t ldb;
    float *      c; size_t ldc;   // ldc in floats
    int64_t      ni, nj;
    enum tg_type type;            // weight type (TG_MM_GENERIC only)
    const char * ys; size_t ldys; // packed weights only: per column, nb int32 offsets then nb f32 scales (tg_mm_pack_ysums)
    // The narrow kernels only (tg_mm_float_block_narrow): nmat > 1 matrices
    // side by side, matrix m's a, b and c at a + m*mat_a, b + m*mat_b (bytes)
    // and c + m*mat_c (floats), computed a tile of rows of every matrix at a
    // time (a K cache's heads: each tile reads whole cache rows). 0 or 1: one.
    int64_t      nmat;
    size_t       mat_a, mat_b, mat_c;
};
typedef void (*tg_mm_block_fn)(const struct tg_mm_args * g);

// Weight x activation row types a block kernel handles.
enum tg_mm_kind {
    TG_MM_F32_F32,    // f32 weights, f32 activations
    TG_MM_F16_F32,    // f16 weights, activations rounded to f16 but held as f32
    TG_MM_BF16_F32,   // bf16 weights, f32 activations
    TG_MM_Q8_Q8,      // q8_0 weights, q8_0 activations
    TG_MM_Q4_Q8,      // q4_0 weights, q8_0 activations
    TG_MM_IQ4NL_Q8,   // iq4_nl weights, q8_0 activations
    TG_MM_Q5_0_Q8,    // q5_0 weights, q8_0 activations
    TG_MM_KQUANT,     // Q2_K..Q6_K, IQ4_XS weights, Q8_K activations (vec-kquant.c)
    TG_MM_LEGACY,     // Q4_1, Q5_1 (Q8_1 activations) (vec-legacy.c)
    TG_MM_GENERIC,    // other quantized weights, their tg_type_vec_dot_type activations (vec-generic.c)
    TG_MM_KIND_COUNT
};

// Block kernel for a kind at a SIMD level (TG_SIMD_*); never NULL for a
// valid kind (levels without a dedicated path fall back to a lower one).
tg_mm_block_fn tg_mm_float_block(enum tg_mm_kind kind, int level);  // vec-f32.c
// The same elements, bit for bit, for blocks of a few columns (attention):
// the last nj % 4 columns share the reads of a's rows.
tg_mm_block_fn tg_mm_float_block_narrow(enum tg_mm_kind kind, int level);
tg_mm_block_fn tg_mm_quant_block(enum tg_mm_kind kind, int level);  // vec-quant.c

// vec-generic.c: dot of a weight row of `type` with its activation row (n
// elements), the block kernel using it, and whether a type has one.
float tg_vec_dot_generic(enum tg_type type, int64_t n, const void * x, const void * y);
void  tg_mm_block_generic(const struct tg_mm_args * g);
bool  tg_vec_dot_generic_supported(enum tg_type type);

// pack.c: packed weights (tg_cpu_pack). The packed data of a and the bytes
// of one group of 16 rows, or NULL when a has no valid packed copy.
const char *   tg_mm_packed(const struct tg_tensor * a, size_t * gstride);
// The block kernel for packed weights of this type at this level; NULL when
// there is none (the driver then reads the weight itself).
tg_mm_block_fn tg_mm_packed_block(enum tg_type type, int level);
// Per block of an activation row: the offset its packed sums start from
// (8 * sum(q) for Q4_0, 128 * sum(q) for Q8_0) and its scale as f32.
void           tg_mm_pack_ysums(enum tg_type wtype, const tg_block_q8_0 * y, int64_t nb, int32_t * ys, float * dy);

// vec-kquant.c: the K-quants and IQ4_XS against Q8_K rows, integer sums per
// super-block; NULL / false for other types.
bool           tg_mm_kquant_supported(enum tg_type type);
tg_mm_block_fn tg_mm_kquant_block(enum tg_type type, int level);
float          tg_vec_dot_kquant(int level, enum tg_type type, int64_t n, const void * x, const void * y);

// vec-legacy.c: Q4_1, Q5_1; NULL / false for other types.
bool           tg_mm_legacy_supported(enum tg_type type);
tg_mm_block_fn tg_mm_legacy_block(enum tg_type type, int level);

// tg_quantize_row_q8_0 (same bytes), SIMD at levels >= TG_SIMD_AVX.
void tg_mm_quantize_row_q8_0(int level, const float * x, tg_block_q8_0 * y, int64_t n);

// tg_quantize_row_q8_K (same bytes), SIMD at levels >= TG_SIMD_AVX2.
void tg_mm_quantize_row_q8_K(int level, const float * x, tg_block_q8_K * y, int64_t n);

// Outer-product sums of nj (1..4) columns: for j < nj, i < m,
//   out[j][i] = sum over l = 0..k-1, in that order, of a[l*lda + i] * bv[4*l + j]
// (lda in floats), one multiply-add per term starting from 0, whatever the
// column count or the position of i.
void tg_mm_outer_f32(int level, int64_t m, int64_t k, const float * a, size_t lda, const float * bv,
                     int nj, float * const * out);

// Block of ni x nj: TI x TJ tiles with the row edge done row by row; the
// columns past the last full TJ (all of them when nj < TJ, as in generation)
// by TI1 x 1 tiles. TILE takes (RI, RJ, k / KDIV, a, lda, b, ldb, c, ldc):
// KDIV is 1 for float tiles, the block size for quantized ones (k in blocks).
// One macro for vec-f32.c and vec-quant.c.
#define TG_MM_BLOCK(NAME, ATTR, TILE, TI, TJ, TI1, KDIV)                         \
ATTR static void NAME(const struct tg_mm_args * g) {                          \
    const int64_t ni = g->ni, nj = g->nj, k = g->k / (KDIV);                  \
    const int64_t nj0 = nj - nj % TJ;                                         \
    int64_t i = 0;                                                            \
    for (; i + TI <= ni; i += TI) {                                           \
        for (int64_t j = 0; j < nj0; j += TJ)                                 \
            TILE(TI, TJ, k, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
    }                                                                         \
    for (; i < ni; i++) {                                                     \
        for (int64_t j = 0; j < nj0; j += TJ)                                 \
            TILE(1, TJ, k, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
    }                                                                         \
    for (int64_t j = nj0; j < nj; j++) {                                      \
        i = 0;                                                                \
        for (; i + TI1 <= ni; i += TI1)                                       \
            TILE(TI1, 1, k, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
        for (; i < ni; i++)                                                   \
            TILE(1, 1, k, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
    }                                                                         \
}

// A single dot product as a 1 x 1 TILE (so it follows the block kernels'
// reduction order exactly): k elements of TA and TB (float tiles), or k
// blocks (quantized tiles). One macro for vec-f32.c and vec-quant.c.
#define TG_MM_DOT(NAME, ATTR, TILE, TA, TB)                                     \
ATTR static float NAME(int64_t k, const TA * x, const TB * y) {               \
    float r;                                                                  \
    TILE(1, 1, k, (const char *) x, 0, (const char *) y, 0, &r, 0);           \
    return r;                                                                 \
}

#ifdef TG_X86
// The first `rows` (1..8) floats at c as a vector (the rest 0), and back:
// the partial-panel edge of the AVX2 panel kernels (vec-quant.c, vec-kquant.c).
static inline __attribute__((always_inline, target("avx"))) __m256 tg_load_rows8(const float * c, int rows) {
    if (rows == 8) return _mm256_loadu_ps(c);
    float t[8] = { 0 };
    for (int r = 0; r < rows; r++) t[r] = c[r];
    return _mm256_loadu_ps(t);
}
static inline __attribute__((always_inline, target("avx"))) void tg_store_rows8(float * c, __m256 v, int rows) {
    if (rows == 8) { _mm256_storeu_ps(c, v); return; }
    float t[8];
    _mm256_storeu_ps(t, v);
    for (int r = 0; r < rows; r++) c[r] = t[r];
}

// Q5_0 / Q5_1 high bits (vec-quant.c, vec-legacy.c): 0x10 in byte e (element
// order) where bit e of a block's qh is set.
static inline __attribute__((always_inline, target("avx2"))) __m256i tg_q5hb_avx2(const uint8_t * qh) {
    uint32_t h;
    memcpy(&h, qh, 4);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long) 0x8040201008040201ull);
    const __m256i sel = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int) h), shuf), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(sel, bit), _mm256_set1_epi8(0x10));
}
// The same for rows in pairs. The
// 32-bit words at p of four rows (`stride` bytes apart) as [w0 w1 w2 w3] in
// both 128-bit halves: the qh fields of four rows' blocks.
static inline __attribute__((always_inline, target("avx2"))) __m256i tg_w4x2_avx2(const void * p0, size_t stride) {
    const char * p = p0;
    uint32_t w[4];
    for (int r = 0; r < 4; r++) memcpy(&w[r], p + r * stride, 4);
    return _mm256_broadcastsi128_si256(_mm_setr_epi32((int) w[0], (int) w[1], (int) w[2], (int) w[3]));
}
// 0x10 in the bytes whose element's high bit is set, for rows a = 2 * pair
// (low half) and b = a + 1 (high half) of q4 (tg_w4x2_avx2's four rows):
// hi = 0 elements 0..15 of each, hi = 1 elements 16..31.
static inline __attribute__((always_inline, target("avx2"))) __m256i tg_q5hb_pair_avx2(__m256i q4, int pair, int hi) {
    const char o = (char) (8 * pair + 2 * hi);   // the byte of row a's word holding bits 16 * hi ..
    const __m256i ctl = _mm256_setr_epi8(o, o, o, o, o, o, o, o, o + 1, o + 1, o + 1, o + 1, o + 1, o + 1, o + 1, o + 1,
                                         o + 4, o + 4, o + 4, o + 4, o + 4, o + 4, o + 4, o + 4,
                                         o + 5, o + 5, o + 5, o + 5, o + 5, o + 5, o + 5, o + 5);
    const __m256i bit = _mm256_set1_epi64x((long long) 0x8040201008040201ull);
    const __m256i sel = _mm256_and_si256(_mm256_shuffle_epi8(q4, ctl), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(sel, bit), _mm256_set1_epi8(0x10));
}
#endif

#endif
