// vec-quant.c - dot products of Q8_0 / Q4_0 / Q5_0 / IQ4_NL weight rows against Q8_0
// activation rows: the single dots of cpu-impl.h and the register-blocked
// block kernels used by matmul.c.
//
// What every element is (at every level, bit for bit):
// per block of 32, the exact int32 sum s of the 32 products, then
//   acc = fma((float) s, dx * dy, acc)
// block after block from acc = 0 (dx, dy the blocks' scales as f32). The
// integer sums are exact, so kernels are free to form them in any order or
// layout: the avx2 prompt kernels pack 8 weight rows into an interleaved
// panel (4 bytes of each row per 32-byte vector: one lane per row, no
// horizontal sums, the scales of 8 rows in one vector) and run it against 4
// activation columns at a time; generation streams one row at a time and
// reduces 4 blocks' lanes at once.
// Results are therefore the same for any tile, thread count or batch size,
// and the same at the scalar level (fmaf).
//
// Q8_0 x Q8_0 products use maddubs(|x|, sign(y, x)), exact for the values a
// Q8_0 quantizer produces (-127..127): it saturates only when x and y are both
// -128 (never produced by tg_quantize_row_q8_0 or ggml's quantizer). Q4_0 x
// Q8_0 multiplies the unsigned nibbles and subtracts 8 * sum(y): exact for
// all inputs (in the panel the nibble products of a block add up in int16:
// at most 8 * 2 * 15 * 128 in magnitude). Q5_0 (levels 0..31 with the high
// bit) does the same in generation (16 * sum(y) off; two maddubs still add
// up in int16) and packs its signed levels (-16..15) into prompt panels like
// Q8_0's. The avx512vnni level runs the same avx2 kernels with 256-bit
// vpdpbusd in place of maddubs/madd: signed weights as x + 128 against the
// signed activations, the sums starting from -128 * sum(y) (exact for all
// inputs), so the integers and therefore the bits are the same as at the
// other levels.
#include "vec-impl.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

// ---- scalar ---------------------------------------------------------------

// Element e (0..31) of a block, as a signed integer.
static inline int q8_at(const tg_block_q8_0 * b, int e) { return b->qs[e]; }
static inline int q4_at(const tg_block_q4_0 * b, int e) {
    return e < 16 ? (b->qs[e] & 0x0F) - 8 : (b->qs[e - 16] >> 4) - 8;
}

#define TG_SCALAR_QDOT(NAME, BX, AT)                                          \
static float NAME(int64_t nb, const BX * x, const tg_block_q8_0 * y) {       \
    float acc = 0.0f;                                                         \
    for (int64_t b = 0; b < nb; b++) {                                        \
        int32_t p = 0;                                                        \
        for (int t = 0; t < TG_QK8_0; t++) p += AT(&x[b], t) * y[b].qs[t];    \
        acc = fmaf((float) p, tg_fp16_to_fp32(x[b].d) * tg_fp16_to_fp32(y[b].d), acc); \
    }                                                                         \
    return acc;                                                               \
}
TG_SCALAR_QDOT(dot_q8_q8_scalar, tg_block_q8_0, q8_at)
TG_SCALAR_QDOT(dot_q4_q8_scalar, tg_block_q4_0, q4_at)
static inline int iq4_at(const tg_block_iq4_nl * b, int e) {
    return e < 16 ? tg_iq4nl_values[b->qs[e] & 0x0F] : tg_iq4nl_values[b->qs[e - 16] >> 4];
}
TG_SCALAR_QDOT(dot_iq4_q8_scalar, tg_block_iq4_nl, iq4_at)
// Q5_0: the nibble and bit e of qh as bit 4, minus 16.
static inline int q5_0_at(const tg_block_q5_0 * b, int e) {
    uint32_t qh;
    memcpy(&qh, b->qh, 4);
    const int nib = e < 16 ? (b->qs[e] & 0x0F) : (b->qs[e - 16] >> 4);
    return (nib | (int) (((qh >> e) & 1) << 4)) - 16;
}
TG_SCALAR_QDOT(dot_q5_0_q8_scalar, tg_block_q5_0, q5_0_at)

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
TG_SCALAR_QBLOCK(block_q5_0_q8_scalar, dot_q5_0_q8_scalar, tg_block_q5_0)

#ifdef TG_X86
// Bytes ahead in a weight row that single-column (generation) tiles prefetch.
#define TG_PREFETCH 1024

// ---- avx (+fma, f16c): 128-bit integer halves -------------------------------
#define TG_AVX __attribute__((target("avx,fma,f16c")))
#define TG_AVX_INLINE static inline __attribute__((always_inline, target("avx,fma,f16c")))

TG_AVX_INLINE int32_t hsum4i_avx(__m128i v) {
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
    return _mm_cvtsi128_si32(v);
}

