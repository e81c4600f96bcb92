// vec-legacy.c - dot products of the older 32-weight block types with an
// offset, Q4_1 and Q5_1, against Q8_1 activations (whose s = d * sum(q)
// carries the weights' offset m). Q5_0 runs with Q8_0 and Q4_0 (vec-quant.c).
//
// Reduction order (every level): per block of 32, the exact int32 sums of the
// 8 groups of 4 consecutive products (lane u = elements 4u..4u+3) are
// converted to f32 and multiply-added with dx * dy into 8 f32 lane
// accumulators; the block's offset term m_x * s_y is multiply-added (fmaf at
// the SIMD levels) to one f32 accumulator in block order. At the end the
// lanes are summed with the 8-lane tree and the offset sum is added. The AVX2
// and VNNI paths give the same bits (vpdpbusd forms the same int32 lane sums
// as maddubs + madd); the scalar path differs only where the compiler fuses a
// multiply-add.
#include "vec-impl.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static inline uint32_t qh_bits(const uint8_t qh[4]) {
    uint32_t v;
    memcpy(&v, qh, 4);
    return v;
}

// Element e (0..31) of a block as an integer level.
static inline int q4_1_at(const void * b, int e) {
    const tg_block_q4_1 * x = b;
    return e < 16 ? (x->qs[e] & 0x0F) : (x->qs[e - 16] >> 4);
}
static inline int q5_at(const uint8_t * qs, const uint8_t * qh, int e) {
    const int nib = e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4);
    return nib | (int) (((qh_bits(qh) >> e) & 1) << 4);
}
static inline int q5_1_at(const void * b, int e) { const tg_block_q5_1 * x = b; return q5_at(x->qs, x->qh, e); }

// ---- scalar ---------------------------------------------------------------

#define TG_DOT_1_SCALAR(NAME, BX, AT)                                          \
static float NAME(int64_t nb, const char * x, const char * y) {               \
    float s[8] = {0}, m = 0.0f;                                               \
    const BX * bx = (const BX *) x;                                           \
    const tg_block_q8_1 * by = (const tg_block_q8_1 *) y;                     \
    for (int64_t b = 0; b < nb; b++) {                                        \
        const float d = tg_fp16_to_fp32(bx[b].d) * tg_fp16_to_fp32(by[b].d);  \
        for (int u = 0; u < 8; u++) {                                         \
            int p = 0;                                                        \
            for (int t = 4 * u; t < 4 * u + 4; t++) p += AT(&bx[b], t) * by[b].qs[t]; \
            s[u] += (float) p * d;                                            \
        }                                                                     \
        m += tg_fp16_to_fp32(bx[b].m) * tg_fp16_to_fp32(by[b].s);             \
    }                                                                         \
    return tree8(s) + m;                                                      \
}
TG_DOT_1_SCALAR(dot_q4_1_scalar, tg_block_q4_1, q4_1_at)
TG_DOT_1_SCALAR(dot_q5_1_scalar, tg_block_q5_1, q5_1_at)

typedef float (*legacy_dot_fn)(int64_t nb, const char * x, const char * y);

static inline void block_with(const struct tg_mm_args * g, legacy_dot_fn dot) {
    const int64_t nb = g->k / 32;
    for (int64_t i = 0; i < g->ni; i++)
        for (int64_t j = 0; j < g->nj; j++)
            g->c[j * g->ldc + i] = dot(nb, g->a + i * g->lda, g->b + j * g->ldb);
}
static void block_q4_1_scalar(const struct tg_mm_args * g) { block_with(g, dot_q4_1_scalar); }
static void block_q5_1_scalar(const struct tg_mm_args * g) { block_with(g, dot_q5_1_scalar); }

#ifdef TG_X86
// ---- avx2, and avx512vl + vnni: RI x RJ tiles --------------------------------
#define TG_LG_AVX2 "avx2,avx,fma,f16c"
#define TG_LG_VNNI "avx512f,avx512bw,avx512vl,avx512vnni,avx2,avx,fma,f16c"

static inline __attribute__((always_inline, target(TG_LG_AVX2))) float hsum8_lg(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return tree8(l);
}

