// vec-kquant.c - dot products of the K-quant weight types (Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K) and IQ4_XS against Q8_K activation rows, with integer
// sums per super-block like the formats intend.
//
// Two steps per weight super-block (256 weights):
//  1. unpack: the block's weights become 256 int8 levels q, one int16 scale
//     per 16 weights (as a 16-lane vector per 32 weights, ready for madd),
//     one int16 "min" per 16 weights, and the float scales d, dmin. Each
//     type's unpack has a scalar form and an AVX2 form giving the same bytes.
//  2. dot with a Q8_K block (qs, bsums, d8), in exact integers:
//       isum = sum over 16-groups g of sc[g] * sum_{e in g} q[e] * a[e]
//       msum = sum over g of mn[g] * bsums[g]
//     then, in floats, the super-block's term added to the row sum in order:
//       types with a separate dmin (Q2_K, Q4_K, Q5_K):
//         acc = acc + (d8 * d) * isum;  acc = acc - (d8 * dmin) * msum
//       the others (Q3_K, Q6_K: q kept unsigned, mn = offset * sc; IQ4_XS):
//         acc = acc + (d8 * d) * (isum - msum)
// The integers are exact at every level and this file is compiled without
// floating-point contraction, so every SIMD level and the scalar path give
// the same bits, whatever the tiling or thread count.
//
// A weight row is unpacked once per block of columns (into an L1-sized
// buffer, a chunk of super-blocks at a time) and used for all of them; the
// dot kernels take up to 4 activation columns per pass over it.
#include "vec-impl.h"

#include <string.h>

#pragma GCC optimize("fp-contract=off")

uint8_t tg_k4_scale_(int j, const uint8_t * q, uint8_t * m);   // core/quant.c

// One unpacked super-block (aligned for 32-byte loads).
struct kq_sb {
    int8_t  q[256];
    int16_t sc[8][16];   // per 32 weights: lanes 0..7 scale weights 0..15, lanes 8..15 weights 16..31
    int16_t mn[16];      // per 16 weights (the Q8_K bsums groups)
    float   d, dmin;
    float   pad[6];
} __attribute__((aligned(32)));

struct kq_kind {
    size_t bytes;          // bytes of one weight super-block
    bool   signed_q;       // levels may be negative (IQ4_XS): products via abs/sign
    bool   two_terms;      // separate dmin term (Q2_K, Q4_K, Q5_K)
    bool   has_mn;         // msum is needed at all
    void (*scales)(const void * blk, struct kq_sb * u);   // sc, mn, d, dmin (scalar, all levels)
    void (*q_scalar)(const void * blk, struct kq_sb * u);
#ifdef TG_X86
    void (*q_avx2)(const void * blk, struct kq_sb * u);
#endif
};

static inline void set_sc(struct kq_sb * u, int chunk, int s0, int s1) {
    for (int l = 0; l < 8; l++) { u->sc[chunk][l] = (int16_t) s0; u->sc[chunk][8 + l] = (int16_t) s1; }
}

// ---- scales per type (scalar; shared by every level) -----------------------

static void scales_q2_K(const void * blk, struct kq_sb * u) {
    const tg_block_q2_K * x = blk;
    for (int t = 0; t < 8; t++) set_sc(u, t, x->scales[2 * t] & 0xF, x->scales[2 * t + 1] & 0xF);
    for (int g = 0; g < 16; g++) u->mn[g] = (int16_t) (x->scales[g] >> 4);
    u->d = tg_fp16_to_fp32(x->d);
    u->dmin = tg_fp16_to_fp32(x->dmin);
}

static void scales_q3_K(const void * blk, struct kq_sb * u) {
    const tg_block_q3_K * x = blk;
    int8_t sc[16];
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? (x->scales[j] & 0xF) : (x->scales[j - 8] >> 4);
        const int hi = (x->scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (int8_t) ((lo | (hi << 4)) - 32);
    }
    for (int t = 0; t < 8; t++) set_sc(u, t, sc[2 * t], sc[2 * t + 1]);
    for (int g = 0; g < 16; g++) u->mn[g] = (int16_t) (4 * sc[g]);   // levels kept as q + 4
    u->d = tg_fp16_to_fp32(x->d);
    u->dmin = 0;
}

