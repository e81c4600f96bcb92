// quant.c - the block formats beyond Q8_0/Q4_0: Q4_1, Q5_0, Q5_1, Q8_1, the
// K-quants (Q2_K..Q6_K, Q8_K) and IQ4_NL / IQ4_XS (layouts in tg/types.h).
//
// Dequantization follows the GGUF block definitions and is bit-exact with the
// reference runtime (tests/test_quant.c checks every type against its
// dequantized test vectors): each value is one float product (or product and
// difference) computed in the order the format defines, never fused.
//
// Quantization (written here, not taken from any other implementation) picks
// scales by search: for each sub-block a grid of candidate scales (and mins)
// is tried, each followed by a least-squares refit of the scale (and min) to
// the levels it chose, keeping the one with the smallest squared error; the
// super-block scales then quantize the sub-block scales, and the levels are
// chosen again for the quantized scales.
#include "tg/types.h"

#include <math.h>
#include <string.h>

// The multiply-adds below must stay separate roundings to match the
// reference's bits.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF   // clang ignores GCC's optimize pragma (and would fuse a * b + c)
#else
#pragma GCC optimize("fp-contract=off")
#endif

const int8_t tg_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static inline float h2f(tg_fp16_t h) { return tg_fp16_to_fp32(h); }
static inline tg_fp16_t f2h(float f) { return tg_fp32_to_fp16(f); }

// Round to nearest, ties to even (the reference quantizers' rounding), NaN -> 0;
// magnitudes are capped far beyond any level so the conversion is defined.
static inline int nearest(float v) {
    if (!(v == v)) return 0;
    v = v > 1e9f ? 1e9f : v < -1e9f ? -1e9f : v;
    return (int) rintf(v);
}
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// ---------------------------------------------------------------------------
// scale search

// Symmetric levels q in [lo, hi]: finds the scale s minimising
// sum (x - s q)^2 with q = clamp(round(x / s)). Returns s (0 for all-zero x).
static float search_sym(const float * x, int n, int lo, int hi) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax == 0) return 0;
    float best = 0, best_err = INFINITY;
    // the extreme value maps near the end of the range on its side
    const float end = max < 0 ? (float) lo : (float) hi;
    const float other = max < 0 ? (float) -hi : (float) -lo;
    const int span = hi - lo <= 8 ? 10 : 6;   // few levels: a wider search pays
    for (int t = -span; t <= span; t++) {
        for (int side = 0; side < 2; side++) {
            float e = (side ? other : end) + 0.1f * (float) t;
            if (e == 0 || (side && other == end)) continue;
            float s = max / e;
            for (int it = 0; it < 2; it++) {   // assign levels, refit the scale, again
                float sxq = 0, sqq = 0;
                for (int i = 0; i < n; i++) {
                    int q = clampi(nearest(x[i] / s), lo, hi);
                    sxq += x[i] * (float) q;
                    sqq += (float) (q * q);
                }
                if (sqq <= 0 || sxq == 0) break;
                const float s2 = sxq / sqq;
                float err = 0;
                for (int i = 0; i < n; i++) {
                    int q = clampi(nearest(x[i] / s2), lo, hi);
                    float d = x[i] - s2 * (float) q;
                    err += d * d;
                }
                if (err < best_err) { best_err = err; best = s2; }
                s = s2;
            }
        }
    }
    return best;
}

