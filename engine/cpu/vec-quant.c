// vec-quant.c - dot products of Q8_0 / Q4_0 / IQ4_NL weight rows against Q8_0
// activation rows: the single dots of cpu-impl.h and the register-blocked
// block kernels used by matmul.c.
//
// Reduction order (every level, see vec-impl.h): per block of 32, the exact
// int32 sums of the 8 groups of 4 consecutive products (lane u = elements
// 4u..4u+3) are converted to f32 and multiply-added with d = dx*dy into 8 f32
// lane accumulators; after the last block the lanes are summed with the tree
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)). The avx and avx2 paths therefore give
// the same bits; the scalar path differs only where the compiler does not
// fuse the multiply-add.
//
// Q8_0 x Q8_0 products use maddubs(|x|, sign(y, x)), exact for the values a
// Q8_0 quantizer produces (-127..127): it saturates only when x and y are both
// -128 (never produced by tg_quantize_row_q8_0 or ggml's quantizer). Q4_0 x
// Q8_0 multiplies the unsigned nibbles and subtracts 8 * sum(y): exact for
// all inputs. Levels: scalar; avx (128-bit integer halves); avx2; at the
// avx512vnni level a 512-bit VNNI path (two blocks per register, its own lane
// order, below) whose vpdpbusd starts from the correction term (-8 * sum(y)
// for Q4_0, -128 * sum(x) with unsigned y + 128 for Q8_0: exact for all
// inputs), so a product costs one vpdpbusd and the f32 update.
#include "vec-impl.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

// ---- scalar ---------------------------------------------------------------

// Element e (0..31) of a block, as a signed integer.
static inline int q8_at(const tg_block_q8_0 * b, int e) { return b->qs[e]; }
static inline int q4_at(const tg_block_q4_0 * b, int e) {
    return e < 16 ? (b->qs[e] & 0x0F) - 8 : (b->qs[e - 16] >> 4) - 8;
}

#define TG_SCALAR_QDOT(NAME, BX, AT)                                          \
static float NAME(int64_t nb, const BX * x, const tg_block_q8_0 * y) {       \
    float s[8] = {0};                                                         \
    for (int64_t b = 0; b < nb; b++) {                                        \
        const float d = tg_fp16_to_fp32(x[b].d) * tg_fp16_to_fp32(y[b].d);    \
        for (int u = 0; u < 8; u++) {                                         \
            int p = 0;                                                        \
            for (int t = 4 * u; t < 4 * u + 4; t++) p += AT(&x[b], t) * y[b].qs[t]; \
            s[u] += (float) p * d;                                            \
        }                                                                     \
    }                                                                         \
    return tree8(s);                                                          \
}
TG_SCALAR_QDOT(dot_q8_q8_scalar, tg_block_q8_0, q8_at)
TG_SCALAR_QDOT(dot_q4_q8_scalar, tg_block_q4_0, q4_at)
static inline int iq4_at(const tg_block_iq4_nl * b, int e) {
    return e < 16 ? tg_iq4nl_values[b->qs[e] & 0x0F] : tg_iq4nl_values[b->qs[e - 16] >> 4];
}
TG_SCALAR_QDOT(dot_iq4_q8_scalar, tg_block_iq4_nl, iq4_at)

#define TG_SCALAR_QBLOCK(NAME, DOT, BX)                                       \
static void NAME(const struct tg_mm_args * g) {                               \
    const int64_t nb = g->k / TG_QK8_0;                                       \
    for (int64_t i = 0; i < g->ni; i++) {                                     \
        const BX * x = (const BX *) (g->a + i * g->lda);                      \
        for (int64_t j = 0; j < g->nj; j++) {                                 \
            g->c[j * g->ldc + i] = DOT(nb, x, (const tg_block_q8_0 *) (g->b + j * g->ldb)); \
        }                                                                     \
    }                                                                         \
}
TG_SCALAR_QBLOCK(block_q8_q8_scalar, dot_q8_q8_scalar, tg_block_q8_0)
TG_SCALAR_QBLOCK(block_q4_q8_scalar, dot_q4_q8_scalar, tg_block_q4_0)
TG_SCALAR_QBLOCK(block_iq4_q8_scalar, dot_iq4_q8_scalar, tg_block_iq4_nl)

