// types.c - type traits, fp16/bf16 conversions, Q8_0/Q4_0 block formats.
//
// Scalar conversions are exact (round to nearest even, NaN/Inf preserved) and
// written without intrinsics; row conversions use F16C when the compiler
// targets it (same results: F16C rounds to nearest even too).
#include "core/quant-round.h"
#include "tg/types.h"

#include <math.h>
#include <string.h>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#define TG_HAVE_F16C 1
#endif

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float    bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

// ---- scalar conversions ---------------------------------------------------

float tg_fp16_to_fp32(tg_fp16_t h) {
    uint32_t sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t e    = (h >> 10) & 0x1f;
    uint32_t m    = h & 0x3ff;
    if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13));   // Inf / NaN
    if (e == 0) {
        if (m == 0) return bits_f32(sign);                              // +-0
        // Subnormal m * 2^-24: normalise so that bit 10 is the implicit one.
        e = 1;
        while (!(m & 0x400)) { m <<= 1; e--; }
        m &= 0x3ff;
        return bits_f32(sign | ((e + 112) << 23) | (m << 13));
    }
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

// Rounds `m >> shift` to nearest, ties to even.
static inline uint32_t shift_rne(uint32_t m, unsigned shift) {
    uint32_t q    = m >> shift;
    uint32_t rem  = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

tg_fp16_t tg_fp32_to_fp16(float f) {
    uint32_t x    = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) {
        if (x == 0x7f800000u) return (tg_fp16_t) (sign | 0x7c00);      // Inf
        return (tg_fp16_t) (sign | 0x7e00 | ((x >> 13) & 0x3ff));      // NaN stays a (quiet) NaN
    }
    uint32_t exp = x >> 23;                  // biased f32 exponent
    if (exp >= 113) {                        // normal in fp16 (unless it overflows)
        uint32_t e16 = exp - 112;
        if (e16 >= 31) return (tg_fp16_t) (sign | 0x7c00);
        // exponent and mantissa are adjacent: a rounding carry bumps the exponent (up to Inf).
        uint32_t h = shift_rne((e16 << 23) | (x & 0x7fffffu), 13);
        return (tg_fp16_t) (sign | h);
    }
    if (x <= 0x33000000u) return (tg_fp16_t) sign;   // <= 2^-25 rounds to zero (tie goes to even 0)
    // Subnormal result: value / 2^-24, rounded.
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    return (tg_fp16_t) (sign | shift_rne(m, 126 - exp));
}

float tg_bf16_to_fp32(tg_bf16_t h) { return bits_f32((uint32_t) h << 16); }

tg_bf16_t tg_fp32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (tg_bf16_t) ((x >> 16) | 0x40);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1);
    return (tg_bf16_t) (x >> 16);
}

// ---- rows -----------------------------------------------------------------

void tg_fp16_to_fp32_row(const tg_fp16_t * x, float * y, int64_t n) {
    int64_t i = 0;
#ifdef TG_HAVE_F16C
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *) (x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
#endif
    for (; i < n; i++) y[i] = tg_fp16_to_fp32(x[i]);
}

void tg_fp32_to_fp16_row(const float * x, tg_fp16_t * y, int64_t n) {
    int64_t i = 0;
#ifdef TG_HAVE_F16C
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *) (y + i), h);
    }
#endif
    for (; i < n; i++) y[i] = tg_fp32_to_fp16(x[i]);
}

void tg_bf16_to_fp32_row(const tg_bf16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = tg_bf16_to_fp32(x[i]);
}

void tg_fp32_to_bf16_row(const float * x, tg_bf16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = tg_fp32_to_bf16(x[i]);
}

// Q8_0: d = amax / 127, q = round(x / d), computed as x * (1/d) and rounded
// half to even: byte-exact with the Q8_0 files of the reference runtime
// (tests/data/quant-ref has a block with an exact tie).
void tg_quantize_row_q8_0(const float * x, tg_block_q8_0 * y, int64_t n) {
    const int64_t nb = n / TG_QK8_0;
    for (int64_t b = 0; b < nb; b++) {
        const float * xb = x + b * TG_QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < TG_QK8_0; j++) {
            float a = fabsf(xb[j]);
            if (a > amax) amax = a;
        }
        const float d  = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = tg_fp32_to_fp16(d);
        for (int j = 0; j < TG_QK8_0; j++) {
            float v = xb[j] * id;
            y[b].qs[j] = v == v ? tg_q8_low_byte(tg_round_half_even(v)) : 0;
        }
    }
}