// Affine levels q in [0, nmax], x ~ s q - m with m >= 0 (the block minimum,
// when negative, maps to level 0). Finds (s, m) by search + refit.
static void search_affine(const float * x, int n, int nmax, float * s_out, float * m_out) {
    float mn = x[0], mx = x[0];
    for (int i = 1; i < n; i++) { if (x[i] < mn) mn = x[i]; if (x[i] > mx) mx = x[i]; }
    if (mn > 0) mn = 0;
    if (mx == mn) { *s_out = 0; *m_out = -mn; return; }
    float best_s = (mx - mn) / (float) nmax, best_m = -mn, best_err = INFINITY;
    for (int t = -5; t <= 5; t++) {
        float s = (mx - mn) / ((float) nmax + 0.2f * (float) t);
        if (!(s > 0)) continue;
        float mlo = mn;
        // levels for this trial, then the least-squares (s, b) of x ~ s q + b
        float sq = 0, sqq = 0, sx = 0, sxq = 0;
        for (int i = 0; i < n; i++) {
            int q = clampi(nearest((x[i] - mlo) / s), 0, nmax);
            sq += (float) q; sqq += (float) (q * q); sx += x[i]; sxq += x[i] * (float) q;
        }
        float den = (float) n * sqq - sq * sq;
        float s2 = s, b2 = mlo;
        if (den > 0) {
            s2 = ((float) n * sxq - sq * sx) / den;
            b2 = (sx - s2 * sq) / (float) n;
        }
        if (b2 > 0) {   // the format needs m >= 0: refit the scale with b = 0
            b2 = 0;
            s2 = sqq > 0 ? sxq / sqq : s;
        }
        if (!(s2 > 0)) continue;
        float err = 0;
        for (int i = 0; i < n; i++) {
            int q = clampi(nearest((x[i] - b2) / s2), 0, nmax);
            float d = x[i] - (s2 * (float) q + b2);
            err += d * d;
        }
        if (err < best_err) { best_err = err; best_s = s2; best_m = -b2; }
    }
    *s_out = best_s;
    *m_out = best_m;
}

// Non-linear levels (IQ4): the scale s minimising sum (x - s v[q])^2 with q
// the nearest level of x / s.
static int nearest_nl(float v) {
    int best = 0;
    float bd = fabsf(v - (float) tg_iq4nl_values[0]);
    for (int k = 1; k < 16; k++) {
        float d = fabsf(v - (float) tg_iq4nl_values[k]);
        if (d < bd) { bd = d; best = k; }
    }
    return best;
}

static float search_nl(const float * x, int n) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax == 0) return 0;
    float best = 0, best_err = INFINITY;
    for (int t = -7; t <= 7; t++) {
        for (int side = 0; side < 2; side++) {   // the extreme value at -127 or at 113
            float e = (side ? 113.0f : -127.0f) + 2.0f * (float) t;
            float s = max / e;
            float sxv = 0, svv = 0;
            for (int i = 0; i < n; i++) {
                float v = (float) tg_iq4nl_values[nearest_nl(x[i] / s)];
                sxv += x[i] * v; svv += v * v;
            }
            if (svv <= 0) continue;
            float s2 = sxv / svv;
            if (s2 == 0) continue;
            float err = 0;
            for (int i = 0; i < n; i++) {
                float d = x[i] - s2 * (float) tg_iq4nl_values[nearest_nl(x[i] / s2)];
                err += d * d;
            }
            if (err < best_err) { best_err = err; best = s2; }
        }
    }
    return best;
}

// ---------------------------------------------------------------------------
// Q4_1, Q5_0, Q5_1, Q8_1

void tg_dequantize_row_q4_1(const tg_block_q4_1 * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, y += 32) {
        const float d = h2f(x[b].d), m = h2f(x[b].m);
        for (int j = 0; j < 16; j++) {
            y[j]      = (float) (x[b].qs[j] & 0x0F) * d + m;
            y[j + 16] = (float) (x[b].qs[j] >> 4) * d + m;
        }
    }
}

void tg_quantize_row_q4_1(const float * x, tg_block_q4_1 * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float s, m;
        search_affine(x, 32, 15, &s, &m);
        y[b].d = f2h(s);
        y[b].m = f2h(-m);
        const float d = h2f(y[b].d), mm = h2f(y[b].m), id = d != 0 ? 1.0f / d : 0;
        for (int j = 0; j < 16; j++) {
            int lo = clampi(nearest((x[j] - mm) * id), 0, 15), hi = clampi(nearest((x[j + 16] - mm) * id), 0, 15);
            y[b].qs[j] = (uint8_t) (lo | (hi << 4));
        }
    }
}