#ifdef TG_X86
// Bytes ahead in a weight row that single-column (generation) tiles prefetch.
#define TG_PREFETCH 1024

// ---- avx (+fma, f16c): 128-bit integer halves -------------------------------
#define TG_AVX __attribute__((target("avx,fma,f16c")))
#define TG_AVX_INLINE static inline __attribute__((always_inline, target("avx,fma,f16c")))

TG_AVX_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TG_AVX_INLINE __m256 bcast_d_avx(tg_fp16_t d) { return _mm256_set1_ps(_cvtsh_ss(d)); }

// Q8_0 x Q8_0, RI x RJ tile. Per block: the RJ activation blocks are held
// (two 16-byte halves each), every weight block is loaded once, and each
// pair takes maddubs(|x|, sign(y, x)) -> madd -> 8 int32 lanes -> f32.
TG_AVX_INLINE void tile_q8_q8_avx(const int RI, const int RJ, int64_t nb,
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {
    __m256 acc[4][4];
    const __m128i ones = _mm_set1_epi16(1);
    TG_UNROLL for (int i = 0; i < RI; i++)
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm256_setzero_ps();
    for (int64_t blk = 0; blk < nb; blk++) {
        __m128i yl[4], yh[4];
        __m256 dy[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            yl[j] = _mm_loadu_si128((const __m128i *) by->qs);
            yh[j] = _mm_loadu_si128((const __m128i *) (by->qs + 16));
            dy[j] = bcast_d_avx(by->d);
        }
        TG_UNROLL for (int i = 0; i < RI; i++) {
            const tg_block_q8_0 * bx = (const tg_block_q8_0 *) (a + i * lda) + blk;
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);
            const __m128i xl = _mm_loadu_si128((const __m128i *) bx->qs);
            const __m128i xh = _mm_loadu_si128((const __m128i *) (bx->qs + 16));
            const __m128i al = _mm_sign_epi8(xl, xl), ah = _mm_sign_epi8(xh, xh);
            const __m256 dx = bcast_d_avx(bx->d);
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                __m128i pl = _mm_madd_epi16(_mm_maddubs_epi16(al, _mm_sign_epi8(yl[j], xl)), ones);
                __m128i ph = _mm_madd_epi16(_mm_maddubs_epi16(ah, _mm_sign_epi8(yh[j], xh)), ones);
                __m256 p = _mm256_cvtepi32_ps(_mm256_set_m128i(ph, pl));
                acc[i][j] = _mm256_fmadd_ps(p, _mm256_mul_ps(dx, dy[j]), acc[i][j]);
            }
        }
    }
    TG_UNROLL for (int j = 0; j < RJ; j++)
    TG_UNROLL for (int i = 0; i < RI; i++)
        c[j * ldc + i] = hsum8(acc[i][j]);
}