// Signed 8-bit weights x Q8_0, RI x RJ tile. Per block: the RJ activation
// blocks are held (two 16-byte halves each), every weight block is loaded
// once (LOADX: its levels 0..15 and 16..31 as int8), and each pair takes
// maddubs(|x|, sign(y, x)) -> madd -> the block's int32 sum.
#define TG_AVX_S8TILE(NAME, BX, LOADX)                                                           \
TG_AVX_INLINE void NAME(const int RI, const int RJ, int64_t nb,                                  \
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {        \
    float acc[4][4];                                                                             \
    const __m128i ones = _mm_set1_epi16(1);                                                      \
    TG_UNROLL for (int i = 0; i < RI; i++)                                                       \
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = 0.0f;                                     \
    for (int64_t blk = 0; blk < nb; blk++) {                                                     \
        __m128i yl[4], yh[4];                                                                    \
        float dy[4];                                                                             \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                                                 \
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;              \
            yl[j] = _mm_loadu_si128((const __m128i *) by->qs);                                   \
            yh[j] = _mm_loadu_si128((const __m128i *) (by->qs + 16));                            \
            dy[j] = _cvtsh_ss(by->d);                                                            \
        }                                                                                        \
        TG_UNROLL for (int i = 0; i < RI; i++) {                                                 \
            const BX * bx = (const BX *) (a + i * lda) + blk;                                    \
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);             \
            __m128i xl, xh;                                                                      \
            LOADX(bx, &xl, &xh);                                                                 \
            const __m128i al = _mm_sign_epi8(xl, xl), ah = _mm_sign_epi8(xh, xh);                \
            const float dx = _cvtsh_ss(bx->d);                                                   \
            TG_UNROLL for (int j = 0; j < RJ; j++) {                                             \
                __m128i pl = _mm_madd_epi16(_mm_maddubs_epi16(al, _mm_sign_epi8(yl[j], xl)), ones); \
                __m128i ph = _mm_madd_epi16(_mm_maddubs_epi16(ah, _mm_sign_epi8(yh[j], xh)), ones); \
                acc[i][j] = fmaf((float) hsum4i_avx(_mm_add_epi32(pl, ph)), dx * dy[j], acc[i][j]); \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    TG_UNROLL for (int j = 0; j < RJ; j++)                                                       \
    TG_UNROLL for (int i = 0; i < RI; i++)                                                       \
        c[j * ldc + i] = acc[i][j];                                                              \
}
TG_AVX_INLINE void q8_lh_avx(const tg_block_q8_0 * b, __m128i * xl, __m128i * xh) {
    *xl = _mm_loadu_si128((const __m128i *) b->qs);
    *xh = _mm_loadu_si128((const __m128i *) (b->qs + 16));
}
// Q5_0's levels (-16..15): the nibbles, bit e of qh as 0x10, minus 16.
TG_AVX_INLINE void q5_0_lh_avx(const tg_block_q5_0 * b, __m128i * xl, __m128i * xh) {
    uint32_t h;
    memcpy(&h, b->qh, 4);
    const __m128i m4 = _mm_set1_epi8(0x0F), c16 = _mm_set1_epi8(16), v = _mm_set1_epi32((int) h);
    const __m128i bit = _mm_set1_epi64x((long long) 0x8040201008040201ull);
    const __m128i t = _mm_loadu_si128((const __m128i *) b->qs);
    const __m128i hl = _mm_cmpeq_epi8(_mm_and_si128(_mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0,
                                                                                      1, 1, 1, 1, 1, 1, 1, 1)), bit), bit);
    const __m128i hh = _mm_cmpeq_epi8(_mm_and_si128(_mm_shuffle_epi8(v, _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2,
                                                                                      3, 3, 3, 3, 3, 3, 3, 3)), bit), bit);
    *xl = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(t, m4), _mm_and_si128(hl, c16)), c16);
    *xh = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(_mm_srli_epi16(t, 4), m4), _mm_and_si128(hh, c16)), c16);
}
// IQ4_NL's levels: the table values of the nibbles.
TG_AVX_INLINE void iq4_lh_avx(const tg_block_iq4_nl * b, __m128i * xl, __m128i * xh) {
    const __m128i m4 = _mm_set1_epi8(0x0F), tab = _mm_loadu_si128((const __m128i *) tg_iq4nl_values);
    const __m128i t = _mm_loadu_si128((const __m128i *) b->qs);
    *xl = _mm_shuffle_epi8(tab, _mm_and_si128(t, m4));
    *xh = _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(t, 4), m4));
}
TG_AVX_S8TILE(tile_q8_q8_avx, tg_block_q8_0, q8_lh_avx)
TG_AVX_S8TILE(tile_iq4_q8_avx, tg_block_iq4_nl, iq4_lh_avx)
TG_AVX_S8TILE(tile_q5_0_q8_avx, tg_block_q5_0, q5_0_lh_avx)

// Q4_0 x Q8_0, RI x RJ tile. The nibbles stay unsigned: each lane is
// sum(nib * y) - 8 * sum(y), the same exact integers as sum((nib - 8) * y);
// 8 * sum(y) is taken once per activation block.
TG_AVX_INLINE void tile_q4_q8_avx(const int RI, const int RJ, int64_t nb,
        const char * a, size_t lda, const char * b, size_t ldb, float * c, size_t ldc) {
    float acc[4][4];
    const __m128i ones = _mm_set1_epi16(1), ones8 = _mm_set1_epi8(1), m4 = _mm_set1_epi8(0x0F);
    TG_UNROLL for (int i = 0; i < RI; i++)
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[i][j] = 0.0f;
    for (int64_t blk = 0; blk < nb; blk++) {
        __m128i yl[4], yh[4], sl[4], sh[4];
        float dy[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            const tg_block_q8_0 * by = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            yl[j] = _mm_loadu_si128((const __m128i *) by->qs);
            yh[j] = _mm_loadu_si128((const __m128i *) (by->qs + 16));
            sl[j] = _mm_slli_epi32(_mm_madd_epi16(_mm_maddubs_epi16(ones8, yl[j]), ones), 3);
            sh[j] = _mm_slli_epi32(_mm_madd_epi16(_mm_maddubs_epi16(ones8, yh[j]), ones), 3);
            dy[j] = _cvtsh_ss(by->d);
        }
        TG_UNROLL for (int i = 0; i < RI; i++) {
            const tg_block_q4_0 * bx = (const tg_block_q4_0 *) (a + i * lda) + blk;
            if (RJ == 1) _mm_prefetch((const char *) bx + TG_PREFETCH, _MM_HINT_T0);
            const __m128i t = _mm_loadu_si128((const __m128i *) bx->qs);
            const __m128i xl = _mm_and_si128(t, m4), xh = _mm_and_si128(_mm_srli_epi16(t, 4), m4);
            const float dx = _cvtsh_ss(bx->d);
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                __m128i pl = _mm_sub_epi32(_mm_madd_epi16(_mm_maddubs_epi16(xl, yl[j]), ones), sl[j]);
                __m128i ph = _mm_sub_epi32(_mm_madd_epi16(_mm_maddubs_epi16(xh, yh[j]), ones), sh[j]);
                acc[i][j] = fmaf((float) hsum4i_avx(_mm_add_epi32(pl, ph)), dx * dy[j], acc[i][j]);
            }
        }
    }
    TG_UNROLL for (int j = 0; j < RJ; j++)
    TG_UNROLL for (int i = 0; i < RI; i++)
        c[j * ldc + i] = acc[i][j];
}

TG_MM_BLOCK(block_q8_q8_avx, TG_AVX, tile_q8_q8_avx, 2, 2, 4, TG_QK8_0)
TG_MM_BLOCK(block_q4_q8_avx, TG_AVX, tile_q4_q8_avx, 2, 2, 4, TG_QK8_0)
TG_MM_BLOCK(block_q5_0_q8_avx, TG_AVX, tile_q5_0_q8_avx, 2, 2, 4, TG_QK8_0)
TG_MM_BLOCK(block_iq4_q8_avx, TG_AVX, tile_iq4_q8_avx, 2, 2, 4, TG_QK8_0)