// The 32 nibbles of a block in element order (low nibbles 0..15, high 16..31).
static inline __attribute__((always_inline, target(TG_LG_AVX2))) __m256i nibbles(const uint8_t * qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *) qs), m4 = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), m4), _mm_and_si128(t, m4));
}

// Exact int32 lanes of sum(x * y) over each 4 elements: x unsigned (0..31),
// y int8 (-127..127).
#define LG_PROD_AVX2(x, y) _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1))
#define LG_PROD_VNNI(x, y) _mm256_dpbusd_epi32(_mm256_setzero_si256(), x, y)

// A tile kernel: BX weights against Q8_1 activations, LOADX(block) -> the
// 32 levels (0..31).
#define LG_TILE(NAME, TGT, PROD, BX, LOADX)                                      \
static inline __attribute__((always_inline, target(TGT)))                        \
void NAME(const int RI, const int RJ, int64_t nb, const char * a, size_t lda,     \
          const char * b, size_t ldb, float * c, size_t ldc) {                   \
    __m256 acc[4][4];                                                            \
    float m[4][4];                                                               \
    TG_UNROLL for (int i = 0; i < RI; i++)                                       \
    TG_UNROLL for (int j = 0; j < RJ; j++) { acc[i][j] = _mm256_setzero_ps(); m[i][j] = 0.0f; } \
    for (int64_t blk = 0; blk < nb; blk++) {                                     \
        __m256i y[4];                                                            \
        __m256 dy[4];                                                            \
        float sy[4];                                                             \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                                 \
            const tg_block_q8_1 * by = (const tg_block_q8_1 *) (b + j * ldb) + blk; \
            y[j] = _mm256_loadu_si256((const __m256i *) by->qs);                 \
            dy[j] = _mm256_set1_ps(_cvtsh_ss(by->d));                            \
            sy[j] = _cvtsh_ss(by->s);                                            \
        }                                                                        \
        TG_UNROLL for (int i = 0; i < RI; i++) {                                 \
            const BX * bx = (const BX *) (a + i * lda) + blk;                    \
            const __m256i x = LOADX(bx);                                         \
            const __m256 dx = _mm256_set1_ps(_cvtsh_ss(bx->d));                  \
            TG_UNROLL for (int j = 0; j < RJ; j++) {                             \
                const __m256 p = _mm256_cvtepi32_ps(PROD(x, y[j]));              \
                acc[i][j] = _mm256_fmadd_ps(p, _mm256_mul_ps(dx, dy[j]), acc[i][j]); \
                m[i][j] = fmaf(_cvtsh_ss(bx->m), sy[j], m[i][j]);                \
            }                                                                    \
        }                                                                        \
    }                                                                            \
    TG_UNROLL for (int j = 0; j < RJ; j++)                                       \
    TG_UNROLL for (int i = 0; i < RI; i++)                                       \
        c[j * ldc + i] = hsum8_lg(acc[i][j]) + m[i][j];                          \
}

// d and m are the first two fields of Q4_1 and Q5_1 alike.
_Static_assert(offsetof(tg_block_q4_1, m) == offsetof(tg_block_q5_1, m), "m at the same offset");

static inline __attribute__((always_inline, target(TG_LG_AVX2))) __m256i load_q4_1(const tg_block_q4_1 * b) {
    return nibbles(b->qs);
}
static inline __attribute__((always_inline, target(TG_LG_AVX2))) __m256i load_q5_1(const tg_block_q5_1 * b) {
    return _mm256_or_si256(nibbles(b->qs), tg_q5hb_avx2(b->qh));
}

LG_TILE(tile_q4_1_avx2, TG_LG_AVX2, LG_PROD_AVX2, tg_block_q4_1, load_q4_1)
LG_TILE(tile_q5_1_avx2, TG_LG_AVX2, LG_PROD_AVX2, tg_block_q5_1, load_q5_1)
LG_TILE(tile_q4_1_vnni, TG_LG_VNNI, LG_PROD_VNNI, tg_block_q4_1, load_q4_1)
LG_TILE(tile_q5_1_vnni, TG_LG_VNNI, LG_PROD_VNNI, tg_block_q5_1, load_q5_1)