// Q4_0 x Q8_0, RI x RJ tile. The nibbles stay unsigned: each lane is
// sum(nib * y) - 8 * sum(y), the same exact integers as sum((nib - 8) * y);
// 8 * sum(y) is taken once per activation block.
TG_AVX_INLINE void tile_q4_q8_avx(const int RI, const int RJ, int64_t nb,
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {
    __m256 acc[4][4];
    const __m128i ones = _mm_set1_epi16(1), ones8 = _mm_set1_epi8(1), m4 = _mm_set1_epi8(0x0F);
    TG_UNROLL for (int i = 0; i < RI; i++)
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm256_setzero_ps();
    for (int64_t blk = 0; blk < nb; blk++) {
        __m128i yl[4], yh[4], sl[4], sh[4];
        __m256 dy[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            yl[j] = _mm_loadu_si128((const __m128i *) by->qs);
            yh[j] = _mm_loadu_si128((const __m128i *) (by->qs + 16));
            sl[j] = _mm_slli_epi32(_mm_madd_epi16(_mm_maddubs_epi16(ones8, yl[j]), ones), 3);
            sh[j] = _mm_slli_epi32(_mm_madd_epi16(_mm_maddubs_epi16(ones8, yh[j]), ones), 3);
            dy[j] = bcast_d_avx(by->d);
        }
        TG_UNROLL for (int i = 0; i < RI; i++) {
            const tg_block_q4_0 * bx = (const tg_block_q4_0 *) (a + i * lda) + blk;
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);
            const __m128i t = _mm_loadu_si128((const __m128i *) bx->qs);
            const __m128i xl = _mm_and_si128(t, m4), xh = _mm_and_si128(_mm_srli_epi16(t, 4), m4);
            const __m256 dx = bcast_d_avx(bx->d);
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                __m128i pl = _mm_sub_epi32(_mm_madd_epi16(_mm_maddubs_epi16(xl, yl[j]), ones), sl[j]);
                __m128i ph = _mm_sub_epi32(_mm_madd_epi16(_mm_maddubs_epi16(xh, yh[j]), ones), sh[j]);
                __m256 p = _mm256_cvtepi32_ps(_mm256_set_m128i(ph, pl));
                acc[i][j] = _mm256_fmadd_ps(p, _mm256_mul_ps(dx, dy[j]), acc[i][j]);
            }
        }
    }
    TG_UNROLL for (int j = 0; j < RJ; j++)
    TG_UNROLL for (int i = 0; i < RI; i++)
        c[j * ldc + i] = hsum8(acc[i][j]);
}

TG_MM_BLOCK(block_q8_q8_avx, TG_AVX, tile_q8_q8_avx, 2, 2, 4, TG_QK8_0)
TG_MM_BLOCK(block_q4_q8_avx, TG_AVX, tile_q4_q8_avx, 2, 2, 4, TG_QK8_0)

// ---- avx2 (+fma, f16c): 256-bit integer ops ---------------------------------
#define TG_AVX2 __attribute__((target("avx2,avx,fma,f16c")))
#define TG_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,avx,fma,f16c")))

TG_AVX2_INLINE __m256i q8_avx2(const tg_block_q8_0 * b) {
    return _mm256_loadu_si256((const __m256i *) b->qs);
}
#define TG_AVX2_QTILE(NAME, BX, LOADX)                                        \
TG_AVX2_INLINE void NAME(const int RI, const int RJ, int64_t nb,              \
        const char * a, size_t lda, const char * b, size_t ldb,              \
        float * c, size_t ldc) {                                              \
    __m256 acc[4][4];                                                         \
    const __m256i ones = _mm256_set1_epi16(1);                                \
    TG_UNROLL for (int i = 0; i < RI; i++)                      \
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm256_setzero_ps(); \
    for (int64_t blk = 0; blk < nb; blk++) {                                  \
        __m256i x[4], ax[4];                                                  \
        __m256 dx[4];                                                         \
        TG_UNROLL for (int i = 0; i < RI; i++) {                \
            const BX * bx = (const BX *) (a + i * lda) + blk;                 \
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0); \
            x[i] = LOADX(bx);                                                 \
            ax[i] = _mm256_sign_epi8(x[i], x[i]);                             \
            dx[i] = _mm256_set1_ps(_cvtsh_ss(bx->d));                         \
        }                                                                     \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                \
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk; \
            const __m256i y = q8_avx2(by);                                    \
            const __m256 dy = _mm256_set1_ps(_cvtsh_ss(by->d));               \
            TG_UNROLL for (int i = 0; i < RI; i++) {            \
                __m256i p = _mm256_maddubs_epi16(ax[i], _mm256_sign_epi8(y, x[i])); \
                __m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));    \
                acc[i][j] = _mm256_fmadd_ps(s, _mm256_mul_ps(dx[i], dy), acc[i][j]); \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    TG_UNROLL for (int j = 0; j < RJ; j++)                      \
    TG_UNROLL for (int i = 0; i < RI; i++)                      \
        c[j * ldc + i] = hsum8(acc[i][j]);                                    \
}

TG_AVX2_QTILE(tile_q8_q8_avx2, tg_block_q8_0, q8_avx2)

