// vec-f32.c - dot products of float rows (f32, f16, bf16): the single dots of
// cpu-impl.h and the register-blocked block kernels used by matmul.c, plus
// the outer-product kernel of OUT_PROD.
//
// Per SIMD level (see vec-impl.h for the reduction contract):
//   scalar: 8 lane sums (lane = index % 8) over the full chunks of 8, the tree
//           ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), then the tail in order;
//   avx (also used at avx2): the same with a __m256 accumulator and FMA;
//   avx512: a __m512 accumulator over chunks of 16, folded to 8 lanes
//           (l + l+8), the same 8-lane tree, then the tail in order.
#include "vec-impl.h"

#include <math.h>
#include <string.h>

// Attention blocks (ops-attn.c; matmul.c's generation over a matrix shared
// by several of b's, the unfused kq and kqv): a handful of columns (the query
// rows of a tile, e.g. the 3 query heads of a K/V head), so a's rows are read
// once for all of them (TG_MM_BLOCK takes those columns one at a time, the
// streaming shape of weight matrices): the narrow kernels (TG_MM_NARROW,
// with TG_AVX_NTILE's tiles at the AVX levels, TG_AVX512_NTILE's at the
// AVX-512 ones) take the columns in groups of up to 4 and the rows in tiles
// whose sums are reduced together.
// Every element is the same bits either way (the reduction contract).
// NTILE(RI, RJ, ...) reduces RI * RJ sums together; T1..T4: rows per tile
// for 1..4 columns; REST: the rows left over, in smaller tiles (each size
// at most once, so any remainder under T takes at most four tiles).
#define TG_NARROW_EACH(NTILE, RI, RJ)                                           \
    for (int64_t m_ = 0; m_ < nm; m_++)                                         \
        NTILE(RI, RJ, k, g->a + m_ * g->mat_a + i * lda, lda, b + m_ * g->mat_b, ldb, c + m_ * g->mat_c + i, ldc)
#define TG_NARROW_REST16(NTILE, TIMAX, RJ)                                      \
    if ((TIMAX) > 8 && i + 8 <= ni) { TG_NARROW_EACH(NTILE, 8, RJ); i += 8; }  \
    TG_NARROW_REST8(NTILE, TIMAX, RJ)
#define TG_NARROW_REST8(NTILE, TIMAX, RJ)                                       \
    if ((TIMAX) > 4 && i + 4 <= ni) { TG_NARROW_EACH(NTILE, 4, RJ); i += 4; }  \
    if ((TIMAX) > 2 && i + 2 <= ni) { TG_NARROW_EACH(NTILE, 2, RJ); i += 2; }  \
    if (i < ni) TG_NARROW_EACH(NTILE, 1, RJ);
#define TG_MM_NARROW(NAME, ATTR, NTILE, REST, T1, T2, T3, T4)                   \
ATTR static void NAME(const struct tg_mm_args * g) {                            \
    const int64_t ni = g->ni, nj = g->nj, k = g->k, nm = g->nmat > 1 ? g->nmat : 1; \
    const size_t lda = g->lda, ldb = g->ldb, ldc = g->ldc;                      \
    for (int64_t j = 0; j < nj; j += 4) {                                       \
        const int rj = nj - j < 4 ? (int) (nj - j) : 4;                         \
        const char * b = g->b + j * ldb;                                        \
        float * c = g->c + j * ldc;                                             \
        int64_t i = 0;                                                          \
        switch (rj) {                                                           \
        case 1:                                                                 \
            for (; i + (T1) <= ni; i += (T1)) TG_NARROW_EACH(NTILE, T1, 1);     \
            REST(NTILE, T1, 1) break;                                           \
        case 2:                                                                 \
            for (; i + (T2) <= ni; i += (T2)) TG_NARROW_EACH(NTILE, T2, 2);     \
            REST(NTILE, T2, 2) break;                                           \
        case 3:                                                                 \
            for (; i + (T3) <= ni; i += (T3)) TG_NARROW_EACH(NTILE, T3, 3);     \
            REST(NTILE, T3, 3) break;                                           \
        default:                                                                \
            for (; i + (T4) <= ni; i += (T4)) TG_NARROW_EACH(NTILE, T4, 4);     \
            REST(NTILE, T4, 4) break;                                           \
        }                                                                       \
    }                                                                           \
}

// Generation (one column of b) streams long rows one at a time (one long
// read stream from memory), but short rows (attention's kq over a K cache:
// head_dim elements per row, rows a K/V row apart) in tiles of several rows,
// so their reductions overlap: one row at a time, kq at depth 1024 took 2.7x
// the time of kqv over the same number of bytes. Same bits either way.
#define TG_MM_SHORT_BYTES 512
#define TG_MM_SHORT(NAME, TA, LONG, SHORT)                                      \
static void NAME(const struct tg_mm_args * g) {                                 \
    if (g->k * (int64_t) sizeof(TA) <= TG_MM_SHORT_BYTES) SHORT(g); else LONG(g); \
}