static inline uint32_t get_qh(const uint8_t * qh) {
    return (uint32_t) qh[0] | ((uint32_t) qh[1] << 8) | ((uint32_t) qh[2] << 16) | ((uint32_t) qh[3] << 24);
}
static inline void put_qh(uint8_t * qh, uint32_t v) {
    for (int i = 0; i < 4; i++) qh[i] = (uint8_t) (v >> (8 * i));
}

// The 32 five-bit values 0..31 of a Q5 block: low nibbles in qs (element j
// low, j + 16 high), fifth bits in qh (bit j of the little-endian word).
static void unpack_q5(const uint8_t * qs, const uint8_t * qh4, int * q) {
    const uint32_t qh = get_qh(qh4);
    for (int j = 0; j < 16; j++) {
        q[j]      = (int) ((qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
        q[j + 16] = (int) ((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
}
static void pack_q5(const int * q, uint8_t * qs, uint8_t * qh4) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t) ((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        qh |= (uint32_t) (q[j] >> 4) << j;
        qh |= (uint32_t) (q[j + 16] >> 4) << (j + 16);
    }
    put_qh(qh4, qh);
}

void tg_dequantize_row_q5_0(const tg_block_q5_0 * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, y += 32) {
        const float d = h2f(x[b].d);
        int q[32];
        unpack_q5(x[b].qs, x[b].qh, q);
        for (int j = 0; j < 32; j++) y[j] = (float) (q[j] - 16) * d;
    }
}

void tg_quantize_row_q5_0(const float * x, tg_block_q5_0 * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float s = search_sym(x, 32, -16, 15);
        y[b].d = f2h(s);
        const float d = h2f(y[b].d), id = d != 0 ? 1.0f / d : 0;
        int q[32];
        for (int j = 0; j < 32; j++) q[j] = clampi(nearest(x[j] * id), -16, 15) + 16;
        pack_q5(q, y[b].qs, y[b].qh);
    }
}

void tg_dequantize_row_q5_1(const tg_block_q5_1 * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, y += 32) {
        const float d = h2f(x[b].d), m = h2f(x[b].m);
        int q[32];
        unpack_q5(x[b].qs, x[b].qh, q);
        for (int j = 0; j < 32; j++) y[j] = (float) q[j] * d + m;
    }
}

void tg_quantize_row_q5_1(const float * x, tg_block_q5_1 * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float s, m;
        search_affine(x, 32, 31, &s, &m);
        y[b].d = f2h(s);
        y[b].m = f2h(-m);
        const float d = h2f(y[b].d), mm = h2f(y[b].m), id = d != 0 ? 1.0f / d : 0;
        int q[32];
        for (int j = 0; j < 32; j++) q[j] = clampi(nearest((x[j] - mm) * id), 0, 31);
        pack_q5(q, y[b].qs, y[b].qh);
    }
}

void tg_quantize_row_q8_1(const float * x, tg_block_q8_1 * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0;
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            y[b].qs[j] = (int8_t) clampi(nearest(x[j] * id), -127, 127);
            sum += y[b].qs[j];
        }
        y[b].d = f2h(d);
        y[b].s = f2h((float) sum * d);
    }
}

void tg_dequantize_row_q8_1(const tg_block_q8_1 * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, y += 32) {
        const float d = h2f(x[b].d);
        for (int j = 0; j < 32; j++) y[j] = d * (float) x[b].qs[j];
    }
}

// ---------------------------------------------------------------------------
// Q8_K

void tg_quantize_row_q8_K(const float * x, tg_block_q8_K * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        float amax = 0, max = 0;
        for (int j = 0; j < TG_QK_K; j++) if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        if (amax == 0) {
            memset(&y[b], 0, sizeof(y[b]));
            continue;
        }
        const float iscale = -127.0f / max;   // the extreme value maps to -127
        for (int j = 0; j < TG_QK_K; j++) {
            int v = nearest(iscale * x[j]);
            y[b].qs[j] = (int8_t) (v > 127 ? 127 : v < -128 ? -128 : v);
        }
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += y[b].qs[16 * g + j];
            y[b].bsums[g] = (int16_t) s;
        }
        y[b].d = 1.0f / iscale;
    }
}

