// ops-vec.c - f32 vector helpers for the elementwise and row kernels, each in
// three versions: scalar, AVX(+FMA) and AVX-512, chosen at run time by
// tg_cpu_simd_level(). Tails of SIMD loops use the scalar code. Reductions
// accumulate in double in a fixed order (deterministic for a given n).
#include "cpu/cpu-impl.h"

#include <math.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TG_HAVE_X86_SIMD 1
#define TG_AVX    __attribute__((target("avx,fma")))
#define TG_AVX512 __attribute__((target("avx512f,avx,fma")))
#endif

// ---- scalar ----------------------------------------------------------------------------

#define GELU_K 0.7978845608028654f   // sqrt(2/pi)
#define GELU_C 0.044715f

static inline float silu1(float x) { return x / (1.0f + expf(-x)); }
// 0.5 x (1 + tanh(k (x + c x^3))) written as x * sigmoid(2 k (x + c x^3)).
static inline float gelu1(float x) { return x / (1.0f + expf(-2.0f * GELU_K * (x + GELU_C * x * x * x))); }
static inline float relu1(float x) { return x > 0.0f ? x : 0.0f; }

static void add_s(int64_t n, float * z, const float * x, const float * y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] + y[i]; }
static void sub_s(int64_t n, float * z, const float * x, const float * y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] - y[i]; }
static void mul_s(int64_t n, float * z, const float * x, const float * y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] * y[i]; }
static void div_s(int64_t n, float * z, const float * x, const float * y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] / y[i]; }
static void scale_s(int64_t n, float * y, const float * x, float s) { for (int64_t i = 0; i < n; i++) y[i] = x[i] * s; }
static void silu_s(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = silu1(x[i]); }
static void gelu_s(int64_t n, float * y, const float * x) { for (int64_t i = 0; i < n; i++) y[i] = gelu1(x[i]); }
static void glu_s(int64_t n, int op, float * z, const float * x, const float * g) {
    for (int64_t i = 0; i < n; i++) {
        float a = op == TG_GLU_SWIGLU ? silu1(x[i]) : op == TG_GLU_GEGLU ? gelu1(x[i]) : relu1(x[i]);
        z[i] = a * g[i];
    }
}
static float max_s(int64_t n, const float * x) {
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}
static double exp_sum_s(int64_t n, float * y, const float * x, float m) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) { y[i] = expf(x[i] - m); s += y[i]; }
    return s;
}
static double sum_s(int64_t n, const float * x) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}
static double sumsq_s(int64_t n, const float * x) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double) x[i] * x[i];
    return s;
}
static void axpb_s(int64_t n, float * y, const float * x, float b, float s) {
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] + b) * s;
}
static void rope_s(int64_t i0, int64_t n_dims, int neox, float * y, const float * x, const float * cs, const float * sn) {
    const int64_t h = n_dims / 2;
    for (int64_t i = i0; i < h; i++) {
        int64_t a = neox ? i : 2 * i, b = neox ? i + h : 2 * i + 1;
        float x0 = x[a], x1 = x[b];
        y[a] = x0 * cs[i] - x1 * sn[i];
        y[b] = x0 * sn[i] + x1 * cs[i];
    }
}

#ifdef TG_HAVE_X86_SIMD
// ---- AVX + FMA (8 lanes) ------------------------------------------------------------------

// exp for 8 floats: n = round(x log2 e), r = x - n ln2 (two-part ln2),
// e^r by a degree-7 Taylor polynomial, times 2^n built in the exponent bits.
// NaN propagates; x < -87.3 gives 0, x > 88.72 gives +inf.
TG_AVX static inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.37626f);
    __m256 xc = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n);
    __m128i e0 = _mm_slli_epi32(_mm_add_epi32(_mm256_castsi256_si128(ni), _mm_set1_epi32(127)), 23);
    __m128i e1 = _mm_slli_epi32(_mm_add_epi32(_mm256_extractf128_si256(ni, 1), _mm_set1_epi32(127)), 23);
    __m256 pow2n = _mm256_castsi256_ps(_mm256_insertf128_si256(_mm256_castsi128_si256(e0), e1, 1));
    __m256 res = _mm256_mul_ps(p, pow2n);
    res = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), res);
    return _mm256_blendv_ps(res, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ));
}
TG_AVX static inline __m256 silu8(__m256 x) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
TG_AVX static inline __m256 gelu8(__m256 x) {
    __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    __m256 u = _mm256_fmadd_ps(x3, _mm256_set1_ps(GELU_C), x);
    __m256 e = exp8(_mm256_mul_ps(u, _mm256_set1_ps(-2.0f * GELU_K)));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
TG_AVX static inline double hsum4d(__m256d v) {
    __m128d a = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(a, _mm_unpackhi_pd(a, a)));
}