static void scales_k4(const uint8_t * scales, tg_fp16_t d, tg_fp16_t dmin, struct kq_sb * u) {
    for (int t = 0; t < 8; t++) {
        uint8_t m;
        const uint8_t s = tg_k4_scale_(t, scales, &m);
        set_sc(u, t, s, s);
        u->mn[2 * t] = u->mn[2 * t + 1] = m;
    }
    u->d = tg_fp16_to_fp32(d);
    u->dmin = tg_fp16_to_fp32(dmin);
}
static void scales_q4_K(const void * blk, struct kq_sb * u) {
    const tg_block_q4_K * x = blk;
    scales_k4(x->scales, x->d, x->dmin, u);
}
static void scales_q5_K(const void * blk, struct kq_sb * u) {
    const tg_block_q5_K * x = blk;
    scales_k4(x->scales, x->d, x->dmin, u);
}

static void scales_q6_K(const void * blk, struct kq_sb * u) {
    const tg_block_q6_K * x = blk;
    for (int t = 0; t < 8; t++) set_sc(u, t, x->scales[2 * t], x->scales[2 * t + 1]);
    for (int g = 0; g < 16; g++) u->mn[g] = (int16_t) (32 * x->scales[g]);   // levels kept as q + 32
    u->d = tg_fp16_to_fp32(x->d);
    u->dmin = 0;
}

static void scales_iq4_xs(const void * blk, struct kq_sb * u) {
    const tg_block_iq4_xs * x = blk;
    for (int t = 0; t < 8; t++) {
        const int ls = ((x->scales_l[t / 2] >> (4 * (t % 2))) & 0xF) | (((x->scales_h >> (2 * t)) & 3) << 4);
        set_sc(u, t, ls - 32, ls - 32);
    }
    memset(u->mn, 0, sizeof(u->mn));
    u->d = tg_fp16_to_fp32(x->d);
    u->dmin = 0;
}

// ---- levels per type, scalar -------------------------------------------------
// Element order as in the format (see core/quant.c's dequantizers).

static void q_q2_K_scalar(const void * blk, struct kq_sb * u) {
    const tg_block_q2_K * x = blk;
    for (int h = 0; h < 2; h++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) u->q[128 * h + 32 * s + l] = (int8_t) ((x->qs[32 * h + l] >> (2 * s)) & 3);
}

static void q_q3_K_scalar(const void * blk, struct kq_sb * u) {
    const tg_block_q3_K * x = blk;
    for (int h = 0; h < 2; h++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) {
                const int lo = (x->qs[32 * h + l] >> (2 * s)) & 3;
                const int hi = (x->hmask[l] >> (4 * h + s)) & 1;
                u->q[128 * h + 32 * s + l] = (int8_t) (lo | (hi << 2));   // q + 4 (0..7)
            }
}

static void q_q4_K_scalar(const void * blk, struct kq_sb * u) {
    const tg_block_q4_K * x = blk;
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            u->q[64 * p + l] = (int8_t) (x->qs[32 * p + l] & 0xF);
            u->q[64 * p + 32 + l] = (int8_t) (x->qs[32 * p + l] >> 4);
        }
}

static void q_q5_K_scalar(const void * blk, struct kq_sb * u) {
    const tg_block_q5_K * x = blk;
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            u->q[64 * p + l] = (int8_t) ((x->qs[32 * p + l] & 0xF) | (((x->qh[l] >> (2 * p)) & 1) << 4));
            u->q[64 * p + 32 + l] = (int8_t) ((x->qs[32 * p + l] >> 4) | (((x->qh[l] >> (2 * p + 1)) & 1) << 4));
        }
}