// ---- generation, avx2: four weight rows against one activation column -------
// The same bits as LG_TILE (4, 1) - per row the same int32 lane sums, the same
// multiply-adds in block order and the same tree - with less work per weight:
// two rows' 16 bytes of nibbles share one vector (row r in the low half, r + 1
// in the high half), so each maddubs / madd serves both rows, and the lane
// accumulators stay in that pairing until the end (only the scales are spread,
// one permute per pair, where the tile broadcasts each row's); the four rows'
// scales and offsets are converted in one go. Against LG_TILE, from cache:
// ~1.3x on Zen 3, where lane-crossing shuffles share a port with the integer
// multiplies; from memory more (the prefetch runs linearly through the next
// four rows; the tiles have none).
#define TG_LG_AVX2_INLINE static inline __attribute__((always_inline, target(TG_LG_AVX2)))

// BX: the weight block (Q4_1 or Q5_1), Q5: a qh field (QH(block) points at
// it). c[0..3] get the four rows' dots.
#define LG_GEN4(NAME, BX, Q5, QH)                                                                \
TG_LG_AVX2_INLINE void NAME(int64_t nb, const char * a, size_t lda, const char * b, float * c) { \
    const BX * x[4];                                                                             \
    TG_UNROLL for (int r = 0; r < 4; r++) x[r] = (const BX *) (a + r * lda);                     \
    const tg_block_q8_1 * y = (const tg_block_q8_1 *) b;                                         \
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);                      \
    /* per pair of rows (a = 2 * pr, b = a + 1): accl [a's lanes 0..3 | b's 0..3], acch [4..7 | 4..7] */ \
    __m256 accl[2], acch[2];                                                                     \
    TG_UNROLL for (int pr = 0; pr < 2; pr++) accl[pr] = acch[pr] = _mm256_setzero_ps();          \
    __m256 mv = _mm256_setzero_ps();   /* lane 2r + 1: row r's offset sum */                     \
    const __m256 even = _mm256_castsi256_ps(_mm256_set1_epi64x(0xFFFFFFFF));                     \
    for (int64_t blk = 0; blk < nb; blk++) {                                                     \
        _mm_prefetch(a + 4 * lda + 4 * blk * sizeof(BX), _MM_HINT_T0);                          \
        _mm_prefetch(a + 4 * lda + 4 * blk * sizeof(BX) + 64, _MM_HINT_T0);                      \
        const __m256i yl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) y[blk].qs)); \
        const __m256i yh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) (y[blk].qs + 16))); \
        const __m256i q4 = Q5 ? tg_w4x2_avx2(QH(&x[0][blk]), lda) : ones;                        \
        /* [d0 m0 d1 m1 d2 m2 d3 m3] (d, m: a block's first two f16), the activation's [dy sy] */ \
        uint32_t yw;                                                                             \
        memcpy(&yw, &y[blk], 4);                                                                 \
        const __m256 dm = _mm256_cvtph_ps(_mm256_castsi256_si128(tg_w4x2_avx2(&x[0][blk], lda))); \
        const __m256 ys = _mm256_cvtph_ps(_mm_set1_epi32((int) yw));                             \
        const __m256 dd = _mm256_mul_ps(dm, _mm256_and_ps(ys, even));                            \
        mv = _mm256_fmadd_ps(dm, _mm256_andnot_ps(even, ys), mv);                                \
        TG_UNROLL for (int pr = 0; pr < 2; pr++) {                                               \
            const __m256i t = _mm256_loadu2_m128i((const __m128i *) x[2 * pr + 1][blk].qs,       \
                                                  (const __m128i *) x[2 * pr][blk].qs);          \
            __m256i xl = _mm256_and_si256(t, m4), xh = _mm256_and_si256(_mm256_srli_epi16(t, 4), m4); \
            if (Q5) {                                                                            \
                xl = _mm256_or_si256(xl, tg_q5hb_pair_avx2(q4, pr, 0));                          \
                xh = _mm256_or_si256(xh, tg_q5hb_pair_avx2(q4, pr, 1));                          \
            }                                                                                    \
            const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(xl, yl), ones);            \
            const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(xh, yh), ones);            \
            /* [d_a x 4 | d_b x 4]: dd's lanes 4pr and 4pr + 2 */                                \
            const __m256 dp = _mm256_permutevar8x32_ps(dd, _mm256_setr_epi32(4 * pr, 4 * pr, 4 * pr, 4 * pr, \
                                                       4 * pr + 2, 4 * pr + 2, 4 * pr + 2, 4 * pr + 2)); \
            accl[pr] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pl), dp, accl[pr]);                    \
            acch[pr] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ph), dp, acch[pr]);                    \
        }                                                                                        \
    }                                                                                            \
    float mm[8];                                                                                 \
    _mm256_storeu_ps(mm, mv);                                                                    \
    TG_UNROLL for (int pr = 0; pr < 2; pr++) {                                                   \
        c[2 * pr] = hsum8_lg(_mm256_permute2f128_ps(accl[pr], acch[pr], 0x20)) + mm[4 * pr + 1]; \
        c[2 * pr + 1] = hsum8_lg(_mm256_permute2f128_ps(accl[pr], acch[pr], 0x31)) + mm[4 * pr + 3]; \
    }                                                                                            \
}
static inline const uint8_t * qh_q5_1(const tg_block_q5_1 * b) { return b->qh; }
static inline const uint8_t * qh_none(const tg_block_q4_1 * b) { return b->qs; }   // not read (Q5 = 0)
LG_GEN4(gen4_q4_1_avx2, tg_block_q4_1, 0, qh_none)
LG_GEN4(gen4_q5_1_avx2, tg_block_q5_1, 1, qh_q5_1)

