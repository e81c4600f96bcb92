// kernels-decode.cuh - the quantized types' 32-element sub-blocks decoded to
// F32 on the device (deq32), for the kernels that read tensors in their stored
// type (kernels-decode.cu, kernels-mmv.cu), and the list of those types.
#ifndef TG_CUDA_KERNELS_DECODE_CUH
#define TG_CUDA_KERNELS_DECODE_CUH

#include "cuda/kernels-common.cuh"

// ---- quantized types: 32-element sub-blocks --------------------------------------------------------

static __device__ __forceinline__ float h2f(const uint8_t * p) { return __half2float(*(const __half *) p); }

static __device__ const int8_t iq4nl_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7).
static __device__ __forceinline__ void scale_min_k4(int j, const uint8_t * q, int & sc, int & m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// The 32 values of sub-block s (elements 32s .. 32s+31) of a row of type T.
template <int T> static __device__ __forceinline__ void deq32(const uint8_t * row, int64_t s, float v[32]) {
    if (T == TG_TYPE_F32) {
        const float * p = (const float *) row + 32 * s;
        for (int i = 0; i < 32; i++) v[i] = p[i];
    } else if (T == TG_TYPE_F16) {
        const __half * p = (const __half *) row + 32 * s;
        for (int i = 0; i < 32; i++) v[i] = __half2float(p[i]);
    } else if (T == TG_TYPE_BF16) {
        const __nv_bfloat16 * p = (const __nv_bfloat16 *) row + 32 * s;
        for (int i = 0; i < 32; i++) v[i] = __bfloat162float(p[i]);
    } else if (T == TG_TYPE_Q8_0) {
        const uint8_t * b = row + 34 * s;
        const float d = h2f(b);
        for (int i = 0; i < 32; i++) v[i] = d * (float) (int8_t) b[2 + i];
    } else if (T == TG_TYPE_Q4_0) {
        const uint8_t * b = row + 18 * s;
        const float d = h2f(b);
        for (int i = 0; i < 16; i++) {
            v[i] = d * (float) ((b[2 + i] & 0xF) - 8);
            v[i + 16] = d * (float) ((b[2 + i] >> 4) - 8);
        }
    } else if (T == TG_TYPE_Q4_1) {
        const uint8_t * b = row + 20 * s;
        const float d = h2f(b), m = h2f(b + 2);
        for (int i = 0; i < 16; i++) {
            v[i] = d * (float) (b[4 + i] & 0xF) + m;
            v[i + 16] = d * (float) (b[4 + i] >> 4) + m;
        }
    } else if (T == TG_TYPE_Q5_0 || T == TG_TYPE_Q5_1) {
        const bool one = T == TG_TYPE_Q5_1;
        const uint8_t * b = row + (one ? 24 : 22) * s;
        const float d = h2f(b), m = one ? h2f(b + 2) : 0.0f;
        const uint8_t * qhp = b + (one ? 4 : 2);
        const uint32_t qh = (uint32_t) qhp[0] | ((uint32_t) qhp[1] << 8) | ((uint32_t) qhp[2] << 16) | ((uint32_t) qhp[3] << 24);
        const uint8_t * qs = qhp + 4;
        for (int i = 0; i < 16; i++) {
            const int q0 = (qs[i] & 0xF) | (int) (((qh >> i) & 1) << 4);
            const int q1 = (qs[i] >> 4) | (int) (((qh >> (i + 16)) & 1) << 4);
            v[i] = one ? d * (float) q0 + m : d * (float) (q0 - 16);
            v[i + 16] = one ? d * (float) q1 + m : d * (float) (q1 - 16);
        }
    } else if (T == TG_TYPE_Q2_K) {
        const uint8_t * b = row + 84 * (s / 8);
        const int j = (int) (s % 8), n = j / 4, sh = 2 * (j % 4);
        const float d = h2f(b + 80), dmin = h2f(b + 82);
        const uint8_t * q = b + 16 + 32 * n;
        for (int h = 0; h < 2; h++) {
            const uint8_t sc = b[8 * n + 2 * (j % 4) + h];
            const float dl = d * (float) (sc & 0xF), ml = dmin * (float) (sc >> 4);
            for (int l = 0; l < 16; l++) v[16 * h + l] = dl * (float) ((q[16 * h + l] >> sh) & 3) - ml;
        }
    } else if (T == TG_TYPE_Q3_K) {
        // 16 sub-blocks of 16: 6-bit scales (minus 32) packed in 12 bytes (low
        // 4 bits in bytes 0..7, high 2 bits in bytes 8..11), q = 2 low bits
        // (qs) minus 4 where the hmask bit is clear.
        const uint8_t * b = row + 110 * (s / 8);
        const int j = (int) (s % 8), n = j / 4, sh = 2 * (j % 4);
        const float d = h2f(b + 108);
        const uint8_t * hm = b, * q = b + 32 + 32 * n, * sc = b + 96;
        const uint8_t m = (uint8_t) (1u << j);
        for (int h = 0; h < 2; h++) {
            const int k = 2 * j + h;   // scale index 0..15
            const int lo = k < 8 ? sc[k] & 0xF : sc[k - 8] >> 4;
            const int hi = (sc[8 + k % 4] >> (2 * (k / 4))) & 3;
            const float dl = d * (float) ((lo | (hi << 4)) - 32);
            for (int l = 16 * h; l < 16 * h + 16; l++)
                v[l] = dl * (float) ((int) ((q[l] >> sh) & 3) - ((hm[l] & m) ? 0 : 4));
        }
    } else if (T == TG_TYPE_Q4_K || T == TG_TYPE_Q5_K) {
        const bool five = T == TG_TYPE_Q5_K;
        const uint8_t * b = row + (five ? 176 : 144) * (s / 8);
        const int j = (int) (s % 8);
        const float d = h2f(b), dmin = h2f(b + 2);
        int sc, m;
        scale_min_k4(j, b + 4, sc, m);
        const float dl = d * (float) sc, ml = dmin * (float) m;
        const uint8_t * qs = b + (five ? 48 : 16) + 32 * (j / 2);
        const uint8_t * qh = b + 16;
        const int shift = (j & 1) ? 4 : 0;
        for (int l = 0; l < 32; l++) {
            int q = (qs[l] >> shift) & 0xF;
            if (five) q |= ((qh[l] >> j) & 1) << 4;
            v[l] = dl * (float) q - ml;
        }
    } else if (T == TG_TYPE_Q6_K) {
        const uint8_t * b = row + 210 * (s / 8);
        const int j = (int) (s % 8), n = j / 4, k = j % 4;
        const float d = h2f(b + 208);
        const uint8_t * ql = b + 64 * n + ((k & 1) ? 32 : 0);
        const uint8_t * qh = b + 128 + 32 * n;
        const int8_t * sc = (const int8_t *) (b + 192) + 8 * n + 2 * k;
        const int lsh = k >= 2 ? 4 : 0, hsh = 2 * k;
        for (int l = 0; l < 32; l++) {
            const int q = (((ql[l] >> lsh) & 0xF) | (((qh[l] >> hsh) & 3) << 4)) - 32;
            v[l] = d * (float) sc[l / 16] * (float) q;
        }
    } else if (T == TG_TYPE_IQ4_NL) {
        const uint8_t * b = row + 18 * s;
        const float d = h2f(b);
        for (int i = 0; i < 16; i++) {
            v[i] = d * (float) iq4nl_values[b[2 + i] & 0xF];
            v[i + 16] = d * (float) iq4nl_values[b[2 + i] >> 4];
        }
    } else if (T == TG_TYPE_IQ4_XS) {
        const uint8_t * b = row + 136 * (s / 8);
        const int j = (int) (s % 8);
        const float d = h2f(b);
        const uint16_t sh = (uint16_t) (b[2] | (b[3] << 8));
        const int ls = ((b[4 + j / 2] >> (4 * (j % 2))) & 0xF) | (((sh >> (2 * j)) & 3) << 4);
        const float dl = d * (float) (ls - 32);
        const uint8_t * qs = b + 8 + 16 * j;
        for (int i = 0; i < 16; i++) {
            v[i] = dl * (float) iq4nl_values[qs[i] & 0xF];
            v[i + 16] = dl * (float) iq4nl_values[qs[i] >> 4];
        }
    }
}

#define DECODABLE(X) X(F32) X(F16) X(BF16) X(Q8_0) X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q2_K) X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K) \
                     X(IQ4_NL) X(IQ4_XS)

#endif