// Q4_0 x Q8_0 with unsigned nibbles: lane = sum(nib * y) - 8 * sum(y) (see
// tile_q4_q8_avx); the activation side is held per block.
TG_AVX2_INLINE void tile_q4_q8_avx2(const int RI, const int RJ, int64_t nb,
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {
    __m256 acc[4][4];
    const __m256i ones = _mm256_set1_epi16(1), ones8 = _mm256_set1_epi8(1);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    TG_UNROLL for (int i = 0; i < RI; i++)
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm256_setzero_ps();
    for (int64_t blk = 0; blk < nb; blk++) {
        __m256i y[4], ys[4];
        __m256 dy[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            y[j] = q8_avx2(by);
            ys[j] = _mm256_slli_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ones8, y[j]), ones), 3);
            dy[j] = _mm256_set1_ps(_cvtsh_ss(by->d));
        }
        TG_UNROLL for (int i = 0; i < RI; i++) {
            const tg_block_q4_0 * bx = (const tg_block_q4_0 *) (a + i * lda) + blk;
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);
            const __m128i t = _mm_loadu_si128((const __m128i *) bx->qs);
            const __m256i x = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), m4), _mm_and_si128(t, m4));
            const __m256 dx = _mm256_set1_ps(_cvtsh_ss(bx->d));
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(x, y[j]), ones), ys[j]);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx, dy[j]), acc[i][j]);
            }
        }
    }
    TG_UNROLL for (int j = 0; j < RJ; j++)
    TG_UNROLL for (int i = 0; i < RI; i++)
        c[j * ldc + i] = hsum8(acc[i][j]);
}
// IQ4_NL: the nibbles looked up in the 16-entry table (signed), then as Q8_0.
TG_AVX2_INLINE __m256i iq4_avx2(const tg_block_iq4_nl * b) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i tab = _mm_loadu_si128((const __m128i *) tg_iq4nl_values);
    const __m128i t = _mm_loadu_si128((const __m128i *) b->qs);
    return _mm256_set_m128i(_mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(t, 4), m4)),
                            _mm_shuffle_epi8(tab, _mm_and_si128(t, m4)));
}
TG_AVX2_QTILE(tile_iq4_q8_avx2, tg_block_iq4_nl, iq4_avx2)

TG_MM_BLOCK(block_q8_q8_avx2, TG_AVX2, tile_q8_q8_avx2, 4, 2, 4, TG_QK8_0)
TG_MM_BLOCK(block_iq4_q8_avx2, TG_AVX2, tile_iq4_q8_avx2, 4, 2, 4, TG_QK8_0)
TG_MM_BLOCK(block_q4_q8_avx2, TG_AVX2, tile_q4_q8_avx2, 4, 2, 4, TG_QK8_0)

// ---- avx512 with BW and VNNI: two blocks per 512-bit register --------------
// Used at the avx512 level when the CPU also has AVX512-BW and VNNI. Its own
// order: 16 f32 lanes, lanes 0-7 take the even blocks and lanes 8-15 the odd
// ones (a missing last odd block adds exact zeros), the per-block int32
// lanes being the same exact sums as above (vpdpbusd does not saturate);
// at the end lane l + lane l+8, then the 8-lane tree.
#define TG_VNNI_TARGET "avx512f,avx512bw,avx512vnni,avx2,avx,fma,f16c"
#define TG_VNNI __attribute__((target(TG_VNNI_TARGET)))
#define TG_VNNI_INLINE static inline __attribute__((always_inline, target(TG_VNNI_TARGET)))

