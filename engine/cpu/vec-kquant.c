// vec-kquant.c - dot products of the K-quant weight types (Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K) and IQ4_XS against Q8_K activation rows, with integer
// sums per super-block like the formats intend.
//
// Two steps per weight super-block (256 weights):
//  1. unpack: the block's weights become 256 int8 levels q, one int16 scale
//     and one int16 "min" per 16 weights, and the float scales d, dmin. Each
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
// dot kernels take up to 4 activation columns per pass over it. At the avx2
// level prompts (4 or more columns) instead interleave 8 unpacked rows into
// a panel (kq_panel below) and run it 4 columns at a time. Generation
// (fewer than 4 columns) of every K-quant and IQ4_XS at the avx2 level skips the
// unpacked copy: the levels are decoded in registers, a row at a time, into
// the same integer sums.
#include "vec-impl.h"

#include <stddef.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF   // clang ignores GCC's optimize pragma (and would fuse a * b + c)
#else
#pragma GCC optimize("fp-contract=off")
#endif

// One unpacked super-block (aligned for 32-byte loads).
struct kq_sb {
    int8_t  q[256];
    int16_t sc[16];      // scale per 16 weights
    int16_t mn[16];      // "min" per 16 weights (the Q8_K bsums groups)
    float   d, dmin;
    float   pad[6];
} __attribute__((aligned(32)));

struct kq_kind {
    size_t bytes;          // bytes of one weight super-block
    bool   signed_q;       // levels may be negative (IQ4_XS): products via abs/sign
    bool   two_terms;      // separate dmin term (Q2_K, Q4_K, Q5_K)
    bool   has_mn;         // msum is needed at all
    void (*unpack_scalar)(const void * blk, struct kq_sb * u);
#ifdef TG_X86
    void (*unpack_avx2)(const void * blk, struct kq_sb * u);
#endif
};


// ---- scales per type (scalar; shared by every level) -----------------------

static void scales_q2_K(const void * blk, struct kq_sb * u) {
    const tg_block_q2_K * x = blk;
    for (int g = 0; g < 16; g++) {
        u->sc[g] = (int16_t) (x->scales[g] & 0xF);
        u->mn[g] = (int16_t) (x->scales[g] >> 4);
    }
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
    for (int g = 0; g < 16; g++) {
        u->sc[g] = sc[g];
        u->mn[g] = (int16_t) (4 * sc[g]);   // levels kept as q + 4
    }
    u->d = tg_fp16_to_fp32(x->d);
    u->dmin = 0;
}

// The 8 six-bit scales and mins of Q4_K/Q5_K (12 bytes) as 8 bytes each.
static inline void k4_unpack(const uint8_t * q, uint64_t * sc, uint64_t * mn) {
    uint32_t u0, u1, u2;
    memcpy(&u0, q, 4); memcpy(&u1, q + 4, 4); memcpy(&u2, q + 8, 4);
    const uint32_t s_lo = u0 & 0x3F3F3F3Fu, m_lo = u1 & 0x3F3F3F3Fu;
    const uint32_t s_hi = (u2 & 0x0F0F0F0Fu) | (((u0 >> 6) & 0x03030303u) << 4);
    const uint32_t m_hi = ((u2 >> 4) & 0x0F0F0F0Fu) | (((u1 >> 6) & 0x03030303u) << 4);
    *sc = (uint64_t) s_lo | ((uint64_t) s_hi << 32);
    *mn = (uint64_t) m_lo | ((uint64_t) m_hi << 32);
}

static void scales_k4(const uint8_t * scales, tg_fp16_t d, tg_fp16_t dmin, struct kq_sb * u) {
    uint64_t sc, mn;
    k4_unpack(scales, &sc, &mn);
    for (int g = 0; g < 16; g++) {
        u->sc[g] = (int16_t) ((sc >> (8 * (g / 2))) & 0xFF);
        u->mn[g] = (int16_t) ((mn >> (8 * (g / 2))) & 0xFF);
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
    for (int g = 0; g < 16; g++) {
        u->sc[g] = x->scales[g];
        u->mn[g] = (int16_t) (32 * x->scales[g]);   // levels kept as q + 32
    }
    u->d = tg_fp16_to_fp32(x->d);
    u->dmin = 0;
}

static void scales_iq4_xs(const void * blk, struct kq_sb * u) {
    const tg_block_iq4_xs * x = blk;
    for (int t = 0; t < 8; t++) {
        const int ls = ((x->scales_l[t / 2] >> (4 * (t % 2))) & 0xF) | (((x->scales_h >> (2 * t)) & 3) << 4);
        u->sc[2 * t] = u->sc[2 * t + 1] = (int16_t) (ls - 32);
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

#define KQ_UNPACK_SCALAR(T) \
static void unpack_##T##_scalar(const void * blk, struct kq_sb * u) { scales_##T(blk, u); q_##T##_scalar(blk, u); }
KQ_UNPACK_SCALAR(q2_K)
KQ_UNPACK_SCALAR(q3_K)
KQ_UNPACK_SCALAR(q4_K)
KQ_UNPACK_SCALAR(q5_K)
KQ_UNPACK_SCALAR(q6_K)
KQ_UNPACK_SCALAR(iq4_xs)

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

static void kq_dot_scalar1(const struct kq_kind * kd, int nsb, const struct kq_sb * u,
                           const tg_block_q8_K * const * y, int nj, float * acc) {
    for (int j = 0; j < nj; j++) {
        float s = acc[j];
        for (int b = 0; b < nsb; b++) {
            const tg_block_q8_K * yb = y[j] + b;
            int32_t isum = 0, msum = 0;
            for (int t = 0; t < 8; t++)
                for (int l = 0; l < 32; l++)
                    isum += u[b].sc[2 * t + l / 16] * (int32_t) u[b].q[32 * t + l] * (int32_t) yb->qs[32 * t + l];
            if (kd->has_mn)
                for (int g = 0; g < 16; g++) msum += (int32_t) u[b].mn[g] * (int32_t) yb->bsums[g];
            s = kq_term(kd, &u[b], yb->d, s, isum, msum);
        }
        acc[j] = s;
    }
}

// Rows i < ni (<= 2) against columns j < nj: c[j * ldc + i] continues (or,
// when first, starts) the row sums with nsb more super-blocks.
static void kq_dot_scalar(const struct kq_kind * kd, int ni, int nsb, const struct kq_sb * const * u,
                          const char * yb, size_t ldb, int64_t nj, float * c, size_t ldc, bool first) {
    for (int i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            const tg_block_q8_K * y = (const tg_block_q8_K *) (yb + (size_t) j * ldb);
            float * o = c + (size_t) j * ldc + i;
            if (first) *o = 0.0f;
            kq_dot_scalar1(kd, nsb, u[i], &y, 1, o);
        }
}

#ifdef TG_X86
#define TG_KQ_AVX2 __attribute__((target("avx2,avx,fma,f16c")))
#define TG_KQ_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,avx,fma,f16c")))

// ---- levels per type, AVX2 (the same bytes as the scalar forms) --------------

TG_KQ_AVX2_INLINE void q_q2_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q2_K * x = blk;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * h));
        for (int s = 0; s < 4; s++)
            _mm256_store_si256((__m256i *) (u->q + 128 * h + 32 * s), _mm256_and_si256(_mm256_srli_epi16(v, 2 * s), m3));
    }
}

TG_KQ_AVX2_INLINE void q_q3_K_avx2(const void * blk, struct kq_sb * u) {
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

TG_KQ_AVX2_INLINE void q_q4_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q4_K * x = blk;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    for (int p = 0; p < 4; p++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * p));
        _mm256_store_si256((__m256i *) (u->q + 64 * p), _mm256_and_si256(v, m4));
        _mm256_store_si256((__m256i *) (u->q + 64 * p + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    }
}