// ---- avx2 (+fma, f16c): 256-bit integer ops ---------------------------------
#define TG_AVX2 __attribute__((target("avx2,avx,fma,f16c")))
#define TG_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,avx,fma,f16c")))
// The avx512vnni level: the same kernels with 256-bit vpdpbusd (AVX512-VL + VNNI).
#define TG_VNNI_TARGET "avx512f,avx512bw,avx512vl,avx512vnni,avx2,avx,fma,f16c"
#define TG_VNNI __attribute__((target(TG_VNNI_TARGET)))
#define TG_VNNI_INLINE static inline __attribute__((always_inline, target(TG_VNNI_TARGET)))

// A block's 32 weights as bytes: signed for Q8_0 and IQ4_NL (the table
// values), the unsigned nibbles 0..15 for Q4_0.
TG_AVX2_INLINE __m256i q8_avx2(const tg_block_q8_0 * b) {
    return _mm256_loadu_si256((const __m256i *) b->qs);
}
TG_AVX2_INLINE __m256i q4u_avx2(const tg_block_q4_0 * b) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i t = _mm_loadu_si128((const __m128i *) b->qs);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), m4), _mm_and_si128(t, m4));
}
// Q5_0's levels, signed (-16..15).
TG_AVX2_INLINE __m256i q5s_avx2(const tg_block_q5_0 * b) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i t = _mm_loadu_si128((const __m128i *) b->qs);
    const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), m4), _mm_and_si128(t, m4));
    return _mm256_sub_epi8(_mm256_or_si256(nib, tg_q5hb_avx2(b->qh)), _mm256_set1_epi8(16));
}
TG_AVX2_INLINE __m256i iq4_avx2(const tg_block_iq4_nl * b) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i tab = _mm_loadu_si128((const __m128i *) tg_iq4nl_values);
    const __m128i t = _mm_loadu_si128((const __m128i *) b->qs);
    return _mm256_set_m128i(_mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(t, 4), m4)),
                            _mm_shuffle_epi8(tab, _mm_and_si128(t, m4)));
}


// The int32 partial sums of a weight block (8 lanes; their sum is the
// block's exact sum), in two flavours with the same lanes:
//   avx2: maddubs -> madd (signed weights through maddubs(|x|, sign(y, x)));
//   vnni: vpdpbusd (AVX512-VL, 256-bit). Signed weights go in as x + 128
//         (unsigned) and the accumulation starts at -128 * (the lane's sum
//         of y), ycorr_vnni, once per activation block: exact for all
//         inputs. Unsigned nibbles go in as they are.
// Every lane is the same integer either way, so the two levels give the
// same bits (the VNNI kernels are the avx2 ones with these helpers).
TG_AVX2_INLINE __m256i ycorr_avx2(__m256i y) { (void) y; return _mm256_setzero_si256(); }
TG_AVX2_INLINE __m256i part_s_avx2(__m256i x, __m256i y, __m256i yc) {
    (void) yc;
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)), _mm256_set1_epi16(1));
}
// ys: 8 * the partial sums of y (Q4_0's offset); part_r: no offset.
TG_AVX2_INLINE __m256i ysum8_avx2(__m256i y) {
    return _mm256_slli_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), y), _mm256_set1_epi16(1)), 3);
}
TG_AVX2_INLINE __m256i part_r_avx2(__m256i x, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}
TG_AVX2_INLINE __m256i part_u_avx2(__m256i x, __m256i y, __m256i ys) {
    return _mm256_sub_epi32(part_r_avx2(x, y), ys);
}
TG_VNNI_INLINE __m256i ycorr_vnni(__m256i y) {
    return _mm256_sub_epi32(_mm256_setzero_si256(),
                            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char) 0x80), y));
}
TG_VNNI_INLINE __m256i part_s_vnni(__m256i x, __m256i y, __m256i yc) {
    return _mm256_dpbusd_epi32(yc, _mm256_xor_si256(x, _mm256_set1_epi8((char) 0x80)), y);
}
TG_VNNI_INLINE __m256i part_r_vnni(__m256i x, __m256i y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), x, y);
}
TG_VNNI_INLINE __m256i part_u_vnni(__m256i x, __m256i y, __m256i ys) {
    return _mm256_dpbusd_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), ys), x, y);
}

// Lane u (u < 4): the sum of the 8 int32 lanes of p[u].
TG_AVX2_INLINE __m128i hsum4x8u_avx2(const __m256i p[4]) {
    const __m256i a01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[0], p[1]), _mm256_unpackhi_epi32(p[0], p[1]));
    const __m256i a23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2], p[3]), _mm256_unpackhi_epi32(p[2], p[3]));
    const __m256i b = _mm256_add_epi32(_mm256_unpacklo_epi64(a01, a23), _mm256_unpackhi_epi64(a01, a23));
    return _mm_add_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}

// The f16 scales of 4 consecutive blocks (stride bytes apart) in lanes 0..3,
// inserted in registers (a vector built through the stack would stall on
// store forwarding).
TG_AVX2_INLINE __m128i d4_avx2(const tg_fp16_t * d, size_t stride) {
    const char * p = (const char *) d;
    __m128i v = _mm_cvtsi32_si128(*(const tg_fp16_t *) p);
    v = _mm_insert_epi16(v, *(const tg_fp16_t *) (p + stride), 1);
    v = _mm_insert_epi16(v, *(const tg_fp16_t *) (p + 2 * stride), 2);
    return _mm_insert_epi16(v, *(const tg_fp16_t *) (p + 3 * stride), 3);
}

// The kernels below are macros over INL (the function attributes) and SFX
// (avx2 or vnni: which partial-sum helpers), instantiated once per level.