// Quants of blocks b[0] and (if two) b[1] in the low and high halves.
TG_VNNI_INLINE __m512i q8x2_vnni(const tg_block_q8_0 * b, bool two) {
    __m256i lo = _mm256_loadu_si256((const __m256i *) b[0].qs);
    __m256i hi = two ? _mm256_loadu_si256((const __m256i *) b[1].qs) : _mm256_setzero_si256();
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// [d0 x 8 | d1 x 8] (d1 = 0 when there is no second block): both halves
// converted by one vcvtph2ps and spread by one permute.
TG_VNNI_INLINE __m512 d2_vnni(tg_fp16_t d0, tg_fp16_t d1, bool two) {
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const uint32_t h = (uint32_t) d0 | (two ? (uint32_t) d1 << 16 : 0u);
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int) h));
    return _mm512_permutexvar_ps(idx, _mm512_zextps128_ps512(f));
}
// The Q4_0 tiles use an interleaved lane order so that the nibbles of two
// blocks unpack with one shift and one mask: bytes [x0 e0-15 | x1 e0-15 |
// x0 e16-31 | x1 e16-31], i.e. int32 lanes 0-3 and 8-11 hold groups 0-3
// and 4-7 of the even block, lanes 4-7 and 12-15 those of the odd one.
// The activations and scales are loaded in the same order, and
// hsum16i_vnni puts the lanes back in the order above before the same sums.
TG_VNNI_INLINE __m512i q4x2i_vnni(const tg_block_q4_0 * b, bool two) {
    const __m128i t0 = _mm_loadu_si128((const __m128i *) b[0].qs);
    const __m128i t1 = two ? _mm_loadu_si128((const __m128i *) b[1].qs) : _mm_setzero_si128();
    const __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(t0), t1, 1);
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
}
TG_VNNI_INLINE __m512i q8x2i_vnni(const tg_block_q8_0 * b, bool two) {
    const __m128i a0 = _mm_loadu_si128((const __m128i *) b[0].qs);
    const __m128i a1 = _mm_loadu_si128((const __m128i *) (b[0].qs + 16));
    const __m128i b0 = two ? _mm_loadu_si128((const __m128i *) b[1].qs) : _mm_setzero_si128();
    const __m128i b1 = two ? _mm_loadu_si128((const __m128i *) (b[1].qs + 16)) : _mm_setzero_si128();
    const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(a0), b0, 1);
    const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(a1), b1, 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// [d0 x 4 | d1 x 4 | d0 x 4 | d1 x 4] (d1 = 0 when there is no second block).
TG_VNNI_INLINE __m512 d2i_vnni(tg_fp16_t d0, tg_fp16_t d1, bool two) {
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0);
    const uint32_t h = (uint32_t) d0 | (two ? (uint32_t) d1 << 16 : 0u);
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int) h));
    return _mm512_permutexvar_ps(idx, _mm512_zextps128_ps512(f));
}
TG_VNNI_INLINE float hsum16_vnni(__m512 v) {
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return hsum8(_mm256_add_ps(lo, hi));
}
// hsum16_vnni of the interleaved order: lanes permuted to [even | odd] first.
TG_VNNI_INLINE float hsum16i_vnni(__m512 v) {
    const __m512i idx = _mm512_set_epi32(15, 14, 13, 12, 7, 6, 5, 4, 11, 10, 9, 8, 3, 2, 1, 0);
    return hsum16_vnni(_mm512_permutexvar_ps(idx, v));
}

// Signed 8-bit weights (Q8_0, or IQ4_NL through its table) x Q8_0, RI x RJ
// tile. The activations are made unsigned (y + 128, one xor per activation
// block) so vpdpbusd takes them against the signed weights; the accumulator
// starts at -128 * sum(x) per group of 4 (once per weight block), so each lane
// is exactly sum(x * y) as above, for all inputs.
#define TG_VNNI_Q8TILE(NAME, BX, LOADX2) \
TG_VNNI_INLINE void NAME(const int RI, const int RJ, int64_t nb,                                          \
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {                  \
    __m512 acc[4][4];                                                                                     \
    const __m512i c128 = _mm512_set1_epi8((char) 0x80);                                                   \
    TG_UNROLL for (int i = 0; i < RI; i++)                                                                \
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm512_setzero_ps();                               \
    for (int64_t blk = 0; blk < nb; blk += 2) {                                                           \
        const bool two = blk + 1 < nb;                                                                    \
        __m512i yu[4];                                                                                    \
        __m512 dy[4];                                                                                     \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                                                          \
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;                       \
            yu[j] = _mm512_xor_si512(q8x2_vnni(by, two), c128);                                           \
            dy[j] = d2_vnni(by[0].d, two ? by[1].d : 0, two);                                             \
        }                                                                                                 \
        TG_UNROLL for (int i = 0; i < RI; i++) {                                                          \
            const BX * bx = (const BX *) (a + i * lda) + blk;                                             \
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);                      \
            const __m512i x = LOADX2(bx, two);                                                            \
            const __m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),                                 \
                                                  _mm512_dpbusd_epi32(_mm512_setzero_si512(), c128, x));  \
            const __m512 dx = d2_vnni(bx[0].d, two ? bx[1].d : 0, two);                                   \
            TG_UNROLL for (int j = 0; j < RJ; j++) {                                                      \
                const __m512i p = _mm512_dpbusd_epi32(corr, yu[j], x);                                    \
                acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, dy[j]), acc[i][j]);  \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    TG_UNROLL for (int j = 0; j < RJ; j++)                                                                \
    TG_UNROLL for (int i = 0; i < RI; i++)                                                                \
        c[j * ldc + i] = hsum16_vnni(acc[i][j]);                                                          \
}                                                                                                         \