#define BIN8(name, op, sfn)                                                               \
    TG_AVX static void name(int64_t n, float * z, const float * x, const float * y) {     \
        int64_t i = 0;                                                                    \
        for (; i + 8 <= n; i += 8)                                                        \
            _mm256_storeu_ps(z + i, op(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));  \
        sfn(n - i, z + i, x + i, y + i);                                                  \
    }
BIN8(add_avx, _mm256_add_ps, add_s)
BIN8(sub_avx, _mm256_sub_ps, sub_s)
BIN8(mul_avx, _mm256_mul_ps, mul_s)
BIN8(div_avx, _mm256_div_ps, div_s)

TG_AVX static void scale_avx(int64_t n, float * y, const float * x, float s) {
    int64_t i = 0;
    __m256 vs = _mm256_set1_ps(s);
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    scale_s(n - i, y + i, x + i, s);
}
TG_AVX static void silu_avx(int64_t n, float * y, const float * x) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, silu8(_mm256_loadu_ps(x + i)));
    silu_s(n - i, y + i, x + i);
}
TG_AVX static void gelu_avx(int64_t n, float * y, const float * x) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i)));
    gelu_s(n - i, y + i, x + i);
}
TG_AVX static void glu_avx(int64_t n, int op, float * z, const float * x, const float * g) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 a = op == TG_GLU_SWIGLU ? silu8(v) : op == TG_GLU_GEGLU ? gelu8(v)
                                                  : _mm256_max_ps(v, _mm256_setzero_ps());
        _mm256_storeu_ps(z + i, _mm256_mul_ps(a, _mm256_loadu_ps(g + i)));
    }
    glu_s(n - i, op, z + i, x + i, g + i);
}
TG_AVX static float max_avx(int64_t n, const float * x) {
    int64_t i = 0;
    __m256 m = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    float r = max_s(8, lanes), t = max_s(n - i, x + i);
    return t > r ? t : r;
}
TG_AVX static double exp_sum_avx(int64_t n, float * y, const float * x, float m) {
    int64_t i = 0;
    __m256 vm = _mm256_set1_ps(m);
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(y + i, e);
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    return hsum4d(_mm256_add_pd(a0, a1)) + exp_sum_s(n - i, y + i, x + i, m);
}
TG_AVX static double sum_avx(int64_t n, const float * x) {
    int64_t i = 0;
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    return hsum4d(_mm256_add_pd(a0, a1)) + sum_s(n - i, x + i);
}
TG_AVX static double sumsq_avx(int64_t n, const float * x) {
    int64_t i = 0;
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        a0 = _mm256_fmadd_pd(d0, d0, a0);
        a1 = _mm256_fmadd_pd(d1, d1, a1);
    }
    return hsum4d(_mm256_add_pd(a0, a1)) + sumsq_s(n - i, x + i);
}
TG_AVX static void axpb_avx(int64_t n, float * y, const float * x, float b, float s) {
    int64_t i = 0;
    __m256 vb = _mm256_set1_ps(b), vs = _mm256_set1_ps(s);
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(x + i), vb), vs));
    axpb_s(n - i, y + i, x + i, b, s);
}
TG_AVX static void rope_avx(int64_t n_dims, int neox, float * y, const float * x, const float * cs, const float * sn) {
    const int64_t h = n_dims / 2;
    int64_t i = 0;
    if (neox) {
        for (; i + 8 <= h; i += 8) {
            __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
            __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + h);
            _mm256_storeu_ps(y + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
            _mm256_storeu_ps(y + i + h, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
        }
    } else {
        const __m256 sign = _mm256_setr_ps(-1, 1, -1, 1, -1, 1, -1, 1);
        for (; i + 4 <= h; i += 4) {
            __m128 c = _mm_loadu_ps(cs + i), s = _mm_loadu_ps(sn + i);
            __m256 cd = _mm256_set_m128(_mm_unpackhi_ps(c, c), _mm_unpacklo_ps(c, c));
            __m256 sd = _mm256_mul_ps(_mm256_set_m128(_mm_unpackhi_ps(s, s), _mm_unpacklo_ps(s, s)), sign);
            __m256 v = _mm256_loadu_ps(x + 2 * i);
            __m256 sw = _mm256_permute_ps(v, 0xB1);
            _mm256_storeu_ps(y + 2 * i, _mm256_fmadd_ps(sw, sd, _mm256_mul_ps(v, cd)));
        }
    }
    rope_s(i, n_dims, neox, y, x, cs, sn);
}

// ---- AVX-512 (16 lanes) ----------------------------------------------------------------------

// Same polynomial as exp8; 2^n applied with scalef (handles under/overflow).
TG_AVX512 static inline __m512 exp16(__m512 x) {
    __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
TG_AVX512 static inline __m512 silu16(__m512 x) {
    __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}
TG_AVX512 static inline __m512 gelu16(__m512 x) {
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    __m512 u = _mm512_fmadd_ps(x3, _mm512_set1_ps(GELU_C), x);
    __m512 e = exp16(_mm512_mul_ps(u, _mm512_set1_ps(-2.0f * GELU_K)));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

#define BIN16(name, op, sfn)                                                              \
    TG_AVX512 static void name(int64_t n, float * z, const float * x, const float * y) {  \
        int64_t i = 0;                                                                    \
        for (; i + 16 <= n; i += 16)                                                      \
            _mm512_storeu_ps(z + i, op(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));  \
        sfn(n - i, z + i, x + i, y + i);                                                  \
    }
BIN16(add_512, _mm512_add_ps, add_s)
BIN16(sub_512, _mm512_sub_ps, sub_s)
BIN16(mul_512, _mm512_mul_ps, mul_s)
BIN16(div_512, _mm512_div_ps, div_s)

TG_AVX512 static void scale_512(int64_t n, float * y, const float * x, float s) {
    int64_t i = 0;
    __m512 vs = _mm512_set1_ps(s);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vs));
    scale_s(n - i, y + i, x + i, s);
}
TG_AVX512 static void silu_512(int64_t n, float * y, const float * x) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, silu16(_mm512_loadu_ps(x + i)));
    silu_s(n - i, y + i, x + i);
}
TG_AVX512 static void gelu_512(int64_t n, float * y, const float * x) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu16(_mm512_loadu_ps(x + i)));
    gelu_s(n - i, y + i, x + i);
}
TG_AVX512 static void glu_512(int64_t n, int op, float * z, const float * x, const float * g) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 a = op == TG_GLU_SWIGLU ? silu16(v) : op == TG_GLU_GEGLU ? gelu16(v)
                                                   : _mm512_max_ps(v, _mm512_setzero_ps());
        _mm512_storeu_ps(z + i, _mm512_mul_ps(a, _mm512_loadu_ps(g + i)));
    }
    glu_s(n - i, op, z + i, x + i, g + i);
}
TG_AVX512 static float max_512(int64_t n, const float * x) {
    int64_t i = 0;
    __m512 m = _mm512_set1_ps(-INFINITY);
    for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
    float lanes[16];
    _mm512_storeu_ps(lanes, m);
    float r = max_s(16, lanes), t = max_s(n - i, x + i);
    return t > r ? t : r;
}
TG_AVX512 static inline double hsum8d(__m512d v) {
    double l[8];
    _mm512_storeu_pd(l, v);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
TG_AVX512 static double exp_sum_512(int64_t n, float * y, const float * x, float m) {
    int64_t i = 0;
    __m512 vm = _mm512_set1_ps(m);
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (; i + 16 <= n; i += 16) {
        __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm512_storeu_ps(y + i, e);
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    return hsum8d(_mm512_add_pd(a0, a1)) + exp_sum_s(n - i, y + i, x + i, m);
}
TG_AVX512 static double sum_512(int64_t n, const float * x) {
    int64_t i = 0;
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    return hsum8d(_mm512_add_pd(a0, a1)) + sum_s(n - i, x + i);
}
TG_AVX512 static double sumsq_512(int64_t n, const float * x) {
    int64_t i = 0;
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512d d0 = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        __m512d d1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        a0 = _mm512_fmadd_pd(d0, d0, a0);
        a1 = _mm512_fmadd_pd(d1, d1, a1);
    }
    return hsum8d(_mm512_add_pd(a0, a1)) + sumsq_s(n - i, x + i);
}
TG_AVX512 static void axpb_512(int64_t n, float * y, const float * x, float b, float s) {
    int64_t i = 0;
    __m512 vb = _mm512_set1_ps(b), vs = _mm512_set1_ps(s);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_add_ps(_mm512_loadu_ps(x + i), vb), vs));
    axpb_s(n - i, y + i, x + i, b, s);
}
TG_AVX512 static void rope_512(int64_t n_dims, int neox, float * y, const float * x, const float * cs, const float * sn) {
    const int64_t h = n_dims / 2;
    int64_t i = 0;
    if (neox) {
        for (; i + 16 <= h; i += 16) {
            __m512 c = _mm512_loadu_ps(cs + i), s = _mm512_loadu_ps(sn + i);
            __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + h);
            _mm512_storeu_ps(y + i, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
            _mm512_storeu_ps(y + i + h, _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c)));
        }
    } else {
        const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        const __m512 sign = _mm512_setr_ps(-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1);
        for (; i + 8 <= h; i += 8) {
            __m512 cd = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(cs + i)));
            __m512 sd = _mm512_mul_ps(_mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(sn + i))), sign);
            __m512 v = _mm512_loadu_ps(x + 2 * i);
            __m512 sw = _mm512_permute_ps(v, 0xB1);
            _mm512_storeu_ps(y + 2 * i, _mm512_fmadd_ps(sw, sd, _mm512_mul_ps(v, cd)));
        }
    }
    rope_s(i, n_dims, neox, y, x, cs, sn);
}
#endif // TG_HAVE_X86_SIMD

