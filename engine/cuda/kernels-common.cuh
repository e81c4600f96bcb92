// kernels-common.cuh - what the CUDA backend's kernel files (kernels*.cu) share:
// launch sizes, grid-stride loops, loads and stores of the plain types at any
// strides, and the Q8_0 / Q4_0 quantization of 32 floats. The kernels are
// split over several files so that their device code compiles in parallel
// (nvcc -O2 for sm_90, 2 cores: kernels.cu ~10 s, kernels-decode.cu ~6 s,
// kernels-mmv.cu ~13 s; in one file, before its copy loop stopped being
// unrolled, ~100 s, ptxas 81 s of it).
#ifndef TG_CUDA_KERNELS_COMMON_CUH
#define TG_CUDA_KERNELS_COMMON_CUH

#include "core/alibi.h"
#include "core/quant-round.h"
#include "cuda/cuda-impl.h"
#include "tg/core.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#define TPB 256

static __host__ __device__ __forceinline__ int64_t nel(const tg_cu_t & t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }
static __host__ __device__ __forceinline__ int64_t nrows(const tg_cu_t & t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

static inline unsigned blocks_for(int64_t n, int per = TPB) {
    int64_t b = (n + per - 1) / per;
    if (b < 1) b = 1;
    if (b > 65535 * 16) b = 65535 * 16;   // grid-stride loops cover the rest
    return (unsigned) b;
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t) gridDim.x * blockDim.x)

static __device__ __forceinline__ float ld_plain(const char * p, int type) {
    switch (type) {
        case TG_TYPE_F32:  return *(const float *) p;
        case TG_TYPE_F16:  return __half2float(*(const __half *) p);
        case TG_TYPE_BF16: return __bfloat162float(*(const __nv_bfloat16 *) p);
        case TG_TYPE_I32:  return (float) *(const int32_t *) p;
        case TG_TYPE_F64:  return (float) *(const double *) p;
        default:           return 0.0f;
    }
}

static __device__ __forceinline__ void st_plain(char * p, int type, float v) {
    switch (type) {
        case TG_TYPE_F32:  *(float *) p = v; break;
        case TG_TYPE_F16:  *(__half *) p = __float2half_rn(v); break;
        case TG_TYPE_BF16: *(__nv_bfloat16 *) p = __float2bfloat16_rn(v); break;
        case TG_TYPE_I32:  *(int32_t *) p = (int32_t) v; break;
        case TG_TYPE_F64:  *(double *) p = (double) v; break;
        default: break;
    }
}

// Linear (row-major logical) index -> coordinates in t.
static __device__ __forceinline__ void unravel(int64_t i, const tg_cu_t & t, int64_t c[4]) {
    c[0] = i % t.ne[0]; i /= t.ne[0];
    c[1] = i % t.ne[1]; i /= t.ne[1];
    c[2] = i % t.ne[2];
    c[3] = i / t.ne[2];
}

static __device__ __forceinline__ char * at(const tg_cu_t & t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

static __device__ __forceinline__ char * row_at(const tg_cu_t & t, int64_t r) {   // row r in (i1, i2, i3) order
    const int64_t i1 = r % t.ne[1], i2 = (r / t.ne[1]) % t.ne[2], i3 = r / (t.ne[1] * t.ne[2]);
    return t.data + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}


// Q8_0 and Q4_0 of 32 floats, as the CPU's tg_quantize_row_q8_0 / _q4_0
// (engine/core/types.c): the same scale, rounding and byte for each block.
static inline __device__ void quantize_block(int type, const float * x, uint8_t * out) {
    if (type == TG_TYPE_Q8_0) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        *(__half *) out = __float2half_rn(d);
        for (int j = 0; j < 32; j++) {
            const float v = x[j] * id;
            out[2 + j] = v == v ? (uint8_t) tg_q8_low_byte(tg_round_half_even(v)) : 0;
        }
    } else {   // Q4_0
        float amax = 0.0f, mx = 0.0f;
        for (int j = 0; j < 32; j++) if (amax < fabsf(x[j])) { amax = fabsf(x[j]); mx = x[j]; }
        const float d = mx / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        *(__half *) out = __float2half_rn(d);
        for (int j = 0; j < 16; j++) out[2 + j] = (uint8_t) (tg_q4_nibble(x[j] * id) | (tg_q4_nibble(x[j + 16] * id) << 4));
    }
}

#endif