// ---- scalar ------------------------------------------------------------

static inline float ld_f32(const float * p, int64_t i)      { return p[i]; }
static inline float ld_f16(const tg_fp16_t * p, int64_t i)  { return tg_fp16_to_fp32(p[i]); }
static inline float ld_bf16(const tg_bf16_t * p, int64_t i) { return tg_bf16_to_fp32(p[i]); }

// One dot product of k elements, scalar reference of the 8-lane order.
#define TG_SCALAR_DOT(NAME, TA, TB, LA, LB)                                   \
static float NAME(int64_t k, const TA * x, const TB * y) {                   \
    float s[8] = {0};                                                         \
    int64_t i = 0;                                                            \
    for (; i + 8 <= k; i += 8) {                                              \
        for (int l = 0; l < 8; l++) s[l] += LA(x, i + l) * LB(y, i + l);      \
    }                                                                         \
    float r = tree8(s);                                                       \
    for (; i < k; i++) r += LA(x, i) * LB(y, i);                              \
    return r;                                                                 \
}

TG_SCALAR_DOT(dot_f32_f32_scalar,  float,     float,     ld_f32,  ld_f32)
TG_SCALAR_DOT(dot_f16_f16_scalar,  tg_fp16_t, tg_fp16_t, ld_f16,  ld_f16)
TG_SCALAR_DOT(dot_f16_f32_scalar,  tg_fp16_t, float,     ld_f16,  ld_f32)
TG_SCALAR_DOT(dot_bf16_f32_scalar, tg_bf16_t, float,     ld_bf16, ld_f32)
TG_SCALAR_DOT(dot_bf16_bf16_scalar, tg_bf16_t, tg_bf16_t, ld_bf16, ld_bf16)

#define TG_SCALAR_BLOCK(NAME, DOT, TA, TB)                                    \
static void NAME(const struct tg_mm_args * g) {                               \
    for (int64_t i = 0; i < g->ni; i++) {                                     \
        const TA * x = (const TA *) (g->a + i * g->lda);                      \
        for (int64_t j = 0; j < g->nj; j++) {                                 \
            g->c[j * g->ldc + i] = DOT(g->k, x, (const TB *) (g->b + j * g->ldb)); \
        }                                                                     \
    }                                                                         \
}

TG_SCALAR_BLOCK(block_f32_f32_scalar,  dot_f32_f32_scalar,  float,     float)
TG_SCALAR_BLOCK(block_f16_f32_scalar,  dot_f16_f32_scalar,  tg_fp16_t, float)
TG_SCALAR_BLOCK(block_bf16_f32_scalar, dot_bf16_f32_scalar, tg_bf16_t, float)

// out[j][i] = sum over l < k, in order, of a[l*lda + i] * bv[4*l + j].
static void outer_scalar(int64_t m, int64_t k, const float * a, size_t lda, const float * bv, int nj,
                         float * const * out) {
    for (int j = 0; j < nj; j++) {
        float * y = out[j];
        for (int64_t i = 0; i < m; i++) y[i] = 0.0f;
        for (int64_t l = 0; l < k; l++) {
            const float * x = a + l * lda;
            const float b = bv[4 * l + j];
            for (int64_t i = 0; i < m; i++) y[i] += x[i] * b;
        }
    }
}

#ifdef TG_X86
// ---- avx (+fma, f16c) -----------------------------------------------------
#define TG_AVX __attribute__((target("avx,fma,f16c")))
#define TG_AVX_INLINE static inline __attribute__((always_inline, target("avx,fma,f16c")))

TG_AVX_INLINE __m256 v8_f32(const float * p) { return _mm256_loadu_ps(p); }
TG_AVX_INLINE __m256 v8_f16(const tg_fp16_t * p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) p));
}
TG_AVX_INLINE __m256 v8_bf16(const tg_bf16_t * p) {
    __m128i h = _mm_loadu_si128((const __m128i *) p);
    __m128i z = _mm_setzero_si128();
    __m128i lo = _mm_unpacklo_epi16(z, h), hi = _mm_unpackhi_epi16(z, h);
    return _mm256_castsi256_ps(_mm256_set_m128i(hi, lo));
}
TG_AVX_INLINE float s_f32(const float * p, int64_t i) { return p[i]; }
TG_AVX_INLINE float s_f16(const tg_fp16_t * p, int64_t i) { return _cvtsh_ss(p[i]); }
TG_AVX_INLINE float s_bf16(const tg_bf16_t * p, int64_t i) {
    uint32_t u = (uint32_t) p[i] << 16; float f; memcpy(&f, &u, 4); return f;
}