TG_KQ_AVX2_INLINE void q_q5_K_avx2(const void * blk, struct kq_sb * u) {
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

TG_KQ_AVX2_INLINE void q_q6_K_avx2(const void * blk, struct kq_sb * u) {
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

TG_KQ_AVX2_INLINE void q_iq4_xs_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_iq4_xs * x = blk;
    const __m128i tab = _mm_loadu_si128((const __m128i *) tg_iq4nl_values);
    const __m128i m4 = _mm_set1_epi8(0xF);
    for (int t = 0; t < 8; t++) {
        const __m128i v = _mm_loadu_si128((const __m128i *) (x->qs + 16 * t));
        _mm_store_si128((__m128i *) (u->q + 32 * t), _mm_shuffle_epi8(tab, _mm_and_si128(v, m4)));
        _mm_store_si128((__m128i *) (u->q + 32 * t + 16), _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(v, 4), m4)));
    }
}

// ---- scales, AVX2 (the same values as the scalar forms) ----------------------

TG_KQ_AVX2_INLINE void sc_k4_avx2(const uint8_t * scales, tg_fp16_t d, tg_fp16_t dmin, struct kq_sb * u) {
    uint64_t sc, mn;
    k4_unpack(scales, &sc, &mn);
    const __m128i v = _mm_set_epi64x((long long) mn, (long long) sc);
    _mm256_store_si256((__m256i *) u->sc, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v)));
    _mm256_store_si256((__m256i *) u->mn, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v)));
    u->d = _cvtsh_ss(d);
    u->dmin = _cvtsh_ss(dmin);
}

TG_KQ_AVX2 static void unpack_q2_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q2_K * x = blk;
    const __m128i b = _mm_loadu_si128((const __m128i *) x->scales), m4 = _mm_set1_epi8(0xF);
    _mm256_store_si256((__m256i *) u->sc, _mm256_cvtepu8_epi16(_mm_and_si128(b, m4)));
    _mm256_store_si256((__m256i *) u->mn, _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(b, 4), m4)));
    u->d = _cvtsh_ss(x->d);
    u->dmin = _cvtsh_ss(x->dmin);
    q_q2_K_avx2(blk, u);
}
TG_KQ_AVX2 static void unpack_q3_K_avx2(const void * blk, struct kq_sb * u) {
    scales_q3_K(blk, u);
    q_q3_K_avx2(blk, u);
}
TG_KQ_AVX2 static void unpack_q4_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q4_K * x = blk;
    sc_k4_avx2(x->scales, x->d, x->dmin, u);
    q_q4_K_avx2(blk, u);
}
TG_KQ_AVX2 static void unpack_q5_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q5_K * x = blk;
    sc_k4_avx2(x->scales, x->d, x->dmin, u);
    q_q5_K_avx2(blk, u);
}
TG_KQ_AVX2 static void unpack_q6_K_avx2(const void * blk, struct kq_sb * u) {
    const tg_block_q6_K * x = blk;
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) x->scales));
    _mm256_store_si256((__m256i *) u->sc, sc);
    _mm256_store_si256((__m256i *) u->mn, _mm256_slli_epi16(sc, 5));
    u->d = _cvtsh_ss(x->d);
    u->dmin = 0;
    q_q6_K_avx2(blk, u);
}
TG_KQ_AVX2 static void unpack_iq4_xs_avx2(const void * blk, struct kq_sb * u) {
    scales_iq4_xs(blk, u);
    q_iq4_xs_avx2(blk, u);
}

// ---- dot kernels: RJ (1..4) columns per pass, AVX2 ----------------------------
// Per 32 weights and column: maddubs(q, a) (or |q|, sign(a, q)) -> int16
// pairs, times the 16-lane scale vector into int32 (madd + add), exact; the
// int32 lanes summed once per super-block.