// ---- dispatch -----------------------------------------------------------------------------

#ifdef TG_HAVE_X86_SIMD
#define PICK(s, a, v) switch (tg_cpu_simd_level()) { case TG_SIMD_AVX512VNNI: case TG_SIMD_AVX512: v; break; \
    case TG_SIMD_AVX2: case TG_SIMD_AVX: a; break; default: s; break; }
#define PICKR(s, a, v) switch (tg_cpu_simd_level()) { case TG_SIMD_AVX512VNNI: case TG_SIMD_AVX512: return v; \
    case TG_SIMD_AVX2: case TG_SIMD_AVX: return a; default: return s; }
#else
#define PICK(s, a, v) s
#define PICKR(s, a, v) return s
#endif

void tg_cpu_vadd(int64_t n, float * z, const float * x, const float * y) { PICK(add_s(n, z, x, y), add_avx(n, z, x, y), add_512(n, z, x, y)); }
void tg_cpu_vsub(int64_t n, float * z, const float * x, const float * y) { PICK(sub_s(n, z, x, y), sub_avx(n, z, x, y), sub_512(n, z, x, y)); }
void tg_cpu_vmul(int64_t n, float * z, const float * x, const float * y) { PICK(mul_s(n, z, x, y), mul_avx(n, z, x, y), mul_512(n, z, x, y)); }
void tg_cpu_vdiv(int64_t n, float * z, const float * x, const float * y) { PICK(div_s(n, z, x, y), div_avx(n, z, x, y), div_512(n, z, x, y)); }
void tg_cpu_vscale(int64_t n, float * y, const float * x, float s) { PICK(scale_s(n, y, x, s), scale_avx(n, y, x, s), scale_512(n, y, x, s)); }
void tg_cpu_vsilu(int64_t n, float * y, const float * x) { PICK(silu_s(n, y, x), silu_avx(n, y, x), silu_512(n, y, x)); }
void tg_cpu_vgelu(int64_t n, float * y, const float * x) { PICK(gelu_s(n, y, x), gelu_avx(n, y, x), gelu_512(n, y, x)); }
void tg_cpu_vglu(int64_t n, int op, float * z, const float * x, const float * g) {
    PICK(glu_s(n, op, z, x, g), glu_avx(n, op, z, x, g), glu_512(n, op, z, x, g));
}
float tg_cpu_vmax(int64_t n, const float * x) { PICKR(max_s(n, x), max_avx(n, x), max_512(n, x)); }
double tg_cpu_vexp_sum(int64_t n, float * y, const float * x, float m) {
    PICKR(exp_sum_s(n, y, x, m), exp_sum_avx(n, y, x, m), exp_sum_512(n, y, x, m));
}
double tg_cpu_vsum(int64_t n, const float * x) { PICKR(sum_s(n, x), sum_avx(n, x), sum_512(n, x)); }
double tg_cpu_vsumsq(int64_t n, const float * x) { PICKR(sumsq_s(n, x), sumsq_avx(n, x), sumsq_512(n, x)); }
void tg_cpu_vaxpb(int64_t n, float * y, const float * x, float b, float s) {
    PICK(axpb_s(n, y, x, b, s), axpb_avx(n, y, x, b, s), axpb_512(n, y, x, b, s));
}
void tg_cpu_vrope(int64_t n_dims, int neox, float * y, const float * x, const float * cs, const float * sn) {
    PICK(rope_s(0, n_dims, neox, y, x, cs, sn), rope_avx(n_dims, neox, y, x, cs, sn), rope_512(n_dims, neox, y, x, cs, sn));
}