void tg_dequantize_row_q8_K(const tg_block_q8_K * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, y += TG_QK_K) {
        for (int j = 0; j < TG_QK_K; j++) y[j] = x[b].d * (float) x[b].qs[j];
    }
}

// ---------------------------------------------------------------------------
// Q2_K

void tg_dequantize_row_q2_K(const tg_block_q2_K * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++) {
        const float d = h2f(x[b].d), dmin = h2f(x[b].dmin);
        const uint8_t * q = x[b].qs;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; part++) {
                    const uint8_t sc = x[b].scales[is++];
                    const float dl = d * (float) (sc & 0xF), ml = dmin * (float) (sc >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * (float) ((q[l + 16 * part] >> shift) & 3) - ml;
                }
            }
        }
    }
}

// Sub-block scales (and mins) to `bits`-bit integers under a super scale:
// returns the super scale (max / (2^bits - 1)) and fills out[].
static float quant_scales(const float * s, int n, int bits, uint8_t * out) {
    const int top = (1 << bits) - 1;
    float mx = 0;
    for (int i = 0; i < n; i++) mx = fmaxf(mx, s[i]);
    const float d = mx / (float) top, id = d > 0 ? 1.0f / d : 0;
    for (int i = 0; i < n; i++) out[i] = (uint8_t) clampi(nearest(s[i] * id), 0, top);
    return d;
}

void tg_quantize_row_q2_K(const float * x, tg_block_q2_K * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        float s[16], m[16];
        uint8_t qs[16], qm[16], L[TG_QK_K];
        for (int j = 0; j < 16; j++) search_affine(x + 16 * j, 16, 3, &s[j], &m[j]);
        y[b].d = f2h(quant_scales(s, 16, 4, qs));
        y[b].dmin = f2h(quant_scales(m, 16, 4, qm));
        const float d = h2f(y[b].d), dmin = h2f(y[b].dmin);
        for (int j = 0; j < 16; j++) {
            y[b].scales[j] = (uint8_t) (qs[j] | (qm[j] << 4));
            const float dl = d * (float) qs[j], ml = dmin * (float) qm[j];
            for (int l = 0; l < 16; l++) {
                L[16 * j + l] = (uint8_t) (dl > 0 ? clampi(nearest((x[16 * j + l] + ml) / dl), 0, 3) : 0);
            }
        }
        memset(y[b].qs, 0, sizeof(y[b].qs));
        for (int e = 0; e < TG_QK_K; e++) {   // element e = half*128 + shift/2*32 + l
            const int half = e / 128, j = (e % 128) / 32, l = e % 32;
            y[b].qs[half * 32 + l] |= (uint8_t) (L[e] << (2 * j));
        }
    }
}

// ---------------------------------------------------------------------------
// Q3_K

static void q3_unpack_scales(const uint8_t * b, int8_t * sc) {
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? (b[j] & 0xF) : (b[j - 8] >> 4);
        int hi = (b[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (int8_t) ((lo | (hi << 4)) - 32);
    }
}

void tg_dequantize_row_q3_K(const tg_block_q3_K * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++) {
        const float d_all = h2f(x[b].d);
        int8_t sc[16];
        q3_unpack_scales(x[b].scales, sc);
        const uint8_t * q = x[b].qs;
        const uint8_t * hm = x[b].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; part++) {
                    const float dl = d_all * (float) sc[is++];
                    for (int l = 16 * part; l < 16 * part + 16; l++) {
                        *y++ = dl * (float) ((int8_t) ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                    }
                }
            }
        }
    }
}