// Generation: one weight row against one activation row, one sequential
// stream through the row. Four blocks at a time: their integer sums reduced
// together (one lane per block), their scale products in one vector, then
// the four multiply-adds in block order.
#define TG_QGEMV(NAME, INL, SFX, BX, LOADX, Q4)                                                   \
INL float NAME(int64_t nb, const BX * x, const tg_block_q8_0 * y, const int32_t * ys8) {         \
    float acc = 0.0f;                                                                             \
    int64_t blk = 0;                                                                              \
    for (; blk + 4 <= nb; blk += 4) {                                                             \
        __m256i p[4];                                                                             \
        _mm_prefetch((const char *) (x + blk) + TG_PREFETCH, _MM_HINT_T0);                        \
        _mm_prefetch((const char *) (x + blk) + TG_PREFETCH + 64, _MM_HINT_T0);                   \
        TG_UNROLL for (int u = 0; u < 4; u++) {                                                   \
            const __m256i yv = q8_avx2(&y[blk + u]), xv = LOADX(&x[blk + u]);                     \
            p[u] = !Q4 ? part_s_##SFX(xv, yv, ycorr_##SFX(yv))                                    \
                 : ys8 ? part_r_##SFX(xv, yv) : part_u_##SFX(xv, yv, ysum8_avx2(yv));             \
        }                                                                                         \
        __m128i si = hsum4x8u_avx2(p);                                                            \
        if (Q4 && ys8) si = _mm_sub_epi32(si, _mm_loadu_si128((const __m128i *) (ys8 + blk)));   \
        float sv[4], dv[4];                                                                       \
        _mm_storeu_ps(sv, _mm_cvtepi32_ps(si));                                                   \
        _mm_storeu_ps(dv, _mm_mul_ps(_mm_cvtph_ps(d4_avx2(&x[blk].d, sizeof(BX))),                \
                                     _mm_cvtph_ps(d4_avx2(&y[blk].d, sizeof(tg_block_q8_0)))));   \
        TG_UNROLL for (int u = 0; u < 4; u++) acc = fmaf(sv[u], dv[u], acc);                       \
    }                                                                                             \
    for (; blk < nb; blk++) {                                                                     \
        const __m256i yv = q8_avx2(&y[blk]), xv = LOADX(&x[blk]);                                 \
        const __m256i z = _mm256_setzero_si256();                                                 \
        const __m256i p[4] = { Q4 ? part_u_##SFX(xv, yv, ysum8_avx2(yv))                          \
                                  : part_s_##SFX(xv, yv, ycorr_##SFX(yv)), z, z, z };             \
        acc = fmaf((float) _mm_cvtsi128_si32(hsum4x8u_avx2(p)), _cvtsh_ss(x[blk].d) * _cvtsh_ss(y[blk].d), acc); \
    }                                                                                             \
    return acc;                                                                                   \
}

// Generation, four weight rows (lda bytes apart, dense) against one
// activation row: per block, the four rows' integer sums in the lanes of one
// vector, then one vector multiply-add (lane r: row r's fmaf chain, the same
// bits as GEMV row by row) - four independent chains instead of one, and each
// activation block loaded once. The prefetch runs linearly through the next
// four rows (a stream per row left them waiting on memory).
#define TG_QGEMV4_Q8(NAME, INL, SFX)                                                              \
INL __m128 NAME(int64_t nb, const char * a, size_t lda, const tg_block_q8_0 * y, const int32_t * ys8) { \
    (void) ys8;                                                                                   \
    const tg_block_q8_0 * x[4];                                                                   \
    TG_UNROLL for (int r = 0; r < 4; r++) x[r] = (const tg_block_q8_0 *) (a + r * lda);           \
    __m128 acc = _mm_setzero_ps();                                                                \
    for (int64_t blk = 0; blk < nb; blk++) {                                                      \
        const __m256i yv = q8_avx2(&y[blk]), yc = ycorr_##SFX(yv);                                \
        __m256i p[4];                                                                             \
        TG_UNROLL for (int r = 0; r < 4; r++) {                                                   \
            _mm_prefetch(a + 4 * lda + (4 * blk + r) * sizeof(tg_block_q8_0), _MM_HINT_T0);       \
            p[r] = part_s_##SFX(q8_avx2(&x[r][blk]), yv, yc);                                     \
        }                                                                                         \
        const __m128 d = _mm_mul_ps(_mm_cvtph_ps(d4_avx2(&x[0][blk].d, lda)),                     \
                                    _mm_set1_ps(_cvtsh_ss(y[blk].d)));                            \
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4x8u_avx2(p)), d, acc);                            \
    }                                                                                             \
    return acc;                                                                                   \
}