static void q_q6_K_scalar(const void * blk, struct kq_sb * u) {
    const tg_block_q6_K * x = blk;
    for (int c = 0; c < 2; c++) {
        const uint8_t * ql = x->ql + 64 * c, * qh = x->qh + 32 * c;
        int8_t * q = u->q + 128 * c;
        for (int l = 0; l < 32; l++) {   // q + 32 (0..63)
            q[l]      = (int8_t) ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
            q[l + 32] = (int8_t) ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
            q[l + 64] = (int8_t) ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            q[l + 96] = (int8_t) ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
    }
}

static void q_iq4_xs_scalar(const void * blk, struct kq_sb * u) {
    const tg_block_iq4_xs * x = blk;
    for (int t = 0; t < 8; t++)
        for (int j = 0; j < 16; j++) {
            u->q[32 * t + j] = tg_iq4nl_values[x->qs[16 * t + j] & 0xF];
            u->q[32 * t + 16 + j] = tg_iq4nl_values[x->qs[16 * t + j] >> 4];
        }
}

// ---- dot of an unpacked row with up to 4 Q8_K rows, scalar --------------------

static inline float kq_term(const struct kq_kind * kd, const struct kq_sb * u, float d8, float acc,
                            int32_t isum, int32_t msum) {
    if (kd->two_terms) {
        acc = acc + (d8 * u->d) * (float) isum;
        acc = acc - (d8 * u->dmin) * (float) msum;
    } else {
        acc = acc + (d8 * u->d) * (float) (isum - msum);
    }
    return acc;
}

static void kq_dot_scalar(const struct kq_kind * kd, int nsb, const struct kq_sb * u,
                          const tg_block_q8_K * const * y, int nj, float * acc) {
    for (int j = 0; j < nj; j++) {
        float s = acc[j];
        for (int b = 0; b < nsb; b++) {
            const tg_block_q8_K * yb = y[j] + b;
            int32_t isum = 0, msum = 0;
            for (int t = 0; t < 8; t++)
                for (int l = 0; l < 32; l++)
                    isum += u[b].sc[t][l / 2] * (int32_t) u[b].q[32 * t + l] * (int32_t) yb->qs[32 * t + l];
            if (kd->has_mn)
                for (int g = 0; g < 16; g++) msum += (int32_t) u[b].mn[g] * (int32_t) yb->bsums[g];
            s = kq_term(kd, &u[b], yb->d, s, isum, msum);
        }
        acc[j] = s;
    }
}

#ifdef TG_X86
#define TG_KQ_AVX2 __attribute__((target("avx2,avx,fma,f16c")))
#define TG_KQ_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,avx,fma,f16c")))
#define TG_KQ_VNNI_TARGET "avx512f,avx512bw,avx512vl,avx512vnni,avx2,avx,fma,f16c"
#define TG_KQ_VNNI __attribute__((target(TG_KQ_VNNI_TARGET)))
#define TG_KQ_VNNI_INLINE static inline __attribute__((always_inline, target(TG_KQ_VNNI_TARGET)))

// ---- levels per type, AVX2 (the same bytes as the scalar forms) --------------

TG_KQ_AVX2 static void q_q2_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q2_K * x = blk;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * h));
        for (int s = 0; s < 4; s++)
            _mm256_store_si256((__m256i *) (u->q + 128 * h + 32 * s), _mm256_and_si256(_mm256_srli_epi16(v, 2 * s), m3));
    }
}

TG_KQ_AVX2 static void q_q3_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q3_K * x = blk;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const __m256i hm = _mm256_loadu_si256((const __m256i *) x->hmask);
    for (int h = 0; h < 2; h++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * h));
        for (int s = 0; s < 4; s++) {
            const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(v, 2 * s), m3);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + s), one);
            _mm256_store_si256((__m256i *) (u->q + 128 * h + 32 * s), _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2)));
        }
    }
}