// Q3_K levels and packing for super scale d (scales in [-32, 31]); returns
// the squared error.
static float q3_fill(const float * x, const float * s, float d, tg_block_q3_K * y) {
    memset(y, 0, sizeof(*y));
    y->d = f2h(d);
    const float dd = h2f(y->d), id = d != 0 ? 1.0f / d : 0;
    uint8_t L[TG_QK_K];
    float err = 0;
    for (int j = 0; j < 16; j++) {
        // the integer scale: the rounded one or a neighbour, whichever fits best
        const int r = clampi(nearest(s[j] * id), -32, 31) + 32;
        int l6 = r;
        float best = INFINITY;
        for (int k = 0; k < 10; k++) {   // near r, and near its mirror (the levels are asymmetric)
            const int c = k < 5 ? r - 2 + k : 64 - r - 2 + (k - 5);
            if (c < 0 || c > 63) continue;
            const float dl = dd * (float) (c - 32);
            float e = 0;
            for (int l = 0; l < 16; l++) {
                const float v = x[16 * j + l];
                const int q = dl != 0 ? clampi(nearest(v / dl), -4, 3) : 0;
                e += (v - dl * (float) q) * (v - dl * (float) q);
            }
            if (e < best) { best = e; l6 = c; }
        }
        if (j < 8) y->scales[j] |= (uint8_t) (l6 & 0xF);
        else y->scales[j - 8] |= (uint8_t) ((l6 & 0xF) << 4);
        y->scales[8 + j % 4] |= (uint8_t) ((l6 >> 4) << (2 * (j / 4)));
        const float dl = dd * (float) (l6 - 32);
        for (int l = 0; l < 16; l++) {
            const float v = x[16 * j + l];
            const int q = dl != 0 ? clampi(nearest(v / dl), -4, 3) : 0;
            L[16 * j + l] = (uint8_t) (q + 4);
            err += (v - dl * (float) q) * (v - dl * (float) q);
        }
    }
    for (int e = 0; e < TG_QK_K; e++) {
        const int half = e / 128, j = (e % 128) / 32, l = e % 32;
        y->qs[half * 32 + l] |= (uint8_t) ((L[e] & 3) << (2 * j));
        if (L[e] > 3) y->hmask[l] |= (uint8_t) (1u << (half * 4 + j));
    }
    return err;
}

void tg_quantize_row_q3_K(const float * x, tg_block_q3_K * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        float s[16], amax = 0, max = 0;
        for (int j = 0; j < 16; j++) {
            s[j] = search_sym(x + 16 * j, 16, -4, 3);
            if (fabsf(s[j]) > amax) { amax = fabsf(s[j]); max = s[j]; }
        }
        // the super scale: the largest sub-block scale near -32 or 31, best of a few
        float best_d = max / -32.0f, best_err = INFINITY;
        // candidates from the largest scale at -32 (or 31) down to a quarter of
        // that: a smaller super scale clips an outlier's sub-block but serves
        // the other fifteen better
        for (int t = 0; t < 24; t++) {
            const float f = powf(1.12f, (float) (t % 12));
            const float d = max / (t < 12 ? -32.0f * f : 31.0f * f);
            tg_block_q3_K tmp;
            const float err = q3_fill(x, s, d, &tmp);
            if (err < best_err) { best_err = err; best_d = d; }
        }
        q3_fill(x, s, best_d, &y[b]);
    }
}

// ---------------------------------------------------------------------------
// Q4_K, Q5_K (6-bit scales and mins packed in 12 bytes)