// The 4-bit types: rows r and r+1 of a block in one vector (row r in the low
// 128 bits), the low and high nibbles in two; the activations' halves
// broadcast to both. Lane u of the result: the block sum of row u. Q4_0
// needs ys8 (8 * sum(y) per block).
TG_AVX2_INLINE __m128i pairsum4_avx2(__m256i p01, __m256i p23) {
    const __m256i t = _mm256_add_epi32(_mm256_unpacklo_epi32(p01, p23), _mm256_unpackhi_epi32(p01, p23));
    const __m256i u = _mm256_add_epi32(t, _mm256_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_unpacklo_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
}
// Rows r and r+1 of a 4-bit block (t: row r's 16 bytes in the low half, row
// r+1's in the high half) against the activation halves yl, yh broadcast to
// both: each row's four int32 partial sums in its half. Q4_0: the unsigned
// nibbles (the offset comes off later, once per block); Q5_0: the same with
// the high bits hbl / hbh (0x10 where set) or-ed in (levels 0..31: two
// maddubs still add up in int16); IQ4_NL: the table values, through |x| and
// sign(y, x) (avx2) or as value + 128 from -128 * the lane's sum of y, yc
// (vnni: nibcorr_vnni, once per activation block).
enum { TG_NIB_IQ4, TG_NIB_Q4, TG_NIB_Q5 };
TG_AVX2_INLINE __m256i nibcorr_avx2(int mode, __m256i yl, __m256i yh) {
    (void) mode; (void) yl; (void) yh;
    return _mm256_setzero_si256();
}
TG_AVX2_INLINE __m256i nibpair_avx2(__m256i t, __m256i yl, __m256i yh, int mode, __m256i hbl, __m256i hbh,
                                    __m256i yc) {
    (void) yc;
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256i xl = _mm256_and_si256(t, m4), xh = _mm256_and_si256(_mm256_srli_epi16(t, 4), m4);
    if (mode == TG_NIB_Q5) {
        xl = _mm256_or_si256(xl, hbl);
        xh = _mm256_or_si256(xh, hbh);
    }
    if (mode != TG_NIB_IQ4)
        return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(xl, yl), _mm256_maddubs_epi16(xh, yh)), ones);
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) tg_iq4nl_values));
    xl = _mm256_shuffle_epi8(tab, xl);
    xh = _mm256_shuffle_epi8(tab, xh);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(xl, xl), _mm256_sign_epi8(yl, xl)), ones),
                            _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(xh, xh), _mm256_sign_epi8(yh, xh)), ones));
}
TG_VNNI_INLINE __m256i nibcorr_vnni(int mode, __m256i yl, __m256i yh) {
    if (mode != TG_NIB_IQ4) return _mm256_setzero_si256();
    const __m256i c128 = _mm256_set1_epi8((char) 0x80);
    return _mm256_sub_epi32(_mm256_setzero_si256(),
                            _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), c128, yl), c128, yh));
}
TG_VNNI_INLINE __m256i nibpair_vnni(__m256i t, __m256i yl, __m256i yh, int mode, __m256i hbl, __m256i hbh,
                                    __m256i yc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i xl = _mm256_and_si256(t, m4), xh = _mm256_and_si256(_mm256_srli_epi16(t, 4), m4);
    if (mode == TG_NIB_Q5) {
        xl = _mm256_or_si256(xl, hbl);
        xh = _mm256_or_si256(xh, hbh);
    }
    if (mode == TG_NIB_IQ4) {   // the table's values + 128, unsigned
        const __m256i tab = _mm256_xor_si256(_mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *) tg_iq4nl_values)), _mm256_set1_epi8((char) 0x80));
        xl = _mm256_shuffle_epi8(tab, xl);
        xh = _mm256_shuffle_epi8(tab, xh);
    }
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(yc, xl, yl), xh, yh);
}
// The offset the unsigned levels carry, per block: 8 * sum(y) (Q4_0), 16 * sum(y) (Q5_0).
#define TG_NIB_OFFSET(MODE, ys8, blk) ((MODE) == TG_NIB_Q5 ? 2 * (ys8)[blk] : (ys8)[blk])
// Q5_0's high bits of the rows of pair h (0..3) of a block, q4[h / 2] holding
// the qh words of rows 4 * (h / 2) ..; zero for the other modes.
#define TG_NIB_HB(MODE, q4, h, hi) \
    ((MODE) == TG_NIB_Q5 ? tg_q5hb_pair_avx2((q4)[(h) / 2], (h) % 2, (hi)) : _mm256_setzero_si256())
#define TG_NIB_QH(MODE, x, g, blk, lda) \
    ((MODE) == TG_NIB_Q5 ? tg_w4x2_avx2((const char *) &(x)[4 * (g)][blk] + offsetof(tg_block_q5_0, qh), lda) \
                         : _mm256_setzero_si256())
#define TG_QGEMV4_NIB(NAME, INL, SFX, BX, MODE)                                                   \
INL __m128 NAME(int64_t nb, const char * a, size_t lda, const tg_block_q8_0 * y,                 \
                           const int32_t * ys8) {                                                 \
    const BX * x[4];                                                                              \
    TG_UNROLL for (int r = 0; r < 4; r++) x[r] = (const BX *) (a + r * lda);                      \
    __m128 acc = _mm_setzero_ps();                                                                \
    for (int64_t blk = 0; blk < nb; blk++) {                                                      \
        const __m256i yl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) y[blk].qs)); \
        const __m256i yh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) (y[blk].qs + 16))); \
        const __m256i yc = nibcorr_##SFX(MODE, yl, yh);                                           \
        __m256i p[2];                                                                             \
        const __m256i q4[1] = { TG_NIB_QH(MODE, x, 0, blk, lda) };                                \
        TG_UNROLL for (int h = 0; h < 2; h++) {                                                   \
            _mm_prefetch(a + 4 * lda + (4 * blk + 2 * h) * sizeof(BX), _MM_HINT_T0);             \
            _mm_prefetch(a + 4 * lda + (4 * blk + 2 * h + 1) * sizeof(BX), _MM_HINT_T0);         \
            p[h] = nibpair_##SFX(_mm256_loadu2_m128i((const __m128i *) x[2 * h + 1][blk].qs,      \
                                                     (const __m128i *) x[2 * h][blk].qs), yl, yh, MODE, \
                                 TG_NIB_HB(MODE, q4, h, 0), TG_NIB_HB(MODE, q4, h, 1), yc);       \
        }                                                                                         \
        __m128i si = pairsum4_avx2(p[0], p[1]);                                                   \
        if (MODE != TG_NIB_IQ4) si = _mm_sub_epi32(si, _mm_set1_epi32(TG_NIB_OFFSET(MODE, ys8, blk))); \
        const __m128 d = _mm_mul_ps(_mm_cvtph_ps(d4_avx2(&x[0][blk].d, lda)),                     \
                                    _mm_set1_ps(_cvtsh_ss(y[blk].d)));                            \
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(si), d, acc);                                          \
    }                                                                                             \
    return acc;                                                                                   \
}