TG_KQ_AVX2 static void q_q4_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q4_K * x = blk;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    for (int p = 0; p < 4; p++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * p));
        _mm256_store_si256((__m256i *) (u->q + 64 * p), _mm256_and_si256(v, m4));
        _mm256_store_si256((__m256i *) (u->q + 64 * p + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    }
}

TG_KQ_AVX2 static void q_q5_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q5_K * x = blk;
    const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
    const __m256i hb = _mm256_loadu_si256((const __m256i *) x->qh);
    for (int p = 0; p < 4; p++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * p));
        const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * p), one), 4);
        const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * p + 1), one), 4);
        _mm256_store_si256((__m256i *) (u->q + 64 * p), _mm256_or_si256(_mm256_and_si256(v, m4), h0));
        _mm256_store_si256((__m256i *) (u->q + 64 * p + 32),
                           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), h1));
    }
}

TG_KQ_AVX2 static void q_q6_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q6_K * x = blk;
    const __m256i m4 = _mm256_set1_epi8(0xF), m3 = _mm256_set1_epi8(3);
    for (int c = 0; c < 2; c++) {
        const __m256i l0 = _mm256_loadu_si256((const __m256i *) (x->ql + 64 * c));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *) (x->ql + 64 * c + 32));
        const __m256i h = _mm256_loadu_si256((const __m256i *) (x->qh + 32 * c));
        const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(h, m3), 4);
        const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4);
        const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m3), 4);
        const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m3), 4);
        int8_t * q = u->q + 128 * c;
        _mm256_store_si256((__m256i *) q, _mm256_or_si256(_mm256_and_si256(l0, m4), h0));
        _mm256_store_si256((__m256i *) (q + 32), _mm256_or_si256(_mm256_and_si256(l1, m4), h1));
        _mm256_store_si256((__m256i *) (q + 64), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), h2));
        _mm256_store_si256((__m256i *) (q + 96), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), h3));
    }
}

TG_KQ_AVX2 static void q_iq4_xs_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_iq4_xs * x = blk;
    const __m128i tab = _mm_loadu_si128((const __m128i *) tg_iq4nl_values);
    const __m128i m4 = _mm_set1_epi8(0xF);
    for (int t = 0; t < 8; t++) {
        const __m128i v = _mm_loadu_si128((const __m128i *) (x->qs + 16 * t));
        _mm_store_si128((__m128i *) (u->q + 32 * t), _mm_shuffle_epi8(tab, _mm_and_si128(v, m4)));
        _mm_store_si128((__m128i *) (u->q + 32 * t + 16), _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(v, 4), m4)));
    }
}

// ---- dot kernels: RJ (1..4) columns per pass, AVX2 and AVX-512 VNNI ----------
// Per 32 weights and column: maddubs(q, a) (or |q|, sign(a, q)) -> int16
// pairs, times the 16-lane scale vector into int32 (madd + add, or VNNI's
// vpdpwssd), exact; the int32 lanes summed once per super-block.

TG_KQ_AVX2_INLINE int32_t hsum_i32_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