static inline void k4_scale_min(int j, const uint8_t * q, uint8_t * sc, uint8_t * m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t) ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t) ((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

static void k4_pack(const uint8_t * sc, const uint8_t * m, uint8_t * q) {
    memset(q, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            q[j] |= sc[j];
            q[j + 4] |= m[j];
        } else {
            q[j + 4] = (uint8_t) ((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
            q[j - 4] |= (uint8_t) ((sc[j] >> 4) << 6);
            q[j] |= (uint8_t) ((m[j] >> 4) << 6);
        }
    }
}

uint8_t tg_k4_scale_(int j, const uint8_t * q, uint8_t * m) {   // for the dot products (cpu)
    uint8_t sc;
    k4_scale_min(j, q, &sc, m);
    return sc;
}

void tg_dequantize_row_q4_K(const tg_block_q4_K * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++) {
        const float d = h2f(x[b].d), dmin = h2f(x[b].dmin);
        const uint8_t * q = x[b].qs;
        for (int j = 0, is = 0; j < TG_QK_K; j += 64, is += 2, q += 32) {
            uint8_t sc, m;
            k4_scale_min(is, x[b].scales, &sc, &m);
            const float d1 = d * (float) sc, m1 = dmin * (float) m;
            k4_scale_min(is + 1, x[b].scales, &sc, &m);
            const float d2 = d * (float) sc, m2 = dmin * (float) m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float) (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float) (q[l] >> 4) - m2;
        }
    }
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): scales, mins and levels.
static void quant_k45(const float * x, int nmax, tg_fp16_t * d_out, tg_fp16_t * dmin_out, uint8_t * scales,
                      uint8_t * L) {
    float s[8], m[8];
    uint8_t qs[8], qm[8];
    for (int j = 0; j < 8; j++) search_affine(x + 32 * j, 32, nmax, &s[j], &m[j]);
    *d_out = f2h(quant_scales(s, 8, 6, qs));
    *dmin_out = f2h(quant_scales(m, 8, 6, qm));
    k4_pack(qs, qm, scales);
    const float d = h2f(*d_out), dmin = h2f(*dmin_out);
    for (int j = 0; j < 8; j++) {
        const float dl = d * (float) qs[j], ml = dmin * (float) qm[j];
        for (int l = 0; l < 32; l++) {
            L[32 * j + l] = (uint8_t) (dl > 0 ? clampi(nearest((x[32 * j + l] + ml) / dl), 0, nmax) : 0);
        }
    }
}

void tg_quantize_row_q4_K(const float * x, tg_block_q4_K * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        uint8_t L[TG_QK_K];
        quant_k45(x, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; l++) y[b].qs[32 * c + l] = (uint8_t) (L[64 * c + l] | (L[64 * c + 32 + l] << 4));
        }
    }
}

void tg_dequantize_row_q5_K(const tg_block_q5_K * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++) {
        const float d = h2f(x[b].d), dmin = h2f(x[b].dmin);
        const uint8_t * ql = x[b].qs;
        const uint8_t * qh = x[b].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0, is = 0; j < TG_QK_K; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            k4_scale_min(is, x[b].scales, &sc, &m);
            const float d1 = d * (float) sc, m1 = dmin * (float) m;
            k4_scale_min(is + 1, x[b].scales, &sc, &m);
            const float d2 = d * (float) sc, m2 = dmin * (float) m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float) ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float) ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

void tg_quantize_row_q5_K(const float * x, tg_block_q5_K * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        uint8_t L[TG_QK_K];
        quant_k45(x, 31, &y[b].d, &y[b].dmin, y[b].scales, L);
        memset(y[b].qh, 0, sizeof(y[b].qh));
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; l++) {
                const uint8_t a = L[64 * c + l], h = L[64 * c + 32 + l];
                y[b].qs[32 * c + l] = (uint8_t) ((a & 0xF) | ((h & 0xF) << 4));
                y[b].qh[l] |= (uint8_t) (((a >> 4) << (2 * c)) | ((h >> 4) << (2 * c + 1)));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Q6_K

void tg_dequantize_row_q6_K(const tg_block_q6_K * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++) {
        const float d = h2f(x[b].d);
        const uint8_t * ql = x[b].ql;
        const uint8_t * qh = x[b].qh;
        const int8_t * sc = x[b].scales;
        for (int c = 0; c < 2; c++, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = (int) ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = (int) ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = (int) ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = (int) ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l]      = d * (float) sc[is + 0] * (float) q1;
                y[l + 32] = d * (float) sc[is + 2] * (float) q2;
                y[l + 64] = d * (float) sc[is + 4] * (float) q3;
                y[l + 96] = d * (float) sc[is + 6] * (float) q4;
            }
        }
    }
}