// TG_MM_BLOCK (4 x 2 tiles) with the columns past the last pair (generation:
// all of them) by the kernels above, four rows at a time.
#define LG_BLOCK(NAME, TGT, TILE, GEN4)                                                          \
static __attribute__((target(TGT))) void NAME(const struct tg_mm_args * g) {                     \
    const int64_t ni = g->ni, nj = g->nj, nb = g->k / 32, nj0 = nj - nj % 2;                     \
    int64_t i = 0;                                                                               \
    for (; i + 4 <= ni; i += 4)                                                                  \
        for (int64_t j = 0; j < nj0; j += 2)                                                     \
            TILE(4, 2, nb, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
    for (; i < ni; i++)                                                                          \
        for (int64_t j = 0; j < nj0; j += 2)                                                     \
            TILE(1, 2, nb, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
    for (int64_t j = nj0; j < nj; j++) {                                                         \
        i = 0;                                                                                   \
        for (; i + 4 <= ni; i += 4)                                                              \
            GEN4(nb, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->c + j * g->ldc + i);       \
        for (; i < ni; i++)                                                                      \
            TILE(1, 1, nb, g->a + i * g->lda, g->lda, g->b + j * g->ldb, g->ldb, g->c + j * g->ldc + i, g->ldc); \
    }                                                                                            \
}
LG_BLOCK(block_q4_1_avx2, TG_LG_AVX2, tile_q4_1_avx2, gen4_q4_1_avx2)
LG_BLOCK(block_q5_1_avx2, TG_LG_AVX2, tile_q5_1_avx2, gen4_q5_1_avx2)
// The VNNI tiles give the same bits as the AVX2 ones (vec-legacy.c's header),
// so their generation columns take the AVX2 kernels too.
LG_BLOCK(block_q4_1_vnni, TG_LG_VNNI, tile_q4_1_vnni, gen4_q4_1_avx2)
LG_BLOCK(block_q5_1_vnni, TG_LG_VNNI, tile_q5_1_vnni, gen4_q5_1_avx2)
#endif

bool tg_mm_legacy_supported(enum tg_type type) {
    return type == TG_TYPE_Q4_1 || type == TG_TYPE_Q5_1;
}

tg_mm_block_fn tg_mm_legacy_block(enum tg_type type, int level) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512VNNI) {
        switch (type) {
        case TG_TYPE_Q4_1: return block_q4_1_vnni;
        case TG_TYPE_Q5_1: return block_q5_1_vnni;
        default: return NULL;
        }
    }
    if (level >= TG_SIMD_AVX2) {
        switch (type) {
        case TG_TYPE_Q4_1: return block_q4_1_avx2;
        case TG_TYPE_Q5_1: return block_q5_1_avx2;
        default: return NULL;
        }
    }
#endif
    (void) level;
    switch (type) {
    case TG_TYPE_Q4_1: return block_q4_1_scalar;
    case TG_TYPE_Q5_1: return block_q5_1_scalar;
    default: return NULL;
    }
}