TG_KQ_AVX2_INLINE int32_t hsum_i32_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// [sum(a), sum(b), sum(c), sum(d)] of four int32 vectors.
TG_KQ_AVX2_INLINE __m128i reduce4_avx2(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i abcd = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

// The per-16 scales (16 x int16 in sv) spread for group t (0..7) of 32
// levels: [s_2t x 8 | s_2t+1 x 8], from the scales' 128-bit halves each
// broadcast to both halves of a vector (svh[0]: scales 0..7, svh[1]:
// 8..15) once per super-block - one in-lane shuffle per group.
TG_KQ_AVX2_INLINE void kq_scale_halves_avx2(__m256i sv, __m256i svh[2]) {
    svh[0] = _mm256_permute2x128_si256(sv, sv, 0x00);
    svh[1] = _mm256_permute2x128_si256(sv, sv, 0x11);
}
TG_KQ_AVX2_INLINE __m256i kq_scale_th_avx2(const __m256i svh[2], int t) {
    const char k = (char) (4 * (t % 4));   // byte of scale 2t within its half
    return _mm256_shuffle_epi8(svh[t / 4], _mm256_setr_epi8(k, k + 1, k, k + 1, k, k + 1, k, k + 1,
                                                            k, k + 1, k, k + 1, k, k + 1, k, k + 1,
                                                            k + 2, k + 3, k + 2, k + 3, k + 2, k + 3, k + 2, k + 3,
                                                            k + 2, k + 3, k + 2, k + 3, k + 2, k + 3, k + 2, k + 3));
}

#define TG_KQ_DOT(NAME, ATTR, INL, MACC)                                          \
INL void NAME##_t(const struct kq_kind * kd, const int RI, const int RJ, int nsb,  \
                  const struct kq_sb * const * u, const tg_block_q8_K * const * y,   \
                  float * c, size_t ldc, bool first) {                              \
    float s[2][4];                                                                 \
    __m128 s4[2] = { _mm_setzero_ps(), _mm_setzero_ps() };                          \
    TG_UNROLL for (int i = 0; i < RI; i++) {                                        \
        TG_UNROLL for (int j = 0; j < RJ; j++) s[i][j] = first ? 0.0f : c[(size_t) j * ldc + i]; \
        if (RJ == 4 && !first)                                                      \
            s4[i] = _mm_setr_ps(c[i], c[ldc + i], c[2 * ldc + i], c[3 * ldc + i]);  \
    }                                                                               \
    for (int b = 0; b < nsb; b++) {                                                \
        __m256i ai[2][4], svh[2][2];                                                \
        TG_UNROLL for (int i = 0; i < RI; i++) {                                    \
            kq_scale_halves_avx2(_mm256_load_si256((const __m256i *) u[i][b].sc), svh[i]); \
            TG_UNROLL for (int j = 0; j < 4; j++) ai[i][j] = _mm256_setzero_si256();     \
        }                                                                           \
        TG_UNROLL for (int t = 0; t < 8; t++) {                                     \
            __m256i w[2], aw[2], sc[2];                                             \
            TG_UNROLL for (int i = 0; i < RI; i++) {                                \
                w[i] = _mm256_load_si256((const __m256i *) (u[i][b].q + 32 * t));   \
                aw[i] = kd->signed_q ? _mm256_sign_epi8(w[i], w[i]) : w[i];         \
                sc[i] = kq_scale_th_avx2(svh[i], t);                               \
            }                                                                       \
            TG_UNROLL for (int j = 0; j < RJ; j++) {                                \
                const __m256i a = _mm256_loadu_si256((const __m256i *) (y[j][b].qs + 32 * t)); \
                TG_UNROLL for (int i = 0; i < RI; i++) {                            \
                    const __m256i av = kd->signed_q ? _mm256_sign_epi8(a, w[i]) : a; \
                    /* one column: four partial sums (t % 4) break the dependency chain */ \
                    const int q = RJ == 1 ? t % 4 : j;                              \
                    ai[i][q] = MACC(ai[i][q], _mm256_maddubs_epi16(aw[i], av), sc[i]); \
                }                                                                   \
            }                                                                       \
        }                                                                           \
        if (RJ == 1)                                                                \
            TG_UNROLL for (int i = 0; i < RI; i++)                                  \
                ai[i][0] = _mm256_add_epi32(_mm256_add_epi32(ai[i][0], ai[i][1]),   \
                                            _mm256_add_epi32(ai[i][2], ai[i][3]));  \
        __m256i bs[4];                                                              \
        if (kd->has_mn)                                                             \
            TG_UNROLL for (int j = 0; j < RJ; j++) bs[j] = _mm256_loadu_si256((const __m256i *) y[j][b].bsums); \
        __m128 d8 = _mm_setzero_ps();                                               \
        if (RJ == 4) d8 = _mm_setr_ps(y[0][b].d, y[1][b].d, y[2][b].d, y[3][b].d);  \
        if (RJ == 1 && RI == 2) {   /* generation: both rows' sums in one reduction */ \
            __m256i m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256();       \
            if (kd->has_mn) {                                                       \
                m0 = _mm256_madd_epi16(_mm256_load_si256((const __m256i *) u[0][b].mn), bs[0]); \
                m1 = _mm256_madd_epi16(_mm256_load_si256((const __m256i *) u[RI - 1][b].mn), bs[0]); \
                if (!kd->two_terms) {                                               \
                    ai[0][0] = _mm256_sub_epi32(ai[0][0], m0);                      \
                    ai[RI - 1][0] = _mm256_sub_epi32(ai[RI - 1][0], m1);            \
                }                                                                   \
            }                                                                       \
            const __m128i r = reduce4_avx2(ai[0][0], ai[RI - 1][0], m0, m1);         \
            const bool two = kd->two_terms;                                         \
            s[0][0] = kq_term(kd, &u[0][b], y[0][b].d, s[0][0], _mm_cvtsi128_si32(r), \
                              two ? _mm_extract_epi32(r, 2) : 0);                   \
            s[RI - 1][0] = kq_term(kd, &u[RI - 1][b], y[0][b].d, s[RI - 1][0], _mm_extract_epi32(r, 1), \
                                   two ? _mm_extract_epi32(r, 3) : 0);              \
        } else                                                                      \
        TG_UNROLL for (int i = 0; i < RI; i++) {                                    \
            __m256i mi[4] = { _mm256_setzero_si256(), _mm256_setzero_si256(),        \
                              _mm256_setzero_si256(), _mm256_setzero_si256() };      \
            if (kd->has_mn) {                                                       \
                const __m256i mn = _mm256_load_si256((const __m256i *) u[i][b].mn);  \
                TG_UNROLL for (int j = 0; j < RJ; j++) mi[j] = _mm256_madd_epi16(mn, bs[j]); \
                if (!kd->two_terms)                                                 \
                    TG_UNROLL for (int j = 0; j < RJ; j++) ai[i][j] = _mm256_sub_epi32(ai[i][j], mi[j]); \
            }                                                                       \
            if (RJ == 4) {                                                          \
                const __m128i is = reduce4_avx2(ai[i][0], ai[i][1], ai[i][2], ai[i][3]); \
                s4[i] = _mm_add_ps(s4[i], _mm_mul_ps(_mm_mul_ps(d8, _mm_set1_ps(u[i][b].d)), _mm_cvtepi32_ps(is))); \
                if (kd->two_terms) {                                                \
                    const __m128i ms = reduce4_avx2(mi[0], mi[1], mi[2], mi[3]);     \
                    s4[i] = _mm_sub_ps(s4[i], _mm_mul_ps(_mm_mul_ps(d8, _mm_set1_ps(u[i][b].dmin)), _mm_cvtepi32_ps(ms))); \
                }                                                                   \
            } else {                                                                \
                TG_UNROLL for (int j = 0; j < RJ; j++) {                            \
                    const int32_t msum = kd->two_terms ? hsum_i32_avx2(mi[j]) : 0;  \
                    s[i][j] = kq_term(kd, &u[i][b], y[j][b].d, s[i][j], hsum_i32_avx2(ai[i][j]), msum); \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    }                                                                               \
    TG_UNROLL for (int i = 0; i < RI; i++) {                                        \
        if (RJ == 4) {                                                              \
            float o[4];                                                             \
            _mm_storeu_ps(o, s4[i]);                                                \
            TG_UNROLL for (int j = 0; j < 4; j++) c[(size_t) j * ldc + i] = o[j];  \
        } else {                                                                    \
            TG_UNROLL for (int j = 0; j < RJ; j++) c[(size_t) j * ldc + i] = s[i][j]; \
        }                                                                           \
    }                                                                               \
}                                                                                   \
INL void NAME##_r(const struct kq_kind * kd, const int RI, int nsb, const struct kq_sb * const * u, \
                  const char * yb, size_t ldb, int64_t nj, float * c, size_t ldc, bool first) { \
    int64_t j = 0;                                                                  \
    for (; j + 4 <= nj; j += 4) {                                                   \
        const tg_block_q8_K * y[4];                                                 \
        for (int t = 0; t < 4; t++) y[t] = (const tg_block_q8_K *) (yb + (size_t) (j + t) * ldb); \
        NAME##_t(kd, RI, 4, nsb, u, y, c + (size_t) j * ldc, ldc, first);          \
    }                                                                               \
    for (; j < nj; j++) {                                                           \
        const tg_block_q8_K * y[4] = { (const tg_block_q8_K *) (yb + (size_t) j * ldb) }; \
        NAME##_t(kd, RI, 1, nsb, u, y, c + (size_t) j * ldc, ldc, first);          \
    }                                                                               \
}                                                                                   \
ATTR static void NAME(const struct kq_kind * kd, int ni, int nsb, const struct kq_sb * const * u, \
                      const char * yb, size_t ldb, int64_t nj, float * c, size_t ldc, bool first) { \
    if (ni == 2) NAME##_r(kd, 2, nsb, u, yb, ldb, nj, c, ldc, first);               \
    else         NAME##_r(kd, 1, nsb, u, yb, ldb, nj, c, ldc, first);               \
}

#define TG_KQ_MACC_AVX2(acc, p, sc) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (sc)))
TG_KQ_DOT(kq_dot_avx2, TG_KQ_AVX2, TG_KQ_AVX2_INLINE, TG_KQ_MACC_AVX2)

// ---- generation without unpacking: the K-quants and IQ4_XS, AVX2 --------------------
// One weight row against one activation column, the levels decoded in
// registers. The same exact isum / msum and the same float steps as
// kq_dot_*_t (kq_term), so the bits do not depend on the path.


// The 32 unsigned levels of group t (0..7) of a Q4_K / Q6_K super-block.
TG_KQ_AVX2_INLINE __m256i kq_lv_q4_K_avx2(const tg_block_q4_K * x, int t) {
    const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (t / 2)));
    return _mm256_and_si256(t % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0xF));
}
TG_KQ_AVX2_INLINE __m256i kq_lv_q6_K_avx2(const tg_block_q6_K * x, int t) {
    const int c = t / 4, s = t % 4;   // q[128c + 32s + l]
    const __m256i l = _mm256_loadu_si256((const __m256i *) (x->ql + 64 * c + 32 * (s % 2)));
    const __m256i h = _mm256_loadu_si256((const __m256i *) (x->qh + 32 * c));
    const __m256i lo = _mm256_and_si256(s / 2 ? _mm256_srli_epi16(l, 4) : l, _mm256_set1_epi8(0xF));
    // bits 2s, 2s + 1 of each byte of h moved to bits 4, 5 (16-bit shifts: what
    // crosses into the next byte lands outside the mask)
    const __m256i hs = s == 0 ? _mm256_slli_epi16(h, 4) : s == 1 ? _mm256_slli_epi16(h, 2)
                     : s == 2 ? h : _mm256_srli_epi16(h, 2);
    return _mm256_or_si256(lo, _mm256_and_si256(hs, _mm256_set1_epi8(0x30)));
}