TG_VNNI_Q8TILE(tile_q8_q8_vnni, tg_block_q8_0, q8x2_vnni)

// The table values of two IQ4_NL blocks, each in element order.
TG_VNNI_INLINE __m512i iq4x2_vnni(const tg_block_iq4_nl * b, bool two) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i tab = _mm_loadu_si128((const __m128i *) tg_iq4nl_values);
    __m128i t0 = _mm_loadu_si128((const __m128i *) b[0].qs);
    __m256i v0 = _mm256_set_m128i(_mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(t0, 4), m4)),
                                  _mm_shuffle_epi8(tab, _mm_and_si128(t0, m4)));
    __m256i v1 = _mm256_setzero_si256();
    if (two) {
        __m128i t1 = _mm_loadu_si128((const __m128i *) b[1].qs);
        v1 = _mm256_set_m128i(_mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(t1, 4), m4)),
                              _mm_shuffle_epi8(tab, _mm_and_si128(t1, m4)));
    }
    return _mm512_inserti64x4(_mm512_castsi256_si512(v0), v1, 1);
}
TG_VNNI_Q8TILE(tile_iq4_q8_vnni, tg_block_iq4_nl, iq4x2_vnni)

TG_VNNI_INLINE void tile_q4_q8_vnni(const int RI, const int RJ, int64_t nb,
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {
    __m512 acc[8][4];
    const __m512i ones8 = _mm512_set1_epi8(1);
    TG_UNROLL for (int i = 0; i < RI; i++)
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = _mm512_setzero_ps();
    for (int64_t blk = 0; blk < nb; blk += 2) {
        const bool two = blk + 1 < nb;
        __m512i y[4], nys[4];   // nys: -8 * sum(y) per group of 4, where vpdpbusd starts
        __m512 dy[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            y[j] = q8x2i_vnni(by, two);
            nys[j] = _mm512_sub_epi32(_mm512_setzero_si512(),
                     _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones8, y[j]), 3));
            dy[j] = d2i_vnni(by[0].d, two ? by[1].d : 0, two);
        }
        TG_UNROLL for (int i = 0; i < RI; i++) {
            const tg_block_q4_0 * bx = (const tg_block_q4_0 *) (a + i * lda) + blk;
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);
            const __m512i x = q4x2i_vnni(bx, two);
            const __m512 dx = d2i_vnni(bx[0].d, two ? bx[1].d : 0, two);
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                const __m512i p = _mm512_dpbusd_epi32(nys[j], x, y[j]);
                acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, dy[j]), acc[i][j]);
            }
        }
    }
    TG_UNROLL for (int j = 0; j < RJ; j++)
    TG_UNROLL for (int i = 0; i < RI; i++)
        c[j * ldc + i] = hsum16i_vnni(acc[i][j]);
}

TG_MM_BLOCK(block_q8_q8_vnni, TG_VNNI, tile_q8_q8_vnni, 4, 4, 4, TG_QK8_0)
TG_MM_BLOCK(block_iq4_q8_vnni, TG_VNNI, tile_iq4_q8_vnni, 4, 4, 4, TG_QK8_0)
TG_MM_BLOCK(block_q4_q8_vnni, TG_VNNI, tile_q4_q8_vnni, 4, 4, 8, TG_QK8_0)