void tg_dequantize_row_q8_0(const tg_block_q8_0 * x, float * y, int64_t n) {
    const int64_t nb = n / TG_QK8_0;
    for (int64_t b = 0; b < nb; b++) {
        const float d = tg_fp16_to_fp32(x[b].d);
        for (int j = 0; j < TG_QK8_0; j++) y[b * TG_QK8_0 + j] = d * (float) x[b].qs[j];
    }
}

// Q4_0: the element of largest magnitude `max` (sign kept) maps to -8:
// d = max / -8, q = min(15, trunc(x / d + 8.5)) (tg_q4_nibble).
void tg_quantize_row_q4_0(const float * x, tg_block_q4_0 * y, int64_t n) {
    const int64_t nb = n / TG_QK4_0;
    for (int64_t b = 0; b < nb; b++) {
        const float * xb = x + b * TG_QK4_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < TG_QK4_0; j++) {
            if (amax < fabsf(xb[j])) { amax = fabsf(xb[j]); max = xb[j]; }
        }
        const float d  = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = tg_fp32_to_fp16(d);
        for (int j = 0; j < TG_QK4_0 / 2; j++) {
            uint8_t lo = tg_q4_nibble(xb[j] * id);
            uint8_t hi = tg_q4_nibble(xb[j + TG_QK4_0 / 2] * id);
            y[b].qs[j] = (uint8_t) (lo | (hi << 4));
        }
    }
}

void tg_dequantize_row_q4_0(const tg_block_q4_0 * x, float * y, int64_t n) {
    const int64_t nb = n / TG_QK4_0;
    for (int64_t b = 0; b < nb; b++) {
        const float d = tg_fp16_to_fp32(x[b].d);
        for (int j = 0; j < TG_QK4_0 / 2; j++) {
            y[b * TG_QK4_0 + j]                 = d * (float) ((x[b].qs[j] & 0x0f) - 8);
            y[b * TG_QK4_0 + j + TG_QK4_0 / 2]  = d * (float) ((x[b].qs[j] >> 4) - 8);
        }
    }
}

// ---- traits ---------------------------------------------------------------

static void f32_to_f32(const void * s, float * d, int64_t n) { memmove(d, s, (size_t) n * sizeof(float)); }
static void f32_from_f32(const float * s, void * d, int64_t n) { memmove(d, s, (size_t) n * sizeof(float)); }
static void f16_to_f32(const void * s, float * d, int64_t n) { tg_fp16_to_fp32_row(s, d, n); }
static void f16_from_f32(const float * s, void * d, int64_t n) { tg_fp32_to_fp16_row(s, d, n); }
static void bf16_to_f32(const void * s, float * d, int64_t n) { tg_bf16_to_fp32_row(s, d, n); }
static void bf16_from_f32(const float * s, void * d, int64_t n) { tg_fp32_to_bf16_row(s, d, n); }
static void f64_to_f32(const void * s, float * d, int64_t n) {
    const double * x = s;
    for (int64_t i = 0; i < n; i++) d[i] = (float) x[i];
}
static void f64_from_f32(const float * s, void * d, int64_t n) {
    double * y = d;
    for (int64_t i = 0; i < n; i++) y[i] = s[i];
}
static void q8_0_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q8_0(s, d, n); }
static void q8_0_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q8_0(s, d, n); }
static void q4_0_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q4_0(s, d, n); }
static void q4_0_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q4_0(s, d, n); }