#define TG_KQ_DOT(NAME, ATTR, INL, MACC)                                          \
INL void NAME##_n(const struct kq_kind * kd, const int RJ, int nsb, const struct kq_sb * u, \
                  const tg_block_q8_K * const * y, float * acc) {                  \
    float s[4];                                                                    \
    TG_UNROLL for (int j = 0; j < RJ; j++) s[j] = acc[j];                           \
    for (int b = 0; b < nsb; b++) {                                                \
        __m256i ai[4];                                                             \
        TG_UNROLL for (int j = 0; j < RJ; j++) ai[j] = _mm256_setzero_si256();      \
        TG_UNROLL for (int t = 0; t < 8; t++) {                                     \
            const __m256i w = _mm256_load_si256((const __m256i *) (u[b].q + 32 * t)); \
            const __m256i sc = _mm256_load_si256((const __m256i *) u[b].sc[t]);       \
            if (kd->signed_q) {                                                     \
                const __m256i aw = _mm256_sign_epi8(w, w);                          \
                TG_UNROLL for (int j = 0; j < RJ; j++) {                            \
                    const __m256i a = _mm256_loadu_si256((const __m256i *) (y[j][b].qs + 32 * t)); \
                    ai[j] = MACC(ai[j], _mm256_maddubs_epi16(aw, _mm256_sign_epi8(a, w)), sc); \
                }                                                                   \
            } else {                                                                \
                TG_UNROLL for (int j = 0; j < RJ; j++) {                            \
                    const __m256i a = _mm256_loadu_si256((const __m256i *) (y[j][b].qs + 32 * t)); \
                    ai[j] = MACC(ai[j], _mm256_maddubs_epi16(w, a), sc);            \
                }                                                                   \
            }                                                                       \
        }                                                                           \
        const __m256i mn = _mm256_load_si256((const __m256i *) u[b].mn);            \
        TG_UNROLL for (int j = 0; j < RJ; j++) {                                    \
            int32_t msum = 0;                                                       \
            if (kd->has_mn)                                                         \
                msum = hsum_i32_avx2(_mm256_madd_epi16(mn, _mm256_loadu_si256((const __m256i *) y[j][b].bsums))); \
            s[j] = kq_term(kd, &u[b], y[j][b].d, s[j], hsum_i32_avx2(ai[j]), msum);  \
        }                                                                           \
    }                                                                               \
    TG_UNROLL for (int j = 0; j < RJ; j++) acc[j] = s[j];                           \
}                                                                                   \
ATTR static void NAME(const struct kq_kind * kd, int nsb, const struct kq_sb * u,   \
                      const tg_block_q8_K * const * y, int nj, float * acc) {       \
    switch (nj) {                                                                   \
    case 4: NAME##_n(kd, 4, nsb, u, y, acc); break;                                 \
    case 3: NAME##_n(kd, 3, nsb, u, y, acc); break;                                 \
    case 2: NAME##_n(kd, 2, nsb, u, y, acc); break;                                 \
    default: NAME##_n(kd, 1, nsb, u, y, acc); break;                                \
    }                                                                               \
}

#define TG_KQ_MACC_AVX2(acc, p, sc) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (sc)))
#define TG_KQ_MACC_VNNI(acc, p, sc) _mm256_dpwssd_epi32((acc), (p), (sc))
TG_KQ_DOT(kq_dot_avx2, TG_KQ_AVX2, TG_KQ_AVX2_INLINE, TG_KQ_MACC_AVX2)

TG_KQ_DOT(kq_dot_vnni, TG_KQ_VNNI, TG_KQ_VNNI_INLINE, TG_KQ_MACC_VNNI)
#endif

// ---- the kinds --------------------------------------------------------------