TG_KQ_AVX2_INLINE __m256i kq_lv_q5_K_avx2(const tg_block_q5_K * x, int t) {
    const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (t / 2)));
    const __m256i h = _mm256_loadu_si256((const __m256i *) x->qh);
    const __m256i lo = _mm256_and_si256(t % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0xF));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(h, t), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}

// Q2_K: levels (qs >> 2s) & 3 of group t = 4h + s.
TG_KQ_AVX2_INLINE __m256i kq_lv_q2_K_avx2(const tg_block_q2_K * x, int t) {
    const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (t / 4)));
    return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (t % 4)), _mm256_set1_epi8(3));
}
// Q3_K: the same 2 low bits and bit t of hmask as bit 2 (q + 4, 0..7).
TG_KQ_AVX2_INLINE __m256i kq_lv_q3_K_avx2(const tg_block_q3_K * x, int t) {
    const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (t / 4)));
    const __m256i hm = _mm256_loadu_si256((const __m256i *) x->hmask);
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (t % 4)), _mm256_set1_epi8(3));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hm, t), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
}

// The 32 signed levels (table values) of group t of an IQ4_XS super-block:
// the low nibbles of its 16 bytes, then the high ones.
TG_KQ_AVX2_INLINE __m256i kq_lv_iq4_xs_avx2(const tg_block_iq4_xs * x, int t) {
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) tg_iq4nl_values));
    const __m128i m4 = _mm_set1_epi8(0xF);
    const __m128i v = _mm_loadu_si128((const __m128i *) (x->qs + 16 * t));
    return _mm256_shuffle_epi8(tab, _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4)));
}

// Per-16 scales and mins (int16) and d, dmin of a super-block.
TG_KQ_AVX2_INLINE void kq_sc_k4_avx2(const uint8_t * scales, tg_fp16_t xd, tg_fp16_t xdmin, __m256i * sv, __m256i * mv,
                                     float * d, float * dmin) {
    uint64_t sc, mn;
    k4_unpack(scales, &sc, &mn);
    const __m128i v = _mm_set_epi64x((long long) mn, (long long) sc);
    *sv = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v));
    *mv = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v));
    *d = _cvtsh_ss(xd);
    *dmin = _cvtsh_ss(xdmin);
}
TG_KQ_AVX2_INLINE void kq_sc_q4_K_avx2(const tg_block_q4_K * x, __m256i * sv, __m256i * mv, float * d, float * dmin) {
    kq_sc_k4_avx2(x->scales, x->d, x->dmin, sv, mv, d, dmin);
}
TG_KQ_AVX2_INLINE void kq_sc_q5_K_avx2(const tg_block_q5_K * x, __m256i * sv, __m256i * mv, float * d, float * dmin) {
    kq_sc_k4_avx2(x->scales, x->d, x->dmin, sv, mv, d, dmin);
}
// Q2_K: scale (low nibble) and min (high nibble) per 16 weights.
TG_KQ_AVX2_INLINE void kq_sc_q2_K_avx2(const tg_block_q2_K * x, __m256i * sv, __m256i * mv, float * d, float * dmin) {
    const __m128i v = _mm_loadu_si128((const __m128i *) x->scales);
    const __m128i m4 = _mm_set1_epi8(0xF);
    *sv = _mm256_cvtepu8_epi16(_mm_and_si128(v, m4));
    *mv = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), m4));
    *d = _cvtsh_ss(x->d);
    *dmin = _cvtsh_ss(x->dmin);
}
// Q3_K: 6-bit scales, the low 4 bits from scales[0..7] (low nibbles for
// 0..7, high for 8..15), the high 2 bits from scales[8 + j % 4] at bit
// 2 (j / 4); sc - 32, and 4 * sc as the "min" of the levels kept as q + 4.
TG_KQ_AVX2_INLINE void kq_sc_q3_K_avx2(const tg_block_q3_K * x, __m256i * sv, __m256i * mv, float * d, float * dmin) {
    const __m128i a = _mm_loadl_epi64((const __m128i *) x->scales);
    uint32_t b4;
    memcpy(&b4, x->scales + 8, 4);
    const __m128i m4 = _mm_set1_epi8(0xF);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(a, m4), _mm_and_si128(_mm_srli_epi16(a, 4), m4));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int) b4), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    const __m128i sc = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
    *sv = _mm256_cvtepi8_epi16(sc);
    *mv = _mm256_slli_epi16(*sv, 2);
    *d = _cvtsh_ss(x->d);
    *dmin = 0.0f;
}
// IQ4_XS: the 6-bit scale of group t, ls = low 4 bits from scales_l,
// high 2 from scales_h, as ls - 32 for both of its 16-weight halves; no mins.
TG_KQ_AVX2_INLINE void kq_sc_iq4_xs_avx2(const tg_block_iq4_xs * x, __m256i * sv, __m256i * mv, float * d, float * dmin) {
    uint32_t l4;
    memcpy(&l4, x->scales_l, 4);
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int) l4), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                        _mm256_set1_epi32(0xF));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x->scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    *sv = _mm256_or_si256(_mm256_and_si256(ls, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(ls, 16));   // [s_t, s_t] per lane
    *mv = _mm256_setzero_si256();
    *d = _cvtsh_ss(x->d);
    *dmin = 0.0f;
}
TG_KQ_AVX2_INLINE void kq_sc_q6_K_avx2(const tg_block_q6_K * x, __m256i * sv, __m256i * mv, float * d, float * dmin) {
    *sv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) x->scales));
    *mv = _mm256_slli_epi16(*sv, 5);   // levels kept as q + 32
    *d = _cvtsh_ss(x->d);
    *dmin = 0.0f;
}

// Bytes ahead of the super-block being read that generation prefetches
// (every line of the super-block that far ahead: the stream crosses rows).
#define TG_KQ_GEN_PREFETCH 1024
// The products of 32 levels with 32 activations as int16 pairs: unsigned
// levels straight, signed ones (IQ4_XS) as |q| times the activation with q's sign.
TG_KQ_AVX2_INLINE __m256i kq_prod_avx2(__m256i q, __m256i a, bool sgn) {
    return sgn ? _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q)) : _mm256_maddubs_epi16(q, a);
}
#define TG_KQ_GEN(NAME, BX, LV, SC, TWO, SGN)                                                     \
TG_KQ_AVX2_INLINE float NAME(int64_t nsb, const BX * x, const tg_block_q8_K * y) {               \
    float s = 0.0f;                                                                               \
    for (int64_t b = 0; b < nsb; b++) {                                                           \
        const tg_block_q8_K * yb = y + b;                                                         \
        __m256i sv, mv, ai = _mm256_setzero_si256();                                              \
        float d, dmin;                                                                            \
        TG_UNROLL for (size_t o_ = 0; o_ < sizeof(BX); o_ += 64)                                   \
            _mm_prefetch((const char *) (x + b) + TG_KQ_GEN_PREFETCH + o_, _MM_HINT_T0);           \
        SC(&x[b], &sv, &mv, &d, &dmin);                                                           \
        __m256i svh[2];                                                                           \
        kq_scale_halves_avx2(sv, svh);                                                            \
        TG_UNROLL for (int t = 0; t < 8; t++) {                                                   \
            const __m256i av = _mm256_loadu_si256((const __m256i *) (yb->qs + 32 * t));           \
            ai = _mm256_add_epi32(ai, _mm256_madd_epi16(kq_prod_avx2(LV(&x[b], t), av, SGN),      \
                                                        kq_scale_th_avx2(svh, t)));               \
        }                                                                                         \
        const __m256i mi = _mm256_madd_epi16(mv, _mm256_loadu_si256((const __m256i *) yb->bsums)); \
        if (!TWO) ai = _mm256_sub_epi32(ai, mi);                                                  \
        const __m256i z = _mm256_setzero_si256();                                                 \
        const __m128i r = reduce4_avx2(ai, z, mi, z);                                             \
        s = s + (yb->d * d) * (float) _mm_cvtsi128_si32(r);                                       \
        if (TWO) s = s - (yb->d * dmin) * (float) _mm_extract_epi32(r, 2);                        \
    }                                                                                             \
    return s;                                                                                     \
}
TG_KQ_GEN(kq_gen_q4_K_t, tg_block_q4_K, kq_lv_q4_K_avx2, kq_sc_q4_K_avx2, true, false)
TG_KQ_GEN(kq_gen_q5_K_t, tg_block_q5_K, kq_lv_q5_K_avx2, kq_sc_q5_K_avx2, true, false)
TG_KQ_GEN(kq_gen_q6_K_t, tg_block_q6_K, kq_lv_q6_K_avx2, kq_sc_q6_K_avx2, false, false)
TG_KQ_GEN(kq_gen_iq4_xs_t, tg_block_iq4_xs, kq_lv_iq4_xs_avx2, kq_sc_iq4_xs_avx2, false, true)
TG_KQ_GEN(kq_gen_q2_K_t, tg_block_q2_K, kq_lv_q2_K_avx2, kq_sc_q2_K_avx2, true, false)
TG_KQ_GEN(kq_gen_q3_K_t, tg_block_q3_K, kq_lv_q3_K_avx2, kq_sc_q3_K_avx2, false, false)