// Eight rows (lda bytes apart, dense) against one activation row. The row
// sums of a block come out of the reduction in the lane order
// [0 2 4 6 | 1 3 5 7]; the scales are assembled in that order with scalar
// loads and shifts (integer units, beside the vector work) and the
// accumulator is put in row order once at the end. Lane r: row r's fmaf
// chain over the blocks, the same bits as GEMV row by row.
TG_AVX2_INLINE __m128i d8_avx2(const tg_fp16_t * d, size_t stride) {   // halves of rows 0 2 4 6 1 3 5 7
    const char * p = (const char *) d;
#define TG_H(r) (*(const tg_fp16_t *) (p + (r) * stride))
    // inserted from memory (one load+insert each), two chains of four
    __m128i lo = _mm_cvtsi32_si128(TG_H(0)), hi = _mm_cvtsi32_si128(TG_H(1));
    lo = _mm_insert_epi16(lo, TG_H(2), 1); hi = _mm_insert_epi16(hi, TG_H(3), 1);
    lo = _mm_insert_epi16(lo, TG_H(4), 2); hi = _mm_insert_epi16(hi, TG_H(5), 2);
    lo = _mm_insert_epi16(lo, TG_H(6), 3); hi = _mm_insert_epi16(hi, TG_H(7), 3);
#undef TG_H
    return _mm_unpacklo_epi64(lo, hi);
}
#define TG_QGEMV8_NIB(NAME, INL, SFX, BX, MODE)                                                   \
INL __m256 NAME(int64_t nb, const char * a, size_t lda, const tg_block_q8_0 * y,                 \
                           const int32_t * ys8) {                                                 \
    const BX * x[8];                                                                              \
    TG_UNROLL for (int r = 0; r < 8; r++) x[r] = (const BX *) (a + r * lda);                      \
    __m256 acc = _mm256_setzero_ps();                                                             \
    for (int64_t blk = 0; blk < nb; blk++) {                                                      \
        const __m256i yl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) y[blk].qs)); \
        const __m256i yh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) (y[blk].qs + 16))); \
        const __m256i yc = nibcorr_##SFX(MODE, yl, yh);                                           \
        __m256i p[4];                                                                             \
        const __m256i q4[2] = { TG_NIB_QH(MODE, x, 0, blk, lda), TG_NIB_QH(MODE, x, 1, blk, lda) }; \
        TG_UNROLL for (int h = 0; h < 4; h++) {                                                   \
            _mm_prefetch(a + 8 * lda + (8 * blk + 2 * h) * sizeof(BX), _MM_HINT_T0);             \
            _mm_prefetch(a + 8 * lda + (8 * blk + 2 * h + 1) * sizeof(BX), _MM_HINT_T0);         \
            p[h] = nibpair_##SFX(_mm256_loadu2_m128i((const __m128i *) x[2 * h + 1][blk].qs,      \
                                                     (const __m128i *) x[2 * h][blk].qs), yl, yh, MODE, \
                                 TG_NIB_HB(MODE, q4, h, 0), TG_NIB_HB(MODE, q4, h, 1), yc);       \
        }                                                                                         \
        /* p[h]: row 2h in the low half, 2h + 1 in the high half (4 partials each) */            \
        const __m256i a01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[0], p[1]), _mm256_unpackhi_epi32(p[0], p[1])); \
        const __m256i a23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2], p[3]), _mm256_unpackhi_epi32(p[2], p[3])); \
        __m256i si = _mm256_add_epi32(_mm256_unpacklo_epi64(a01, a23), _mm256_unpackhi_epi64(a01, a23)); \
        if (MODE != TG_NIB_IQ4) si = _mm256_sub_epi32(si, _mm256_set1_epi32(TG_NIB_OFFSET(MODE, ys8, blk))); \
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(d8_avx2(&x[0][blk].d, lda)),               \
                                       _mm256_set1_ps(_cvtsh_ss(y[blk].d)));                      \
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si), d, acc);                                    \
    }                                                                                             \
    return _mm256_permutevar8x32_ps(acc, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));              \
}

// Prompts: a panel of 8 weight rows over up to TG_PANEL_KC blocks, packed per
// block as 8 vectors (chunk q: bytes 4q..4q+3 of each row, row r at 4r) and
// the 8 rows' scales as f32. Packed once per 8 rows and 64 columns. The VNNI
// panels hold signed weights as w + 128 (XOR 0x80 at packing).
enum { TG_PANEL_KC = 64, TG_PANEL_NJ = 64, TG_GEMV_YS = 1024 };
struct tg_qpanel {
    int8_t q[TG_PANEL_KC][8][32] __attribute__((aligned(32)));
    float  d[TG_PANEL_KC][8] __attribute__((aligned(32)));
};

#define TG_QPACK(NAME, ATTR, BX, LOADX, XOR)                                                      \
ATTR static void NAME(const char * a, size_t lda, int rows, int64_t b0, int nbk,                  \
                      struct tg_qpanel * P) {                                                     \
    for (int r = 0; r < 8; r++) {                                                                 \
        const BX * x = (const BX *) (a + (size_t) r * lda) + b0;                                  \
        for (int b = 0; b < nbk; b++) {                                                           \
            int32_t v[8];                                                                         \
            if (r < rows) _mm256_storeu_si256((__m256i *) v, _mm256_xor_si256(LOADX(&x[b]),       \
                                                             _mm256_set1_epi8((char) (XOR))));    \
            else memset(v, (XOR), sizeof(v));                                                     \
            for (int q = 0; q < 8; q++) memcpy(&P->q[b][q][4 * r], &v[q], 4);                     \
            P->d[b][r] = r < rows ? _cvtsh_ss(x[b].d) : 0.0f;                                     \
        }                                                                                         \
    }                                                                                             \
}

// The panel against RJ (1..4) activation columns (b: block b0 of the first,
// ldb apart), acc[j] lane r for row r. Signed weights: maddubs(|w|,
// sign(y, w)) -> madd per chunk; Q4_0: the chunks' maddubs add up in int16,
// one madd per block, minus ys[j * TG_PANEL_KC + blk] (8 * sum(y)).
TG_AVX2_INLINE void panel_avx2(const int RJ, const bool Q4, const struct tg_qpanel * P, int nbk,
                               const char * b, size_t ldb, const int32_t * ys, __m256 * acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 A[4];
    TG_UNROLL for (int j = 0; j < RJ; j++) A[j] = acc[j];
    for (int blk = 0; blk < nbk; blk++) {
        const tg_block_q8_0 * by[4];
        __m256i s[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            by[j] = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            s[j] = _mm256_setzero_si256();
        }
        TG_UNROLL for (int q = 0; q < 8; q++) {
            const __m256i w = _mm256_load_si256((const __m256i *) P->q[blk][q]);
            const __m256i aw = Q4 ? w : _mm256_sign_epi8(w, w);
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                int32_t y4;
                memcpy(&y4, by[j]->qs + 4 * q, 4);
                const __m256i yb = _mm256_set1_epi32(y4);
                if (Q4) s[j] = _mm256_add_epi16(s[j], _mm256_maddubs_epi16(w, yb));
                else    s[j] = _mm256_add_epi32(s[j], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(yb, w)), ones));
            }
        }
        const __m256 dx = _mm256_load_ps(P->d[blk]);
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            __m256i si = s[j];
            if (Q4) si = _mm256_sub_epi32(_mm256_madd_epi16(si, ones), _mm256_set1_epi32(ys[j * TG_PANEL_KC + blk]));
            A[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si), _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(by[j]->d))), A[j]);
        }
    }
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[j] = A[j];
}
// The VNNI panel: one vpdpbusd per chunk and column, each column's sums
// starting at -ys (Q4_0: 8 * sum(y)) or -16 * ys (128 * sum(y), what the
// signed weights' + 128 adds).
TG_VNNI_INLINE void panel_vnni(const int RJ, const bool Q4, const struct tg_qpanel * P, int nbk,
                               const char * b, size_t ldb, const int32_t * ys, __m256 * acc) {
    __m256 A[4];
    TG_UNROLL for (int j = 0; j < RJ; j++) A[j] = acc[j];
    for (int blk = 0; blk < nbk; blk++) {
        const tg_block_q8_0 * by[4];
        __m256i s[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            by[j] = (const tg_block_q8_0 *) (b + j * ldb) + blk;
            const int32_t o = ys[j * TG_PANEL_KC + blk];
            s[j] = _mm256_set1_epi32(Q4 ? -o : -16 * o);
        }
        // two chains per column (even and odd chunks): vpdpbusd's latency, not
        // its throughput, bounds a single chain of 8
        __m256i t[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) t[j] = _mm256_setzero_si256();
        TG_UNROLL for (int q = 0; q < 8; q++) {
            const __m256i w = _mm256_load_si256((const __m256i *) P->q[blk][q]);
            TG_UNROLL for (int j = 0; j < RJ; j++) {
                int32_t y4;
                memcpy(&y4, by[j]->qs + 4 * q, 4);
                if (q % 2) t[j] = _mm256_dpbusd_epi32(t[j], w, _mm256_set1_epi32(y4));
                else       s[j] = _mm256_dpbusd_epi32(s[j], w, _mm256_set1_epi32(y4));
            }
        }
        const __m256 dx = _mm256_load_ps(P->d[blk]);
        TG_UNROLL for (int j = 0; j < RJ; j++)
            A[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[j], t[j])),
                                   _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(by[j]->d))), A[j]);
    }
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[j] = A[j];
}