#ifdef TG_X86
#define KQ_KIND(T, SIGNED, TWO, MN) \
    { sizeof(tg_block_##T), SIGNED, TWO, MN, scales_##T, q_##T##_scalar, q_##T##_avx2 }
#else
#define KQ_KIND(T, SIGNED, TWO, MN) { sizeof(tg_block_##T), SIGNED, TWO, MN, scales_##T, q_##T##_scalar }
#endif
static const struct kq_kind k_q2_K = KQ_KIND(q2_K, false, true, true);
static const struct kq_kind k_q3_K = KQ_KIND(q3_K, false, false, true);
static const struct kq_kind k_q4_K = KQ_KIND(q4_K, false, true, true);
static const struct kq_kind k_q5_K = KQ_KIND(q5_K, false, true, true);
static const struct kq_kind k_q6_K = KQ_KIND(q6_K, false, false, true);
static const struct kq_kind k_iq4_xs = KQ_KIND(iq4_xs, true, false, false);

static const struct kq_kind * kq_kind_of(enum tg_type t) {
    switch (t) {
    case TG_TYPE_Q2_K:   return &k_q2_K;
    case TG_TYPE_Q3_K:   return &k_q3_K;
    case TG_TYPE_Q4_K:   return &k_q4_K;
    case TG_TYPE_Q5_K:   return &k_q5_K;
    case TG_TYPE_Q6_K:   return &k_q6_K;
    case TG_TYPE_IQ4_XS: return &k_iq4_xs;
    default:             return NULL;
    }
}

// ---- block kernels ------------------------------------------------------------

typedef void (*kq_dot_fn)(const struct kq_kind * kd, int nsb, const struct kq_sb * u,
                          const tg_block_q8_K * const * y, int nj, float * acc);
typedef void (*kq_unpack_fn)(const void * blk, struct kq_sb * u);

enum { KQ_CHUNK = 24 };   // super-blocks unpacked at a time (13 KiB)

static inline void kq_block(const struct tg_mm_args * g, kq_unpack_fn qfn, kq_dot_fn dot) {
    const struct kq_kind * kd = kq_kind_of(g->type);
    struct kq_sb u[KQ_CHUNK];
    const int64_t nsb = g->k / TG_QK_K;
    for (int64_t i = 0; i < g->ni; i++) {
        const char * row = g->a + (size_t) i * g->lda;
        for (int64_t j = 0; j < g->nj; j++) g->c[(size_t) j * g->ldc + (size_t) i] = 0.0f;
        for (int64_t b0 = 0; b0 < nsb; b0 += KQ_CHUNK) {
            const int nb = (int) (nsb - b0 < KQ_CHUNK ? nsb - b0 : KQ_CHUNK);
            for (int b = 0; b < nb; b++) {
                const char * blk = row + (size_t) (b0 + b) * kd->bytes;
                kd->scales(blk, &u[b]);
                qfn(blk, &u[b]);
            }
            for (int64_t j = 0; j < g->nj; j += 4) {
                const int nj = (int) (g->nj - j < 4 ? g->nj - j : 4);
                const tg_block_q8_K * y[4];
                float acc[4];
                for (int t = 0; t < nj; t++) {
                    y[t] = (const tg_block_q8_K *) (g->b + (size_t) (j + t) * g->ldb) + b0;
                    acc[t] = g->c[(size_t) (j + t) * g->ldc + (size_t) i];
                }
                dot(kd, nb, u, y, nj, acc);
                for (int t = 0; t < nj; t++) g->c[(size_t) (j + t) * g->ldc + (size_t) i] = acc[t];
            }
        }
    }
}

static void block_kq_scalar(const struct tg_mm_args * g) {
    kq_block(g, kq_kind_of(g->type)->q_scalar, kq_dot_scalar);
}
#ifdef TG_X86
static void block_kq_avx2(const struct tg_mm_args * g) {
    kq_block(g, kq_kind_of(g->type)->q_avx2, kq_dot_avx2);
}
static void block_kq_vnni(const struct tg_mm_args * g) {
    kq_block(g, kq_kind_of(g->type)->q_avx2, kq_dot_vnni);
}
#endif

bool tg_mm_kquant_supported(enum tg_type type) { return kq_kind_of(type) != NULL; }

tg_mm_block_fn tg_mm_kquant_block(enum tg_type type, int level) {
    if (!kq_kind_of(type)) return NULL;
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512VNNI) return block_kq_vnni;
    if (level >= TG_SIMD_AVX2) return block_kq_avx2;
#endif
    (void) level;
    return block_kq_scalar;
}

// A single dot product (n weights of `type` against n Q8_K activations) with
// the block kernels' order of operations.
float tg_vec_dot_kquant(int level, enum tg_type type, int64_t n, const void * x, const void * y) {
    float c = 0.0f;
    struct tg_mm_args g = { .k = n, .a = x, .lda = 0, .b = y, .ldb = 0, .c = &c, .ldc = 1,
                            .ni = 1, .nj = 1, .type = type };
    tg_mm_kquant_block(type, level)(&g);
    return c;
}