// Q4_K / Q5_K scales without lane crossings: the 8 six-bit scales and the 8
// mins as bytes [sc | mn] in both 128-bit halves, from which one in-lane
// shuffle per group gives that group's scale in every int16 lane (the
// [s_2t x 8 | s_2t+1 x 8] of kq_scale_th_avx2: Q4_K's per-16 scales come in
// equal pairs) and one more the per-16 mins. On Zen 3 the lane-crossing
// permutes and widenings of the general path (kq_sc_k4_avx2,
// kq_scale_halves_avx2) share a port with maddubs / madd.
// The unpacking of k4_unpack in vector lanes: with the 12 bytes as dwords
// [u0 u1 u2], the 16 bytes [sc | mn] are the dwords [u0 & 0x3F.., (u2 & 0x0F..)
// | ((u0 >> 6) & 3) << 4 per byte, u1 & 0x3F.., ((u2 >> 4) & 0x0F..) | ((u1 >>
// 6) & 3) << 4] (((u >> 6) & 3) << 4 is (u >> 2) & 0x30 bytewise). Reads 16
// bytes from `scales` (within the block: the levels follow).
TG_KQ_AVX2_INLINE __m256i kq_k4_smv_avx2(const uint8_t * scales) {
    const __m128i v = _mm_loadu_si128((const __m128i *) (const void *) scales);
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
                                     _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
    const __m128i hi = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                                     _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm256_broadcastsi128_si256(_mm_or_si128(lo, hi));
}
TG_KQ_AVX2_INLINE __m256i kq_k4_sct_avx2(__m256i smv, int t) {
    return _mm256_shuffle_epi8(smv, _mm256_set1_epi16((short) (0x8000 | t)));
}
TG_KQ_AVX2_INLINE __m256i kq_k4_mins_avx2(__m256i smv) {
    return _mm256_shuffle_epi8(smv, _mm256_setr_epi16((short) 0x8008, (short) 0x8008, (short) 0x8009, (short) 0x8009,
                                                      (short) 0x800A, (short) 0x800A, (short) 0x800B, (short) 0x800B,
                                                      (short) 0x800C, (short) 0x800C, (short) 0x800D, (short) 0x800D,
                                                      (short) 0x800E, (short) 0x800E, (short) 0x800F, (short) 0x800F));
}
#define kq_smv_k4(x)   kq_k4_smv_avx2((x)->scales)
#define kq_smv_none(x) _mm256_setzero_si256()
// Q2_K the same way: its 16 bytes (scale | min << 4 per 16 weights) in both
// halves; group t's [s_2t x 8 | s_2t+1 x 8] and the per-16 mins are one
// in-lane shuffle each of the masked scales / the shifted mins.
#define kq_smv_q2(x)   _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) (x)->scales))
TG_KQ_AVX2_INLINE __m256i kq_q2_sct_avx2(__m256i sc, int t) {
    const short lo = (short) (0x8000 | (2 * t)), hi = (short) (0x8000 | (2 * t + 1));
    return _mm256_shuffle_epi8(sc, _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi));
}
TG_KQ_AVX2_INLINE __m256i kq_q2_mins_avx2(__m256i raw) {
    const __m256i mn = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
#define TG_B(g) (short) (0x8000 | (g))
    return _mm256_shuffle_epi8(mn, _mm256_setr_epi16(TG_B(0), TG_B(1), TG_B(2), TG_B(3), TG_B(4), TG_B(5), TG_B(6), TG_B(7),
                                                     TG_B(8), TG_B(9), TG_B(10), TG_B(11), TG_B(12), TG_B(13), TG_B(14), TG_B(15)));
#undef TG_B
}

// Four rows (lda bytes apart) against one column: per super-block the four
// rows' exact sums in the lanes of one vector, then the float steps of
// kq_gen_*_t lane by lane (lane r: row r, the same bits). The activation
// block is read once for the four rows; the prefetch runs linearly through
// the next four rows. SCM, the scales: 0 SC and the halves (kq_scale_th_avx2),
// 1 kq_k4_* (Q4_K, Q5_K), 2 kq_q2_* (Q2_K); with 1 and 2 the four rows' d and
// dmin (adjacent f16) are converted together.
#define TG_KQ_GEN4(NAME, BX, LV, SC, TWO, SGN, SCM, SMV)                                          \
TG_KQ_AVX2_INLINE __m128 NAME(int64_t nsb, const char * a, size_t lda, const tg_block_q8_K * y) { \
    __m128 s = _mm_setzero_ps();                                                                  \
    for (int64_t b = 0; b < nsb; b++) {                                                           \
        const tg_block_q8_K * yb = y + b;                                                         \
        TG_UNROLL for (size_t o_ = 0; o_ < 4 * sizeof(BX); o_ += 64)                              \
            _mm_prefetch(a + 4 * lda + 4 * b * sizeof(BX) + o_, _MM_HINT_T0);                     \
        const __m256i bs = _mm256_loadu_si256((const __m256i *) yb->bsums);                      \
        __m256i ai[4], mi[4];                                                                     \
        float d[4], dmin[4];                                                                      \
        TG_UNROLL for (int r = 0; r < 4; r++) {                                                   \
            const BX * x = (const BX *) (a + (size_t) r * lda) + b;                               \
            __m256i sv = _mm256_setzero_si256(), mv = sv, svh[2] = { sv, sv }, smv = sv;         \
            if (SCM == 2) {                                                                       \
                const __m256i raw = SMV(x);                                                       \
                mv = kq_q2_mins_avx2(raw);                                                        \
                smv = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));                              \
            } else if (SCM == 1) {                                                                \
                smv = SMV(x);                                                                     \
                mv = kq_k4_mins_avx2(smv);                                                        \
            } else {                                                                              \
                SC(x, &sv, &mv, &d[r], &dmin[r]);                                                 \
                kq_scale_halves_avx2(sv, svh);                                                    \
            }                                                                                     \
            ai[r] = _mm256_setzero_si256();                                                       \
            TG_UNROLL for (int t = 0; t < 8; t++) {                                               \
                const __m256i av = _mm256_loadu_si256((const __m256i *) (yb->qs + 32 * t));       \
                ai[r] = _mm256_add_epi32(ai[r], _mm256_madd_epi16(kq_prod_avx2(LV(x, t), av, SGN), \
                                                   SCM == 2 ? kq_q2_sct_avx2(smv, t)           \
                                                   : SCM == 1 ? kq_k4_sct_avx2(smv, t) : kq_scale_th_avx2(svh, t))); \
            }                                                                                     \
            mi[r] = _mm256_madd_epi16(mv, bs);                                                    \
            if (!TWO) ai[r] = _mm256_sub_epi32(ai[r], mi[r]);                                     \
        }                                                                                         \
        __m128 d4, dmin4;                                                                         \
        if (SCM) {   /* [d0 dm0 d1 dm1 | d2 dm2 d3 dm3] */                                         \
            const __m256 dm = _mm256_cvtph_ps(_mm256_castsi256_si128(                           \
                tg_w4x2_avx2((const char *) ((const BX *) a + b) + offsetof(BX, d), lda)));       \
            const __m128 lo = _mm256_castps256_ps128(dm), hi = _mm256_extractf128_ps(dm, 1);     \
            d4 = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));                                 \
            dmin4 = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));                              \
        } else {                                                                                  \
            d4 = _mm_loadu_ps(d);                                                                 \
            dmin4 = _mm_loadu_ps(dmin);                                                           \
        }                                                                                         \
        const __m128 yd = _mm_set1_ps(yb->d);                                                     \
        const __m128i is = reduce4_avx2(ai[0], ai[1], ai[2], ai[3]);                              \
        s = _mm_add_ps(s, _mm_mul_ps(_mm_mul_ps(yd, d4), _mm_cvtepi32_ps(is)));                   \
        if (TWO) {                                                                                \
            const __m128i ms = reduce4_avx2(mi[0], mi[1], mi[2], mi[3]);                          \
            s = _mm_sub_ps(s, _mm_mul_ps(_mm_mul_ps(yd, dmin4), _mm_cvtepi32_ps(ms)));            \
        }                                                                                         \
    }                                                                                             \
    return s;                                                                                     \
}
TG_KQ_GEN4(kq_gen4_q4_K_t, tg_block_q4_K, kq_lv_q4_K_avx2, kq_sc_q4_K_avx2, true, false, 1, kq_smv_k4)
TG_KQ_GEN4(kq_gen4_q5_K_t, tg_block_q5_K, kq_lv_q5_K_avx2, kq_sc_q5_K_avx2, true, false, 1, kq_smv_k4)
TG_KQ_GEN4(kq_gen4_q6_K_t, tg_block_q6_K, kq_lv_q6_K_avx2, kq_sc_q6_K_avx2, false, false, 0, kq_smv_none)