// 8 * sum(y) of blocks [b0, b0 + nbk) of an activation row, into out.
TG_AVX2_INLINE void ysums_avx2(const tg_block_q8_0 * y, int64_t b0, int nbk, int32_t * out) {
    for (int b = 0; b < nbk; b += 4) {
        const int n = nbk - b < 4 ? nbk - b : 4;
        __m256i p[4];
        for (int u = 0; u < 4; u++) p[u] = u < n ? ysum8_avx2(q8_avx2(&y[b0 + b + u])) : _mm256_setzero_si256();
        int32_t s[4];
        _mm_storeu_si128((__m128i *) s, hsum4x8u_avx2(p));
        for (int u = 0; u < n; u++) out[b + u] = s[u];
    }
}
// Block of ni x nj: fewer than 4 columns (generation) by GEMV row by row
// time; otherwise panels of 8 rows x TG_PANEL_KC blocks against 4 columns at
// a time, the accumulators kept in c between the k chunks. YS: generation
// takes 8 * sum(y) per block (Q4_0, Q5_0); PYS: the panels do (Q4_0, and
// every type at the vnni level).
#define TG_QBLOCK(NAME, ATTR, BX, GEMV, GEMV4, GEMV8, PACK, PANEL, Q4, YS, PYS)                   \
ATTR static void NAME(const struct tg_mm_args * g) {                                              \
    const int64_t nb = g->k / TG_QK8_0;                                                           \
    if (g->nj < 4) {                                                                              \
        for (int64_t j = 0; j < g->nj; j++) {                                                     \
            const tg_block_q8_0 * y = (const tg_block_q8_0 *) (g->b + j * g->ldb);                \
            float * c = g->c + j * g->ldc;                                                        \
            /* Q4_0: 8 * sum(y) per block once for all the rows */                               \
            int32_t ysb[YS ? TG_GEMV_YS : 1];                                                     \
            const int32_t * ys = NULL;                                                            \
            if (YS && nb <= TG_GEMV_YS && g->ni > 1) { ysums_avx2(y, 0, (int) nb, ysb); ys = ysb; } \
            int64_t i = 0;                                                                        \
            if (!YS || ys)                                                                        \
                for (; i + 8 <= g->ni; i += 8) _mm256_storeu_ps(c + i, GEMV8(nb, g->a + i * g->lda, g->lda, y, ys)); \
            if (!YS || ys)                                                                        \
                for (; i + 4 <= g->ni; i += 4) _mm_storeu_ps(c + i, GEMV4(nb, g->a + i * g->lda, g->lda, y, ys)); \
            for (; i < g->ni; i++) c[i] = GEMV(nb, (const BX *) (g->a + i * g->lda), y, ys);      \
        }                                                                                         \
        return;                                                                                   \
    }                                                                                             \
    struct tg_qpanel P;                                                                           \
    int32_t ys[PYS ? TG_PANEL_NJ * TG_PANEL_KC : 1];                                              \
    for (int64_t jc = 0; jc < g->nj; jc += TG_PANEL_NJ) {                                         \
        const int64_t njc = g->nj - jc < TG_PANEL_NJ ? g->nj - jc : TG_PANEL_NJ;                  \
        for (int64_t k0 = 0; k0 < nb; k0 += TG_PANEL_KC) {                                        \
            const int nbk = (int) (nb - k0 < TG_PANEL_KC ? nb - k0 : TG_PANEL_KC);                \
            if (PYS)                                                                              \
                for (int64_t j = 0; j < njc; j++)                                                 \
                    ysums_avx2((const tg_block_q8_0 *) (g->b + (jc + j) * g->ldb), k0, nbk,       \
                               ys + j * TG_PANEL_KC);                                             \
            for (int64_t i0 = 0; i0 < g->ni; i0 += 8) {                                           \
                const int rows = (int) (g->ni - i0 < 8 ? g->ni - i0 : 8);                         \
                PACK(g->a + i0 * g->lda, g->lda, rows, k0, nbk, &P);                              \
                for (int64_t j0 = 0; j0 < njc; j0 += 4) {                                         \
                    const int rj = (int) (njc - j0 < 4 ? njc - j0 : 4);                           \
                    float * c = g->c + (jc + j0) * g->ldc + i0;                                   \
                    const char * bb = g->b + (jc + j0) * g->ldb + k0 * sizeof(tg_block_q8_0);     \
                    const int32_t * yj = PYS ? ys + j0 * TG_PANEL_KC : NULL;                      \
                    __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(),                   \
                                      _mm256_setzero_ps(), _mm256_setzero_ps() };                 \
                    for (int j = 0; j < rj; j++)                                                  \
                        acc[j] = k0 ? tg_load_rows8(c + j * g->ldc, rows) : _mm256_setzero_ps(); \
                    switch (rj) {                                                                 \
                    case 4: PANEL(4, Q4, &P, nbk, bb, g->ldb, yj, acc); break;                    \
                    case 3: PANEL(3, Q4, &P, nbk, bb, g->ldb, yj, acc); break;                    \
                    case 2: PANEL(2, Q4, &P, nbk, bb, g->ldb, yj, acc); break;                    \
                    default: PANEL(1, Q4, &P, nbk, bb, g->ldb, yj, acc); break;                   \
                    }                                                                             \
                    for (int j = 0; j < rj; j++) tg_store_rows8(c + j * g->ldc, acc[j], rows);   \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}

// One instance per level. Q5_0: generation on the unsigned levels (16 *
// sum(y) off per block), prompts on the signed ones (the avx2 panel's int16
// sums hold only 4-bit levels).
#define TG_QKERNELS(SFX, INL, ATTR, VNNI)                                                          \
TG_QGEMV(gemv_q8_##SFX, INL, SFX, tg_block_q8_0, q8_avx2, false)                                  \
TG_QGEMV(gemv_q4_##SFX, INL, SFX, tg_block_q4_0, q4u_avx2, true)                                  \
TG_QGEMV(gemv_iq4_##SFX, INL, SFX, tg_block_iq4_nl, iq4_avx2, false)                              \
TG_QGEMV(gemv_q5_0_##SFX, INL, SFX, tg_block_q5_0, q5s_avx2, false)                               \
TG_QGEMV4_Q8(gemv4_q8_##SFX, INL, SFX)                                                            \
TG_QGEMV4_NIB(gemv4_q4_##SFX, INL, SFX, tg_block_q4_0, TG_NIB_Q4)                                 \
TG_QGEMV4_NIB(gemv4_iq4_##SFX, INL, SFX, tg_block_iq4_nl, TG_NIB_IQ4)                             \
TG_QGEMV4_NIB(gemv4_q5_0_##SFX, INL, SFX, tg_block_q5_0, TG_NIB_Q5)                               \
TG_QGEMV8_NIB(gemv8_q4_##SFX, INL, SFX, tg_block_q4_0, TG_NIB_Q4)                                 \
TG_QGEMV8_NIB(gemv8_iq4_##SFX, INL, SFX, tg_block_iq4_nl, TG_NIB_IQ4)                             \
TG_QGEMV8_NIB(gemv8_q5_0_##SFX, INL, SFX, tg_block_q5_0, TG_NIB_Q5)                               \
/* Q8_0 streams at memory speed four rows at a time already */                                   \
INL __m256 gemv8_q8_##SFX(int64_t nb, const char * a, size_t lda, const tg_block_q8_0 * y, const int32_t * ys8) { \
    return _mm256_set_m128(gemv4_q8_##SFX(nb, a + 4 * lda, lda, y, ys8), gemv4_q8_##SFX(nb, a, lda, y, ys8)); \
}                                                                                                 \
TG_QPACK(pack_q8_##SFX, ATTR, tg_block_q8_0, q8_avx2, (VNNI) ? 0x80 : 0)                          \
TG_QPACK(pack_q4_##SFX, ATTR, tg_block_q4_0, q4u_avx2, 0)                                         \
TG_QPACK(pack_iq4_##SFX, ATTR, tg_block_iq4_nl, iq4_avx2, (VNNI) ? 0x80 : 0)                      \
TG_QPACK(pack_q5_0_##SFX, ATTR, tg_block_q5_0, q5s_avx2, (VNNI) ? 0x80 : 0)                       \
TG_QBLOCK(block_q8_q8_##SFX, ATTR, tg_block_q8_0, gemv_q8_##SFX, gemv4_q8_##SFX, gemv8_q8_##SFX,  \
          pack_q8_##SFX, panel_##SFX, false, false, VNNI)                                         \
TG_QBLOCK(block_q4_q8_##SFX, ATTR, tg_block_q4_0, gemv_q4_##SFX, gemv4_q4_##SFX, gemv8_q4_##SFX,  \
          pack_q4_##SFX, panel_##SFX, true, true, true)                                           \
TG_QBLOCK(block_iq4_q8_##SFX, ATTR, tg_block_iq4_nl, gemv_iq4_##SFX, gemv4_iq4_##SFX,             \
          gemv8_iq4_##SFX, pack_iq4_##SFX, panel_##SFX, false, false, VNNI)                       \
TG_QBLOCK(block_q5_0_q8_##SFX, ATTR, tg_block_q5_0, gemv_q5_0_##SFX, gemv4_q5_0_##SFX,            \
          gemv8_q5_0_##SFX, pack_q5_0_##SFX, panel_##SFX, false, true, VNNI)                      \
ATTR static float dot_q8_q8_##SFX(int64_t nb, const tg_block_q8_0 * x, const tg_block_q8_0 * y) { \
    return gemv_q8_##SFX(nb, x, y, NULL);                                                         \
}                                                                                                 \
ATTR static float dot_q4_q8_##SFX(int64_t nb, const tg_block_q4_0 * x, const tg_block_q8_0 * y) { \
    return gemv_q4_##SFX(nb, x, y, NULL);                                                         \
}
TG_QKERNELS(avx2, TG_AVX2_INLINE, TG_AVX2, 0)
TG_QKERNELS(vnni, TG_VNNI_INLINE, TG_VNNI, 1)

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
#endif // TG_X86

// ---- dispatch ---------------------------------------------------------------

tg_mm_block_fn tg_mm_quant_block(enum tg_mm_kind kind, int level) {
    const bool q4 = kind == TG_MM_Q4_Q8;
    if (kind == TG_MM_Q5_0_Q8) {
#ifdef TG_X86
        if (level >= TG_SIMD_AVX512VNNI) return block_q5_0_q8_vnni;
        if (level >= TG_SIMD_AVX2) return block_q5_0_q8_avx2;
        if (level >= TG_SIMD_AVX) return block_q5_0_q8_avx;
#endif
        return block_q5_0_q8_scalar;
    }
    if (kind == TG_MM_IQ4NL_Q8) {
#ifdef TG_X86
        if (level >= TG_SIMD_AVX512VNNI) return block_iq4_q8_vnni;
        if (level >= TG_SIMD_AVX2) return block_iq4_q8_avx2;
        if (level >= TG_SIMD_AVX) return block_iq4_q8_avx;
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