// Quantizes n floats (n multiple of 32) to Q8_0 with the same bytes as
// tg_quantize_row_q8_0: amax over |x| skipping NaN, d = amax / 127,
// q = round-half-even(x * (1/d)), NaN -> 0.
TG_AVX static void quantize_q8_avx(const float * x, tg_block_q8_0 * y, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / TG_QK8_0; b++) {
        const float * xb = x + b * TG_QK8_0;
        __m256 v[4], mx = _mm256_setzero_ps();
        for (int t = 0; t < 4; t++) {
            v[t] = _mm256_loadu_ps(xb + 8 * t);
            mx = _mm256_max_ps(_mm256_andnot_ps(sign, v[t]), mx);  // NaN in the first operand: keeps mx
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = tg_fp32_to_fp16(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m128i q32[8];
        for (int t = 0; t < 4; t++) {
            __m256 s = _mm256_mul_ps(v[t], vid);
            s = _mm256_and_ps(s, _mm256_cmp_ps(s, s, _CMP_ORD_Q));   // NaN -> 0
            __m256i r = _mm256_cvtps_epi32(_mm256_round_ps(s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            q32[2 * t] = _mm256_castsi256_si128(r);
            q32[2 * t + 1] = _mm256_extractf128_si256(r, 1);
        }
        // keep the low byte of each int32 (what the scalar conversion gives,
        // also for the 0x80000000 of x * Inf when d is subnormal and 1/d overflows)
        const __m128i low = _mm_set1_epi32(0xFF);
        for (int t = 0; t < 8; t++) q32[t] = _mm_and_si128(q32[t], low);
        __m128i lo = _mm_packus_epi16(_mm_packus_epi32(q32[0], q32[1]), _mm_packus_epi32(q32[2], q32[3]));
        __m128i hi = _mm_packus_epi16(_mm_packus_epi32(q32[4], q32[5]), _mm_packus_epi32(q32[6], q32[7]));
        _mm_storeu_si128((__m128i *) y[b].qs, lo);
        _mm_storeu_si128((__m128i *) (y[b].qs + 16), hi);
    }
}

// Quantizes n floats (n multiple of 256) to Q8_K with the same bytes as
// tg_quantize_row_q8_K: the first element of largest |x| (NaN skipped) sets
// iscale = -127 / max, q = round-half-even(iscale * x) (NaN -> 0), d = 1 / iscale.
TG_AVX2 static void quantize_q8K_avx2(const float * x, tg_block_q8_K * y, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        __m256 vmax = _mm256_setzero_ps();
        for (int t = 0; t < 32; t++) {
            __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * t));
            a = _mm256_and_ps(a, _mm256_cmp_ps(a, a, _CMP_ORD_Q));          // NaN -> 0
            vmax = _mm256_max_ps(vmax, a);
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof(y[b]));
            continue;
        }
        float max = 0.0f;   // the first element whose |x| is amax
        const __m256 va = _mm256_set1_ps(amax);
        for (int t = 0; t < 32; t++) {
            const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * t));
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(a, va, _CMP_EQ_OQ));
            if (hit) { max = x[8 * t + __builtin_ctz((unsigned) hit)]; break; }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        for (int t = 0; t < 8; t++) {
            __m256i q[4];
            for (int u = 0; u < 4; u++) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * t + 8 * u), vs);
                v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));   // NaN -> 0
                // clamped like the scalar path (only an overflowing iscale goes past)
                v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
                q[u] = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            }
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            const __m256i o = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *) (y[b].qs + 32 * t), o);
        }
        for (int g = 0; g < 16; g++) {
            const __m128i v = _mm_loadu_si128((const __m128i *) (y[b].qs + 16 * g));
            const __m128i s16 = _mm_maddubs_epi16(_mm_set1_epi8(1), v);
            const __m128i s32 = _mm_madd_epi16(s16, _mm_set1_epi16(1));
            __m128i t = _mm_add_epi32(s32, _mm_shuffle_epi32(s32, 0x4E));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
            y[b].bsums[g] = (int16_t) _mm_cvtsi128_si32(t);
        }
        y[b].d = 1.0f / iscale;
    }
}