// IQ4_XS, four rows: a 32-byte load holds groups 2p and 2p + 1 (16 bytes
// each, low nibbles the first 16 levels, high the last), so its low nibbles
// are [2p's 0..15 | 2p+1's 0..15] and its high ones [2p's 16..31 | 2p+1's
// 16..31]. The activations are put in that order instead (two permutes per
// group pair, once for the four rows) and the scale vector is [s_2p x 8 |
// s_2p+1 x 8]: no lane crossing per row where kq_lv_iq4_xs_avx2 assembles
// each group's levels. The same products, so the same exact sums and bits.
TG_KQ_AVX2_INLINE __m128 kq_gen4_iq4_xs_t(int64_t nsb, const char * a, size_t lda, const tg_block_q8_K * y) {
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *) tg_iq4nl_values));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m128 s = _mm_setzero_ps();
    for (int64_t b = 0; b < nsb; b++) {
        const tg_block_q8_K * yb = y + b;
        TG_UNROLL for (size_t o_ = 0; o_ < 4 * sizeof(tg_block_iq4_xs); o_ += 64)
            _mm_prefetch(a + 4 * lda + 4 * b * sizeof(tg_block_iq4_xs) + o_, _MM_HINT_T0);
        __m256i yl[4], yh[4];
        TG_UNROLL for (int p = 0; p < 4; p++) {
            const __m256i g0 = _mm256_loadu_si256((const __m256i *) (yb->qs + 64 * p));
            const __m256i g1 = _mm256_loadu_si256((const __m256i *) (yb->qs + 64 * p + 32));
            yl[p] = _mm256_permute2x128_si256(g0, g1, 0x20);
            yh[p] = _mm256_permute2x128_si256(g0, g1, 0x31);
        }
        __m256i ai[4];
        float d[4];
        TG_UNROLL for (int r = 0; r < 4; r++) {
            const tg_block_iq4_xs * x = (const tg_block_iq4_xs *) (a + (size_t) r * lda) + b;
            __m256i sv, mv, svh[2];
            float dmin;
            kq_sc_iq4_xs_avx2(x, &sv, &mv, &d[r], &dmin);
            kq_scale_halves_avx2(sv, svh);
            ai[r] = _mm256_setzero_si256();
            TG_UNROLL for (int p = 0; p < 4; p++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * p));
                const __m256i lo = _mm256_shuffle_epi8(tab, _mm256_and_si256(v, m4));
                const __m256i hi = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
                // per-16 scales 4p (group 2p) and 4p + 2 (group 2p + 1), int16 lanes of svh[p / 2]
                const char k0 = (char) (2 * ((4 * p) % 8)), k1 = (char) (2 * ((4 * p + 2) % 8));
                const __m256i sc = _mm256_shuffle_epi8(svh[p / 2], _mm256_setr_epi8(
                    k0, k0 + 1, k0, k0 + 1, k0, k0 + 1, k0, k0 + 1, k0, k0 + 1, k0, k0 + 1, k0, k0 + 1, k0, k0 + 1,
                    k1, k1 + 1, k1, k1 + 1, k1, k1 + 1, k1, k1 + 1, k1, k1 + 1, k1, k1 + 1, k1, k1 + 1, k1, k1 + 1));
                ai[r] = _mm256_add_epi32(ai[r], _mm256_add_epi32(_mm256_madd_epi16(kq_prod_avx2(lo, yl[p], true), sc),
                                                                 _mm256_madd_epi16(kq_prod_avx2(hi, yh[p], true), sc)));
            }
        }
        const __m128 yd = _mm_set1_ps(yb->d);
        const __m128i is = reduce4_avx2(ai[0], ai[1], ai[2], ai[3]);
        s = _mm_add_ps(s, _mm_mul_ps(_mm_mul_ps(yd, _mm_loadu_ps(d)), _mm_cvtepi32_ps(is)));
    }
    return s;
}
TG_KQ_GEN4(kq_gen4_q2_K_t, tg_block_q2_K, kq_lv_q2_K_avx2, kq_sc_q2_K_avx2, true, false, 2, kq_smv_q2)
TG_KQ_GEN4(kq_gen4_q3_K_t, tg_block_q3_K, kq_lv_q3_K_avx2, kq_sc_q3_K_avx2, false, false, 0, kq_smv_none)

// Rows four at a time, the rest one by one.
#define KQ_GEN_ROWS(FN, FN4, BX, g, y, c, nsb)                                                    \
    do {                                                                                          \
        int64_t i_ = 0;                                                                           \
        for (; i_ + 4 <= (g)->ni; i_ += 4)                                                        \
            _mm_storeu_ps((c) + i_, FN4(nsb, (g)->a + (size_t) i_ * (g)->lda, (g)->lda, y));      \
        for (; i_ < (g)->ni; i_++) (c)[i_] = FN(nsb, (const BX *) ((g)->a + (size_t) i_ * (g)->lda), y); \
    } while (0)