TG_AVX_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// RI x RJ tile: RI rows of a against RJ rows of b, one accumulator per pair.
#define TG_AVX_TILE(NAME, TA, TB, VA, VB, SA, SB)                             \
TG_AVX_INLINE void NAME(const int RI, const int RJ, int64_t k,                \
        const char * a, size_t lda, const char * b, size_t ldb,              \
        float * c, size_t ldc) {                                              \
    __m256 acc[4][4];                                                         \
    TG_UNROLL for (int i = 0; i < RI; i++)                      \
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm256_setzero_ps(); \
    int64_t kk = 0;                                                           \
    for (; kk + 8 <= k; kk += 8) {                                            \
        __m256 va[4];                                                         \
        TG_UNROLL for (int i = 0; i < RI; i++)                  \
            va[i] = VA((const TA *) (a + i * lda) + kk);                      \
        if (RJ == 1 && ((size_t) kk * sizeof(TA)) % 64 == 0) {                 \
            /* generation: the next tile's rows (views: any row stride) */   \
            TG_UNROLL for (int i = 0; i < RI; i++)                            \
                _mm_prefetch(a + (RI + i) * lda + kk * sizeof(TA), _MM_HINT_T0); \
        }                                                                     \
        TG_UNROLL for (int i = 0; i < RI; i++) __asm__("" : "+x"(va[i]));  \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                \
            __m256 vb = VB((const TB *) (b + j * ldb) + kk);                  \
            __asm__("" : "+x"(vb));  /* one load, not one per FMA */          \
            TG_UNROLL for (int i = 0; i < RI; i++)              \
                acc[i][j] = _mm256_fmadd_ps(va[i], vb, acc[i][j]);            \
        }                                                                     \
    }                                                                         \
    TG_UNROLL for (int j = 0; j < RJ; j++)                      \
    TG_UNROLL for (int i = 0; i < RI; i++) {                    \
        const TA * x = (const TA *) (a + i * lda);                            \
        const TB * y = (const TB *) (b + j * ldb);                            \
        float s = hsum8(acc[i][j]);                                           \
        for (int64_t t = kk; t < k; t++) s = fmaf(SA(x, t), SB(y, t), s);     \
        c[j * ldc + i] = s;                                                   \
    }                                                                         \
}

TG_AVX_TILE(tile_f32_f32_avx,   float,     float,     v8_f32,  v8_f32,  s_f32,  s_f32)
TG_AVX_TILE(tile_f16_f16_avx,   tg_fp16_t, tg_fp16_t, v8_f16,  v8_f16,  s_f16,  s_f16)
TG_AVX_TILE(tile_f16_f32_avx,   tg_fp16_t, float,     v8_f16,  v8_f32,  s_f16,  s_f32)
TG_AVX_TILE(tile_bf16_f32_avx,  tg_bf16_t, float,     v8_bf16, v8_f32,  s_bf16, s_f32)
TG_AVX_TILE(tile_bf16_bf16_avx, tg_bf16_t, tg_bf16_t, v8_bf16, v8_bf16, s_bf16, s_bf16)

// Generation one row at a time: consecutive rows make one long stream from
// memory (4-row tiles: four short ones; f32 15% slower on one thread, f16 and
// bf16 20-30% slower from DRAM on two threads).
TG_MM_BLOCK(block_f32_f32_avx_1, TG_AVX, tile_f32_f32_avx, 3, 4, 1, 1)
TG_MM_BLOCK(block_f16_f32_avx_1, TG_AVX, tile_f16_f32_avx, 3, 4, 1, 1)
TG_MM_BLOCK(block_bf16_f32_avx_1, TG_AVX, tile_bf16_f32_avx, 3, 3, 1, 1)
TG_MM_BLOCK(block_f32_f32_avx_3, TG_AVX, tile_f32_f32_avx, 3, 4, 3, 1)
TG_MM_BLOCK(block_f16_f32_avx_3, TG_AVX, tile_f16_f32_avx, 3, 4, 3, 1)
TG_MM_BLOCK(block_bf16_f32_avx_3, TG_AVX, tile_bf16_f32_avx, 3, 3, 3, 1)
TG_MM_SHORT(block_f32_f32_avx, float, block_f32_f32_avx_1, block_f32_f32_avx_3)
TG_MM_SHORT(block_f16_f32_avx, tg_fp16_t, block_f16_f32_avx_1, block_f16_f32_avx_3)
TG_MM_SHORT(block_bf16_f32_avx, tg_bf16_t, block_bf16_f32_avx_1, block_bf16_f32_avx_3)