void tg_quantize_row_q6_K(const float * x, tg_block_q6_K * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        float s[16], amax = 0, max = 0;
        for (int j = 0; j < 16; j++) {
            s[j] = search_sym(x + 16 * j, 16, -32, 31);
            if (fabsf(s[j]) > amax) { amax = fabsf(s[j]); max = s[j]; }
        }
        const float d = max / -128.0f, id = d != 0 ? 1.0f / d : 0;
        y[b].d = f2h(d);
        const float dd = h2f(y[b].d);
        uint8_t L[TG_QK_K];
        for (int j = 0; j < 16; j++) {
            const int sc = clampi(nearest(s[j] * id), -128, 127);
            y[b].scales[j] = (int8_t) sc;
            const float dl = dd * (float) sc;
            for (int l = 0; l < 16; l++) {
                L[16 * j + l] = (uint8_t) (dl != 0 ? clampi(nearest(x[16 * j + l] / dl), -32, 31) + 32 : 32);
            }
        }
        for (int c = 0; c < 2; c++) {
            const uint8_t * q = L + 128 * c;
            for (int l = 0; l < 32; l++) {
                y[b].ql[64 * c + l] = (uint8_t) ((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
                y[b].ql[64 * c + l + 32] = (uint8_t) ((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
                y[b].qh[32 * c + l] = (uint8_t) ((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                                 ((q[l + 96] >> 4) << 6));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// IQ4_NL, IQ4_XS

void tg_dequantize_row_iq4_nl(const tg_block_iq4_nl * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, y += 32) {
        const float d = h2f(x[b].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float) tg_iq4nl_values[x[b].qs[j] & 0xF];
            y[j + 16] = d * (float) tg_iq4nl_values[x[b].qs[j] >> 4];
        }
    }
}

void tg_quantize_row_iq4_nl(const float * x, tg_block_iq4_nl * y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        y[b].d = f2h(search_nl(x, 32));
        const float d = h2f(y[b].d), id = d != 0 ? 1.0f / d : 0;
        for (int j = 0; j < 16; j++) {
            y[b].qs[j] = (uint8_t) (nearest_nl(x[j] * id) | (nearest_nl(x[j + 16] * id) << 4));
        }
    }
}

void tg_dequantize_row_iq4_xs(const tg_block_iq4_xs * x, float * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++) {
        const float d = h2f(x[b].d);
        const uint8_t * qs = x[b].qs;
        for (int ib = 0; ib < 8; ib++, y += 32, qs += 16) {
            const int ls = ((x[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x[b].scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * (float) (ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * (float) tg_iq4nl_values[qs[j] & 0xF];
                y[j + 16] = dl * (float) tg_iq4nl_values[qs[j] >> 4];
            }
        }
    }
}

void tg_quantize_row_iq4_xs(const float * x, tg_block_iq4_xs * y, int64_t n) {
    for (int64_t b = 0; b < n / TG_QK_K; b++, x += TG_QK_K) {
        float s[8], amax = 0, max = 0;
        for (int ib = 0; ib < 8; ib++) {
            s[ib] = search_nl(x + 32 * ib, 32);
            if (fabsf(s[ib]) > amax) { amax = fabsf(s[ib]); max = s[ib]; }
        }
        const float d = max / -32.0f, id = d != 0 ? 1.0f / d : 0;   // scales in [-32, 31]
        memset(&y[b], 0, sizeof(y[b]));
        y[b].d = f2h(d);
        const float dd = h2f(y[b].d);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = clampi(nearest(s[ib] * id), -32, 31) + 32;
            y[b].scales_l[ib / 2] |= (uint8_t) ((ls & 0xF) << (4 * (ib % 2)));
            y[b].scales_h |= (uint16_t) ((ls >> 4) << (2 * ib));
            const float dl = dd * (float) (ls - 32), il = dl != 0 ? 1.0f / dl : 0;
            for (int j = 0; j < 16; j++) {
                y[b].qs[16 * ib + j] = (uint8_t) (nearest_nl(x[32 * ib + j] * il) |
                                                  (nearest_nl(x[32 * ib + j + 16] * il) << 4));
            }
        }
    }
}