// Columns j < nj (< 4) of a block by the kernels above; false for other types.
TG_KQ_AVX2 static bool kq_gen_avx2(const struct tg_mm_args * g) {
    switch (g->type) {
    case TG_TYPE_Q2_K: case TG_TYPE_Q3_K: case TG_TYPE_Q4_K: case TG_TYPE_Q5_K: case TG_TYPE_Q6_K: case TG_TYPE_IQ4_XS: break;
    default: return false;
    }
    const int64_t nsb = g->k / TG_QK_K;
    for (int64_t j = 0; j < g->nj; j++) {
        const tg_block_q8_K * y = (const tg_block_q8_K *) (g->b + (size_t) j * g->ldb);
        float * c = g->c + (size_t) j * g->ldc;
        if (g->type == TG_TYPE_Q4_K)      KQ_GEN_ROWS(kq_gen_q4_K_t, kq_gen4_q4_K_t, tg_block_q4_K, g, y, c, nsb);
        else if (g->type == TG_TYPE_Q5_K) KQ_GEN_ROWS(kq_gen_q5_K_t, kq_gen4_q5_K_t, tg_block_q5_K, g, y, c, nsb);
        else if (g->type == TG_TYPE_Q6_K) KQ_GEN_ROWS(kq_gen_q6_K_t, kq_gen4_q6_K_t, tg_block_q6_K, g, y, c, nsb);
        else if (g->type == TG_TYPE_Q2_K) KQ_GEN_ROWS(kq_gen_q2_K_t, kq_gen4_q2_K_t, tg_block_q2_K, g, y, c, nsb);
        else if (g->type == TG_TYPE_Q3_K) KQ_GEN_ROWS(kq_gen_q3_K_t, kq_gen4_q3_K_t, tg_block_q3_K, g, y, c, nsb);
        else                              KQ_GEN_ROWS(kq_gen_iq4_xs_t, kq_gen4_iq4_xs_t, tg_block_iq4_xs, g, y, c, nsb);
    }
    return true;
}
#endif

// ---- the kinds --------------------------------------------------------------

#ifdef TG_X86
#define KQ_KIND(T, SIGNED, TWO, MN) \
    { sizeof(tg_block_##T), SIGNED, TWO, MN, unpack_##T##_scalar, unpack_##T##_avx2 }
#else
#define KQ_KIND(T, SIGNED, TWO, MN) { sizeof(tg_block_##T), SIGNED, TWO, MN, unpack_##T##_scalar }
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

#ifdef TG_X86
// ---- prompts on panels: 8 rows interleaved, AVX2 -------------------------------
// 8 weight rows' unpacked super-blocks interleaved 4 levels at a time (one
// vector lane per row: no horizontal sums), each 16-group's scales as a
// vector (row r's scale in int16 lanes 2r and 2r + 1) and the mins in pairs
// for the bsums products; run against 4 activation columns at a time. The
// chunks of a group add up in int16 before their scale multiply where the
// levels allow it (levels < 32: 4 chunks; Q6_K: 2; signed IQ4_XS: 1). The
// same exact isum / msum and float steps as kq_term.
enum { KP_SB = 4 };   // super-blocks per panel pass (11.6 KiB)
struct kq_panel {
    int8_t  q[KP_SB][64][32] __attribute__((aligned(32)));
    int16_t sc[KP_SB][16][16] __attribute__((aligned(32)));
    int16_t mn[KP_SB][8][16] __attribute__((aligned(32)));
    float   d[KP_SB][8] __attribute__((aligned(32)));
    float   dmin[KP_SB][8] __attribute__((aligned(32)));
};

TG_KQ_AVX2 static void kq_pack_avx2(const struct kq_kind * kd, const char * a, size_t lda, int rows,
                                    int64_t sb0, int nsb, struct kq_panel * P) {
    struct kq_sb u;
    for (int r = 0; r < 8; r++) {
        for (int b = 0; b < nsb; b++) {
            if (r < rows) kd->unpack_avx2(a + (size_t) r * lda + (size_t) (sb0 + b) * kd->bytes, &u);
            else memset(&u, 0, sizeof(u));
            for (int c = 0; c < 64; c++) memcpy(&P->q[b][c][4 * r], u.q + 4 * c, 4);
            for (int g = 0; g < 16; g++) P->sc[b][g][2 * r] = P->sc[b][g][2 * r + 1] = u.sc[g];
            for (int p = 0; p < 8; p++) {
                P->mn[b][p][2 * r] = u.mn[2 * p];
                P->mn[b][p][2 * r + 1] = u.mn[2 * p + 1];
            }
            P->d[b][r] = u.d;
            P->dmin[b][r] = u.dmin;
        }
    }
}

TG_KQ_AVX2_INLINE void kq_panel_avx2(const int RJ, const int NACC, const bool SIGNED, const bool HAS_MN,
                                     const bool TWO, const struct kq_panel * P, int nsb,
                                     const tg_block_q8_K * const * y, __m256 * acc) {
    for (int b = 0; b < nsb; b++) {
        __m256i is[4], ms[4];
        TG_UNROLL for (int j = 0; j < RJ; j++) { is[j] = _mm256_setzero_si256(); ms[j] = _mm256_setzero_si256(); }
        for (int g = 0; g < 16; g++) {
            const __m256i scv = _mm256_load_si256((const __m256i *) P->sc[b][g]);
            __m256i s16[4];
            TG_UNROLL for (int j = 0; j < RJ; j++) s16[j] = _mm256_setzero_si256();
            TG_UNROLL for (int c4 = 0; c4 < 4; c4++) {
                const int c = 4 * g + c4;
                const __m256i w = _mm256_load_si256((const __m256i *) P->q[b][c]);
                const __m256i aw = SIGNED ? _mm256_sign_epi8(w, w) : w;
                TG_UNROLL for (int j = 0; j < RJ; j++) {
                    int32_t y4;
                    memcpy(&y4, y[j][b].qs + 4 * c, 4);
                    const __m256i yb = _mm256_set1_epi32(y4);
                    const __m256i p = _mm256_maddubs_epi16(aw, SIGNED ? _mm256_sign_epi8(yb, w) : yb);
                    s16[j] = c4 % NACC ? _mm256_add_epi16(s16[j], p) : p;
                    if (c4 % NACC == NACC - 1) is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(s16[j], scv));
                }
            }
        }
        if (HAS_MN)
            TG_UNROLL for (int p = 0; p < 8; p++) {
                const __m256i mnv = _mm256_load_si256((const __m256i *) P->mn[b][p]);
                TG_UNROLL for (int j = 0; j < RJ; j++) {
                    int32_t b2;
                    memcpy(&b2, &y[j][b].bsums[2 * p], 4);
                    ms[j] = _mm256_add_epi32(ms[j], _mm256_madd_epi16(mnv, _mm256_set1_epi32(b2)));
                }
            }
        const __m256 dv = _mm256_load_ps(P->d[b]), dmv = _mm256_load_ps(P->dmin[b]);
        TG_UNROLL for (int j = 0; j < RJ; j++) {
            const __m256 d8 = _mm256_set1_ps(y[j][b].d);
            if (TWO) {
                acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(_mm256_mul_ps(d8, dv), _mm256_cvtepi32_ps(is[j])));
                acc[j] = _mm256_sub_ps(acc[j], _mm256_mul_ps(_mm256_mul_ps(d8, dmv), _mm256_cvtepi32_ps(ms[j])));
            } else {
                acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(_mm256_mul_ps(d8, dv),
                                                             _mm256_cvtepi32_ps(_mm256_sub_epi32(is[j], ms[j]))));
            }
        }
    }
}