static void q4_1_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q4_1(s, d, n); }
static void q4_1_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q4_1(s, d, n); }
static void q5_0_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q5_0(s, d, n); }
static void q5_0_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q5_0(s, d, n); }
static void q5_1_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q5_1(s, d, n); }
static void q5_1_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q5_1(s, d, n); }
static void q8_1_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q8_1(s, d, n); }
static void q8_1_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q8_1(s, d, n); }
static void q2_K_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q2_K(s, d, n); }
static void q2_K_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q2_K(s, d, n); }
static void q3_K_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q3_K(s, d, n); }
static void q3_K_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q3_K(s, d, n); }
static void q4_K_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q4_K(s, d, n); }
static void q4_K_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q4_K(s, d, n); }
static void q5_K_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q5_K(s, d, n); }
static void q5_K_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q5_K(s, d, n); }
static void q6_K_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q6_K(s, d, n); }
static void q6_K_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q6_K(s, d, n); }
static void q8_K_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_q8_K(s, d, n); }
static void q8_K_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_q8_K(s, d, n); }
static void iq4_nl_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_iq4_nl(s, d, n); }
static void iq4_nl_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_iq4_nl(s, d, n); }
static void iq4_xs_to_f32(const void * s, float * d, int64_t n) { tg_dequantize_row_iq4_xs(s, d, n); }
static void iq4_xs_from_f32(const float * s, void * d, int64_t n) { tg_quantize_row_iq4_xs(s, d, n); }

static const struct tg_type_traits traits[TG_TYPE_COUNT] = {
#define TG_TYPE_DEF(e, id, name, blck, size, quant, to, from) [TG_TYPE_##e] = { name, blck, size, quant, to, from },
#include "tg/types.def"
#undef TG_TYPE_DEF
};

_Static_assert(sizeof(tg_block_q8_0) == 34, "Q8_0 block is 34 bytes");
_Static_assert(sizeof(tg_block_q4_0) == 18, "Q4_0 block is 18 bytes");
_Static_assert(sizeof(tg_block_q4_1) == 20 && sizeof(tg_block_q5_0) == 22 && sizeof(tg_block_q5_1) == 24 &&
               sizeof(tg_block_q8_1) == 36, "legacy block sizes (GGUF)");
_Static_assert(sizeof(tg_block_q2_K) == 84 && sizeof(tg_block_q3_K) == 110 && sizeof(tg_block_q4_K) == 144 &&
               sizeof(tg_block_q5_K) == 176 && sizeof(tg_block_q6_K) == 210 && sizeof(tg_block_q8_K) == 292,
               "K-quant block sizes (GGUF)");
_Static_assert(sizeof(tg_block_iq4_nl) == 18 && sizeof(tg_block_iq4_xs) == 136, "IQ4 block sizes (GGUF)");

enum tg_type tg_type_vec_dot_type(enum tg_type type) {
    switch (type) {
    case TG_TYPE_Q4_0: case TG_TYPE_Q5_0: case TG_TYPE_Q8_0: case TG_TYPE_IQ4_NL: return TG_TYPE_Q8_0;
    case TG_TYPE_Q4_1: case TG_TYPE_Q5_1: return TG_TYPE_Q8_1;
    case TG_TYPE_Q2_K: case TG_TYPE_Q3_K: case TG_TYPE_Q4_K: case TG_TYPE_Q5_K: case TG_TYPE_Q6_K:
    case TG_TYPE_IQ4_XS: return TG_TYPE_Q8_K;
    default: return TG_TYPE_F32;
    }
}

const struct tg_type_traits * tg_type_traits(enum tg_type type) {
    if ((int) type < 0 || (int) type >= TG_TYPE_COUNT) return NULL;
    return traits[type].name ? &traits[type] : NULL;
}

bool tg_type_supported(int type) { return tg_type_traits((enum tg_type) type) != NULL; }

const char * tg_type_name(enum tg_type type) {
    const struct tg_type_traits * tt = tg_type_traits(type);
    return tt ? tt->name : "unknown";
}

int64_t tg_blck_size(enum tg_type type) {
    const struct tg_type_traits * tt = tg_type_traits(type);
    return tt ? tt->blck_size : 0;
}

size_t tg_type_size(enum tg_type type) {
    const struct tg_type_traits * tt = tg_type_traits(type);
    return tt ? tt->type_size : 0;
}

size_t tg_row_size(enum tg_type type, int64_t ne0) {
    const struct tg_type_traits * tt = tg_type_traits(type);
    if (!tt || ne0 < 0) return 0;
    return tt->type_size * (size_t) (ne0 / tt->blck_size);
}