// hsum8 of n <= 8 vectors at once, the same additions as hsum8 in the same
// order (l + l+4, l + l+2, l + l+1, the lower operand first), several per
// instruction. The sums land in the lanes [0 2 4 6 | 1 3 5 7] of v's order,
// so v[m] is taken from acc[m / 2] (m even) or acc[4 + m / 2] (m odd): lane
// L of the result is hsum8(acc[L]).
TG_AVX_INLINE __m256 hsum8_n(const __m256 * acc, const int n) {
    const __m256 z = _mm256_setzero_ps();
    __m256 v[8], h1[4], h2[2];
    TG_UNROLL for (int m = 0; m < 8; m++) {
        const int s = m % 2 == 0 ? m / 2 : 4 + m / 2;
        v[m] = s < n ? acc[s] : z;
    }
    TG_UNROLL for (int p = 0; p < 4; p++)   // 8 -> 4: [lo + hi of v[2p] | of v[2p+1]]
        h1[p] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x20),
                              _mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x31));
    TG_UNROLL for (int q = 0; q < 2; q++)   // 4 -> 2 within each half
        h2[q] = _mm256_add_ps(_mm256_shuffle_ps(h1[2 * q], h1[2 * q + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm256_shuffle_ps(h1[2 * q], h1[2 * q + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm256_shuffle_ps(h2[0], h2[1], _MM_SHUFFLE(2, 0, 2, 0)),   // 2 -> 1
                         _mm256_shuffle_ps(h2[0], h2[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// Rows ahead of a narrow tile's first that it prefetches (a line per row per
// 64 bytes of its own): about 2 KiB of its rows' bytes, at least 2 tiles.
// Short rows (K . q: 128 bytes of a head's slice, 512 apart) were prefetched
// 4 rows ahead in the 2-row tiles of 3 query heads a K/V head, too close to
// cover a DRAM read; the long rows of V . p keep 2 tiles (Zen 3, bench_mul_mat
// -g, 6 alternating runs, medians of their minimum times a layer: kq at 1024
// cells 53.9 -> 42.3 us, at 4096 186.8 -> 165.9; fused 90.5 -> 83.3 and
// 330 -> 312; 16 rows for V as well made kqv 6-8% slower).
TG_AVX_INLINE int64_t tg_ntile_ahead(int ri, int64_t row_bytes) {
    const int64_t r = row_bytes > 0 ? 2048 / row_bytes : 0;
    return r > 2 * ri ? r : 2 * ri;
}
// Narrow tiles at the AVX levels: RI * RJ <= 8 sums (sum j * RI + i), each
// TG_AVX_TILE's FMA chain and then hsum8 (hsum8_n): the bits of that tile.
#define TG_AVX_NTILE(NAME, TA, TB, VA, VB, SA, SB)                            \
TG_AVX_INLINE void NAME(const int RI, const int RJ, int64_t k,                \
        const char * a, size_t lda, const char * b, size_t ldb,              \
        float * c, size_t ldc) {                                              \
    __m256 acc[8];                                                            \
    TG_UNROLL for (int m = 0; m < RI * RJ; m++) acc[m] = _mm256_setzero_ps(); \
    const int64_t ahead = tg_ntile_ahead(RI, k * (int64_t) sizeof(TA));       \
    int64_t kk = 0;                                                           \
    for (; kk + 8 <= k; kk += 8) {                                            \
        if (((size_t) kk * sizeof(TA)) % 64 == 0)                             \
            TG_UNROLL for (int i = 0; i < RI; i++)                            \
                _mm_prefetch(a + (ahead + i) * lda + kk * sizeof(TA), _MM_HINT_T0); \
        __m256 vb[4];                                                         \
        TG_UNROLL for (int j = 0; j < RJ; j++) vb[j] = VB((const TB *) (b + j * ldb) + kk); \
        TG_UNROLL for (int i = 0; i < RI; i++) {                              \
            const __m256 va = VA((const TA *) (a + i * lda) + kk);            \
            TG_UNROLL for (int j = 0; j < RJ; j++)                            \
                acc[j * RI + i] = _mm256_fmadd_ps(va, vb[j], acc[j * RI + i]); \
        }                                                                     \
    }                                                                         \
    float t[8];                                                               \
    _mm256_storeu_ps(t, hsum8_n(acc, RI * RJ));                               \
    TG_UNROLL for (int j = 0; j < RJ; j++)                                    \
    TG_UNROLL for (int i = 0; i < RI; i++) {                                  \
        float r = t[j * RI + i];                                              \
        if (kk < k) {   /* the tail in order, as TG_AVX_TILE */               \
            const TA * x = (const TA *) (a + i * lda);                        \
            const TB * y = (const TB *) (b + j * ldb);                        \
            for (int64_t u = kk; u < k; u++) r = fmaf(SA(x, u), SB(y, u), r); \
        }                                                                     \
        c[j * ldc + i] = r;                                                   \
    }                                                                         \
}
TG_AVX_NTILE(ntile_f32_f32_avx, float,     float, v8_f32, v8_f32, s_f32, s_f32)
TG_AVX_NTILE(ntile_f16_f32_avx, tg_fp16_t, float, v8_f16, v8_f32, s_f16, s_f32)

// rows in tiles of 8 / RJ (2 for 3 columns), the last ones in tiles of 4, 2, 1
TG_MM_NARROW(narrow_f32_f32_avx, TG_AVX, ntile_f32_f32_avx, TG_NARROW_REST8, 8, 4, 2, 2)
TG_MM_NARROW(narrow_f16_f32_avx, TG_AVX, ntile_f16_f32_avx, TG_NARROW_REST8, 8, 4, 2, 2)

TG_MM_DOT(dot_f32_f32_avx,   TG_AVX, tile_f32_f32_avx,   float,     float)
TG_MM_DOT(dot_f16_f16_avx,   TG_AVX, tile_f16_f16_avx,   tg_fp16_t, tg_fp16_t)
TG_MM_DOT(dot_bf16_bf16_avx, TG_AVX, tile_bf16_bf16_avx, tg_bf16_t, tg_bf16_t)

// NJ columns of the outer-product sum: 16 (then 8) outputs of each column
// stay in registers over the whole of k; the rest one by one.
TG_AVX_INLINE void outer_avx_nj(const int NJ, int64_t m, int64_t k, const float * a, size_t lda,
                                const float * bv, float * const * out) {
    int64_t i = 0;
    for (; i + 16 <= m; i += 16) {
        __m256 acc[4][2];
        TG_UNROLL for (int j = 0; j < NJ; j++) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
        for (int64_t l = 0; l < k; l++) {
            const __m256 a0 = _mm256_loadu_ps(a + l * lda + i), a1 = _mm256_loadu_ps(a + l * lda + i + 8);
            TG_UNROLL for (int j = 0; j < NJ; j++) {
                const __m256 b = _mm256_broadcast_ss(bv + 4 * l + j);
                acc[j][0] = _mm256_fmadd_ps(a0, b, acc[j][0]);
                acc[j][1] = _mm256_fmadd_ps(a1, b, acc[j][1]);
            }
        }
        TG_UNROLL for (int j = 0; j < NJ; j++) {
            _mm256_storeu_ps(out[j] + i, acc[j][0]);
            _mm256_storeu_ps(out[j] + i + 8, acc[j][1]);
        }
    }
    for (; i + 8 <= m; i += 8) {
        __m256 acc[4];
        TG_UNROLL for (int j = 0; j < NJ; j++) acc[j] = _mm256_setzero_ps();
        for (int64_t l = 0; l < k; l++) {
            const __m256 a0 = _mm256_loadu_ps(a + l * lda + i);
            TG_UNROLL for (int j = 0; j < NJ; j++) {
                acc[j] = _mm256_fmadd_ps(a0, _mm256_broadcast_ss(bv + 4 * l + j), acc[j]);
            }
        }
        TG_UNROLL for (int j = 0; j < NJ; j++) _mm256_storeu_ps(out[j] + i, acc[j]);
    }
    for (; i < m; i++) {
        TG_UNROLL for (int j = 0; j < NJ; j++) {
            float s = 0.0f;
            for (int64_t l = 0; l < k; l++) s = fmaf(a[l * lda + i], bv[4 * l + j], s);
            out[j][i] = s;
        }
    }
}

TG_AVX static void outer_avx(int64_t m, int64_t k, const float * a, size_t lda, const float * bv, int nj,
                             float * const * out) {
    switch (nj) {
    case 1:  outer_avx_nj(1, m, k, a, lda, bv, out); break;
    case 2:  outer_avx_nj(2, m, k, a, lda, bv, out); break;
    case 3:  outer_avx_nj(3, m, k, a, lda, bv, out); break;
    default: outer_avx_nj(4, m, k, a, lda, bv, out); break;
    }
}

// ---- avx512f ----------------------------------------------------------------
#define TG_AVX512 __attribute__((target("avx512f,avx,fma,f16c")))
#define TG_AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx,fma,f16c")))

TG_AVX512_INLINE __m512 v16_f32(const float * p) { return _mm512_loadu_ps(p); }
TG_AVX512_INLINE __m512 v16_f16(const tg_fp16_t * p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) p));
}
TG_AVX512_INLINE __m512 v16_bf16(const tg_bf16_t * p) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
TG_AVX512_INLINE float hsum16(__m512 v) {
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return hsum8(_mm256_add_ps(lo, hi));
}

#define TG_AVX512_TILE(NAME, TA, TB, VA, VB, SA, SB)                          \
TG_AVX512_INLINE void NAME(const int RI, const int RJ, int64_t k,             \
        const char * a, size_t lda, const char * b, size_t ldb,              \
        float * c, size_t ldc) {                                              \
    __m512 acc[8][8];                                                         \
    TG_UNROLL for (int i = 0; i < RI; i++)                      \
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm512_setzero_ps(); \
    int64_t kk = 0;                                                           \
    for (; kk + 16 <= k; kk += 16) {                                          \
        __m512 va[8];                                                         \
        TG_UNROLL for (int i = 0; i < RI; i++)                  \
            va[i] = VA((const TA *) (a + i * lda) + kk);                      \
        if (RJ == 1 && ((size_t) kk * sizeof(TA)) % 64 == 0) {                 \
            /* generation: the next tile's rows (views: any row stride) */   \
            TG_UNROLL for (int i = 0; i < RI; i++)                            \
                _mm_prefetch(a + (RI + i) * lda + kk * sizeof(TA), _MM_HINT_T0); \
        }                                                                     \
        /* keep a's vectors in registers: folding the loads into */          \
        /* every FMA would make the loop load-bound */                        \
        TG_UNROLL for (int i = 0; i < RI; i++)                  \
            __asm__("" : "+v"(va[i]));                                        \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                \
            __m512 vb = VB((const TB *) (b + j * ldb) + kk);                  \
            __asm__("" : "+v"(vb));                                           \
            TG_UNROLL for (int i = 0; i < RI; i++)              \
                acc[i][j] = _mm512_fmadd_ps(va[i], vb, acc[i][j]);            \
        }                                                                     \
    }                                                                         \
    TG_UNROLL for (int j = 0; j < RJ; j++)                      \
    TG_UNROLL for (int i = 0; i < RI; i++) {                    \
        const TA * x = (const TA *) (a + i * lda);                            \
        const TB * y = (const TB *) (b + j * ldb);                            \
        float s = hsum16(acc[i][j]);                                          \
        for (int64_t t = kk; t < k; t++) s = fmaf(SA(x, t), SB(y, t), s);     \
        c[j * ldc + i] = s;                                                   \
    }                                                                         \
}

TG_AVX512_TILE(tile_f32_f32_avx512,   float,     float,     v16_f32,  v16_f32,  s_f32,  s_f32)
TG_AVX512_TILE(tile_f16_f16_avx512,   tg_fp16_t, tg_fp16_t, v16_f16,  v16_f16,  s_f16,  s_f16)
TG_AVX512_TILE(tile_f16_f32_avx512,   tg_fp16_t, float,     v16_f16,  v16_f32,  s_f16,  s_f32)
TG_AVX512_TILE(tile_bf16_f32_avx512,  tg_bf16_t, float,     v16_bf16, v16_f32,  s_bf16, s_f32)
TG_AVX512_TILE(tile_bf16_bf16_avx512, tg_bf16_t, tg_bf16_t, v16_bf16, v16_bf16, s_bf16, s_bf16)

// Generation one row at a time here too (8-row tiles: f32 generation of the
// 100m model 20% slower on two threads of an AVX-512 EPYC).
TG_MM_BLOCK(block_f32_f32_avx512_1, TG_AVX512, tile_f32_f32_avx512, 6, 4, 1, 1)
TG_MM_BLOCK(block_f16_f32_avx512_1, TG_AVX512, tile_f16_f32_avx512, 6, 4, 1, 1)
TG_MM_BLOCK(block_bf16_f32_avx512_1, TG_AVX512, tile_bf16_f32_avx512, 6, 4, 1, 1)
TG_MM_BLOCK(block_f32_f32_avx512_6, TG_AVX512, tile_f32_f32_avx512, 6, 4, 6, 1)
TG_MM_BLOCK(block_f16_f32_avx512_6, TG_AVX512, tile_f16_f32_avx512, 6, 4, 6, 1)
TG_MM_BLOCK(block_bf16_f32_avx512_6, TG_AVX512, tile_bf16_f32_avx512, 6, 4, 6, 1)
TG_MM_SHORT(block_f32_f32_avx512, float, block_f32_f32_avx512_1, block_f32_f32_avx512_6)
TG_MM_SHORT(block_f16_f32_avx512, tg_fp16_t, block_f16_f32_avx512_1, block_f16_f32_avx512_6)
TG_MM_SHORT(block_bf16_f32_avx512, tg_bf16_t, block_bf16_f32_avx512_1, block_bf16_f32_avx512_6)

// hsum16 of n <= 16 vectors at once: lane m of the result is hsum16(v[m])
// bit for bit (lanes m >= n: sums of zeros). The same additions in the same
// order, the lower operand first (l + l+8, then l + l+4, l + l+2, l + l+1),
// each instruction doing them for several sums: ~50 instructions for 16 sums
// where hsum16 takes ~7 each. Attention's kq over a 64-value head is four
// FMAs per sum: its reductions took about a third of its time (perf).
TG_AVX512_INLINE __m512 hsum16_n(const __m512 * v, const int n) {
    const __m512 z = _mm512_setzero_ps();
    __m512 h1[8], h2[4], h3[2];
    TG_UNROLL16 for (int p = 0; p < 8; p++) {   // 16 -> 8: pairs of sums, one per 256-bit half
        const __m512 x = 2 * p < n ? v[2 * p] : z, y = 2 * p + 1 < n ? v[2 * p + 1] : z;
        h1[p] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
    }
    TG_UNROLL16 for (int q = 0; q < 4; q++)     // 8 -> 4: 128-bit chunk m holds sum 4q + m
        h2[q] = _mm512_add_ps(_mm512_shuffle_f32x4(h1[2 * q], h1[2 * q + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_f32x4(h1[2 * q], h1[2 * q + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    TG_UNROLL16 for (int r = 0; r < 2; r++)     // 4 -> 2 within each chunk
        h3[r] = _mm512_add_ps(_mm512_shuffle_ps(h2[2 * r], h2[2 * r + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_ps(h2[2 * r], h2[2 * r + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // 2 -> 1: lane 4m + t holds sum 4t + m; put sum m in lane m
    const __m512 h = _mm512_add_ps(_mm512_shuffle_ps(h3[0], h3[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(h3[0], h3[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), h);
}

// Narrow tiles: RI rows of a against RJ columns of b, RI * RJ <= 16 sums
// (sum j * RI + i: row i, column j), each the FMA chain of TG_AVX512_TILE's
// and then hsum16 (hsum16_n), so every element has the bits it has there.
// b's RJ vectors are loaded once per step and a's each feed RJ FMAs. The
// rows two tiles on are prefetched as the loop goes, a line per row each 64
// bytes (all of them at the tile's start, 96 lines for six 1 KiB runs of a
// transposed V, filled the miss buffers and stalled the loop).
#define TG_AVX512_NTILE(NAME, TA, TB, VA, VB, SA, SB)                         \
TG_AVX512_INLINE void NAME(const int RI, const int RJ, int64_t k,             \
        const char * a, size_t lda, const char * b, size_t ldb,              \
        float * c, size_t ldc) {                                              \
    __m512 acc[16];                                                           \
    TG_UNROLL16 for (int m = 0; m < RI * RJ; m++) acc[m] = _mm512_setzero_ps(); \
    int64_t kk = 0;                                                           \
    for (; kk + 16 <= k; kk += 16) {                                          \
        if (((size_t) kk * sizeof(TA)) % 64 == 0)                             \
            TG_UNROLL16 for (int i = 0; i < RI; i++)                            \
                _mm_prefetch(a + (2 * RI + i) * lda + kk * sizeof(TA), _MM_HINT_T0); \
        __m512 vb[4];                                                         \
        TG_UNROLL16 for (int j = 0; j < RJ; j++)                                \
            vb[j] = VB((const TB *) (b + j * ldb) + kk);                      \
        TG_UNROLL16 for (int i = 0; i < RI; i++) {                              \
            const __m512 va = VA((const TA *) (a + i * lda) + kk);            \
            TG_UNROLL16 for (int j = 0; j < RJ; j++)                            \
                acc[j * RI + i] = _mm512_fmadd_ps(va, vb[j], acc[j * RI + i]); \
        }                                                                     \
    }                                                                         \
    const __m512 s = hsum16_n(acc, RI * RJ);                                  \
    if (kk < k) {   /* the tail in order, as TG_AVX512_TILE */                \
        float t[16];                                                          \
        _mm512_storeu_ps(t, s);                                               \
        for (int j = 0; j < RJ; j++)                                          \
            for (int i = 0; i < RI; i++) {                                    \
                const TA * x = (const TA *) (a + i * lda);                    \
                const TB * y = (const TB *) (b + j * ldb);                    \
                float r = t[j * RI + i];                                      \
                for (int64_t u = kk; u < k; u++) r = fmaf(SA(x, u), SB(y, u), r); \
                c[j * ldc + i] = r;                                           \
            }                                                                 \
        return;                                                               \
    }                                                                         \
    const __mmask16 rows = (__mmask16) ((1u << RI) - 1);                      \
    TG_UNROLL16 for (int j = 0; j < RJ; j++)                                    \
        _mm512_mask_storeu_ps(c + j * ldc, rows, j == 0 ? s :                 \
            _mm512_maskz_compress_ps((__mmask16) (rows << (j * RI)), s));     \
}
TG_AVX512_NTILE(ntile_f32_f32_avx512, float,     float, v16_f32, v16_f32, s_f32, s_f32)
TG_AVX512_NTILE(ntile_f16_f32_avx512, tg_fp16_t, float, v16_f16, v16_f32, s_f16, s_f32)

// rows in tiles of 16 / RJ (5 for 3 columns), the last ones in tiles of 8, 4, 2, 1
// (matmul's units are 24 rows: one at a time, 4 of every 24 rows went through
// single-row tiles: kq at 4096 cells slower than 6-row tiles)
TG_MM_NARROW(narrow_f32_f32_avx512, TG_AVX512, ntile_f32_f32_avx512, TG_NARROW_REST16, 16, 8, 5, 4)
TG_MM_NARROW(narrow_f16_f32_avx512, TG_AVX512, ntile_f16_f32_avx512, TG_NARROW_REST16, 16, 8, 5, 4)

#define TG_AVX512_DOT(NAME, TILE, TA, TB)                                     \
TG_AVX512 static float NAME(int64_t k, const TA * x, const TB * y) {         \
    float r;                                                                  \
    TILE(1, 1, k, (const char *) x, 0, (const char *) y, 0, &r, 0);           \
    return r;                                                                 \
}
TG_AVX512_DOT(dot_f32_f32_avx512,   tile_f32_f32_avx512,   float,     float)
TG_AVX512_DOT(dot_f16_f16_avx512,   tile_f16_f16_avx512,   tg_fp16_t, tg_fp16_t)
TG_AVX512_DOT(dot_bf16_bf16_avx512, tile_bf16_bf16_avx512, tg_bf16_t, tg_bf16_t)
#endif // TG_X86

// ---- dispatch ---------------------------------------------------------------

tg_mm_block_fn tg_mm_float_block(enum tg_mm_kind kind, int level) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512) {
        switch (kind) {
        case TG_MM_F32_F32:  return block_f32_f32_avx512;
        case TG_MM_F16_F32:  return block_f16_f32_avx512;
        case TG_MM_BF16_F32: return block_bf16_f32_avx512;
        default: break;
        }
    } else if (level >= TG_SIMD_AVX) {
        switch (kind) {
        case TG_MM_F32_F32:  return block_f32_f32_avx;
        case TG_MM_F16_F32:  return block_f16_f32_avx;
        case TG_MM_BF16_F32: return block_bf16_f32_avx;
        default: break;
        }
    }
#endif
    switch (kind) {
    case TG_MM_F16_F32:  return block_f16_f32_scalar;
    case TG_MM_BF16_F32: return block_bf16_f32_scalar;
    default:             return block_f32_f32_scalar;
    }
}

// The scalar level's narrow kernels: the block kernel, matrix by matrix.
#define TG_SCALAR_NARROW(NAME, BLOCK)                                         \
static void NAME(const struct tg_mm_args * g) {                               \
    struct tg_mm_args one = *g;                                               \
    for (int64_t m = 0; m < (g->nmat > 1 ? g->nmat : 1); m++) {               \
        one.a = g->a + m * g->mat_a;                                          \
        one.b = g->b + m * g->mat_b;                                          \
        one.c = g->c + m * g->mat_c;                                          \
        BLOCK(&one);                                                          \
    }                                                                         \
}
TG_SCALAR_NARROW(narrow_f32_f32_scalar,  block_f32_f32_scalar)
TG_SCALAR_NARROW(narrow_f16_f32_scalar,  block_f16_f32_scalar)
TG_SCALAR_NARROW(narrow_bf16_f32_scalar, block_bf16_f32_scalar)

tg_mm_block_fn tg_mm_float_block_narrow(enum tg_mm_kind kind, int level) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512 && (kind == TG_MM_F32_F32 || kind == TG_MM_F16_F32))
        return kind == TG_MM_F16_F32 ? narrow_f16_f32_avx512 : narrow_f32_f32_avx512;
    if (level >= TG_SIMD_AVX && (kind == TG_MM_F32_F32 || kind == TG_MM_F16_F32))
        return kind == TG_MM_F16_F32 ? narrow_f16_f32_avx : narrow_f32_f32_avx;
    if (level >= TG_SIMD_AVX) return tg_mm_float_block(kind, level);   // bf16: one matrix (nmat unused)
#endif
    (void) level;
    switch (kind) {
    case TG_MM_F16_F32:  return narrow_f16_f32_scalar;
    case TG_MM_BF16_F32: return narrow_bf16_f32_scalar;
    default:             return narrow_f32_f32_scalar;
    }
}

void tg_mm_outer_f32(int level, int64_t m, int64_t k, const float * a, size_t lda, const float * bv,
                     int nj, float * const * out) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX) { outer_avx(m, k, a, lda, bv, nj, out); return; }
#endif
    (void) level;
    outer_scalar(m, k, a, lda, bv, nj, out);
}

float tg_vec_dot_f32(int64_t n, const float * x, const float * y) {
    int level = tg_cpu_simd_level();
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512) return dot_f32_f32_avx512(n, x, y);
    if (level >= TG_SIMD_AVX)    return dot_f32_f32_avx(n, x, y);
#endif
    (void) level;
    return dot_f32_f32_scalar(n, x, y);
}

float tg_vec_dot_f16(int64_t n, const tg_fp16_t * x, const tg_fp16_t * y) {
    int level = tg_cpu_simd_level();
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512) return dot_f16_f16_avx512(n, x, y);
    if (level >= TG_SIMD_AVX)    return dot_f16_f16_avx(n, x, y);
#endif
    (void) level;
    return dot_f16_f16_scalar(n, x, y);
}

float tg_vec_dot_bf16(int64_t n, const tg_bf16_t * x, const tg_bf16_t * y) {
    int level = tg_cpu_simd_level();
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512) return dot_bf16_bf16_avx512(n, x, y);
    if (level >= TG_SIMD_AVX)    return dot_bf16_bf16_avx(n, x, y);
#endif
    (void) level;
    return dot_bf16_bf16_scalar(n, x, y);
}