#define KQ_PANEL_BLOCK(NAME, NACC, SIGNED, HAS_MN, TWO)                                           \
TG_KQ_AVX2 static void NAME(const struct tg_mm_args * g) {                                       \
    const struct kq_kind * kd = kq_kind_of(g->type);                                              \
    const int64_t nsb = g->k / TG_QK_K;                                                           \
    struct kq_panel P;                                                                            \
    for (int64_t s0 = 0; s0 < nsb; s0 += KP_SB) {                                                 \
        const int ns = (int) (nsb - s0 < KP_SB ? nsb - s0 : KP_SB);                               \
        for (int64_t i0 = 0; i0 < g->ni; i0 += 8) {                                               \
            const int rows = (int) (g->ni - i0 < 8 ? g->ni - i0 : 8);                             \
            kq_pack_avx2(kd, g->a + (size_t) i0 * g->lda, g->lda, rows, s0, ns, &P);              \
            for (int64_t j0 = 0; j0 < g->nj; j0 += 4) {                                           \
                const int rj = (int) (g->nj - j0 < 4 ? g->nj - j0 : 4);                           \
                const tg_block_q8_K * y[4];                                                       \
                __m256 acc[4];                                                                    \
                for (int j = 0; j < rj; j++) {                                                    \
                    y[j] = (const tg_block_q8_K *) (g->b + (size_t) (j0 + j) * g->ldb) + s0;      \
                    float * c = g->c + (size_t) (j0 + j) * g->ldc + i0;                           \
                    acc[j] = s0 ? tg_load_rows8(c, rows) : _mm256_setzero_ps();                    \
                }                                                                                 \
                switch (rj) {                                                                     \
                case 4: kq_panel_avx2(4, NACC, SIGNED, HAS_MN, TWO, &P, ns, y, acc); break;       \
                case 3: kq_panel_avx2(3, NACC, SIGNED, HAS_MN, TWO, &P, ns, y, acc); break;       \
                case 2: kq_panel_avx2(2, NACC, SIGNED, HAS_MN, TWO, &P, ns, y, acc); break;       \
                default: kq_panel_avx2(1, NACC, SIGNED, HAS_MN, TWO, &P, ns, y, acc); break;      \
                }                                                                                 \
                for (int j = 0; j < rj; j++)                                                      \
                    tg_store_rows8(g->c + (size_t) (j0 + j) * g->ldc + i0, acc[j], rows);          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}
KQ_PANEL_BLOCK(kq_panel_two_avx2, 4, false, true, true)      // Q2_K, Q4_K, Q5_K
KQ_PANEL_BLOCK(kq_panel_q3_K_avx2, 4, false, true, false)    // Q3_K
KQ_PANEL_BLOCK(kq_panel_q6_K_avx2, 2, false, true, false)    // Q6_K
KQ_PANEL_BLOCK(kq_panel_iq4_xs_avx2, 1, true, false, false)  // IQ4_XS
#endif

// ---- block kernels ------------------------------------------------------------

typedef void (*kq_dot_fn)(const struct kq_kind * kd, int ni, int nsb, const struct kq_sb * const * u,
                          const char * yb, size_t ldb, int64_t nj, float * c, size_t ldc, bool first);
typedef void (*kq_unpack_fn)(const void * blk, struct kq_sb * u);

enum { KQ_CHUNK = 12 };   // super-blocks of a row unpacked at a time (6.6 KiB)

// Rows two at a time (one for an odd last row), columns four at a time; each
// output element follows its own fixed sequence, so the tiling never shows.
static inline void kq_block(const struct tg_mm_args * g, kq_unpack_fn unpack, kq_dot_fn dot) {
    const struct kq_kind * kd = kq_kind_of(g->type);
    struct kq_sb ub[2][KQ_CHUNK];
    const struct kq_sb * u[2] = { ub[0], ub[1] };
    const int64_t nsb = g->k / TG_QK_K;
    for (int64_t i = 0; i < g->ni; i += 2) {
        const int ni = g->ni - i >= 2 ? 2 : 1;
        for (int64_t b0 = 0; b0 < nsb; b0 += KQ_CHUNK) {
            const int nb = (int) (nsb - b0 < KQ_CHUNK ? nsb - b0 : KQ_CHUNK);
            for (int r = 0; r < ni; r++) {
                const char * row = g->a + (size_t) (i + r) * g->lda;
                for (int b = 0; b < nb; b++) unpack(row + (size_t) (b0 + b) * kd->bytes, &ub[r][b]);
            }
            dot(kd, ni, nb, u, g->b + (size_t) b0 * sizeof(tg_block_q8_K), g->ldb, g->nj, g->c + i, g->ldc, b0 == 0);
        }
    }
}

static void block_kq_scalar(const struct tg_mm_args * g) {
    kq_block(g, kq_kind_of(g->type)->unpack_scalar, kq_dot_scalar);
}
#ifdef TG_X86
// ---- avx (no avx2): 128-bit dot of unpacked super-blocks ---------------------
// For CPUs with AVX but not AVX2 (the levels are unpacked by the scalar code):
// per 16 levels maddubs (or |q|, sign(y, q)) -> int16 pairs, madd with the
// group's scale -> int32 lanes; the same exact isum / msum and the same float
// steps (kq_term) as kq_dot_scalar1, so the same bits.
__attribute__((target("avx"))) static void kq_dot_avx(const struct kq_kind * kd, int ni, int nsb,
                                                       const struct kq_sb * const * u, const char * yb, size_t ldb,
                                                       int64_t nj, float * c, size_t ldc, bool first) {
    for (int i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            const tg_block_q8_K * y = (const tg_block_q8_K *) (yb + (size_t) j * ldb);
            float * o = c + (size_t) j * ldc + i;
            float s = first ? 0.0f : *o;
            for (int b = 0; b < nsb; b++) {
                const struct kq_sb * x = &u[i][b];
                __m128i acc = _mm_setzero_si128();
                for (int g = 0; g < 16; g++) {
                    const __m128i q = _mm_load_si128((const __m128i *) (x->q + 16 * g));
                    const __m128i a = _mm_loadu_si128((const __m128i *) (y[b].qs + 16 * g));
                    const __m128i p = kd->signed_q ? _mm_maddubs_epi16(_mm_sign_epi8(q, q), _mm_sign_epi8(a, q))
                                                   : _mm_maddubs_epi16(q, a);
                    acc = _mm_add_epi32(acc, _mm_madd_epi16(p, _mm_set1_epi16(x->sc[g])));
                }
                __m128i ms = _mm_setzero_si128();
                if (kd->has_mn)
                    ms = _mm_add_epi32(_mm_madd_epi16(_mm_load_si128((const __m128i *) x->mn),
                                                      _mm_loadu_si128((const __m128i *) y[b].bsums)),
                                       _mm_madd_epi16(_mm_load_si128((const __m128i *) (x->mn + 8)),
                                                      _mm_loadu_si128((const __m128i *) (y[b].bsums + 8))));
                // [isum, isum, msum, msum] after the two folds
                __m128i t = _mm_hadd_epi32(acc, ms);
                t = _mm_hadd_epi32(t, t);
                s = kq_term(kd, x, y[b].d, s, _mm_cvtsi128_si32(t), _mm_extract_epi32(t, 1));
            }
            *o = s;
        }
}
static void block_kq_avx(const struct tg_mm_args * g) {
    kq_block(g, kq_kind_of(g->type)->unpack_scalar, kq_dot_avx);
}

static void block_kq_avx2(const struct tg_mm_args * g) {
    if (g->nj < 4) {
        if (kq_gen_avx2(g)) return;   // generation: the levels decoded in registers
        kq_block(g, kq_kind_of(g->type)->unpack_avx2, kq_dot_avx2);
        return;
    }
    switch (g->type) {   // prompts: panels of 8 rows
    case TG_TYPE_Q3_K:   kq_panel_q3_K_avx2(g); return;
    case TG_TYPE_Q6_K:   kq_panel_q6_K_avx2(g); return;
    case TG_TYPE_IQ4_XS: kq_panel_iq4_xs_avx2(g); return;
    default:             kq_panel_two_avx2(g); return;
    }
}
#endif

bool tg_mm_kquant_supported(enum tg_type type) { return kq_kind_of(type) != NULL; }

tg_mm_block_fn tg_mm_kquant_block(enum tg_type type, int level) {
    if (!kq_kind_of(type)) return NULL;
#ifdef TG_X86
    // the avx512 levels run the avx2 kernels (generation reads the weights
    // at memory speed; the panels' int16 chunk sums leave vpdpbusd little to save)
    if (level >= TG_SIMD_AVX2) return block_kq_avx2;
    if (level >= TG_SIMD_AVX) return block_kq_avx;
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