TG_MM_DOT(dot_q8_q8_avx,  TG_AVX,  tile_q8_q8_avx,  tg_block_q8_0, tg_block_q8_0)
TG_MM_DOT(dot_q4_q8_avx,  TG_AVX,  tile_q4_q8_avx,  tg_block_q4_0, tg_block_q8_0)
TG_MM_DOT(dot_q8_q8_avx2, TG_AVX2, tile_q8_q8_avx2, tg_block_q8_0, tg_block_q8_0)
TG_MM_DOT(dot_q4_q8_avx2, TG_AVX2, tile_q4_q8_avx2, tg_block_q4_0, tg_block_q8_0)
TG_MM_DOT(dot_q8_q8_vnni, TG_VNNI, tile_q8_q8_vnni, tg_block_q8_0, tg_block_q8_0)
TG_MM_DOT(dot_q4_q8_vnni, TG_VNNI, tile_q4_q8_vnni, tg_block_q4_0, tg_block_q8_0)
#endif // TG_X86

// ---- dispatch ---------------------------------------------------------------

tg_mm_block_fn tg_mm_quant_block(enum tg_mm_kind kind, int level) {
    const bool q4 = kind == TG_MM_Q4_Q8;
    if (kind == TG_MM_IQ4NL_Q8) {   // no 128-bit path: the avx level takes the scalar one
#ifdef TG_X86
        if (level >= TG_SIMD_AVX512VNNI) return block_iq4_q8_vnni;
        if (level >= TG_SIMD_AVX2) return block_iq4_q8_avx2;
#endif
        return block_iq4_q8_scalar;
    }
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512VNNI) return q4 ? block_q4_q8_vnni : block_q8_q8_vnni;
    if (level >= TG_SIMD_AVX2) return q4 ? block_q4_q8_avx2 : block_q8_q8_avx2;
    if (level >= TG_SIMD_AVX)  return q4 ? block_q4_q8_avx  : block_q8_q8_avx;
#endif
    (void) level;
    return q4 ? block_q4_q8_scalar : block_q8_q8_scalar;
}

void tg_mm_quantize_row_q8_0(int level, const float * x, tg_block_q8_0 * y, int64_t n) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX) { quantize_q8_avx(x, y, n); return; }
#endif
    (void) level;
    tg_quantize_row_q8_0(x, y, n);
}

void tg_mm_quantize_row_q8_K(int level, const float * x, tg_block_q8_K * y, int64_t n) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX2) { quantize_q8K_avx2(x, y, n); return; }
#endif
    (void) level;
    tg_quantize_row_q8_K(x, y, n);
}

float tg_vec_dot_q8_0_q8_0(int64_t n, const tg_block_q8_0 * x, const tg_block_q8_0 * y) {
    const int64_t nb = n / TG_QK8_0;
    const int level = tg_cpu_simd_level();
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512VNNI) return dot_q8_q8_vnni(nb, x, y);
    if (level >= TG_SIMD_AVX2) return dot_q8_q8_avx2(nb, x, y);
    if (level >= TG_SIMD_AVX)  return dot_q8_q8_avx(nb, x, y);
#endif
    (void) level;
    return dot_q8_q8_scalar(nb, x, y);
}

float tg_vec_dot_q4_0_q8_0(int64_t n, const tg_block_q4_0 * x, const tg_block_q8_0 * y) {
    const int64_t nb = n / TG_QK8_0;
    const int level = tg_cpu_simd_level();
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512VNNI) return dot_q4_q8_vnni(nb, x, y);
    if (level >= TG_SIMD_AVX2) return dot_q4_q8_avx2(nb, x, y);
    if (level >= TG_SIMD_AVX)  return dot_q4_q8_avx(nb, x, y);
#endif
    (void) level;
    return dot_q4_q8_scalar(nb, x, y);
}
